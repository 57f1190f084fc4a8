// Package keyfile reads and writes the key files of threshold Paillier:
// the public key and the parties' key shares as PEM files, with the
// permission rules a secret key needs (the shares private, in a private
// directory; the files checked on the open handle). Package paillier does
// the maths and the binary encoding; this package does the files.
package keyfile

import (
	"bytes"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dplearn/dplearn/internal/atomicfile"
	"github.com/dplearn/dplearn/internal/fileperm"
	"github.com/dplearn/dplearn/paillier"
)

// PEM block types of the key files. The block body is paillier's binary
// encoding (version 1); PEM headers are informational and ignored when
// reading.
const (
	PEMThresholdPublicKey = "DPLEARN PAILLIER THRESHOLD PUBLIC KEY"
	PEMKeyShare           = "DPLEARN PAILLIER KEY SHARE"
)

// File names written by WriteKeyFiles inside the output directory.
const (
	PublicKeyFile = "public.pem"
	shareFileFmt  = "share-%03d.pem"
)

// ShareFileName returns the file name of party i's share, "share-007.pem".
func ShareFileName(i int) string { return fmt.Sprintf(shareFileFmt, i) }

// EncodePublicKey returns the public key as a PEM block.
func EncodePublicKey(tpk *paillier.ThresholdPublicKey) ([]byte, error) {
	b, err := tpk.MarshalBinary()
	if err != nil {
		return nil, err
	}
	id := tpk.ID()
	return pem.EncodeToMemory(&pem.Block{
		Type: PEMThresholdPublicKey,
		Headers: map[string]string{
			"Modulus-Bits": strconv.Itoa(tpk.Bits()),
			"Parties":      strconv.Itoa(tpk.Parties()),
			"Threshold":    strconv.Itoa(tpk.Threshold()),
			"Key-ID":       hex.EncodeToString(id[:]),
		},
		Bytes: b,
	}), nil
}

// EncodeKeyShare returns the key share as a PEM block.
func EncodeKeyShare(ks *paillier.KeyShare) ([]byte, error) {
	b, err := ks.MarshalBinary()
	if err != nil {
		return nil, err
	}
	id := ks.PublicKey().ID()
	return pem.EncodeToMemory(&pem.Block{
		Type: PEMKeyShare,
		Headers: map[string]string{
			"Party":  strconv.Itoa(ks.Index()),
			"Key-ID": hex.EncodeToString(id[:]),
		},
		Bytes: b,
	}), nil
}

func decodePEM(data []byte, want string) ([]byte, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	if block.Type != want {
		return nil, fmt.Errorf("PEM block is %q, want %q", block.Type, want)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("data after the PEM block")
	}
	return block.Bytes, nil
}

// ParsePublicKey decodes a public key file.
func ParsePublicKey(data []byte) (*paillier.ThresholdPublicKey, error) {
	b, err := decodePEM(data, PEMThresholdPublicKey)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode threshold public key: %w", err)
	}
	return paillier.ParseThresholdPublicKey(b)
}

// ParseKeyShare decodes a share file (and verifies the share).
func ParseKeyShare(data []byte) (*paillier.KeyShare, error) {
	b, err := decodePEM(data, PEMKeyShare)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode key share: %w", err)
	}
	return paillier.ParseKeyShare(b)
}

// MaxKeyFileBytes bounds the size of the key files that LoadKeyShare and
// LoadThresholdPublicKey read: the largest legitimate file (an 8192-bit
// key with MaxParties verification keys, base64 in PEM) is under 3 MiB.
const MaxKeyFileBytes = 4 << 20

// readKeyFile reads a key file through fileperm.ReadFile: its directories
// and the file itself pass the loaders' rule (shared with certs), it is
// checked on the open handle (fstat, not a second lookup of the path that
// another process could swap in between) to be a regular file of at most
// MaxKeyFileBytes bytes, and, if private, group and others have no
// permission on it.
func readKeyFile(path string, private bool) ([]byte, error) {
	return fileperm.ReadFile(path, private, MaxKeyFileBytes)
}

// LoadThresholdPublicKey reads a public key file (a regular file of at most
// MaxKeyFileBytes bytes).
func LoadThresholdPublicKey(path string) (*paillier.ThresholdPublicKey, error) {
	data, err := readKeyFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("paillier: read public key: %w", err)
	}
	tpk, err := ParsePublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return tpk, nil
}

// LoadKeyShare reads a share file. Like ssh with private keys, it refuses a
// file that group or others may read or write; the file is opened once and
// its mode, type (regular) and size (at most MaxKeyFileBytes) are checked on
// the open handle, so the file checked is the file read.
func LoadKeyShare(path string) (*paillier.KeyShare, error) {
	data, err := readKeyFile(path, true)
	if err != nil {
		return nil, fmt.Errorf("paillier: read key share: %w", err)
	}
	ks, err := ParseKeyShare(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return ks, nil
}

// WriteKeyFiles writes the public key (mode 0644) and one share file per
// party (mode 0600) into dir, created with mode 0700 if missing. A
// directory that exists already must be private too: if group or others
// have any permission on it (mode & 0077 != 0) it is refused, since they
// could list, replace or (if writable) swap the share files. The directory
// is opened once (os.Root) and checked and written through that handle, so
// files cannot be redirected elsewhere by symbolic links or by renaming the
// directory after the check. Existing files are an error unless overwrite
// is set. Each file is replaced atomically (writeFileMode): a failed or
// interrupted run leaves every file either old or complete and new. It
// returns the paths written.
func WriteKeyFiles(dir string, tpk *paillier.ThresholdPublicKey, shares []*paillier.KeyShare, overwrite bool) (publicPath string, sharePaths []string, err error) {
	if tpk == nil || len(shares) != tpk.Parties() {
		return "", nil, errors.New("paillier: write keys: shares do not match the public key")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("paillier: write keys: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", nil, fmt.Errorf("paillier: write keys: %w", err)
	}
	defer root.Close()
	st, err := root.Stat(".")
	if err != nil {
		return "", nil, fmt.Errorf("paillier: write keys: %w", err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", nil, fmt.Errorf("paillier: write keys: directory %s has mode %#o; key shares need a private directory (chmod 700 %s, or choose a new directory)", dir, perm, dir)
	}
	publicPath = filepath.Join(dir, PublicKeyFile)
	pubPEM, err := EncodePublicKey(tpk)
	if err != nil {
		return "", nil, fmt.Errorf("paillier: write keys: %w", err)
	}
	if err := writeFileMode(root, PublicKeyFile, publicPath, pubPEM, 0o644, overwrite); err != nil {
		return "", nil, fmt.Errorf("paillier: write keys: %w", err)
	}
	for _, ks := range shares {
		if ks == nil || ks.PublicKey() == nil || ks.PublicKey().ID() != tpk.ID() {
			return "", nil, fmt.Errorf("paillier: write keys: share %v belongs to another key", ks)
		}
		data, err := EncodeKeyShare(ks)
		if err != nil {
			return "", nil, fmt.Errorf("paillier: write keys: %w", err)
		}
		name := ShareFileName(ks.Index())
		p := filepath.Join(dir, name)
		if err := writeFileMode(root, name, p, data, 0o600, overwrite); err != nil {
			return "", nil, fmt.Errorf("paillier: write keys: %w", err)
		}
		sharePaths = append(sharePaths, p)
	}
	return publicPath, sharePaths, nil
}

// writeFileMode writes name in root with exactly mode (regardless of
// umask) through internal/atomicfile: a temporary file beside it, fsynced,
// then renamed over it (overwrite) or hard-linked to it (otherwise, which
// refuses an existing file). A failure or a crash at any point leaves the
// old file, or no file, never a partial share. path is the name reported
// in errors.
func writeFileMode(root *os.Root, name, path string, data []byte, mode os.FileMode, overwrite bool) error {
	write := atomicfile.WriteNewIn
	if overwrite {
		write = atomicfile.WriteFileIn
	}
	if err := write(root, name, data, mode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists (refusing to overwrite key material)", path)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
