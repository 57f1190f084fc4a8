package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dplearn/dplearn/paillier/keyfile"
)

// checkKeygenDir checks, before any prime is generated (minutes of work for
// 2048-bit keys), that the key files can be written into dir: it is a
// directory or can be created as one, only its owner can access it, it is
// writable, and it holds no key files of an earlier run unless force. It
// creates dir (mode 0700) when it is missing, as writing the keys would.
func checkKeygenDir(dir string, parties int, force bool) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("--out %s: cannot create the directory: %w", dir, err)
		}
	case err != nil:
		return fmt.Errorf("--out %s: cannot create the directory: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("--out %s: exists and is not a directory", dir)
	case st.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("--out: directory %s has mode %#o; key shares need a private directory (chmod 700 %s, or choose a new directory)", dir, st.Mode().Perm(), dir)
	}
	if !force {
		names := []string{keyfile.PublicKeyFile}
		for i := 1; i <= parties; i++ {
			names = append(names, keyfile.ShareFileName(i))
		}
		for _, n := range names {
			if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
				return fmt.Errorf("--out %s: %s already exists (pass --force to overwrite the key files, or choose a new directory)", dir, n)
			}
		}
	}
	f, err := os.CreateTemp(dir, ".keygen-check-*")
	if err != nil {
		return fmt.Errorf("--out %s: directory is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
