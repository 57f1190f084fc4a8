// Package filelock takes advisory, exclusive, non-blocking locks on open
// files, released by the operating system when the process dies: flock(2)
// on the BSDs, darwin and linux, LockFileEx on windows. On other systems
// (plan9, solaris, wasm, …) TryLock returns ErrUnsupported, so that code
// relying on the lock for correctness (the privacy ledger) refuses to run
// rather than run unlocked.
//
// It also reports a file's hard-link count where the system has one
// (LinkCount), for callers that must refuse a file known under two names.
package filelock

import (
	"errors"
	"os"
)

// ErrUnsupported is returned by TryLock on systems without file locks.
var ErrUnsupported = errors.New("filelock: file locking is not supported on this system")

// TryLock takes an exclusive lock on f without waiting. It returns false
// and no error when another open file description holds the lock, and an
// error for anything else.
func TryLock(f *os.File) (bool, error) { return tryLock(f) }

// Unlock releases a lock taken by TryLock (closing f releases it too).
func Unlock(f *os.File) error { return unlock(f) }

// LinkCount returns the number of hard links of an open file, or 1 where
// the system does not report it.
func LinkCount(f *os.File) (uint64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return linkCount(st), nil
}
