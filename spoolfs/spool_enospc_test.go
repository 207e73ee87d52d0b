//go:build linux

package spoolfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDiskFull fills a 1 MiB tmpfs. Writes must fail with an error wrapping
// ENOSPC; nothing synced before may be damaged; what was Put but not synced
// stays Pending (never acked, never lost); and once space returns, Sync and
// Put work again with no restart.
func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t)
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mnt, "spool")
	opts := SpoolOptions{SegmentSize: 128 << 10, FlushSize: 8 << 10}
	var log testLog
	opts.Logger = log.logger()
	s, err := OpenSpool(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	var durable, pending []string
	toks := map[string]Token{}
	var full error
	for i := 0; i < 2000; i++ {
		id := msgID("full", i)
		tok, err := s.Put(id, wireArticle(id, 2000), t0)
		if err != nil {
			full = err
			break
		}
		toks[id] = tok
		pending = append(pending, id)
		if i%10 == 9 {
			if err := s.Sync(); err != nil {
				full = err
				break
			}
			durable, pending = append(durable, pending...), nil
		}
	}
	if !errors.Is(full, syscall.ENOSPC) {
		t.Fatalf("filling the disk: got %v, want an error wrapping ENOSPC", full)
	}
	t.Logf("disk full after %d durable and %d pending articles: %v", len(durable), len(pending), full)
	if len(durable) == 0 {
		t.Fatal("the disk filled before anything was stored; the test proves nothing")
	}

	// Nothing stored is damaged.
	for _, id := range durable {
		wantArticle(t, s, "durable before the disk filled", toks[id], wireArticle(id, 2000))
		if st := s.History().Status(id, t0); st != Stored {
			t.Fatalf("Status(%s) = %v, want stored", id, st)
		}
	}
	// While it stays full, writes keep failing clearly, and what was Put
	// but not synced is Pending: CHECK answers 431, so it is offered again.
	if _, err := s.Put("<while-full@x>", wireArticle("<while-full@x>", 2000), t0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Put while full: %v, want ENOSPC", err)
	}
	if len(pending) > 0 {
		if err := s.Sync(); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Sync while full: %v, want ENOSPC", err)
		}
	}
	for _, id := range pending {
		if st := s.History().Status(id, t0); st != Pending {
			t.Fatalf("Status(%s) while full = %v, want pending", id, st)
		}
	}

	// Space returns: Sync makes the pending articles durable, Put works.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync after space returned: %v", err)
	}
	for _, id := range pending {
		wantArticle(t, s, "pending while full, synced after", toks[id], wireArticle(id, 2000))
	}
	id := "<after-full@x>"
	tok, err := s.Put(id, wireArticle(id, 2000), t0)
	if err != nil {
		t.Fatalf("Put after space returned: %v", err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	toks[id] = tok
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openT(t, dir, opts)
	defer s.Close()
	for _, id := range append(append(durable, pending...), id) {
		wantArticle(t, s, "after reopen", toks[id], wireArticle(id, 2000))
	}
	if q := quarantined(t, dir); len(q) != 0 {
		t.Errorf("disk full left damage behind: quarantine holds %v", q)
	}
}

// TestTornTailOnFullDisk: a torn tail that open cannot copy to quarantine
// for lack of space stays in place (evidence is never destroyed) and open
// succeeds; the spool serves reads, refuses writes
// with ENOSPC, and cuts the tail (after the copy) once space returns.
func TestTornTailOnFullDisk(t *testing.T) {
	mnt := mountTmpfs(t)
	dir := filepath.Join(mnt, "spool")
	s := openT(t, dir, SpoolOptions{})
	id := msgID("torn", 0)
	w := wireArticle(id, 2000)
	tok := putT(t, s, id, w, t0)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	seg := segFile(dir, 1)
	before, _ := os.Stat(seg)
	f, _ := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("NFAR torn"))
	f.Close()
	filler := filepath.Join(mnt, "filler")
	ff, _ := os.Create(filler)
	for {
		if _, err := ff.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	ff.Close()

	var log testLog
	s, err := OpenSpool(dir, SpoolOptions{Logger: log.logger()})
	if err != nil {
		t.Fatalf("open on a full disk: %v", err)
	}
	defer s.Close()
	wantArticle(t, s, "reads while full", tok, w)
	if _, err := s.Put(msgID("torn", 1), wireArticle(msgID("torn", 1), 100), t0); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Put while the tail is kept: %v, want ENOSPC", err)
	}
	if st, _ := os.Stat(seg); st.Size() != before.Size()+int64(len("NFAR torn")) {
		t.Errorf("segment is %d octets, want the torn tail kept (%d)", st.Size(), before.Size()+9)
	}
	os.Remove(filler)
	if err := s.Writable(); err != nil {
		t.Fatalf("Writable after space returned: %v", err)
	}
	if st, _ := os.Stat(seg); st.Size() != before.Size() {
		t.Errorf("segment is %d octets after the cut, want %d", st.Size(), before.Size())
	}
	if q := quarantined(t, dir); len(q) != 1 {
		t.Errorf("quarantine: %v, want the tail's copy", q)
	}
	putT(t, s, msgID("torn", 1), wireArticle(msgID("torn", 1), 100), t0)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
}

// mountTmpfs mounts a 1 MiB tmpfs for the test, or skips it when it
// cannot.
func mountTmpfs(t *testing.T) string {
	t.Helper()
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a 1 MiB tmpfs to fill (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, 0) })
	return mnt
}

// TestPreWriteNearlyFullDisk: on a file system with little free space the
// spool writes no zeros ahead (preWriteFree): they would take the space
// that records and the files beside the spool need as the disk fills.
func TestPreWriteNearlyFullDisk(t *testing.T) {
	mnt := mountTmpfs(t)
	fx := &preFixture{dir: filepath.Join(mnt, "spool")}
	fx.s = openT(t, fx.dir, SpoolOptions{PreWrite: 64 << 10})
	defer fx.s.Close()
	fx.put(t, 25)
	wantSize(t, fx.dir, 1, fx.recordsEnd(1), "no zeros on a 1 MiB disk")
}
