package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeygenChecksOutBeforePrimes runs keygen without --primes under an
// already cancelled context: prime generation would fail with the
// cancellation, so an error naming --out proves the directory was checked
// first, and no progress of the prime search reached stderr.
func TestKeygenChecksOutBeforePrimes(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "afile")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(base, "loose")
	if err := os.Mkdir(loose, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	used := filepath.Join(base, "used")
	if err := os.Mkdir(used, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(used, "share-002.pem"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, out, want string
	}{
		{"a file", file, "is not a directory"},
		{"a loose directory", loose, "has mode 0755"},
		{"old key files", used, "share-002.pem already exists"},
		{"parent is a file", filepath.Join(file, "keys"), "cannot create the directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			cmd := newRootCmd()
			var out, errb bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			cmd.SetArgs([]string{"dppp", "keygen", "--parties", "3", "--threshold", "2", "--bits", "2048", "--out", c.out})
			err := cmd.ExecuteContext(ctx)
			if err == nil || !strings.Contains(err.Error(), "--out") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an --out error containing %q", err, c.want)
			}
			if errb.Len() != 0 {
				t.Fatalf("stderr before the check failed: %q", errb.String())
			}
		})
	}
	// A good new directory passes the check and is created private.
	fresh := filepath.Join(base, "fresh")
	if err := checkKeygenDir(fresh, 3, false); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(fresh)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("fresh dir: %v %v", st, err)
	}
	if err := checkKeygenDir(used, 3, true); err != nil {
		t.Fatalf("--force with old key files: %v", err)
	}
}
