package spoolfs

import (
	"fmt"
	"os"
	"path/filepath"
)

// SyncDir makes the directory entries of dir durable (created, renamed or
// removed names): the step after every create, rename and remove.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// WriteFileDurable replaces path with data, a file of mode perm, by the
// durable-replace steps: write path.tmp, fsync it, rename it over path,
// fsync the parent directory. A crash at any step leaves either the old
// file or the new one, never a mix (and perhaps path.tmp, which the next
// write replaces). One writer at a time per path.
func WriteFileDurable(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	os.Remove(tmp) // a crash's leftover: a new file gets perm
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := syncData(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// ProbeWrite writes, syncs and removes a 64 KiB file in dir: whether the
// disk takes writes again after it was full.
func ProbeWrite(dir string) error {
	name := filepath.Join(dir, ".probe")
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("probe write: %w", err)
	}
	defer os.Remove(name)
	_, err = f.Write(make([]byte, 64<<10))
	if err == nil {
		err = syncData(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("probe write %s: %w", dir, err)
	}
	return nil
}
