package spoolfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree lists a directory's contents as "path: content" (files),
// "path/" (directories) and "path -> target" (links).
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case de.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, rel+" -> "+target)
		case de.IsDir():
			out = append(out, rel+"/")
		case !de.Type().IsRegular():
			out = append(out, rel+" ("+de.Type().String()+")") // never read: a FIFO would block
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, rel+": "+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func makeJobTree(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "Sample"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "movie.mkv"), []byte(strings.Repeat("m", 70_000)), 0o644))
	must(os.WriteFile(filepath.Join(dir, "Sample", "s.mkv"), []byte("sample"), 0o600))
	must(os.Symlink("movie.mkv", filepath.Join(dir, "link.mkv")))
}

// otherFS returns a directory on another file system than t.TempDir
// (tmpfs /dev/shm), or skips.
func otherFS(t *testing.T) string {
	t.Helper()
	other, err := os.MkdirTemp("/dev/shm", "movedir")
	if err != nil {
		t.Skipf("no second file system to move across: /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	var a, b syscall.Stat_t
	if syscall.Stat(other, &a) != nil || syscall.Stat(t.TempDir(), &b) != nil || a.Dev == b.Dev {
		t.Skip("/dev/shm and the temp directory are one file system: cannot test EXDEV")
	}
	return other
}

// TestMoveDirAcrossFS: rename fails with EXDEV; the tree is copied, the
// copy renamed into place, the source removed. A stale copy a crash left
// is replaced.
func TestMoveDirAcrossFS(t *testing.T) {
	other := otherFS(t)
	src := filepath.Join(t.TempDir(), "job")
	makeJobTree(t, src)
	want := tree(t, src)
	if err := os.Rename(src, filepath.Join(other, "probe")); err == nil || !errorsIsEXDEV(err) {
		t.Fatalf("rename across file systems: %v, want EXDEV", err)
	}
	// A crash in an earlier copy left this.
	stale := filepath.Join(other, ".Movie.moving")
	os.MkdirAll(stale, 0o755)
	os.WriteFile(filepath.Join(stale, "movie.mkv"), []byte("half"), 0o644)

	dst := filepath.Join(other, "Movie")
	if err := MoveDir(src, dst); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, tree(t, dst)); d != "" {
		t.Errorf("moved tree (-want +got):\n%s", d)
	}
	if st, err := os.Stat(filepath.Join(dst, "Sample", "s.mkv")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("permissions not kept: %v %v", st, err)
	}
	for _, gone := range []string{src, stale} {
		if _, err := os.Lstat(gone); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", gone, err)
		}
	}
}

func errorsIsEXDEV(err error) bool {
	le, ok := err.(*os.LinkError)
	return ok && le.Err == syscall.EXDEV
}

// TestMoveDirCopyFails: a file that cannot be copied (a FIFO) fails the
// move; the source is whole and nothing is left at the destination.
func TestMoveDirCopyFails(t *testing.T) {
	other := otherFS(t)
	src := filepath.Join(t.TempDir(), "job")
	makeJobTree(t, src)
	if err := syscall.Mkfifo(filepath.Join(src, "zz.fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	want := tree(t, src)
	dst := filepath.Join(other, "Movie")
	err := MoveDir(src, dst)
	if err == nil || !strings.Contains(err.Error(), "zz.fifo: cannot copy") {
		t.Fatalf("MoveDir = %v, want the FIFO refused", err)
	}
	if d := cmp.Diff(want, tree(t, src)); d != "" {
		t.Errorf("source after a failed move (-want +got):\n%s", d)
	}
	if left := tree(t, other); len(left) != 0 {
		t.Errorf("left at the destination: %v", left)
	}
}

// TestMoveDirSameFS is one rename; a destination that exists is refused
// and both stay as they were.
func TestMoveDirSameFS(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "job")
	makeJobTree(t, src)
	want := tree(t, src)
	taken := filepath.Join(dir, "taken")
	os.Mkdir(taken, 0o755)
	if err := MoveDir(src, taken); err == nil {
		t.Errorf("moved onto an existing %s", taken)
	}
	dst := filepath.Join(dir, "done", "Movie")
	os.Mkdir(filepath.Dir(dst), 0o755)
	if err := MoveDir(src, dst); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, tree(t, dst)); d != "" {
		t.Errorf("moved tree (-want +got):\n%s", d)
	}
	if _, err := os.Lstat(src); !os.IsNotExist(err) {
		t.Errorf("source still there: %v", err)
	}
}
