package certs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/dplearn/dplearn/internal/atomicfile"
	"github.com/dplearn/dplearn/internal/fileperm"
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

// maxPEMFile bounds a certificate or key file (a few KiB in practice).
const maxPEMFile = 1 << 20

// readTrusted reads one file of the layout by the loaders' rule (package
// internal/fileperm, as ssh does): the file and its directory must not be
// writable by group or others nor owned by another user, and a private key
// must not be readable by them either; the error names the fix.
func readTrusted(path string, private bool) ([]byte, error) {
	b, err := fileperm.ReadFile(path, private, maxPEMFile)
	if err != nil {
		return nil, fmt.Errorf("certs: refusing %s: %w", path, err)
	}
	return b, nil
}

// LoadCA reads a CA from caDir (ca.crt and ca.key). Like LoadParty it
// refuses a directory or file that group or others can write to, or a key
// file they can read.
func LoadCA(caDir string) (*CA, error) {
	certPEM, err := readTrusted(filepath.Join(caDir, CACertFile), false)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readTrusted(filepath.Join(caDir, CAKeyFile), true)
	if err != nil {
		return nil, err
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, caDir)
	}
	return ca, nil
}

// LoadParty reads a party's identity from its directory (party.crt,
// party.key, ca.crt; see the package documentation). As ssh does with its
// keys, it refuses a directory or file that group or others can write to
// (they could swap ca.crt, the trust anchor, for their own CA's and pose as
// the aggregator, or replace the party's certificate and key), one owned by
// another user (not root), and a key file group or others can read, each
// with the fix in the error (chmod 700 DIR, chmod go-w FILE, chmod 600
// KEY). It also refuses a certificate that is expired, not yet valid, not
// signed by the CA, or without a party name.
func LoadParty(dir string) (*Party, error) {
	certPEM, err := readTrusted(filepath.Join(dir, PartyCertFile), false)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readTrusted(filepath.Join(dir, PartyKeyFile), true)
	if err != nil {
		return nil, err
	}
	caPEM, err := readTrusted(filepath.Join(dir, CACertFile), false)
	if err != nil {
		return nil, err
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
// ever replacing an existing file (internal/atomicfile.WriteNew: a
// temporary file in the same directory, synced, hard-linked to path).
func writeNew(path string, data []byte, mode os.FileMode) error {
	if err := atomicfile.WriteNew(path, data, mode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("certs: %s exists; refusing to overwrite", path)
		}
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}
