// Package fileperm holds the one rule by which dplearn's loaders decide
// whether a file of trust material (a certificate, the CA certificate that
// anchors trust, a private key, a key share) may be believed, as ssh does
// with its keys (StrictModes):
//
//   - the file and the directory holding it (and, if the path goes through
//     symbolic links, the directory of the file they lead to) must not be
//     writable by group or others: whoever can write there can replace the
//     file, e.g. swap the CA certificate for their own and impersonate the
//     aggregator to this party;
//   - they must be owned by the user running dplearn or by root: an owner
//     can always change the mode back;
//   - a private file (a key) must also not be readable by group or others.
//
// The writers (certs.Create, keyfile.WriteKeyFiles) already produce
// directories of mode 0700, keys of 0600 and certificates of 0644; the
// loaders refuse anything looser, naming the command that fixes it (chmod
// 700 DIR, chmod 600 FILE, chmod go-w FILE). On Windows, where these mode
// bits do not describe the access rules, nothing is checked.
package fileperm

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Modes the rule forbids.
const (
	// Writable is the group and other write bits: forbidden on every file
	// and directory of trust material.
	Writable fs.FileMode = 0o022
	// Private is every group and other bit: forbidden on private files.
	Private fs.FileMode = 0o077
)

// checked reports whether this system's mode bits are checked.
func checked() bool { return runtime.GOOS != "windows" && runtime.GOOS != "plan9" }

// CheckDir refuses dir if group or others can write to it or it is owned
// by another user (not root). The error names the fix (chmod 700 DIR).
func CheckDir(dir string) error {
	if !checked() {
		return nil
	}
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if perm := st.Mode().Perm(); perm&Writable != 0 {
		return fmt.Errorf("directory %s has mode %04o: group or others can write to it and replace the files in it (a certificate, the CA certificate, a key); fix with: chmod 700 %s", dir, perm, dir)
	}
	return checkOwner(dir, st, "directory")
}

// CheckFile refuses the file described by st (at path) if group or others
// can write to it, if private and group or others can read it, or if it
// is owned by another user (not root). The error names the fix.
func CheckFile(path string, st fs.FileInfo, private bool) error {
	if !checked() {
		return nil
	}
	perm := st.Mode().Perm()
	switch {
	case private && perm&Private != 0:
		return fmt.Errorf("%s has mode %04o: it must be private (a key: readable and writable by its owner only); fix with: chmod 600 %s", path, perm, path)
	case perm&Writable != 0:
		return fmt.Errorf("%s has mode %04o: group or others can write to it and replace its contents; fix with: chmod go-w %s", path, perm, path)
	}
	return checkOwner(path, st, "file")
}

// CheckDirsOf checks (CheckDir) the directory holding path and, if path
// goes through symbolic links, the directory holding the file they lead
// to.
func CheckDirsOf(path string) error {
	dirs := []string{filepath.Dir(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Dir(real) != filepath.Clean(dirs[0]) {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, d := range dirs {
		if err := CheckDir(d); err != nil {
			return err
		}
	}
	return nil
}

// ReadFile reads a file of trust material: it checks the directories
// holding it (CheckDirsOf), opens it once and checks on the open handle
// (fstat, so the file checked is the file read) that it is a regular file
// of at most max bytes passing CheckFile, and reads it.
func ReadFile(path string, private bool, max int64) ([]byte, error) {
	if err := CheckDirsOf(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v)", path, st.Mode().Type())
	}
	if err := CheckFile(path, st, private); err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s has %d bytes, more than the %d expected at most", path, st.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, errors.New(path + " grew past the size expected while being read")
	}
	return data, nil
}
