package certs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// File names of the layout (see the package documentation).
const (
	CACertFile    = "ca.crt"
	CAKeyFile     = "ca.key"
	PartyCertFile = "party.crt"
	PartyKeyFile  = "party.key"
)

// Written describes the files of one Create or Add.
type Written struct {
	// CADir is DIR/ca.
	CADir string
	// CA is the CA certificate.
	CA *Cert
	// Parties lists the parties issued, in the order given.
	Parties []IssuedParty
}

// Cert summarises a certificate for printing.
type Cert struct {
	Subject  string
	NotAfter time.Time
}

// IssuedParty is one party written to disk.
type IssuedParty struct {
	Name     string
	Dir      string // DIR/NAME: party.crt, party.key, ca.crt
	NotAfter time.Time
}

// Create makes a new CA and one certificate per name under dir (the layout
// of the package documentation). dir is created (mode 0700) if missing; it
// may exist if group and others cannot write to it, but Create refuses if
// dir/ca or any dir/NAME exists, or if a name is invalid or repeated.
// Nothing is overwritten.
func Create(dir string, names []string, opt Options) (*Written, error) {
	if len(names) == 0 {
		return nil, errors.New("certs: no party names")
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if err := ValidateName(n); err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, fmt.Errorf("certs: party name %q given twice", n)
		}
		seen[n] = true
	}
	if _, err := opt.validity(); err != nil {
		return nil, err
	}
	if _, _, err := opt.sans(); err != nil {
		return nil, err
	}
	for _, sub := range append([]string{caDirName}, names...) {
		p := filepath.Join(dir, sub)
		if _, err := os.Lstat(p); err == nil {
			if sub == caDirName {
				return nil, fmt.Errorf("certs: %s exists: a CA was already made there (add parties with 'dplearn certs add'); refusing to overwrite", p)
			}
			return nil, fmt.Errorf("certs: %s exists; refusing to overwrite", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("certs: %w", err)
		}
	}
	ca, err := NewCA(opt)
	if err != nil {
		return nil, err
	}
	issued := make([]*Issued, len(names))
	for i, n := range names {
		if issued[i], err = ca.Issue(n, opt); err != nil {
			return nil, err
		}
	}
	if err := mkdirPrivate(dir, true); err != nil {
		return nil, err
	}
	caKey, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	caDir := filepath.Join(dir, caDirName)
	if err := mkdirPrivate(caDir, false); err != nil {
		return nil, err
	}
	if err := writeNew(filepath.Join(caDir, CAKeyFile), caKey, 0o600); err != nil {
		return nil, err
	}
	if err := writeNew(filepath.Join(caDir, CACertFile), ca.pem, 0o644); err != nil {
		return nil, err
	}
	w := &Written{CADir: caDir, CA: &Cert{Subject: ca.Cert.Subject.CommonName, NotAfter: ca.Cert.NotAfter}}
	for _, is := range issued {
		ip, err := writeParty(dir, is, ca.pem)
		if err != nil {
			return nil, err
		}
		w.Parties = append(w.Parties, ip)
	}
	return w, nil
}

// Add issues a certificate for one more party under the CA in dir/ca
// (made by Create), without touching the others, and writes it to
// dir/NAME. It refuses if dir/NAME exists.
func Add(dir, name string, opt Options) (*Written, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	ca, err := LoadCA(filepath.Join(dir, caDirName))
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, name)
	if _, err := os.Lstat(p); err == nil {
		return nil, fmt.Errorf("certs: %s exists; refusing to overwrite (a party keeps its name; pick a new one)", p)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("certs: %w", err)
	}
	is, err := ca.Issue(name, opt)
	if err != nil {
		return nil, err
	}
	ip, err := writeParty(dir, is, ca.pem)
	if err != nil {
		return nil, err
	}
	return &Written{
		CADir:   filepath.Join(dir, caDirName),
		CA:      &Cert{Subject: ca.Cert.Subject.CommonName, NotAfter: ca.Cert.NotAfter},
		Parties: []IssuedParty{ip},
	}, nil
}

// LoadCA reads a CA from caDir (ca.crt and ca.key). It refuses a key file
// readable by group or others.
func LoadCA(caDir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(caDir, CACertFile))
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	keyPath := filepath.Join(caDir, CAKeyFile)
	if err := checkPrivate(keyPath); err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, caDir)
	}
	return ca, nil
}

// LoadParty reads a party's identity from its directory (party.crt,
// party.key, ca.crt; see the package documentation). It refuses a key file
// readable by group or others, and a certificate that is expired, not yet
// valid, not signed by the CA, or without a party name.
func LoadParty(dir string) (*Party, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, PartyCertFile))
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	keyPath := filepath.Join(dir, PartyKeyFile)
	if err := checkPrivate(keyPath); err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	p, err := NewParty(certPEM, keyPEM, caPEM)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, dir)
	}
	return p, nil
}

func writeParty(dir string, is *Issued, caPEM []byte) (IssuedParty, error) {
	pd := filepath.Join(dir, is.Name)
	if err := mkdirPrivate(pd, false); err != nil {
		return IssuedParty{}, err
	}
	if err := writeNew(filepath.Join(pd, PartyKeyFile), is.KeyPEM, 0o600); err != nil {
		return IssuedParty{}, err
	}
	if err := writeNew(filepath.Join(pd, PartyCertFile), is.CertPEM, 0o644); err != nil {
		return IssuedParty{}, err
	}
	if err := writeNew(filepath.Join(pd, CACertFile), caPEM, 0o644); err != nil {
		return IssuedParty{}, err
	}
	return IssuedParty{Name: is.Name, Dir: pd, NotAfter: is.Cert.NotAfter}, nil
}

// mkdirPrivate creates dir with mode 0700. If mayExist, an existing
// directory is accepted as it is.
func mkdirPrivate(dir string, mayExist bool) error {
	if mayExist {
		if st, err := os.Stat(dir); err == nil {
			if !st.IsDir() {
				return fmt.Errorf("certs: %s is not a directory", dir)
			}
			if runtime.GOOS != "windows" && st.Mode().Perm()&0o022 != 0 {
				return fmt.Errorf("certs: %s is writable by group or others (mode %04o): they could replace the certificates; use a new directory or chmod go-w %s", dir, st.Mode().Perm(), dir)
			}
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return fmt.Errorf("certs: %w", err)
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("certs: %s exists; refusing to overwrite", dir)
		}
		return fmt.Errorf("certs: %w", err)
	}
	// The umask can only have narrowed 0700; make it exact.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}

// writeNew writes data to path with the given mode, atomically and without
// ever replacing an existing file: a temporary file in the same directory is
// written, synced and hard-linked to path (link fails if path exists).
func writeNew(path string, data []byte, mode os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if rerr := os.Remove(tmp); rerr != nil && err == nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = fmt.Errorf("certs: %w", rerr)
		}
	}()
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("certs: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("certs: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("certs: close %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("certs: %s exists; refusing to overwrite", path)
		}
		return fmt.Errorf("certs: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: make the new name durable
		d.Close()
	}
	return nil
}

// checkPrivate refuses a private key file that group or others may read
// (on systems with Unix permissions).
func checkPrivate(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("certs: %s has mode %04o; a private key must be readable by its owner only (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	return nil
}
