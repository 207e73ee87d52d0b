package spoolfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MoveDir moves the directory from to the path to, which must not exist,
// and makes the move durable. Within one file system that is one rename
// and an fsync of both parents. Across file systems (rename fails with
// EXDEV) it copies, in this order:
//
//  1. remove a stale copy a crash left (to's parent/.NAME.moving);
//  2. copy the tree into .NAME.moving, fsync every file and directory;
//  3. rename .NAME.moving to to, fsync to's parent;
//  4. only then remove from and fsync its parent.
//
// A crash before step 3 leaves from whole (and a stale copy that the next
// MoveDir removes); a crash between 3 and 4 leaves both, never neither.
// Regular files, directories and symbolic links are copied; anything else
// (a device, a socket) fails the move and from stays.
func MoveDir(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("move %s: %s exists", from, to)
	}
	err := os.Rename(from, to)
	if err == nil {
		return errors.Join(SyncDir(filepath.Dir(to)), SyncDir(filepath.Dir(from)))
	}
	if !errors.Is(err, syscall.EXDEV) {
		return fmt.Errorf("move %s: %w", from, err)
	}
	tmp := filepath.Join(filepath.Dir(to), "."+filepath.Base(to)+".moving")
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("move %s: stale copy: %w", from, err)
	}
	if err := copyDirDurable(from, tmp); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("move %s across file systems: %w", from, err)
	}
	if err := os.Rename(tmp, to); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("move %s across file systems: %w", from, err)
	}
	if err := SyncDir(filepath.Dir(to)); err != nil {
		return fmt.Errorf("move %s across file systems: %w", from, err)
	}
	// The copy is durable at to: the source may go.
	if err := os.RemoveAll(from); err != nil {
		return fmt.Errorf("move %s: copied to %s, but removing the source: %w", from, to, err)
	}
	return SyncDir(filepath.Dir(from))
}

// copyDirDurable copies the directory src to dst (which must not exist),
// fsyncing each file and directory it writes.
func copyDirDurable(src, dst string) error {
	var dirs []string
	err := filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		info, err := de.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			dirs = append(dirs, out)
			return os.Mkdir(out, mode.Perm()|0o700)
		case mode.IsRegular():
			return copyFile(p, out, mode.Perm())
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		default:
			return fmt.Errorf("%s: cannot copy a %s", p, mode.Type())
		}
	})
	if err != nil {
		return err
	}
	// Deepest first, so each directory's entries are durable before the
	// entry naming it in its parent.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := SyncDir(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies src to a new file dst and fsyncs it.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in) // copy_file_range where the kernel can
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
