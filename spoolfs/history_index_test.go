package spoolfs

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestIndexProbe fills a small index with hashes chosen to collide (a few
// homes, a few fragments, runs that wrap around the end), removes some,
// and checks that every entry's probe yields its offset and that a probe
// yields only slots with its own fragment.
func TestIndexProbe(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := newIndex(97) // not a power of two
	defer x.free()
	// hv: the high 32 bits pick the home, the low 24 the fragment.
	hash := func() uint64 {
		home := uint64(rng.IntN(4)) << 30 // 4 homes, the last near the end
		return home<<32 | uint64(rng.IntN(3))
	}
	want := map[int64]uint64{} // offset -> hash
	off := int64(histHeaderSize)
	for step := range 5000 {
		if len(want) > 0 && (rng.IntN(3) == 0 || !x.fits(1)) {
			for o, hv := range want {
				p := x.probe(hv)
				for {
					pos, got, ok := p.next()
					if !ok {
						t.Fatalf("step %d: offset %d not in its run", step, o)
					}
					if got == o {
						x.removeAt(pos)
						delete(want, o)
						break
					}
				}
				break
			}
		} else {
			hv := hash()
			x.insert(hv, off)
			want[off] = hv
			off += 40
		}
		if x.count != len(want) {
			t.Fatalf("step %d: count %d, want %d", step, x.count, len(want))
		}
		for o, hv := range want {
			p := x.probe(hv)
			found := false
			for {
				pos, got, ok := p.next()
				if !ok {
					break
				}
				if x.slots[pos]>>idxOffBits != fragment(hv) {
					t.Fatalf("step %d: probe for fragment %d yields slot %#x", step, fragment(hv), x.slots[pos])
				}
				found = found || got == o
			}
			if !found {
				t.Fatalf("step %d: offset %d (hash %#x) not found", step, o, hv)
			}
		}
	}
	if x.dead == 0 {
		t.Fatal("no tombstones made: the test did not remove anything")
	}
}

// TestHistoryIndexGrows stores enough ids for the index to be rebuilt
// bigger from the log several times, with forgets of logged and of
// not-yet-logged ids (whose forget records are still queued while the
// index is rebuilt), and checks every id against a model: at once, and
// after a reopen.
func TestHistoryIndexGrows(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{SegmentSize: 256 << 10})
	h := s.History()
	startSize := len(h.idx.slots)
	want := map[string]Status{}
	forget := func(id string) {
		if err := s.Forget(id); err != nil {
			t.Fatal(err)
		}
		delete(want, id)
	}
	const n = 3000
	for i := range n {
		id := msgID("grow", i)
		if i%5 == 4 {
			if err := s.Reject(id, t0); err != nil {
				t.Fatal(err)
			}
			want[id] = Rejected
		} else {
			putT(t, s, id, wireArticle(id, 100), t0)
			want[id] = Stored
		}
		switch i % 7 {
		case 3: // forgotten before its record is in the log
			forget(id)
		case 5: // forgotten, then stored again, before the log has either
			forget(id)
			putT(t, s, id, wireArticle(id, 120), t0)
			want[id] = Stored
		}
		if i%50 == 49 {
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			forget(msgID("grow", i-40)) // logged by now
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(h.idx.slots) < 4*startSize {
		t.Fatalf("index of %d slots after %d ids, started at %d: it did not grow", len(h.idx.slots), n, startSize)
	}
	check := func(when string, s *Spool) {
		t.Helper()
		h := s.History()
		for i := range n {
			id := msgID("grow", i)
			if got := h.Status(id, t0); got != want[id] && !(got == Unknown && want[id] == 0) {
				t.Fatalf("%s: %s is %s, want %s", when, id, got, want[id])
			}
		}
		if h.Len() != len(want) {
			t.Fatalf("%s: %d entries, want %d", when, h.Len(), len(want))
		}
	}
	check("open", s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, SpoolOptions{SegmentSize: 256 << 10})
	defer s.Close()
	check("reopened", s)
}

// TestHistoryLogDamagedUnderUs overwrites records in the history log of an
// open spool: lookups of those ids must not answer from the damaged bytes
// (they look new, not like another article), every other id still
// answers, and a reopen quarantines the damage and serves the rest.
func TestHistoryLogDamagedUnderUs(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{})
	const n = 200
	for i := range n {
		id := msgID("dmg", i)
		putT(t, s, id, wireArticle(id, 100), t0)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	h := s.History()
	h.mu.Lock()
	h.tail = h.tail[:0] // read from the file, not the copy of its newest bytes
	h.mu.Unlock()
	logBytes, err := os.ReadFile(filepath.Join(dir, histFileName))
	if err != nil {
		t.Fatal(err)
	}
	off := bytes.Index(logBytes, []byte(msgID("dmg", 10)))
	if off < 0 {
		t.Fatal("the 10th id is not in the log")
	}
	if _, err := s.hfile.WriteAt([]byte("XXXX"), int64(off)); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := msgID("dmg", i)
		e, ok := h.Lookup(id)
		switch {
		case i == 10 && ok:
			t.Fatalf("damaged record of %s answered %+v", id, e)
		case i != 10 && (!ok || e.Status != Stored):
			t.Fatalf("%s: %+v %v, want stored", id, e, ok)
		}
	}
	s.abandon()
	s = openT(t, dir, SpoolOptions{})
	defer s.Close()
	if len(quarantined(t, dir)) == 0 {
		t.Error("the damaged history region was not quarantined")
	}
	for i := range n {
		// The damaged record is gone from the log; the spool after the
		// checkpoint may still bring the id back from its spool record.
		if id := msgID("dmg", i); i != 10 && !s.History().Seen(id) {
			t.Fatalf("after reopen: %s missing", id)
		}
	}
}

// FuzzHistoryOps runs a sequence of history operations decoded from the
// input (put, reject, forget, sync, expire, reopen, lookups) on a real
// spool and checks every answer against a model of the history.
func FuzzHistoryOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 4, 5, 2, 6, 0, 3, 7})
	f.Add([]byte{0, 0, 0, 2, 0x10, 3, 0x10, 0, 0x10, 6, 3, 4})
	f.Add([]byte{1, 1, 3, 5, 0x21, 2, 0x21, 3, 6, 5, 4, 7, 7})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			ops = ops[:200]
		}
		dir := t.TempDir()
		opts := SpoolOptions{SegmentSize: 8 << 10, Logger: discardLogger()}
		s := openT(t, dir, opts)
		defer func() { s.Close() }()
		want := map[string]Status{}
		when := map[string]time.Time{}
		now := t0
		for i, op := range ops {
			id := msgID("fz", int(op>>3))
			now = now.Add(time.Minute)
			switch op & 7 {
			case 0:
				_, had := want[id]
				_, err := s.Put(id, wireArticle(id, 64+int(op)), now)
				if had != (err != nil) {
					t.Fatalf("op %d: put %s: %v with entry %v", i, id, err, had)
				}
				if !had {
					want[id], when[id] = Pending, now
				}
			case 1:
				if err := s.Reject(id, now); err != nil {
					t.Fatal(err)
				}
				if _, ok := want[id]; !ok {
					want[id], when[id] = Rejected, now
				}
			case 2:
				if err := s.Forget(id); err != nil {
					t.Fatal(err)
				}
				delete(want, id)
			case 3, 4:
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
				for k, st := range want {
					if st == Pending {
						want[k] = Stored
					}
				}
			case 5:
				// Drop what arrived more than 20 minutes ago; Expire
				// syncs first.
				if _, err := s.History().Expire(now, 20*time.Minute, 20*time.Minute); err != nil {
					t.Fatal(err)
				}
				for k, st := range want {
					if st == Pending {
						want[k] = Stored
					}
					if when[k].Before(now.Add(-20 * time.Minute)) {
						delete(want, k)
					}
				}
			case 6:
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = openT(t, dir, opts)
				for k, st := range want {
					if st == Pending { // Close syncs
						want[k] = Stored
					}
				}
			case 7:
				if _, ok := s.History().Lookup(msgID("fz-absent", i)); ok {
					t.Fatalf("op %d: an id never stored found", i)
				}
			}
			h := s.History()
			for k := range 32 {
				id := msgID("fz", k)
				st := h.Status(id, now)
				if st != want[id] && !(st == Unknown && want[id] == 0) {
					t.Fatalf("op %d (%d): %s is %s, want %s", i, op&7, id, st, want[id])
				}
				if e, ok := h.Lookup(id); ok && !when[id].Equal(e.Arrived) {
					t.Fatalf("op %d: %s arrived %v, want %v", i, id, e.Arrived, when[id])
				}
			}
			if h.Len() != len(want) {
				t.Fatalf("op %d: %d entries, want %d", i, h.Len(), len(want))
			}
		}
	})
}

// discardLogger is a logger for tests that make many spools.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestHistoryLookupRuns looks up ids from the log (not its copy of the
// newest bytes) in log order, backwards and at a stride: the block that
// serves a run in log order must give every id its own token, across
// block boundaries, and a lookup out of order must not take a stale
// block's bytes.
func TestHistoryLookupRuns(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{})
	const n = 3000 // about 150 KB of log: several blocks
	toks := make([]Token, n)
	for i := range n {
		id := msgID("run", i)
		toks[i] = putT(t, s, id, wireArticle(id, 100), t0)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, SpoolOptions{})
	defer s.Close()
	h := s.History()
	check := func(order string, i int) {
		t.Helper()
		e, ok := h.Lookup(msgID("run", i))
		if !ok || e.Token != toks[i] || e.Status != Stored {
			t.Fatalf("%s: %s: %+v %v, want token %v", order, msgID("run", i), e, ok, toks[i])
		}
	}
	for i := range n {
		check("in order", i)
	}
	for i := n - 1; i >= 0; i-- {
		check("backwards", i)
	}
	for i := range n {
		check("stride", i*7%n)
	}
	// Four peers draining at four places in the log, their lookups
	// interleaved: each run keeps a window of its own, so the records come
	// from blocks, not a pread each.
	h.run.mu.Lock()
	before := h.run.reads
	h.run.mu.Unlock()
	const quarter = n / 4
	for i := range quarter {
		for p := range 4 {
			check("interleaved", p*quarter+i)
		}
	}
	h.run.mu.Lock()
	reads := h.run.reads - before
	h.run.mu.Unlock()
	if reads > n/20 {
		t.Errorf("four interleaved runs over %d ids took %d preads: the runs are not kept apart", n, reads)
	}
	for i := range 50 { // a second run, into ids stored since
		id := msgID("run2", i)
		putT(t, s, id, wireArticle(id, 100), t0)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		check("in order again", i)
	}
	for i := range 50 {
		if !h.Seen(msgID("run2", i)) {
			t.Fatalf("%s not seen", msgID("run2", i))
		}
	}
}

// TestHistoryReplayBatches opens a history log of more records than a
// replay batch holds, with forget records and ids stored again after
// their forget across the batches' edges, and checks every id: the
// batches go into the index out of log order, the forgets must not.
func TestHistoryReplayBatches(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	const n = 2*replayBatchLen + 5000
	id := func(i int) string { return msgID("batch", i) }
	log := append([]byte(nil), histMagic[:]...)
	want := map[string]bool{}
	readded := 0
	for i := range n {
		// Segment 0: articles expired long ago, as in openWithHistoryLog.
		log = appendHistRecord(log, kindArticle, id(i), Token{Seg: 0, Off: uint64(48 + i), Len: 10}, t0.UnixNano())
		want[id(i)] = true
		if i%997 == 996 {
			log = appendHistRecord(log, kindForget, id(i-500), Token{}, 0)
			delete(want, id(i-500))
		}
		if j := i - 300; j%997 == 996 && j/997%2 == 0 && !want[id(j-500)] {
			// Every other one stored again 300 records after its forget.
			log = appendHistRecord(log, kindArticle, id(j-500), Token{Seg: 0, Off: 7, Len: 10}, t0.UnixNano())
			want[id(j-500)] = true
			readded++
		}
	}
	if readded == 0 {
		t.Fatal("no id stored again after its forget: the test tests less than it says")
	}
	log = appendCheckpoint(log, Position{Seg: 1, Off: segHeaderSize}, 0)
	if err := WriteFileDurable(filepath.Join(dir, histFileName), log, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, SpoolOptions{})
	defer s.Close()
	h := s.History()
	for i := range n {
		if got := h.Seen(id(i)); got != want[id(i)] {
			t.Fatalf("%s: seen %v, want %v", id(i), got, want[id(i)])
		}
	}
	if h.Len() != len(want) {
		t.Fatalf("%d entries, want %d", h.Len(), len(want))
	}
}

// TestHistorySizeHint: a spool opened with HistorySize has an index for
// that many ids from the start, so storing them never rebuilds it (the
// slot array stays the same one).
func TestHistorySizeHint(t *testing.T) {
	const n = 5000
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{SegmentSize: 256 << 10, HistorySize: n})
	defer s.Close()
	h := s.History()
	slots := len(h.idx.slots)
	if slots < n*100/idxTargetLoad {
		t.Fatalf("index of %d slots for a hint of %d ids", slots, n)
	}
	first := &h.idx.slots[0]
	for i := range n {
		id := msgID("hint", i)
		putT(t, s, id, wireArticle(id, 100), t0)
		if i%500 == 499 {
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(h.idx.slots) != slots || &h.idx.slots[0] != first {
		t.Fatalf("index rebuilt while storing %d ids under a hint of %d (%d slots, now %d)", n, n, slots, len(h.idx.slots))
	}
	for i := range n {
		if id := msgID("hint", i); h.Status(id, t0) != Stored {
			t.Fatalf("%s not stored", id)
		}
	}
	// Without the hint, the same ids make it grow.
	s2 := openT(t, t.TempDir(), SpoolOptions{SegmentSize: 256 << 10})
	defer s2.Close()
	before := len(s2.History().idx.slots)
	for i := range n {
		id := msgID("hint", i)
		putT(t, s2, id, wireArticle(id, 100), t0)
	}
	if err := s2.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(s2.History().idx.slots) == before {
		t.Fatalf("without a hint the index stayed at %d slots for %d ids: the hint test proves nothing", before, n)
	}
}

// TestHistoryTornTailNotServed opens a history log that ends in a torn
// tail (unwritten, zero blocks) right after two forget records, whose
// replay looks up their ids in log order: the block read for that run
// reaches into the tail, which open then cuts. The first id stored after
// open is logged where the tail was; once the copy of the log's newest
// bytes has moved past it, its lookup must read the log, not the cut
// tail's zeros still held in the block.
func TestHistoryTornTailNotServed(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	log := append([]byte(nil), histMagic[:]...)
	for _, id := range []string{msgID("gone", 1), msgID("gone", 2)} {
		// Segment 0: articles expired long ago, as in openWithHistoryLog.
		log = appendHistRecord(log, kindArticle, id, Token{Seg: 0, Off: 48, Len: 10}, t0.UnixNano())
	}
	log = appendCheckpoint(log, Position{Seg: 1, Off: segHeaderSize}, 0)
	log = appendHistRecord(log, kindForget, msgID("gone", 1), Token{}, 0)
	log = appendHistRecord(log, kindForget, msgID("gone", 2), Token{}, 0)
	log = append(log, make([]byte, 4096)...) // the torn tail
	if err := WriteFileDurable(filepath.Join(dir, histFileName), log, 0o644); err != nil {
		t.Fatal(err)
	}
	// An index sized for what follows: no rebuild reads the log again.
	s = openT(t, dir, SpoolOptions{HistorySize: 20000})
	defer s.Close()
	h := s.History()
	first := msgID("after", 0)
	tok := putT(t, s, first, wireArticle(first, 100), t0)
	// One group commit of more than half the copy of the newest bytes:
	// the copy starts after it, so the first id's record is read from
	// the log.
	for i := 1; len(s.hwait)+len(s.hpend) <= tailMax/2+histRecordOverhead; i++ {
		id := msgID("after", i)
		putT(t, s, id, wireArticle(id, 100), t0)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if h.tailOff <= int64(len(log))-4096 {
		t.Fatalf("the copy of the newest bytes starts at %d, not past the first record at %d: the test tests less than it says",
			h.tailOff, len(log)-4096)
	}
	if e, ok := h.Lookup(first); !ok || e.Token != tok || e.Status != Stored {
		t.Fatalf("%s, stored where the torn tail was: %+v %v, want token %v", first, e, ok, tok)
	}
}
