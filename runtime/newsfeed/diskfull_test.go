package newsfeed

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestDiskFull runs the spool on a 2 MiB tmpfs: once it is full, ingest
// stops acknowledging (TAKETHIS 400 and close, CHECK 431, IHAVE 436) and the
// log says why; when space returns it resumes by itself.
func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t)
	// A filler takes most of the space, so a few hundred KiB of articles
	// fill the disk.
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 1500<<10), 0o644); err != nil {
		t.Fatal(err)
	}

	var logBuf logbuf.Buffer
	cfg := relayConfig(t, filepath.Join(mnt, "spool"), "")
	h := startRelay(t, cfg, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
		o.SegmentSize = 256 << 10
	})
	addr := h.r.Addr().String()

	// Feed 8 KiB articles until TAKETHIS draws 400.
	c := dialIngest(t, addr)
	if r := c.cmd("MODE STREAM"); !strings.HasPrefix(r, "203") {
		t.Fatalf("MODE STREAM: %q", r)
	}
	acked := 0
	var last string
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("<full%d@t>", i)
		art := proto.ToWire(testArticle(id, "misc.test", "up!x", 100))
		last = c.cmd("TAKETHIS " + id + "\r\n" + strings.TrimSuffix(string(art), "\r\n"))
		if !strings.HasPrefix(last, "239 ") {
			break
		}
		acked++
	}
	if !strings.HasPrefix(last, "400 ") {
		t.Fatalf("after %d articles TAKETHIS got %q, want 400 once the disk is full", acked, last)
	}
	if acked == 0 {
		t.Fatal("the disk was full before the first article: the filler is too large")
	}
	if l := c.line(); l != "" {
		t.Errorf("after 400 the connection must close; got %q", l)
	}

	c2 := dialIngest(t, addr)
	got := []string{code(c2.cmd("MODE STREAM")), code(c2.cmd("CHECK <new@t>")), code(c2.cmd("IHAVE <new@t>"))}
	if want := []string{"203", "431", "436"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("while full: MODE STREAM, CHECK, IHAVE answered %v, want %v", got, want)
	}
	if log := logBuf.String(); !strings.Contains(log, "not accepting articles") || !strings.Contains(log, "disk full") {
		t.Errorf("the log does not say why ingest stopped:\n%s", log)
	}
	if st := h.r.Status(); st.Accepting || st.NotReason != "disk full" {
		t.Errorf("status: accepting %v reason %q, want false and \"disk full\"", st.Accepting, st.NotReason)
	}

	// Space returns: ingest resumes by itself.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "ingest to accept again", func() bool { return h.r.Status().Accepting }, logBuf.String)
	got = []string{code(c2.cmd("CHECK <new@t>"))}
	art := proto.ToWire(testArticle("<new@t>", "misc.test", "up!x", 5))
	got = append(got, code(c2.cmd("TAKETHIS <new@t>\r\n"+strings.TrimSuffix(string(art), "\r\n"))))
	if want := []string{"238", "239"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after space returned: CHECK, TAKETHIS answered %v, want %v", got, want)
	}
	if !strings.Contains(logBuf.String(), "accepting articles again") {
		t.Errorf("the log does not say ingest resumed:\n%s", logBuf.String())
	}
	// Every acknowledged article is in the spool.
	for i := 0; i < acked; i++ {
		id := fmt.Sprintf("<full%d@t>", i)
		if e, ok := h.r.Spool().History().Lookup(id); !ok || e.Token.IsZero() {
			t.Errorf("%s was acknowledged but is not stored", id)
		}
	}
}

// mountTmpfs mounts a 2 MiB tmpfs for the test, or skips it when it
// cannot (not root).
func mountTmpfs(t *testing.T) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a 2 MiB tmpfs for the full-disk test (%v): run as root", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return mnt
}

func code(line string) string {
	c, _, _ := strings.Cut(line, " ")
	return c
}

// TestKill9WhileDiskFull: newsfeed killed while the disk was full leaves a
// torn tail in its spool segment, and no space to copy it to quarantine
// (refusing to start there would make a supervisor crash-loop). It must
// start, feed its peers what it holds, refuse new
// articles (431), and accept again, with the tail quarantined and cut,
// once space returns.
func TestKill9WhileDiskFull(t *testing.T) {
	mnt := mountTmpfs(t)

	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	hang := s.AddFault(nntptest.Fault{Cmd: "CHECK", Hang: true})
	dir := filepath.Join(mnt, "spool")
	text := peerText("p", s, "connections = 1")
	h := startRelay(t, relayConfig(t, dir, text), nil)
	var arts [][]byte
	for i := range 5 {
		arts = append(arts, testArticle(fmt.Sprintf("<k%d@t>", i), "misc.test", "up!x", 3))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 5 {
		t.Fatalf("inject: %s", res)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	// What kill -9 in the middle of a write leaves: half a record.
	segs, _ := filepath.Glob(filepath.Join(dir, "spool", "spool", "*.seg"))
	if len(segs) == 0 {
		t.Fatal("no spool segment")
	}
	last := segs[len(segs)-1]
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("NFAR\x00\x00\x01\x00torn record"))
	f.Close()
	// Fill the disk.
	filler := filepath.Join(mnt, "filler")
	ff, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := ff.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	ff.Close()

	var logBuf logbuf.Buffer
	s.RemoveFault(hang)
	s.DropConns()
	h2 := startRelay(t, relayConfig(t, dir, text), func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	})
	h2.settle()
	for i := range 5 {
		if id := fmt.Sprintf("<k%d@t>", i); !s.Has(id) {
			t.Errorf("%s not fed to the peer while the disk is full", id)
		}
	}
	if st := h2.r.Status(); st.Accepting || st.NotReason != "disk full" {
		t.Errorf("status: accepting %v reason %q, want false and \"disk full\"", st.Accepting, st.NotReason)
	}
	c := dialIngest(t, h2.r.Addr().String())
	if r := c.cmd("CHECK <new@t>"); !strings.HasPrefix(r, "431 ") {
		t.Errorf("CHECK while the disk is full: %q, want 431", r)
	}

	// Space returns.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "ingest to accept again", func() bool { return h2.r.Status().Accepting }, logBuf.String)
	art := proto.ToWire(testArticle("<new@t>", "misc.test", "up!x", 3))
	got := []string{code(c.cmd("CHECK <new@t>")), code(c.cmd("TAKETHIS <new@t>\r\n" + strings.TrimSuffix(string(art), "\r\n")))}
	if want := []string{"238", "239"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after space returned: CHECK, TAKETHIS answered %v, want %v", got, want)
	}
	if q, _ := filepath.Glob(filepath.Join(dir, "spool", "quarantine", "*.bad")); len(q) != 1 {
		t.Errorf("quarantine holds %v, want the torn tail's copy", q)
	}
}
