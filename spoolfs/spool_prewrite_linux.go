//go:build linux

package spoolfs

import (
	"os"
	"syscall"
)

// freeSpace returns the bytes free to unprivileged users on f's file
// system (fstatfs(2)), and whether it could tell.
func freeSpace(f *os.File) (int64, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var st syscall.Statfs_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstatfs(int(fd), &st) }); err != nil || serr != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
