package unpack

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestDiskFull unpacks into a 1 MiB tmpfs that holds the archive but not
// its contents as well: the archive is refused for want of free space
// (KeepFree), no file appears (not even a partial one, and no staging
// folder stays), and the archive is left as it was. It needs root to
// mount the tmpfs.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a 1 MiB tmpfs (run as root to test a full disk)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range []string{"one.bin", "two.bin"} {
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		w.Write(poster.RandomData(uint64(len(name)), 300<<10))
	}
	zw.Close()
	writeFiles(t, dir, map[string][]byte{"x.zip": b.Bytes(), "x.par2": []byte("p")})
	before := tree(t, dir)
	res, err := Dir(context.Background(), dir, Options{Cleanup: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || !strings.Contains(res.Archives[0].Err.Error(), "bytes free on the disk") {
		t.Fatalf("err = %v, want the free space", res.Archives[0].Err)
	}
	if diff := cmp.Diff(before, tree(t, dir)); diff != "" {
		t.Errorf("a full disk must leave the folder as it was (-before +after):\n%s", diff)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("entries left: %v", ents)
	}
}
