package fileperm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/paillier/keyfile"
)

// TestKeyShareLoaderRule: keyfile.LoadKeyShare applies the same rule: a
// share in a directory group or others can write to (0777, 0770) is
// refused naming chmod 700 DIR, as is a public key file others can write
// to; the share as WriteKeyFiles made it loads. Before the rule, a share in
// a 0777 directory was accepted.
func TestKeyShareLoaderRule(t *testing.T) {
	tpk, shares, err := pailliertest.ThresholdKey(2048, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "keys")
	pub, paths, err := keyfile.WriteKeyFiles(dir, tpk, shares, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyfile.LoadKeyShare(paths[0]); err != nil {
		t.Fatalf("share as written refused: %v", err)
	}
	for _, mode := range []os.FileMode{0o777, 0o770, 0o703} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := keyfile.LoadKeyShare(paths[0])
		if want := "chmod 700 " + dir; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("share in a %#o directory: %v; want an error naming %q", mode, err, want)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(pub, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := keyfile.LoadThresholdPublicKey(pub); err == nil || !strings.Contains(err.Error(), "chmod go-w "+pub) {
		t.Errorf("public key of mode 0666: %v", err)
	}
}
