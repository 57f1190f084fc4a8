package keyfile

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dplearn/dplearn/internal/pailliertest"
)

// overwriteChildEnv names the key directory the child process of
// TestOverwriteFailureKeepsOldFiles overwrites under a file size limit.
const overwriteChildEnv = "DPLEARN_KEYFILE_OVERWRITE_CHILD"

// TestOverwriteFailureKeepsOldFiles: a WriteKeyFiles(…, overwrite) whose
// writes fail leaves every old key file byte for byte as it was, and no
// temporary file. The writes fail for real: a child process (this test
// binary re-run) lowers its file size limit (RLIMIT_FSIZE, 100 bytes) so
// that each write past 100 bytes fails with EFBIG, as a full disk would.
// Writing in place (O_TRUNC, then write) left the public key truncated to
// its first 100 bytes.
func TestOverwriteFailureKeepsOldFiles(t *testing.T) {
	if dir := os.Getenv(overwriteChildEnv); dir != "" {
		overwriteUnderLimit(dir)
		return
	}
	tpk, shares := deal(t, 3, 2)
	dir := filepath.Join(t.TempDir(), "keys")
	if _, _, err := WriteKeyFiles(dir, tpk, shares, false); err != nil {
		t.Fatal(err)
	}
	old := readDir(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestOverwriteFailureKeepsOldFiles$")
	cmd.Env = append(os.Environ(), overwriteChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "WriteKeyFiles failed:") || !strings.Contains(string(out), "file too large") {
		t.Fatalf("child: %v; want a WriteKeyFiles failure with EFBIG:\n%s", err, out)
	}
	now := readDir(t, dir)
	if len(now) != len(old) {
		t.Errorf("directory holds %d files after the failed overwrite, want the %d old ones: %v", len(now), len(old), keys(now))
	}
	for name, b := range old {
		if !bytes.Equal(now[name], b) {
			t.Errorf("%s changed by the failed overwrite: %d bytes, was %d", name, len(now[name]), len(b))
		}
	}
}

// overwriteUnderLimit is the child: it overwrites dir's keys (a new
// dealing) with a 100-byte file size limit and prints the error.
func overwriteUnderLimit(dir string) {
	tpk, shares, err := pailliertest.ThresholdKey(2048, 3, 2)
	if err != nil {
		fmt.Println("deal:", err)
		os.Exit(1)
	}
	// Go ignores SIGXFSZ, so a write past the limit returns EFBIG.
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 100, Max: 100}); err != nil {
		fmt.Println("setrlimit:", err)
		os.Exit(1)
	}
	if _, _, err := WriteKeyFiles(dir, tpk, shares, true); err != nil {
		fmt.Println("WriteKeyFiles failed:", err)
		return
	}
	fmt.Println("WriteKeyFiles succeeded under a 100-byte file size limit")
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
