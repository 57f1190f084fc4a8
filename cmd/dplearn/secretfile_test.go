package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteSecretFile: --save-primes writes mode 0600, refuses an existing
// file without --force (leaving it as it was) and replaces it with --force.
func TestWriteSecretFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "primes.txt")
	steps := []struct {
		data    string
		force   bool
		wantErr bool
		want    string
	}{
		{"one", false, false, "one"},
		{"two", false, true, "one"},
		{"three", true, false, "three"},
	}
	for i, s := range steps {
		err := writeSecretFile(p, []byte(s.data), s.force)
		if (err != nil) != s.wantErr || (err != nil && !errors.Is(err, fs.ErrExist)) {
			t.Fatalf("step %d: err = %v, want error %v (fs.ErrExist)", i, err, s.wantErr)
		}
		b, _ := os.ReadFile(p)
		st, err := os.Stat(p)
		if err != nil || string(b) != s.want || st.Mode().Perm() != 0o600 {
			t.Fatalf("step %d: %q mode %v (%v), want %q mode 0600", i, b, st.Mode().Perm(), err, s.want)
		}
	}
}
