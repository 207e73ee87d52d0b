//go:build linux

package spoolfs

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// syncData makes the data of f durable, together with the metadata needed to
// read it back (its size), but not its timestamps: fdatasync(2). It is the
// per-group-commit fsync, so it is the cheapest call that gives that guarantee.
func syncData(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}

// lockDir takes an exclusive, non-blocking flock(2) on dir/LOCK so that two
// processes never open the same spool. The lock dies with the process, so a
// kill -9 never leaves a stale lock behind.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		f.Close()
		return nil, err
	}
	if lerr != nil {
		f.Close()
		if lerr == syscall.EWOULDBLOCK {
			return nil, fmt.Errorf("%s is locked by another process: %w", dir, lerr)
		}
		return nil, &os.PathError{Op: "flock", Path: f.Name(), Err: lerr}
	}
	return f, nil
}
