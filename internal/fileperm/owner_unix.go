//go:build unix

package fileperm

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

func checkOwner(path string, st fs.FileInfo, what string) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	uid := os.Getuid()
	if int(sys.Uid) != uid && sys.Uid != 0 {
		return fmt.Errorf("%s %s is owned by user %d, not by this user (%d) or root: its owner can replace it; fix with: chown %d %s (as root)", what, path, sys.Uid, uid, uid, path)
	}
	return nil
}
