package paillier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyFilesRoundTrip(t *testing.T) {
	fx := newEncodingFixture(t)
	dir := filepath.Join(t.TempDir(), "keys")
	pubPath, sharePaths, err := WriteKeyFiles(dir, fx.tpk, fx.shares, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %#o, want 0700", st.Mode().Perm())
	}
	if st, _ := os.Stat(pubPath); st.Mode().Perm() != 0o644 {
		t.Fatalf("public key mode %#o, want 0644", st.Mode().Perm())
	}
	tpk, err := LoadThresholdPublicKey(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	if tpk.ID() != fx.tpk.ID() {
		t.Fatal("public key changed on disk")
	}
	for i, p := range sharePaths {
		if filepath.Base(p) != ShareFileName(i+1) {
			t.Fatalf("share file %s, want %s", p, ShareFileName(i+1))
		}
		st, _ := os.Stat(p)
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("%s mode %#o, want 0600", p, st.Mode().Perm())
		}
		ks, err := LoadKeyShare(p)
		if err != nil {
			t.Fatal(err)
		}
		if ks.Index() != i+1 || ks.s.Cmp(fx.shares[i].s) != 0 {
			t.Fatalf("share %d changed on disk", i+1)
		}
	}
	// Refuses to overwrite, unless asked.
	if _, _, err := WriteKeyFiles(dir, fx.tpk, fx.shares, false); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("overwrote existing keys: %v", err)
	}
	if _, _, err := WriteKeyFiles(dir, fx.tpk, fx.shares, true); err != nil {
		t.Fatal(err)
	}
	// A share readable by others is refused.
	if err := os.Chmod(sharePaths[0], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyShare(sharePaths[0]); err == nil || !strings.Contains(err.Error(), "must be private") {
		t.Fatalf("loaded a world-readable share: %v", err)
	}
	// A public key file is not a share file and vice versa.
	pubData, _ := os.ReadFile(pubPath)
	if _, err := ParseKeySharePEM(pubData); err == nil || !strings.Contains(err.Error(), "want \"DPLEARN PAILLIER KEY SHARE\"") {
		t.Fatalf("public key parsed as a share: %v", err)
	}
	if _, err := ParseThresholdPublicKeyPEM(append(pubData, []byte("junk")...)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

func TestSafePrimesFile(t *testing.T) {
	p, q := testPrimePair(2048)
	got1, got2, err := ParseSafePrimes(FormatSafePrimes(p, q))
	if err != nil || got1.Cmp(p) != 0 || got2.Cmp(q) != 0 {
		t.Fatalf("round trip: %v %v %v", got1, got2, err)
	}
	// openssl-style decimal, bare lines.
	got1, got2, err = ParseSafePrimes([]byte("\n" + p.String() + "\n" + q.String() + "\n"))
	if err != nil || got1.Cmp(p) != 0 || got2.Cmp(q) != 0 {
		t.Fatalf("decimal: %v", err)
	}
	bad := []struct{ in, want string }{
		{"p = 23\n", "want exactly 2"},
		{"p = 23\nq = 47\nr = 59\n", "unknown name"},
		{"p = 23\nq = 47\n83\n", "holds 3 integers"},
		{"p = zz\nq = 47\n", "not a positive integer"},
		{"p = -23\nq = 47\n", "not a positive integer"},
	}
	for _, tc := range bad {
		if _, _, err := ParseSafePrimes([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSafePrimes(%q) error %v, want %q", tc.in, err, tc.want)
		}
	}
}
