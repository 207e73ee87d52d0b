package spoolfs

import (
	"os"
	"strings"
	"testing"
)

// lostFixture stores n articles in segments of about four articles each,
// syncs them (acknowledged: history logged, checkpointed) and closes.
func lostFixture(t *testing.T, n int) (dir string, ids []string, toks []Token) {
	t.Helper()
	dir = t.TempDir()
	s := openT(t, dir, SpoolOptions{SegmentSize: 4 * 600})
	for i := range n {
		id := msgID(t.Name(), i)
		ids = append(ids, id)
		toks = append(toks, putT(t, s, id, wireArticle(id, 400), t0))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, ids, toks
}

// TestTruncatedSegmentForgetsLost cuts a sealed segment in the middle and
// deletes a later one, so that acknowledged articles are gone at restart
// while history would still answer 438 for them. The open must
// count exactly the articles whose data is gone, log one line, forget
// them so upstream may offer them again, and keep the rest; the forgetting
// survives the next open, which finds nothing more to drop.
func TestTruncatedSegmentForgetsLost(t *testing.T) {
	dir, ids, toks := lostFixture(t, 20)
	if toks[0].Seg != 1 || toks[19].Seg < 4 {
		t.Fatalf("fixture: articles span segments %d..%d, want 1..4 or more", toks[0].Seg, toks[19].Seg)
	}
	// Cut segment 1 inside its second article; delete segment 3.
	var cut Token
	for _, tok := range toks {
		if tok.Seg == 1 && tok.Off > toks[0].Off {
			cut = tok
			break
		}
	}
	if err := os.Truncate(segFile(dir, 1), int64(cut.Off)+10); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(segFile(dir, 3)); err != nil {
		t.Fatal(err)
	}
	wantLost := map[string]bool{}
	for i, tok := range toks {
		if tok.Seg == 1 && tok.Off >= cut.Off || tok.Seg == 3 {
			wantLost[ids[i]] = true
		}
	}

	var log testLog
	s := openT(t, dir, SpoolOptions{SegmentSize: 4 * 600, Logger: log.logger()})
	if got := s.LostAtOpen(); got != len(wantLost) {
		t.Errorf("LostAtOpen = %d, want %d", got, len(wantLost))
	}
	if n := strings.Count(log.String(), "acknowledged articles lost"); n != 1 {
		t.Errorf("%d log lines about lost articles, want 1:\n%s", n, log.String())
	}
	check := func(what string, s *Spool) {
		t.Helper()
		for i, id := range ids {
			st := s.History().Status(id, t0)
			switch {
			case wantLost[id] && st != Unknown:
				t.Errorf("%s: %s lost but history says %s", what, id, st)
			case wantLost[id] && s.Holds(toks[i]):
				t.Errorf("%s: Holds(%s) for a lost article", what, toks[i])
			case !wantLost[id] && (st != Stored || !s.Holds(toks[i])):
				t.Errorf("%s: %s kept but history says %s, Holds %v", what, id, st, s.Holds(toks[i]))
			}
		}
	}
	check("first open", s)
	// The lost ids can be stored again.
	for id := range wantLost {
		putT(t, s, id, wireArticle(id, 400), t0)
		break
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, SpoolOptions{SegmentSize: 4 * 600})
	defer s.Close()
	if got := s.LostAtOpen(); got != 0 {
		t.Errorf("second open: LostAtOpen = %d, want 0 (the first open's forget records are durable)", got)
	}
}

// TestMatchesAfterReuse: an article lost at a torn tail leaves its offsets
// to the next Put. A token of the lost article (still in some backlog)
// then points at another article of the same length: Holds says yes, but
// Matches, which compares the record's message-id CRC, says no.
func TestMatchesAfterReuse(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, SpoolOptions{})
	a, b := msgID(t.Name(), 0), msgID(t.Name(), 1) // same length
	// The same bytes but for the ids: the same length.
	wire := func(id string) []byte {
		return []byte("Message-ID: " + id + "\r\nSubject: reuse\r\n\r\nbody\r\n.\r\n")
	}
	tokA := putT(t, s, a, wire(a), t0)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segFile(dir, 1), int64(tokA.Off)+50); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, SpoolOptions{})
	defer s.Close()
	if s.LostAtOpen() != 1 {
		t.Fatalf("LostAtOpen = %d, want 1", s.LostAtOpen())
	}
	tokB := putT(t, s, b, wire(b), t0)
	if tokB != tokA {
		t.Fatalf("the new article went to %v, not the lost one's %v: the test proves nothing", tokB, tokA)
	}
	if !s.Holds(tokA) {
		t.Error("Holds(tokA) = false; the offsets hold an article again")
	}
	if s.Matches(tokA, a) {
		t.Errorf("Matches(%v, %s) = true: the record there is %s", tokA, a, b)
	}
	if !s.Matches(tokB, b) {
		t.Errorf("Matches(%v, %s) = false for the article stored there", tokB, b)
	}
}
