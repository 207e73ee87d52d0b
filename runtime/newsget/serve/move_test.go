package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestCompleteDirOtherFS: complete_dir on another file system than the
// download folder (tmpfs /dev/shm); the finished folder is copied there
// and the download folder removed. (Before, rename's EXDEV failed the job.)
func TestCompleteDirOtherFS(t *testing.T) {
	other, err := os.MkdirTemp("/dev/shm", "serve")
	if err != nil {
		t.Skipf("no second file system: /dev/shm: %v", err)
	}
	defer os.RemoveAll(other)
	dir := t.TempDir()
	var a, b syscall.Stat_t
	if syscall.Stat(other, &a) != nil || syscall.Stat(dir, &b) != nil || a.Dev == b.Dev {
		t.Skip("/dev/shm and the temp directory are one file system: cannot test EXDEV")
	}
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("Far.mkv", 13, 50_000, 20_000)
	serveArticles(t, s, nil, p)
	td := startDaemon(t, dir, s, func(c *newsget.Config) { c.Serve.CompleteDir = other })
	defer td.stop()
	id := td.addFile(t, poster.NZB(p), "Far.nzb", "tv", "")["nzo_ids"].([]any)[0].(string)
	h := td.waitHistory(t, id)
	if h["status"] != "Completed" || h["storage"] != filepath.Join(other, "tv", "Far") {
		t.Fatalf("history = %v", h)
	}
	got, err := os.ReadFile(filepath.Join(other, "tv", "Far", "Far.mkv"))
	if err != nil || !bytes.Equal(got, p.Data) {
		t.Errorf("moved file: %v (equal %v)", err, bytes.Equal(got, p.Data))
	}
	if _, err := os.Stat(td.d.jobDir(id)); !os.IsNotExist(err) {
		t.Errorf("download folder left behind: %v", err)
	}
}
