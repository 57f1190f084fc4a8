// Package atomicfile replaces files atomically: the content is written to a
// temporary file beside the target, made durable (fsync, final mode) by
// Prepare, and renamed over the target by Commit, after which the
// directory is fsynced. A process dying at any point leaves the old file or
// the new one, never a partial one. Between Prepare and Commit the caller
// may do what must happen before the content is published (charge a
// privacy ledger: the write-temp → fsync → charge → rename order).
//
// Temporary files are named .<name>.tmp<random> beside the target and hold
// an exclusive lock (internal/filelock) while their writer lives. A writer
// killed before Commit or Abort leaves its temporary file behind; Create
// removes every such file that is unlocked and older than StaleAge (the
// age covers the instant between a writer creating its file and locking
// it), and RemoveStale with age 0 removes every unlocked one, for callers
// that hold a lock excluding every other writer of the target.
//
// CreateIn, WriteFileIn and WriteNewIn do the same inside an *os.Root:
// every name (target, temporary file, directory to fsync) is resolved
// through the root, so a symbolic link or a renamed directory cannot send
// the content elsewhere.
package atomicfile

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dplearn/dplearn/internal/filelock"
)

// StaleAge is the age past which an unlocked temporary file is a dead
// writer's.
const StaleAge = time.Minute

// dirFS is where a File's names are resolved: the operating system's
// paths (osDir) or an *os.Root.
type dirFS interface {
	OpenFile(name string, flag int, perm os.FileMode) (*os.File, error)
	Stat(name string) (os.FileInfo, error)
	Lstat(name string) (os.FileInfo, error)
	Chmod(name string, mode os.FileMode) error
	Rename(oldname, newname string) error
	Link(oldname, newname string) error
	Remove(name string) error
}

// osDir resolves names as paths of the operating system.
type osDir struct{}

func (osDir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (osDir) Stat(name string) (os.FileInfo, error)     { return os.Stat(name) }
func (osDir) Lstat(name string) (os.FileInfo, error)    { return os.Lstat(name) }
func (osDir) Chmod(name string, mode os.FileMode) error { return os.Chmod(name, mode) }
func (osDir) Rename(oldname, newname string) error      { return os.Rename(oldname, newname) }
func (osDir) Link(oldname, newname string) error        { return os.Link(oldname, newname) }
func (osDir) Remove(name string) error                  { return os.Remove(name) }

// File is a temporary file that Commit renames over its target.
type File struct {
	d        dirFS
	f        *os.File
	tmp      string
	final    string
	perm     os.FileMode
	prepared bool
}

// Create starts replacing target (a regular file or a new one; the caller
// resolves symbolic links) with content of mode perm. It removes stale
// temporary files of target first.
func Create(target string, perm os.FileMode) (*File, error) {
	return create(osDir{}, target, perm)
}

// CreateIn is Create for the file name inside root (a name relative to
// root, resolved by it: it cannot escape root through ".." or a symbolic
// link).
func CreateIn(root *os.Root, name string, perm os.FileMode) (*File, error) {
	return create(root, name, perm)
}

func create(d dirFS, target string, perm os.FileMode) (*File, error) {
	dir := filepath.Dir(target)
	if st, err := d.Stat(dir); err != nil {
		return nil, fmt.Errorf("write %s: directory %s does not exist (%w)", target, dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("write %s: %s is not a directory", target, dir)
	}
	removeStale(d, target, StaleAge)
	f, tmp, err := createTemp(d, target)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", target, err)
	}
	// Held until Commit or Abort, and dropped by the system if this
	// process dies: an unlocked temporary file has no writer.
	if ok, err := filelock.TryLock(f); !ok || err != nil {
		f.Close()
		d.Remove(tmp)
		if err == nil {
			err = fmt.Errorf("locked by another process")
		}
		return nil, fmt.Errorf("write %s: lock temporary file: %w", target, err)
	}
	return &File{d: d, f: f, tmp: tmp, final: target, perm: perm}, nil
}

// createTemp creates a new file .<name>.tmp<random> beside target, mode
// 0600, as os.CreateTemp does.
func createTemp(d dirFS, target string) (*os.File, string, error) {
	prefix := filepath.Join(filepath.Dir(target), tempPrefix(target))
	for range 100 {
		name := prefix + rand.Text()
		f, err := d.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if os.IsExist(err) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("create a temporary file %s*: too many names taken", prefix)
}

func tempPrefix(target string) string { return "." + filepath.Base(target) + ".tmp" }

// RemoveStale removes the temporary files of target that are unlocked and
// at least age old.
func RemoveStale(target string, age time.Duration) { removeStale(osDir{}, target, age) }

func removeStale(d dirFS, target string, age time.Duration) {
	dir := filepath.Dir(target)
	df, err := d.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	names, _ := df.Readdirnames(-1)
	df.Close()
	prefix := tempPrefix(target)
	for _, base := range names {
		if !strings.HasPrefix(base, prefix) {
			continue
		}
		name := filepath.Join(dir, base)
		st, err := d.Lstat(name)
		if err != nil || !st.Mode().IsRegular() || time.Since(st.ModTime()) < age {
			continue
		}
		f, err := d.OpenFile(name, os.O_RDONLY, 0)
		if err != nil {
			continue
		}
		if ok, err := filelock.TryLock(f); ok && err == nil {
			d.Remove(name)
		}
		f.Close()
	}
}

// Write appends to the temporary file.
func (a *File) Write(p []byte) (int, error) { return a.f.Write(p) }

// TempName returns the temporary file's path ("" once committed or aborted).
func (a *File) TempName() string { return a.tmp }

// Prepare makes the written content durable under the temporary name
// (fsync, final permissions) without publishing it. On error the temporary
// file is removed.
func (a *File) Prepare() error {
	if a.tmp == "" {
		return fmt.Errorf("write %s: already committed or aborted", a.final)
	}
	if a.prepared {
		return nil
	}
	err := a.f.Sync()
	if err == nil {
		err = a.d.Chmod(a.tmp, a.perm)
	}
	if err != nil {
		a.Abort()
		return fmt.Errorf("write %s: %w", a.final, err)
	}
	a.prepared = true
	return nil
}

// Commit prepares the content if needed and renames it over the target.
// When the rename fails the temporary file is kept and the error names it
// (content already paid for by a ledger must not be lost); call Abort to
// discard it.
func (a *File) Commit() error {
	if err := a.Prepare(); err != nil {
		return err
	}
	if err := a.d.Rename(a.tmp, a.final); err != nil {
		return fmt.Errorf("write %s: %w (the content is in %s)", a.final, err, a.tmp)
	}
	a.tmp = ""
	syncDir(a.d, filepath.Dir(a.final))
	return a.f.Close() // releases the lock
}

// CommitNew is Commit for a target that must not exist yet (key material,
// certificates): it prepares the content if needed and hard-links it to the
// target, which fails, leaving any existing target untouched, with an
// error wrapping fs.ErrExist if the target exists; then it removes the
// temporary name and fsyncs the directory. On error call Abort.
func (a *File) CommitNew() error {
	if err := a.Prepare(); err != nil {
		return err
	}
	if err := a.d.Link(a.tmp, a.final); err != nil {
		return fmt.Errorf("write %s: %w", a.final, err)
	}
	a.d.Remove(a.tmp)
	a.tmp = ""
	syncDir(a.d, filepath.Dir(a.final))
	return a.f.Close() // releases the lock
}

// Abort discards the temporary file; it does nothing after Commit.
func (a *File) Abort() {
	if a.tmp != "" {
		a.d.Remove(a.tmp)
		a.tmp = ""
	}
	a.f.Close()
}

// SyncDir fsyncs a directory so that a rename in it is durable (a no-op
// where directories cannot be synced).
func SyncDir(dir string) { syncDir(osDir{}, dir) }

func syncDir(d dirFS, dir string) {
	if f, err := d.OpenFile(dir, os.O_RDONLY, 0); err == nil {
		f.Sync()
		f.Close()
	}
}

// WriteFile writes data to path atomically with mode perm.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(osDir{}, path, data, perm, (*File).Commit)
}

// WriteFileIn is WriteFile for the file name inside root (see CreateIn).
func WriteFileIn(root *os.Root, name string, data []byte, perm os.FileMode) error {
	return write(root, name, data, perm, (*File).Commit)
}

// WriteNew writes data to path atomically with mode perm, never replacing
// an existing file: if path exists it returns an error wrapping
// fs.ErrExist and leaves the file as it was.
func WriteNew(path string, data []byte, perm os.FileMode) error {
	return write(osDir{}, path, data, perm, (*File).CommitNew)
}

// WriteNewIn is WriteNew for the file name inside root (see CreateIn).
func WriteNewIn(root *os.Root, name string, data []byte, perm os.FileMode) error {
	return write(root, name, data, perm, (*File).CommitNew)
}

// write is WriteFile and WriteNew: data into a temporary file, then commit.
func write(d dirFS, path string, data []byte, perm os.FileMode, commit func(*File) error) error {
	a, err := create(d, path, perm)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := commit(a); err != nil {
		a.Abort()
		return err
	}
	return nil
}
