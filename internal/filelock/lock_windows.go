//go:build windows

package filelock

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// lockAll covers the whole file (and beyond): LockFileEx locks a byte
// range, and every locker must name the same one.
const lockAll = ^uint32(0)

func tryLock(f *os.File) (bool, error) {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, lockAll, lockAll, &ol)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
		return false, nil
	}
	return false, err
}

func unlock(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, lockAll, lockAll, &ol)
}

// linkCount: os.FileInfo does not carry the link count on windows; hard
// links are rare there and the count would need another handle query.
func linkCount(fs.FileInfo) uint64 { return 1 }
