package spoolfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The zeros a Sync writes ahead of the active segment's records
// (preWriteLocked): what the file holds, what a crash leaves, and what
// open, seal, Close, Expire and the readers make of them.

// preFixture stores n small articles in rounds of 10, each round synced,
// in a spool whose segments hold segSize octets and whose Syncs write
// zeros pre octets ahead.
type preFixture struct {
	dir   string
	s     *Spool
	ids   []string
	wires [][]byte
	toks  []Token
}

func newPreFixture(t *testing.T, n int, opts SpoolOptions) *preFixture {
	t.Helper()
	fx := &preFixture{dir: t.TempDir()}
	fx.s = openT(t, fx.dir, opts)
	fx.put(t, n)
	return fx
}

// put stores n more articles, a Sync every 10.
func (fx *preFixture) put(t *testing.T, n int) {
	t.Helper()
	for range n {
		i := len(fx.ids)
		id := msgID(t.Name(), i)
		w := wireArticle(id, 1500)
		fx.ids, fx.wires = append(fx.ids, id), append(fx.wires, w)
		fx.toks = append(fx.toks, putT(t, fx.s, id, w, t0.Add(time.Duration(i)*time.Second)))
		if i%10 == 9 {
			if err := fx.s.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := fx.s.Sync(); err != nil {
		t.Fatal(err)
	}
}

// recordsEnd is the end of the last record of segment seg the fixture
// stored.
func (fx *preFixture) recordsEnd(seg uint32) int64 {
	end := int64(0)
	for i, tok := range fx.toks {
		if tok.Seg == seg {
			end = int64(tok.Off) + int64(tok.Len) + int64(len(fx.ids[i])) + recTrailerSize
		}
	}
	return end
}

// wantAll checks that every article is Stored at its token with its bytes.
func (fx *preFixture) wantAll(t *testing.T, s *Spool, what string) {
	t.Helper()
	for i, id := range fx.ids {
		e, ok := s.History().Lookup(id)
		if !ok || e.Status != Stored || e.Token != fx.toks[i] {
			t.Fatalf("%s: Lookup(%s) = %+v, %v; want stored at %v", what, id, e, ok, fx.toks[i])
		}
		wantArticle(t, s, what, fx.toks[i], fx.wires[i])
	}
}

// wantZeroTail fails unless segment seg's file holds the records up to end
// and then only zeros, at least min of them.
func wantZeroTail(t *testing.T, dir string, seg uint32, end, least int64) {
	t.Helper()
	b, err := os.ReadFile(segFile(dir, seg))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) < end+least {
		t.Fatalf("segment %d: %d octets, want its records (%d) and at least %d zeros after them", seg, len(b), end, least)
	}
	if len(bytes.Trim(b[end:], "\x00")) != 0 {
		t.Fatalf("segment %d: the %d octets after its records are not all zeros", seg, int64(len(b))-end)
	}
}

// wantSize fails unless segment seg's file is size octets long.
func wantSize(t *testing.T, dir string, seg uint32, size int64, why string) {
	t.Helper()
	st, err := os.Stat(segFile(dir, seg))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != size {
		t.Fatalf("segment %d is %d octets, want %d: %s", seg, st.Size(), size, why)
	}
}

// wantQuietLog fails if the log reports anything lost, damaged or
// quarantined.
func wantQuietLog(t *testing.T, log *testLog, what string) {
	t.Helper()
	for _, bad := range []string{"lost", "corrupt", "torn", "quarantine", "level=ERROR", "level=WARN"} {
		if strings.Contains(log.String(), bad) {
			t.Fatalf("%s: the log reports %q:\n%s", what, bad, log)
		}
	}
}

// TestPreWriteKill: a Sync leaves zeros written ahead of the active
// segment's records, and Bytes counts them (they take disk space). After
// a kill -9 the zero tail is a clean end: open keeps every article, cuts
// the zeros, copies nothing to quarantine/ and reports nothing lost or
// damaged; the next Sync writes zeros ahead again.
func TestPreWriteKill(t *testing.T) {
	const pre = 64 << 10
	fx := newPreFixture(t, 25, SpoolOptions{PreWrite: pre})
	end := fx.recordsEnd(1)
	wantZeroTail(t, fx.dir, 1, end, pre/2)
	st, _ := os.Stat(segFile(fx.dir, 1))
	if got := fx.s.Bytes(); got != st.Size() {
		t.Errorf("Bytes() = %d, the segment file holds %d", got, st.Size())
	}
	fx.s.abandon()

	var log testLog
	s := openT(t, fx.dir, SpoolOptions{PreWrite: pre, Logger: log.logger()})
	fx.s = s
	fx.wantAll(t, s, "after kill -9 with zeros written ahead")
	if n := s.LostAtOpen(); n != 0 {
		t.Errorf("LostAtOpen() = %d, want 0", n)
	}
	if q := quarantined(t, fx.dir); len(q) != 0 {
		t.Errorf("quarantine holds %v, want nothing", q)
	}
	wantQuietLog(t, &log, "open after kill -9")
	if !strings.Contains(log.String(), "zero tail cut off") {
		t.Errorf("open did not say it cut the zeros:\n%s", &log)
	}
	wantSize(t, fx.dir, 1, end, "open cuts the zeros")
	if got := s.Bytes(); got != end {
		t.Errorf("Bytes() after open = %d, want %d", got, end)
	}

	fx.put(t, 5)
	wantZeroTail(t, fx.dir, 1, fx.recordsEnd(1), pre/2)
	fx.wantAll(t, s, "stored after the open")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPreWriteClose: Close cuts the zeros, so a clean shutdown leaves
// segments that end with their last record, and the next open has no tail
// to cut.
func TestPreWriteClose(t *testing.T) {
	fx := newPreFixture(t, 25, SpoolOptions{PreWrite: 64 << 10})
	if err := fx.s.Close(); err != nil {
		t.Fatal(err)
	}
	wantSize(t, fx.dir, 1, fx.recordsEnd(1), "Close cuts the zeros")
	var log testLog
	s := openT(t, fx.dir, SpoolOptions{PreWrite: 64 << 10, Logger: log.logger()})
	defer s.Close()
	fx.wantAll(t, s, "after Close")
	if strings.Contains(log.String(), "tail cut off") {
		t.Errorf("open after Close cut a tail:\n%s", &log)
	}
	wantQuietLog(t, &log, "open after Close")
}

// TestPreWriteTornBeforeZeros: a record torn over the zeros (its first
// part reached the disk, the rest did not) is still a torn tail: open cuts
// it with the zeros after it, copies the record's bytes (not the zeros) to
// quarantine/, keeps every record before it, and takes the article again.
func TestPreWriteTornBeforeZeros(t *testing.T) {
	fx := newPreFixture(t, 20, SpoolOptions{PreWrite: 64 << 10})
	id := msgID(t.Name(), 999)
	w := wireArticle(id, 1500)
	tok := putT(t, fx.s, id, w, t0)
	flushT(t, fx.s) // written over the zeros, never synced
	fx.s.abandon()
	start := int64(tok.Off) - recHeaderSize
	recEnd := int64(tok.Off) + int64(tok.Len) + int64(len(id)) + recTrailerSize
	full, err := os.ReadFile(segFile(fx.dir, 1))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(full)) <= recEnd {
		t.Fatalf("segment of %d octets: no zeros after the last record (%d)", len(full), recEnd)
	}
	for _, keep := range []int64{recHeaderSize / 2, recHeaderSize + 100, recEnd - start - 1} {
		d := t.TempDir()
		copyTree(t, fx.dir, d)
		// The rest of the record is zeros again, as if its later blocks
		// never reached the disk.
		torn := append([]byte(nil), full...)
		clear(torn[start+keep : recEnd])
		if err := os.WriteFile(segFile(d, 1), torn, 0o644); err != nil {
			t.Fatal(err)
		}
		var log testLog
		s := openT(t, d, SpoolOptions{PreWrite: 64 << 10, Logger: log.logger()})
		for i := range fx.ids {
			e, ok := s.History().Lookup(fx.ids[i])
			if !ok || e.Status != Stored {
				t.Fatalf("torn after %d: %s = %+v, %v; want stored", keep, fx.ids[i], e, ok)
			}
			wantArticle(t, s, "before the torn record", fx.toks[i], fx.wires[i])
		}
		if s.History().Seen(id) {
			t.Fatalf("torn after %d: the torn record is in the history", keep)
		}
		if _, err := s.Get(tok); !errors.Is(err, ErrNotFound) {
			t.Fatalf("torn after %d: Get(torn) = %v, want ErrNotFound", keep, err)
		}
		wantQ := []string{filepath.Base(segFile(d, 1)) + "." + lowerHex16(start) + ".bad"}
		if diff := cmp.Diff(wantQ, quarantined(t, d)); diff != "" {
			t.Fatalf("torn after %d: quarantine (-want +got):\n%s", keep, diff)
		}
		q, err := os.ReadFile(filepath.Join(d, quarantineDir, wantQ[0]))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(q, full[start:start+keep]) || len(q) > 4096+int(keep) || len(bytes.Trim(q[keep:], "\x00")) != 0 {
			t.Fatalf("torn after %d: quarantined %d octets, want the %d torn octets and at most 4 KiB of zeros", keep, len(q), keep)
		}
		if !strings.Contains(log.String(), "torn tail cut off") {
			t.Fatalf("torn after %d: open did not report the torn tail:\n%s", keep, &log)
		}
		wantSize(t, d, 1, start, "the torn record and the zeros are cut")
		tok2 := putT(t, s, id, w, t0)
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		wantArticle(t, s, "stored again", tok2, w)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPreWriteSeal: zeros are written ahead only as far as the segment
// size, a sealed segment ends with its seal (its zeros are cut when it is
// sealed), and expiry removes sealed segments with Bytes still the files'
// size.
func TestPreWriteSeal(t *testing.T) {
	opts := SpoolOptions{SegmentSize: 48 << 10, PreWrite: 16 << 10}
	fx := newPreFixture(t, 100, opts)
	s := fx.s
	active := fx.toks[len(fx.toks)-1].Seg
	if active < 3 {
		t.Fatalf("%d segments: the test needs at least 3", active)
	}
	total := int64(0)
	for seg := uint32(1); seg <= active; seg++ {
		b, err := os.ReadFile(segFile(fx.dir, seg))
		if err != nil {
			t.Fatal(err)
		}
		total += int64(len(b))
		if int64(len(b)) > opts.SegmentSize+int64(recOverhead+2000) {
			t.Errorf("segment %d: %d octets, past the segment size %d", seg, len(b), opts.SegmentSize)
		}
		if seg == active {
			wantZeroTail(t, fx.dir, seg, fx.recordsEnd(seg), 1)
			continue
		}
		wantSize(t, fx.dir, seg, fx.recordsEnd(seg)+recOverhead, "a sealed segment ends with its seal")
		if h, ok := parseRecordHeader(b[len(b)-recOverhead:]); !ok || h.kind != kindSeal {
			t.Fatalf("segment %d does not end with a seal", seg)
		}
	}
	if got := s.Bytes(); got != total {
		t.Fatalf("Bytes() = %d, the files hold %d", got, total)
	}
	n, err := s.Expire(t0.Add(time.Hour), time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("Expire removed nothing")
	}
	for seg := uint32(1); seg <= uint32(n); seg++ {
		if _, err := os.Stat(segFile(fx.dir, seg)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("segment %d still there after Expire: %v", seg, err)
		}
	}
	left := int64(0)
	for seg := uint32(n) + 1; seg <= active; seg++ {
		st, err := os.Stat(segFile(fx.dir, seg))
		if err != nil {
			t.Fatal(err)
		}
		left += st.Size()
	}
	if got := s.Bytes(); got != left {
		t.Fatalf("Bytes() after Expire = %d, the files hold %d", got, left)
	}
	for i, tok := range fx.toks {
		if tok.Seg > uint32(n) {
			wantArticle(t, s, "not expired", tok, fx.wires[i])
		} else if _, err := s.Get(tok); !errors.Is(err, ErrExpired) {
			t.Fatalf("Get(%s) in an expired segment: %v, want ErrExpired", tok, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPreWriteSealThenZeros: a crash between writing a seal and the fsync
// that makes the cut of the segment's zeros durable leaves the seal
// followed by zeros. Open cuts the zeros and keeps the segment sealed: no
// second seal, no appends after the seal, nothing quarantined.
func TestPreWriteSealThenZeros(t *testing.T) {
	opts := SpoolOptions{SegmentSize: 48 << 10, PreWrite: 16 << 10}
	fx := newPreFixture(t, 40, opts)
	fx.s.abandon()
	sealedEnd := fx.recordsEnd(1) + recOverhead
	wantSize(t, fx.dir, 1, sealedEnd, "sealed")
	for _, last := range []bool{false, true} {
		d := t.TempDir()
		copyTree(t, fx.dir, d)
		if err := os.Truncate(segFile(d, 1), sealedEnd+8<<10); err != nil {
			t.Fatal(err)
		}
		if last {
			// The crash came before the next segment's creation reached
			// the disk: the sealed segment is the last one. (The articles
			// of the later segments were never acknowledged: drop them
			// from what the test expects.)
			ents, _ := os.ReadDir(filepath.Join(d, spoolDirName))
			for _, e := range ents {
				if e.Name() != filepath.Base(segFile(d, 1)) {
					os.Remove(filepath.Join(d, spoolDirName, e.Name()))
				}
			}
			os.Remove(filepath.Join(d, histFileName))
		}
		var log testLog
		s := openT(t, d, SpoolOptions{SegmentSize: opts.SegmentSize, PreWrite: opts.PreWrite, Logger: log.logger()})
		for i, tok := range fx.toks {
			if tok.Seg == 1 || !last {
				wantArticle(t, s, "after a seal followed by zeros", tok, fx.wires[i])
			}
		}
		if q := quarantined(t, d); len(q) != 0 {
			t.Errorf("last=%v: quarantine holds %v, want nothing", last, q)
		}
		if strings.Contains(log.String(), "sealed segment left unsealed") {
			t.Errorf("last=%v: open sealed the segment again:\n%s", last, &log)
		}
		// New articles go to a new segment, never after the seal.
		id := msgID(t.Name(), 1000)
		tok := putT(t, s, id, wireArticle(id, 1500), t0)
		if tok.Seg == 1 {
			t.Errorf("last=%v: Put went to the sealed segment 1 at %d", last, tok.Off)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		wantSize(t, d, 1, sealedEnd, "open cuts the zeros after the seal, and adds no seal")
	}
}

// TestPreWriteReaders: a token past the active segment's records, where
// the file holds zeros written ahead, is not found (not corrupt) for Get,
// Section, Verify and Holds, as when the file ended there.
func TestPreWriteReaders(t *testing.T) {
	fx := newPreFixture(t, 10, SpoolOptions{PreWrite: 64 << 10})
	s := fx.s
	defer s.Close()
	end := fx.recordsEnd(1)
	wantZeroTail(t, fx.dir, 1, end, 32<<10)
	for _, tok := range []Token{
		{Seg: 1, Off: uint64(end) + recHeaderSize, Len: 100},          // in the zeros
		{Seg: 1, Off: uint64(end) + 4096, Len: 2000},                  // further in
		{Seg: 1, Off: uint64(end) - 10, Len: 100},                     // straddling the end
		{Seg: 1, Off: fx.toks[9].Off, Len: fx.toks[9].Len + 40 + 100}, // a real record, too long
	} {
		if _, err := s.Get(tok); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
			t.Errorf("Get(%s) = %v, want ErrNotFound", tok, err)
		}
		if sec, err := s.Section(tok); !errors.Is(err, ErrNotFound) {
			if sec != nil {
				sec.Close()
			}
			t.Errorf("Section(%s) = %v, want ErrNotFound", tok, err)
		}
		if _, err := s.Verify(tok, nil); !errors.Is(err, ErrNotFound) {
			t.Errorf("Verify(%s) = %v, want ErrNotFound", tok, err)
		}
		if s.Holds(tok) {
			t.Errorf("Holds(%s) = true, want false", tok)
		}
	}
}

// TestPreWriteLargeRounds: a round of large articles writes no zeros
// ahead: its fdatasync is dominated by its data, and zeros would double
// what it writes to the disk (preWriteRound).
func TestPreWriteLargeRounds(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{})
	defer s.Close()
	var end int64
	for i := range 6 {
		id := msgID(t.Name(), i)
		w := wireArticle(id, 200<<10)
		tok := putT(t, s, id, w, t0)
		end = int64(tok.Off) + int64(tok.Len) + int64(len(id)) + recTrailerSize
		if i%2 == 1 { // rounds of 400 KiB
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			wantSize(t, dir, 1, end, "no zeros after a large round")
		}
	}
	// A small round then writes them.
	id := msgID(t.Name(), 100)
	tok := putT(t, s, id, wireArticle(id, 1500), t0)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	end = int64(tok.Off) + int64(tok.Len) + int64(len(id)) + recTrailerSize
	wantZeroTail(t, dir, 1, end, 2<<20)
}

// TestPreWriteOff: PreWrite < 0 writes no zeros.
func TestPreWriteOff(t *testing.T) {
	fx := newPreFixture(t, 25, SpoolOptions{PreWrite: -1})
	defer fx.s.Close()
	wantSize(t, fx.dir, 1, fx.recordsEnd(1), "PreWrite -1")
}
