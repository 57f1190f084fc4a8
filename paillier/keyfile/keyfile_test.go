package keyfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/paillier"
)

// deal returns a 2048-bit test key (fixture primes) with the shares.
func deal(t testing.TB, parties, threshold int) (*paillier.ThresholdPublicKey, []*paillier.KeyShare) {
	t.Helper()
	tpk, shares, err := pailliertest.ThresholdKey(2048, parties, threshold)
	if err != nil {
		t.Fatal(err)
	}
	return tpk, shares
}

func TestKeyFilesRoundTrip(t *testing.T) {
	fxTPK, fxShares := deal(t, 3, 2)
	dir := filepath.Join(t.TempDir(), "keys")
	pubPath, sharePaths, err := WriteKeyFiles(dir, fxTPK, fxShares, false)
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
	if tpk.ID() != fxTPK.ID() {
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
		got, err := ks.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		want, err := fxShares[i].MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if ks.Index() != i+1 || !bytes.Equal(got, want) {
			t.Fatalf("share %d changed on disk", i+1)
		}
	}
	// Refuses to overwrite, unless asked.
	if _, _, err := WriteKeyFiles(dir, fxTPK, fxShares, false); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("overwrote existing keys: %v", err)
	}
	if _, _, err := WriteKeyFiles(dir, fxTPK, fxShares, true); err != nil {
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
	if _, err := ParseKeyShare(pubData); err == nil || !strings.Contains(err.Error(), "want \"DPLEARN PAILLIER KEY SHARE\"") {
		t.Fatalf("public key parsed as a share: %v", err)
	}
	if _, err := ParsePublicKey(append(pubData, []byte("junk")...)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

// TestKeyFilesRefuseLooseDirectory: an existing output directory on which
// group or others have any permission is refused, naming it and its mode;
// a private one is used. Before, WriteKeyFiles wrote shares into any
// existing directory.
func TestKeyFilesRefuseLooseDirectory(t *testing.T) {
	tpk, shares := deal(t, 2, 2)
	for _, mode := range []os.FileMode{0o755, 0o750, 0o711, 0o707, 0o777} {
		dir := filepath.Join(t.TempDir(), "keys")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, _, err := WriteKeyFiles(dir, tpk, shares, false)
		want := fmt.Sprintf("directory %s has mode %#o", dir, mode)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mode %#o: %v, want an error mentioning %q", mode, err, want)
		}
		if names, _ := os.ReadDir(dir); len(names) != 0 {
			t.Errorf("mode %#o: wrote %d files into a loose directory", mode, len(names))
		}
	}
	dir := t.TempDir() // 0755 (testing makes it with 0777 &^ umask)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := WriteKeyFiles(dir, tpk, shares, false); err != nil {
		t.Fatalf("private existing directory refused: %v", err)
	}
}

// TestLoadKeyFileChecks: the loaders refuse non-regular and oversized files
// (checked on the open handle, with the read bounded), as well as shares
// with loose permissions.
func TestLoadKeyFileChecks(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.pem")
	f, err := os.OpenFile(big, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxKeyFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for name, load := range map[string]func(string) error{
		"share":  func(p string) error { _, err := LoadKeyShare(p); return err },
		"public": func(p string) error { _, err := LoadThresholdPublicKey(p); return err },
	} {
		if err := load(big); err == nil || !strings.Contains(err.Error(), "more than") {
			t.Errorf("%s: oversized file: %v", name, err)
		}
		if err := load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: directory: %v", name, err)
		}
		if err := load(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: missing file: %v", name, err)
		}
	}
}
