package spoolfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// crashFixture is a spool left as kill -9 leaves it: ids[:synced] were
// made durable by Sync; the rest were Put and written to the kernel but
// never synced, so their history records never reached the log.
type crashFixture struct {
	dir    string
	ids    []string
	wires  [][]byte
	toks   []Token
	synced int
}

func newCrashFixture(t *testing.T, n, synced int, opts SpoolOptions) crashFixture {
	t.Helper()
	fx := crashFixture{dir: t.TempDir(), synced: synced}
	s := openT(t, fx.dir, opts)
	for i := range n {
		id := msgID(t.Name(), i)
		w := wireArticle(id, 40)
		fx.ids, fx.wires = append(fx.ids, id), append(fx.wires, w)
		fx.toks = append(fx.toks, putT(t, s, id, w, t0))
		if i == synced-1 {
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	flushT(t, s)
	s.abandon()
	return fx
}

// restore copies the fixture into a fresh directory and applies damage.
func (fx crashFixture) restore(t *testing.T, damage func(dir string)) string {
	t.Helper()
	d := t.TempDir()
	copyTree(t, fx.dir, d)
	if damage != nil {
		damage(d)
	}
	return d
}

// wantPresent checks that ids[i] is Stored at its token with its bytes.
func (fx crashFixture) wantPresent(t *testing.T, s *Spool, what string, i int) {
	t.Helper()
	e, ok := s.History().Lookup(fx.ids[i])
	if !ok || e.Status != Stored || e.Token != fx.toks[i] {
		t.Fatalf("%s: Lookup(%s) = %+v, %v; want stored at %v", what, fx.ids[i], e, ok, fx.toks[i])
	}
	wantArticle(t, s, what, fx.toks[i], fx.wires[i])
}

// TestTornSpoolTail cuts the segment at every byte offset of its last
// record: open must succeed, keep every earlier record, drop the torn one
// (after copying its bytes to quarantine/), and accept it again. The
// segment uncut, with the zeros the Sync wrote ahead of its records
// (preWriteLocked) after the last record, keeps it all and quarantines
// nothing.
func TestTornSpoolTail(t *testing.T) {
	fx := newCrashFixture(t, 5, 4, SpoolOptions{})
	full, err := os.ReadFile(segFile(fx.dir, 1))
	if err != nil {
		t.Fatal(err)
	}
	last := fx.toks[4]
	start := int64(last.Off) - recHeaderSize
	end := int64(last.Off) + int64(last.Len) + int64(len(fx.ids[4])) + recTrailerSize
	if int64(len(full)) <= end || len(bytes.Trim(full[end:], "\x00")) != 0 {
		t.Fatalf("segment of %d octets, records end at %d: want zeros written ahead after them", len(full), end)
	}
	cuts := []int64{int64(len(full))}
	for cut := start; cut <= end; cut++ {
		cuts = append(cuts, cut)
	}
	for _, cut := range cuts {
		d := fx.restore(t, func(d string) {
			if err := os.Truncate(segFile(d, 1), cut); err != nil {
				t.Fatal(err)
			}
		})
		s := openT(t, d, SpoolOptions{})
		for i := range 4 {
			fx.wantPresent(t, s, "earlier record", i)
		}
		var wantQ []string
		if cut >= end {
			fx.wantPresent(t, s, "complete last record, recovered from the spool", 4)
		} else {
			if s.History().Seen(fx.ids[4]) {
				t.Fatalf("cut at %d: torn record %s is in the history", cut, fx.ids[4])
			}
			if _, err := s.Get(last); !errors.Is(err, ErrNotFound) {
				t.Fatalf("cut at %d: Get(torn record) = %v, want ErrNotFound", cut, err)
			}
			if cut > start {
				wantQ = []string{filepath.Base(segFile(d, 1)) + "." + lowerHex16(start) + ".bad"}
				q, err := os.ReadFile(filepath.Join(d, quarantineDir, wantQ[0]))
				if err != nil || !bytes.Equal(q, full[start:cut]) {
					t.Fatalf("cut at %d: quarantined tail = %q, %v; want the %d torn bytes", cut, q, err, cut-start)
				}
			}
			// The upstream never got an ack, so it offers the article again.
			tok := putT(t, s, fx.ids[4], fx.wires[4], t0)
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			wantArticle(t, s, "stored again", tok, fx.wires[4])
		}
		if diff := cmp.Diff(wantQ, quarantined(t, d)); diff != "" {
			t.Fatalf("cut at %d: quarantine (-want +got):\n%s", cut, diff)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func lowerHex16(v int64) string { return strings.ToLower(string(appendHex(nil, uint64(v), 16))) }

// TestTornHistoryTail cuts the history log at every byte offset of its last
// record: every article is still found, because open rebuilds what the log
// lacks from the spool after the last checkpoint.
func TestTornHistoryTail(t *testing.T) {
	fx := newCrashFixture(t, 5, 5, SpoolOptions{})
	hpath := filepath.Join(fx.dir, histFileName)
	full, err := os.ReadFile(hpath)
	if err != nil {
		t.Fatal(err)
	}
	recLen := int64(histRecordOverhead + len(fx.ids[4]))
	end := int64(len(full))
	start := end - recLen
	if got := decodeHistRecord(full[start:]); string(got.msgid) != fx.ids[4] {
		t.Fatalf("last history record is %q, want %s", got.msgid, fx.ids[4])
	}
	for cut := start; cut <= end; cut++ {
		d := fx.restore(t, func(d string) {
			if err := os.Truncate(filepath.Join(d, histFileName), cut); err != nil {
				t.Fatal(err)
			}
		})
		s := openT(t, d, SpoolOptions{})
		for i := range 5 {
			fx.wantPresent(t, s, "after history cut", i)
		}
		var wantQ []string
		if cut > start && cut < end {
			wantQ = []string{histFileName + "." + lowerHex16(start) + ".bad"}
		}
		if diff := cmp.Diff(wantQ, quarantined(t, d)); diff != "" {
			t.Fatalf("cut at %d: quarantine (-want +got):\n%s", cut, diff)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHistoryRebuild: a lost or unreadable history log is rebuilt from the
// spool; an unreadable one is kept in quarantine/.
func TestHistoryRebuild(t *testing.T) {
	fx := newCrashFixture(t, 20, 20, SpoolOptions{SegmentSize: 2 << 10})
	tests := []struct {
		name   string
		damage func(d string)
		wantQ  int
	}{
		{"history removed", func(d string) { os.Remove(filepath.Join(d, histFileName)) }, 0},
		{"history header overwritten", func(d string) {
			f, _ := os.OpenFile(filepath.Join(d, histFileName), os.O_RDWR, 0)
			f.WriteAt([]byte("garbage!"), 0)
			f.Close()
		}, 1},
		{"interrupted rewrite left a temp", func(d string) {
			os.WriteFile(filepath.Join(d, histTempName), []byte("NFHIST01 half written"), 0o644)
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := fx.restore(t, tc.damage)
			s := openT(t, d, SpoolOptions{SegmentSize: 2 << 10})
			defer s.Close()
			for i := range fx.ids {
				fx.wantPresent(t, s, tc.name, i)
			}
			if n := len(quarantined(t, d)); n != tc.wantQ {
				t.Errorf("quarantine holds %d files, want %d", n, tc.wantQ)
			}
			if _, err := os.Stat(filepath.Join(d, histTempName)); !os.IsNotExist(err) {
				t.Errorf("history.tmp still there after open: %v", err)
			}
		})
	}
}

// TestCorruptRecord flips one byte in the middle record of a segment. The
// other records stay readable; Get of the damaged one fails with ErrCorrupt
// when the damage is in what Get checks; and when open scans the segment
// (after a crash) the damaged bytes are copied to quarantine/ and logged,
// not deleted.
func TestCorruptRecord(t *testing.T) {
	tests := []struct {
		name    string
		where   func(tok Token, id string) int64 // offset of the byte to flip
		wantGet error
	}{
		{"payload byte", func(tok Token, _ string) int64 { return int64(tok.Off) + 10 }, ErrCorrupt},
		{"header length", func(tok Token, _ string) int64 { return int64(tok.Off) - recHeaderSize + 9 }, ErrCorrupt},
		{"magic", func(tok Token, _ string) int64 { return int64(tok.Off) - recHeaderSize }, ErrCorrupt},
		{"message-id byte", func(tok Token, _ string) int64 { return int64(tok.Off) + int64(tok.Len) + 2 }, nil},
		{"end marker", func(tok Token, id string) int64 { return int64(tok.Off) + int64(tok.Len) + int64(len(id)) }, nil},
	}
	for _, crash := range []bool{false, true} {
		fx := newCrashFixture(t, 5, 5, SpoolOptions{})
		if !crash {
			s := openT(t, fx.dir, SpoolOptions{})
			if err := s.Close(); err != nil { // a clean close checkpoints the end
				t.Fatal(err)
			}
		}
		for _, tc := range tests {
			name := tc.name + map[bool]string{false: " after clean close", true: " after crash"}[crash]
			t.Run(name, func(t *testing.T) {
				off := tc.where(fx.toks[2], fx.ids[2])
				d := fx.restore(t, func(d string) {
					f, err := os.OpenFile(segFile(d, 1), os.O_RDWR, 0)
					if err != nil {
						t.Fatal(err)
					}
					var b [1]byte
					f.ReadAt(b[:], off)
					b[0] ^= 0x20
					f.WriteAt(b[:], off)
					f.Close()
				})
				var log testLog
				s := openT(t, d, SpoolOptions{Logger: log.logger()})
				defer s.Close()
				for _, i := range []int{0, 1, 3, 4} {
					fx.wantPresent(t, s, "undamaged neighbour", i)
				}
				if _, err := s.Get(fx.toks[2]); !errors.Is(err, tc.wantGet) {
					t.Errorf("Get(damaged) = %v, want %v", err, tc.wantGet)
				}
				q := quarantined(t, d)
				if !crash {
					if len(q) != 0 {
						t.Errorf("clean reopen quarantined %v; the checkpoint says the record was verified when written", q)
					}
					return
				}
				recStart := int64(fx.toks[2].Off) - recHeaderSize
				recEnd := int64(fx.toks[3].Off) - recHeaderSize
				want := []string{"00000001.seg." + lowerHex16(recStart) + ".bad"}
				if diff := cmp.Diff(want, q); diff != "" {
					t.Fatalf("quarantine (-want +got):\n%s", diff)
				}
				got, _ := os.ReadFile(filepath.Join(d, quarantineDir, q[0]))
				orig, _ := os.ReadFile(segFile(d, 1))
				if !bytes.Equal(got, orig[recStart:recEnd]) {
					t.Errorf("quarantined bytes are not the damaged record")
				}
				if !strings.Contains(log.String(), "corrupt spool region") {
					t.Errorf("no corruption reported in the log:\n%s", log.String())
				}
				// Writing goes on after the damaged record.
				id := "<after-damage@x>"
				tok := putT(t, s, id, wireArticle(id, 100), t0)
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
				wantArticle(t, s, "put after damage", tok, wireArticle(id, 100))
			})
		}
	}
}

// TestCorruptHistoryRecord flips a byte of a history record in the middle
// of the log: the record is quarantined and skipped, and the id is found
// again from the spool.
func TestCorruptHistoryRecord(t *testing.T) {
	fx := newCrashFixture(t, 5, 5, SpoolOptions{})
	hb, err := os.ReadFile(filepath.Join(fx.dir, histFileName))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(hb, []byte(fx.ids[2]))
	if i < 0 {
		t.Fatal("history record of the middle article not found")
	}
	d := fx.restore(t, func(d string) {
		hb := bytes.Clone(hb)
		hb[i+3] ^= 1
		os.WriteFile(filepath.Join(d, histFileName), hb, 0o644)
	})
	s := openT(t, d, SpoolOptions{})
	defer s.Close()
	for i := range fx.ids {
		fx.wantPresent(t, s, "after history damage", i)
	}
	q := quarantined(t, d)
	if len(q) != 1 || !strings.HasPrefix(q[0], histFileName+".") {
		t.Errorf("quarantine = %v, want one copy of the damaged history record", q)
	}
}

// TestUnsealedSegment: a crash after a segment filled up but before its
// seal reached the disk. Open scans it, seals it, and everything in it and
// after it is readable.
func TestUnsealedSegment(t *testing.T) {
	opts := SpoolOptions{SegmentSize: 1 << 10}
	fx := newCrashFixture(t, 12, 3, opts)
	d := fx.restore(t, func(d string) {
		st, err := os.Stat(segFile(d, 1))
		if err != nil {
			t.Fatal(err)
		}
		os.Truncate(segFile(d, 1), st.Size()-recOverhead) // drop the seal
	})
	s := openT(t, d, opts)
	for i := range fx.ids {
		fx.wantPresent(t, s, "after losing a seal", i)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(segFile(d, 1))
	if h, ok := parseRecordHeader(b[len(b)-recOverhead:]); !ok || h.kind != kindSeal {
		t.Fatalf("segment 1 was not sealed again")
	}
	s = openT(t, d, opts)
	defer s.Close()
	for i := range fx.ids {
		fx.wantPresent(t, s, "second open", i)
	}
}

// TestCrashBeforeHeader: a crash right after creating a segment file, before
// its header was written, leaves an empty file; open removes it.
func TestCrashBeforeHeader(t *testing.T) {
	fx := newCrashFixture(t, 3, 3, SpoolOptions{})
	d := fx.restore(t, func(d string) { os.WriteFile(segFile(d, 2), nil, 0o644) })
	s := openT(t, d, SpoolOptions{})
	defer s.Close()
	for i := range fx.ids {
		fx.wantPresent(t, s, "after empty segment", i)
	}
	if _, err := os.Stat(segFile(d, 2)); !os.IsNotExist(err) {
		t.Errorf("empty segment still there: %v", err)
	}
	tok := putT(t, s, "<new@x>", wireArticle("<new@x>", 50), t0)
	wantArticle(t, s, "put after removing the empty segment", tok, wireArticle("<new@x>", 50))
}
