package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidateName(t *testing.T) {
	good := []string{"a", "aggregator", "site-1", "site.4", "0", strings.Repeat("x", 64), "teacher-250"}
	for _, n := range good {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", n, err)
		}
	}
	bad := []string{"", "Site-1", "site_1", "-a", "a-", ".a", "a.", "a..b", "site 1", "ca", strings.Repeat("x", 65), "a/b", "é"}
	for _, n := range bad {
		if err := ValidateName(n); err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error", n)
		}
	}
}

func TestCreateLayoutModesAndLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	names := []string{"aggregator", "site-1", "site-2"}
	w, err := Create(dir, names, Options{Hosts: []string{"127.0.0.1", "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Parties) != 3 {
		t.Fatalf("issued %d parties, want 3", len(w.Parties))
	}
	const absent = fs.ModeIrregular
	wantMode := map[string]fs.FileMode{
		".":                          0o700,
		"ca":                         0o700,
		"ca/" + CAKeyFile:            0o600,
		"ca/" + CACertFile:           0o644,
		"site-1":                     0o700,
		"site-1/" + PartyKeyFile:     0o600,
		"site-1/" + PartyCertFile:    0o644,
		"site-1/" + CACertFile:       0o644,
		"aggregator/" + PartyKeyFile: 0o600,
		"site-2/" + CAKeyFile:        absent, // the CA key is only in ca/
	}
	for rel, mode := range wantMode {
		st, err := os.Stat(filepath.Join(dir, rel))
		if mode == absent {
			if err == nil {
				t.Errorf("%s exists; the CA key must only be in ca/", rel)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %04o, want %04o", rel, st.Mode().Perm(), mode)
		}
	}
	// No temporary files left behind.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if strings.HasPrefix(d.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
	for _, n := range names {
		p, err := LoadParty(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != n {
			t.Errorf("loaded party %q from %s", p.Name, n)
		}
		leaf := p.Certificate.Leaf
		if leaf.Subject.CommonName != n || !contains(leaf.DNSNames, n+".dplearn.invalid") || !contains(leaf.DNSNames, "localhost") || len(leaf.IPAddresses) != 1 {
			t.Errorf("%s: CN %q, DNS %v, IP %v", n, leaf.Subject.CommonName, leaf.DNSNames, leaf.IPAddresses)
		}
		life := leaf.NotAfter.Sub(leaf.NotBefore)
		if life < DefaultValidity || life > DefaultValidity+time.Hour {
			t.Errorf("%s: validity %v, want about %v", n, life, DefaultValidity)
		}
	}
	if _, err := LoadCA(filepath.Join(dir, "ca")); err != nil {
		t.Fatal(err)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestCreateRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir, []string{"aggregator", "site-1"}, Options{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "ca", CAKeyFile))
	_, err := Create(dir, []string{"aggregator", "site-1"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("second Create: %v, want a refusal", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "ca", CAKeyFile))
	if string(before) != string(after) {
		t.Fatal("the CA key changed")
	}
	// A party directory in the way is refused before anything is written.
	dir2 := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir2, "site-2"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir2, []string{"aggregator", "site-2"}, Options{}); err == nil {
		t.Fatal("Create over an existing party directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir2, "ca")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a refused Create wrote the CA")
	}
	// writeNew itself never replaces a file.
	p := filepath.Join(t.TempDir(), "f")
	if err := writeNew(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeNew(p, []byte("two"), 0o600); err == nil {
		t.Fatal("writeNew replaced an existing file")
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Fatalf("file now holds %q", b)
	}
}

func TestCreateRejectsBadInput(t *testing.T) {
	cases := []struct {
		names []string
		opt   Options
	}{
		{nil, Options{}},
		{[]string{"a", "a"}, Options{}},
		{[]string{"Site"}, Options{}},
		{[]string{"ca"}, Options{}},
		{[]string{"a"}, Options{Validity: time.Minute}},
		{[]string{"a"}, Options{Hosts: []string{"x.dplearn.invalid"}}},
	}
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), "out")
		if _, err := Create(dir, c.names, c.opt); err == nil {
			t.Errorf("Create(%v, %+v) succeeded", c.names, c.opt)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("Create(%v, %+v) failed but made %s", c.names, c.opt, dir)
		}
	}
}

func TestAddLaterParty(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir, []string{"aggregator", "site-1"}, Options{}); err != nil {
		t.Fatal(err)
	}
	oldCert, _ := os.ReadFile(filepath.Join(dir, "site-1", PartyCertFile))
	w, err := Add(dir, "site-4", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Parties) != 1 || w.Parties[0].Name != "site-4" {
		t.Fatalf("Add wrote %+v", w.Parties)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "site-1", PartyCertFile)); string(b) != string(oldCert) {
		t.Fatal("Add changed another party's certificate")
	}
	agg, err := LoadParty(filepath.Join(dir, "aggregator"))
	if err != nil {
		t.Fatal(err)
	}
	s4, err := LoadParty(filepath.Join(dir, "site-4"))
	if err != nil {
		t.Fatal(err)
	}
	// The new party and an old one complete a mutual TLS handshake.
	got, err := handshake(t, agg, s4, "aggregator")
	if err != nil {
		t.Fatal(err)
	}
	if got != "site-4" {
		t.Fatalf("server saw client %q", got)
	}
	if _, err := Add(dir, "site-4", Options{}); err == nil {
		t.Fatal("adding site-4 twice succeeded")
	}
	if _, err := Add(t.TempDir(), "site-5", Options{}); err == nil {
		t.Fatal("Add without a CA succeeded")
	}
}

func TestExpiryCappedAtCA(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewCA(Options{Validity: 48 * time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	is, err := ca.Issue("site-1", Options{Validity: 365 * 24 * time.Hour, Now: func() time.Time { return now.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if !is.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Fatalf("party expires %v, CA %v", is.Cert.NotAfter, ca.Cert.NotAfter)
	}
	if _, err := ca.Issue("site-2", Options{Now: func() time.Time { return now.Add(72 * time.Hour) }}); err == nil {
		t.Fatal("an expired CA issued a certificate")
	}
}

func TestLoadRefusesReadableKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir, []string{"site-1"}, Options{}); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "site-1", PartyKeyFile)
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadParty(filepath.Join(dir, "site-1")); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("LoadParty with a 0644 key: %v", err)
	}
}

func TestNewPartyRefusesOtherCA(t *testing.T) {
	ca1, _ := NewCA(Options{})
	ca2, _ := NewCA(Options{})
	is, err := ca1.Issue("site-1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewParty(is.CertPEM, is.KeyPEM, ca2.CertPEM()); err == nil {
		t.Fatal("a certificate was accepted under another CA")
	}
	other, _ := ca1.Issue("site-2", Options{})
	if _, err := NewParty(is.CertPEM, other.KeyPEM, ca1.CertPEM()); err == nil {
		t.Fatal("a certificate was accepted with another party's key")
	}
}

func TestNameOfRule(t *testing.T) {
	mk := func(cn string, dns ...string) *x509.Certificate {
		c := &x509.Certificate{DNSNames: dns}
		c.Subject.CommonName = cn
		return c
	}
	if n, err := NameOf(mk("site-1", "site-1.dplearn.invalid", "localhost")); err != nil || n != "site-1" {
		t.Errorf("NameOf = %q, %v", n, err)
	}
	for _, c := range []*x509.Certificate{
		mk("site-1"),                                      // no SAN
		mk("site-1", "site-1"),                            // SAN without marker
		mk("site-2", "site-1.dplearn.invalid"),            // CN disagrees
		mk("a", "a.dplearn.invalid", "b.dplearn.invalid"), // two names
		mk("Bad", "Bad.dplearn.invalid"),                  // invalid name
	} {
		if n, err := NameOf(c); err == nil {
			t.Errorf("NameOf(CN %q, DNS %v) = %q, want an error", c.Subject.CommonName, c.DNSNames, n)
		}
	}
}

// handshake runs a TLS handshake over an in-memory pipe between server
// (with ServerTLS) and client (with ClientTLS(serverName)) and returns the
// client's party name as the server sees it.
func handshake(t *testing.T, server, client *Party, serverName string) (string, error) {
	t.Helper()
	return handshakeConfigs(t, server.ServerTLS(), mustClientTLS(t, client, serverName))
}

func mustClientTLS(t *testing.T, p *Party, server string) *tls.Config {
	t.Helper()
	cfg, err := p.ClientTLS(server)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func handshakeConfigs(t *testing.T, scfg, ccfg *tls.Config) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	type res struct {
		name string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		s := tls.Server(a, scfg)
		err := s.HandshakeContext(ctx)
		if err != nil {
			a.Close()
			ch <- res{err: err}
			return
		}
		n, err := PeerName(s.ConnectionState())
		// Read so that the client's TLS 1.3 post-handshake processing of the
		// server's verdict on its certificate completes.
		_ = s.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = s.Read(make([]byte, 1))
		ch <- res{n, err}
	}()
	c := tls.Client(b, ccfg)
	cerr := c.HandshakeContext(ctx)
	if cerr == nil {
		// In TLS 1.3 the server verifies the client's certificate after the
		// client's handshake returns; a read surfaces its alert.
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, rerr := c.Read(make([]byte, 1))
		var ne net.Error
		if rerr != nil && !(errors.As(rerr, &ne) && ne.Timeout()) && !errors.Is(rerr, os.ErrDeadlineExceeded) {
			cerr = rerr
		}
	}
	if cerr != nil {
		b.Close()
	}
	r := <-ch
	if r.err != nil {
		return "", r.err
	}
	if cerr != nil {
		return "", cerr
	}
	return r.name, nil
}

func TestTLSMutualAuthentication(t *testing.T) {
	ca, err := NewCA(Options{})
	if err != nil {
		t.Fatal(err)
	}
	agg, _ := ca.IssueParty("aggregator", Options{})
	s1, _ := ca.IssueParty("site-1", Options{})
	other, _ := NewCA(Options{})
	stranger, _ := other.IssueParty("site-1", Options{})
	fakeAgg, _ := other.IssueParty("aggregator", Options{})

	if n, err := handshake(t, agg, s1, "aggregator"); err != nil || n != "site-1" {
		t.Fatalf("good handshake: %q, %v", n, err)
	}
	if _, err := handshake(t, agg, stranger, "aggregator"); err == nil {
		t.Error("a client certificate from another CA was accepted")
	}
	if _, err := handshake(t, fakeAgg, s1, "aggregator"); err == nil {
		t.Error("a server certificate from another CA was accepted")
	}
	// site-1 serving with its own (valid) certificate is not the aggregator.
	if _, err := handshake(t, s1, agg, "aggregator"); err == nil {
		t.Error("the client accepted a server with the wrong party name")
	}
	// A client that forces its other-CA certificate on the server (Go's
	// client would not offer it) fails verification.
	ccfg := mustClientTLS(t, s1, "aggregator")
	ccfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger.Certificate, nil }
	if _, err := handshakeConfigs(t, agg.ServerTLS(), ccfg); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("a forced certificate from another CA: %v", err)
	}
	// TLS 1.2 is refused.
	ccfg = mustClientTLS(t, s1, "aggregator")
	ccfg.MinVersion, ccfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	if _, err := handshakeConfigs(t, agg.ServerTLS(), ccfg); err == nil {
		t.Error("a TLS 1.2 client was accepted")
	}
	// A client without a certificate is refused.
	ccfg = mustClientTLS(t, s1, "aggregator")
	ccfg.Certificates = nil
	if _, err := handshakeConfigs(t, agg.ServerTLS(), ccfg); err == nil {
		t.Error("a client without a certificate was accepted")
	}
}

// TestLoadRefusesWritablePlaces: LoadParty and LoadCA apply ssh's rule to
// the trust material they read. A party directory, certificate or CA
// certificate that group or others can write to is refused (another local
// user could swap ca.crt for their own CA's and pose as the aggregator), as
// is a key they can read, a file reached through a symbolic link into a
// writable directory, and a CA directory open to writing; each error names
// the chmod that fixes it. The modes the writers produce, and a 0755
// directory, are accepted.
func TestLoadRefusesWritablePlaces(t *testing.T) {
	root := t.TempDir()
	if _, err := Create(filepath.Join(root, "pki"), []string{"site-1"}, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		target string // relative to the copied pki directory
		mode   os.FileMode
		link   bool // replace target by a symlink to a copy in a 0777 directory
		want   string
	}{
		{name: "as written", target: ""},
		{name: "party dir 0755", target: "site-1", mode: 0o755},
		{name: "party dir 0777", target: "site-1", mode: 0o777, want: "chmod 700 {dir}"},
		{name: "party dir 0770", target: "site-1", mode: 0o770, want: "chmod 700 {dir}"},
		{name: "party dir 0702", target: "site-1", mode: 0o702, want: "chmod 700 {dir}"},
		{name: "ca.crt 0666", target: "site-1/ca.crt", mode: 0o666, want: "chmod go-w {file}"},
		{name: "ca.crt 0664", target: "site-1/ca.crt", mode: 0o664, want: "chmod go-w {file}"},
		{name: "party.crt 0666", target: "site-1/party.crt", mode: 0o666, want: "chmod go-w {file}"},
		{name: "party.key 0640", target: "site-1/party.key", mode: 0o640, want: "chmod 600 {file}"},
		{name: "party.key 0620", target: "site-1/party.key", mode: 0o620, want: "chmod 600 {file}"},
		{name: "ca.crt via a link into a 0777 dir", target: "site-1/ca.crt", link: true, want: "chmod 700"},
		{name: "CA dir 0777", target: "ca", mode: 0o777, want: "chmod 700 {dir}"},
		{name: "CA key 0644", target: "ca/ca.key", mode: 0o644, want: "chmod 600 {file}"},
		{name: "CA cert 0646", target: "ca/ca.crt", mode: 0o646, want: "chmod go-w {file}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pki := filepath.Join(t.TempDir(), "pki")
			copyTree(t, filepath.Join(root, "pki"), pki)
			target := filepath.Join(pki, tc.target)
			if tc.link {
				open := filepath.Join(t.TempDir(), "open")
				if err := os.Mkdir(open, 0o700); err != nil {
					t.Fatal(err)
				}
				moved := filepath.Join(open, filepath.Base(target))
				if err := os.Rename(target, moved); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(moved, target); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(open, 0o777); err != nil {
					t.Fatal(err)
				}
			} else if tc.target != "" {
				if err := os.Chmod(target, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if strings.HasPrefix(tc.target, "ca") {
				_, err = LoadCA(filepath.Join(pki, "ca"))
			} else {
				_, err = LoadParty(filepath.Join(pki, "site-1"))
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			want := strings.NewReplacer("{dir}", target, "{file}", target).Replace(tc.want)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v; want one naming %q", err, want)
			}
		})
	}
}

// copyTree copies the regular files and directories under src to dst,
// keeping their modes.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		st, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			if err := os.MkdirAll(out, 0o700); err != nil {
				return err
			}
			return os.Chmod(out, st.Mode().Perm())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, b, 0o600); err != nil {
			return err
		}
		return os.Chmod(out, st.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}
