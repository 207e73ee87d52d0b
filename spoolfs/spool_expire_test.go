package spoolfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// expireFixture stores 60 articles, one a minute, in segments of about four
// articles each, and syncs, so every full segment is sealed and checkpointed.
func expireFixture(t *testing.T) (*Spool, string, []string, []Token) {
	t.Helper()
	dir := t.TempDir()
	opts := SpoolOptions{SegmentSize: 8 << 10}
	s := openT(t, dir, opts)
	var ids []string
	var toks []Token
	for i := range 60 {
		id := msgID("exp", i)
		ids = append(ids, id)
		toks = append(toks, putT(t, s, id, wireArticle(id, 1800), t0.Add(time.Duration(i)*time.Minute)))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	return s, dir, ids, toks
}

// segmentsOf summarises which segments hold which articles.
func segmentsOf(toks []Token) (first, active uint32, newest map[uint32]int) {
	newest = map[uint32]int{}
	first = toks[0].Seg
	for i, tok := range toks {
		newest[tok.Seg] = i
		active = tok.Seg
	}
	return first, active, newest
}

func TestExpireByAge(t *testing.T) {
	tests := []struct {
		name     string
		maxAge   time.Duration
		wantSome bool
	}{
		{"nothing old enough", 2 * time.Hour, false},
		{"first half", 90 * time.Minute, true},    // now is t0+2h: articles before t0+30m
		{"all but the newest", time.Minute, true}, // the active segment always stays
	}
	now := t0.Add(2 * time.Hour)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, dir, ids, toks := expireFixture(t)
			defer s.Close()
			first, active, newest := segmentsOf(toks)
			// Expected: oldest segments whose newest article is older than the
			// cut, never the active one.
			cut := now.Add(-tc.maxAge)
			var wantGone []uint32
			for seg := first; seg < active; seg++ {
				if !t0.Add(time.Duration(newest[seg]) * time.Minute).Before(cut) {
					break
				}
				wantGone = append(wantGone, seg)
			}
			if tc.wantSome != (len(wantGone) > 0) {
				t.Fatalf("fixture: %d segments due, want some: %v", len(wantGone), tc.wantSome)
			}
			n, err := s.Expire(now, tc.maxAge, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(wantGone) {
				t.Fatalf("Expire removed %d segments, want %d (%v)", n, len(wantGone), wantGone)
			}
			checkExpired(t, s, dir, ids, toks, wantGone)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// The seals keep each segment's newest arrival across a restart:
			// expiring again after reopening removes nothing more.
			s = openT(t, dir, SpoolOptions{SegmentSize: 8 << 10})
			if n, err := s.Expire(now, tc.maxAge, 0); err != nil || n != 0 {
				t.Fatalf("Expire after reopen removed %d, %v; want 0", n, err)
			}
			checkExpired(t, s, dir, ids, toks, wantGone)
			// A minute later, one more segment is due if its newest article is.
			later := newest[first+uint32(len(wantGone))]
			if first+uint32(len(wantGone)) < active {
				due := t0.Add(time.Duration(later) * time.Minute).Add(tc.maxAge + time.Second)
				if n, err := s.Expire(due, tc.maxAge, 0); err != nil || n != 1 {
					t.Fatalf("Expire(%v) after reopen removed %d, %v; want 1", due, n, err)
				}
			}
		})
	}
}

// checkExpired: articles in removed segments are ErrExpired (which is also
// ErrNotFound) but their ids are still refused; all others are readable.
func checkExpired(t *testing.T, s *Spool, dir string, ids []string, toks []Token, gone []uint32) {
	t.Helper()
	isGone := map[uint32]bool{}
	for _, g := range gone {
		isGone[g] = true
		if _, err := os.Stat(segFile(dir, g)); !os.IsNotExist(err) {
			t.Errorf("segment %d still on disk: %v", g, err)
		}
	}
	for i, tok := range toks {
		if isGone[tok.Seg] {
			_, err := s.Get(tok)
			if !errors.Is(err, ErrExpired) || !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get(%s in expired segment %d) = %v, want ErrExpired", ids[i], tok.Seg, err)
			}
			if _, err := s.Section(tok); !errors.Is(err, ErrExpired) {
				t.Fatalf("Section(expired) = %v, want ErrExpired", err)
			}
		} else {
			wantArticle(t, s, "unexpired", tok, wireArticle(ids[i], 1800))
		}
		if _, err := s.Put(ids[i], wireArticle(ids[i], 1800), t0); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("Put(%s) after expiry: %v; the history must still refuse it", ids[i], err)
		}
	}
}

func TestExpireBySize(t *testing.T) {
	tests := []struct {
		name     string
		maxBytes int64
	}{
		{"under the limit", 1 << 30},
		{"half", 60 * 1900 / 2},
		{"tiny: only the active segment stays", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, dir, ids, toks := expireFixture(t)
			defer s.Close()
			first, active, _ := segmentsOf(toks)
			size := func(seg uint32) int64 {
				st, err := os.Stat(segFile(dir, seg))
				if err != nil {
					t.Fatal(err)
				}
				return st.Size()
			}
			total := int64(0)
			for seg := first; seg <= active; seg++ {
				total += size(seg)
			}
			if total != s.Bytes() {
				t.Fatalf("Bytes() = %d, files hold %d", s.Bytes(), total)
			}
			var wantGone []uint32
			for seg := first; seg < active && total > tc.maxBytes; seg++ {
				wantGone = append(wantGone, seg)
				total -= size(seg)
			}
			n, err := s.Expire(t0, 0, tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(wantGone) || s.Bytes() != total {
				t.Fatalf("Expire removed %d segments leaving %d bytes; want %d leaving %d", n, s.Bytes(), len(wantGone), total)
			}
			checkExpired(t, s, dir, ids, toks, wantGone)
		})
	}
}

// TestExpireKeepsOpenSection: a Section opened before its segment expired
// stays readable until closed.
func TestExpireKeepsOpenSection(t *testing.T) {
	s, _, ids, toks := expireFixture(t)
	defer s.Close()
	x, err := s.Section(toks[0])
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Expire(t0, 0, 1); err != nil || n == 0 {
		t.Fatalf("Expire = %d, %v", n, err)
	}
	got := make([]byte, x.Length)
	if _, err := x.File.ReadAt(got, x.Offset); err != nil {
		t.Fatalf("reading an open Section after expiry: %v", err)
	}
	if diff := cmp.Diff(string(wireArticle(ids[0], 1800)), string(got)); diff != "" {
		t.Fatalf("Section after expiry (-want +got):\n%s", diff)
	}
	x.Close()
}

func TestHistoryExpire(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{SegmentSize: 16 << 10})
	// Stored ids a day apart, rejected ids an hour apart.
	for i := range 10 {
		id := msgID("old", i)
		putT(t, s, id, wireArticle(id, 500), t0.Add(time.Duration(i)*24*time.Hour))
		if err := s.Reject(msgID("spam", i), t0.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	pending := "<pending@x>" // Put after the expiry's own Sync would be pending: kept
	now := t0.Add(10 * 24 * time.Hour)
	n, err := s.History().Expire(now, 5*24*time.Hour+time.Minute, 10*24*time.Hour-4*time.Hour-time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	putT(t, s, pending, wireArticle(pending, 500), now)
	// Stored ids: the cut is now-(5d+1m) = t0+5d-1m, so 0..4 go.
	// Rejected ids: the cut is now-(10d-4h-1m) = t0+4h+1m, so 0..4 go.
	want := map[string]bool{pending: true}
	for i := 5; i < 10; i++ {
		want[msgID("old", i)] = true
		want[msgID("spam", i)] = true
	}
	if n != 10 {
		t.Errorf("Expire removed %d entries, want 10", n)
	}
	check := func(what string, s *Spool) {
		t.Helper()
		for i := range 10 {
			for _, id := range []string{msgID("old", i), msgID("spam", i)} {
				if got := s.History().Seen(id); got != want[id] {
					t.Errorf("%s: Seen(%s) = %v, want %v", what, id, got, want[id])
				}
			}
		}
		if !s.History().Seen(pending) {
			t.Errorf("%s: entry Put during expiry lost", what)
		}
		if got := s.History().Len(); got != len(want) {
			t.Errorf("%s: Len() = %d, want %d", what, got, len(want))
		}
	}
	check("after expire", s)
	// A forgotten id may be stored again.
	putT(t, s, msgID("old", 0), wireArticle(msgID("old", 0), 500), now)
	want[msgID("old", 0)] = true
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dir, histFileName))
	s = openT(t, dir, SpoolOptions{SegmentSize: 16 << 10})
	defer s.Close()
	check(fmt.Sprintf("after reopen (log %d bytes)", st.Size()), s)
	if _, err := os.Stat(filepath.Join(dir, histTempName)); !os.IsNotExist(err) {
		t.Errorf("history.tmp left behind: %v", err)
	}
}

// TestHistoryExpireNothingDue: an expiry that removes nothing still
// compacts the log (the records of forgotten ids go), and the index
// rebuilt from the rewritten log answers for every id at once and after a
// reopen.
func TestHistoryExpireNothingDue(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{})
	const n = 300
	for i := range n {
		id := msgID("keep", i)
		putT(t, s, id, wireArticle(id, 300), t0)
		if i%3 == 0 { // a forget record, then the id again
			if err := s.Forget(id); err != nil {
				t.Fatal(err)
			}
			putT(t, s, id, wireArticle(id, 300), t0)
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	h := s.History()
	removed, err := h.Expire(t0.Add(time.Hour), 24*time.Hour, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 0 || h.Len() != n {
		t.Errorf("Expire with nothing due: removed %d, %d entries left; want 0, %d", removed, h.Len(), n)
	}
	for i := range n {
		if st := h.Status(msgID("keep", i), t0); st != Stored {
			t.Fatalf("after Expire: %s is %s, want stored", msgID("keep", i), st)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, SpoolOptions{})
	defer s.Close()
	for i := range n {
		if st := s.History().Status(msgID("keep", i), t0); st != Stored {
			t.Fatalf("after reopen: %s is %s, want stored", msgID("keep", i), st)
		}
	}
}
