//go:build !linux

package spoolfs

import (
	"os"
	"path/filepath"
)

// syncData makes the data of f durable. Without fdatasync(2) it is a full
// fsync.
func syncData(f *os.File) error { return f.Sync() }

// lockDir opens dir/LOCK. Outside Linux the spool does not lock against a
// second process; newsflow's production target is Linux.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
}
