package newsget

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestPartSymlink: a NAME.part symlink placed in the download directory
// beforehand does not send the download outside it (the outside file
// receives nothing), and a user's own NAME.part is not truncated or
// replaced without Overwrite.
func TestPartSymlink(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	link := newPosting("link.bin", 40, 3000, 1500)
	mine := newPosting("mine.bin", 41, 3000, 1500)
	serve(t, s, nil, link, mine)
	r := newRun(t, server(s, "s1"))
	if err := os.MkdirAll(r.cfg.DownloadDir, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("outside the download directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(r.cfg.DownloadDir, "link.bin.part")); err != nil {
		t.Fatal(err)
	}
	minePart := filepath.Join(r.cfg.DownloadDir, "mine.bin.part")
	if err := os.WriteFile(minePart, []byte("my own partial file"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := r.run(t, poster.NZB(link, mine))
	if sum.Complete() {
		t.Fatalf("complete through a planted link / over a user's .part: %v", results(sum))
	}
	for _, f := range sum.Files {
		if f.Complete || !strings.Contains(f.Err, "not") {
			t.Errorf("%s: want a refusal, got complete=%v err=%q", f.Name, f.Complete, f.Err)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside the download directory" {
		t.Errorf("the file the link points to was written: %d bytes", len(b))
	}
	if b, _ := os.ReadFile(minePart); string(b) != "my own partial file" {
		t.Errorf("the user's .part was replaced: %d bytes", len(b))
	}
	if _, err := os.Lstat(filepath.Join(r.cfg.DownloadDir, "link.bin")); err == nil {
		t.Errorf("link.bin exists: the link was renamed into place")
	}

	// With Overwrite the link is replaced by a file of ours (the target
	// is untouched) and the user's .part is replaced.
	r2 := newRun(t, server(s, "s1"))
	r2.cfg.DownloadDir, r2.cfg.QueueDir = r.cfg.DownloadDir, r.cfg.QueueDir
	r2.opts.Overwrite = true
	if sum := r2.run(t, poster.NZB(link, mine)); !sum.Complete() {
		t.Fatalf("with Overwrite: %v", results(sum))
	}
	want := map[string]string{"link.bin": digest(link.Data), "mine.bin": digest(mine.Data)}
	if diff := cmp.Diff(want, r2.outputs(t)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside the download directory" {
		t.Errorf("with Overwrite, the file the link pointed to was written")
	}
}

// TestNameCollisions: two files of one name in an NZB, and "a.bin"
// beside "a.bin.part", are all downloaded, the later ones under unique
// names, and none is reported incomplete ("a.bin exists; not
// overwritten") once fully downloaded.
func TestNameCollisions(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	a1 := newPosting("a.bin", 50, 3000, 1500)
	a2 := newPosting("a.bin", 51, 3000, 1500)
	ap := newPosting("a.bin.part", 52, 3000, 1500)
	serve(t, s, nil, a1, a2, ap)
	r := newRun(t, server(s, "s1"))
	sum := r.run(t, poster.NZB(a1, a2, ap))
	if !sum.Complete() {
		t.Fatalf("not complete: %v", results(sum))
	}
	want := map[string]string{"a.bin": digest(a1.Data), "a (2).bin": digest(a2.Data), "a.bin (2).part": digest(ap.Data)}
	if diff := cmp.Diff(want, r.outputs(t)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}
