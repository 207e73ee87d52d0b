package newsfeed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/drive"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestCorruptArticleSettledMissing: a stored article whose bytes were
// damaged on disk (its CRC no longer matches) fails the connection that
// tried to send it once; after that it is settled as missing and every
// other article reaches the peer, instead of the connection failing on it
// forever.
func TestCorruptArticleSettledMissing(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
	dir := t.TempDir()
	h := startRelay(t, relayConfig(t, dir, peerText("p", s, "connections = 1")), nil)
	var arts [][]byte
	for i := range 10 {
		arts = append(arts, testArticle(fmt.Sprintf("<c%d@t>", i), "misc.test", "up!x", 10))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 10 {
		t.Fatalf("inject: %s", res)
	}
	// Damage one byte of <c4@t>'s body in its segment file.
	flipInSpool(t, dir, []byte("body line 5 of <c4@t>"))
	s.RemoveFault(down)
	h.settle()
	ps, _ := h.r.PeerStats("p")
	if ps.Accepted != 9 || ps.Missing != 1 {
		t.Errorf("%s; want 9 accepted and the damaged one missing", ps.Line())
	}
	if s.Has("<c4@t>") {
		t.Error("the damaged article reached the peer")
	}
	h.checkStats()
}

// TestVerifiedBodiesBounded checks the set of lately verified articles:
// it knows what was added lately, forgets what is dropped, and keeps at
// most two generations however many articles go by.
func TestVerifiedBodiesBounded(t *testing.T) {
	var v verifiedBodies
	tok := func(i int) string { return fmt.Sprintf("@%032X@", i) }
	n := 5*verifiedMax + 17
	for i := range n {
		v.add(0, tok(i), "<a@b>")
	}
	if got := len(v.cur) + len(v.old); got > 2*verifiedMax {
		t.Errorf("%d entries after %d adds, want at most %d", got, n, 2*verifiedMax)
	}
	for _, tc := range []struct {
		what      string
		token, id string
		want      bool
	}{
		{"the last one added", tok(n - 1), "<a@b>", true},
		{"one a generation ago", tok(n - verifiedMax - 1), "<a@b>", true},
		{"the first one, long gone", tok(0), "<a@b>", false},
		{"the last token under another id (offsets reused)", tok(n - 1), "<c@d>", false},
	} {
		if got := v.has(tc.token, tc.id); got != tc.want {
			t.Errorf("%s: has = %v, want %v", tc.what, got, tc.want)
		}
	}
	v.forget(tok(n-1), "<a@b>")
	if v.has(tok(n-1), "<a@b>") {
		t.Error("has = true after forget")
	}
}

// TestVerifiedBodiesReset: a reset forgets every article, and a check
// that began before the reset (its generation) cannot add what it found
// after it, since the reset may have been about to drop just that.
func TestVerifiedBodiesReset(t *testing.T) {
	var v verifiedBodies
	before := v.generation()
	v.add(before, "@A@", "<a@b>")
	v.reset()
	if v.has("@A@", "<a@b>") {
		t.Error("has = true after reset")
	}
	v.add(before, "@B@", "<b@b>")
	if v.has("@B@", "<b@b>") {
		t.Error("a check begun before the reset added its article after it")
	}
	v.add(v.generation(), "@C@", "<c@b>")
	if !v.has("@C@", "<c@b>") {
		t.Error("a check begun after the reset did not add its article")
	}
}

// TestSendableAfterSpoolExpiry: Relay.sendable remembers an article it
// found sendable for the next peer, but never past the spool: once the
// spool expired the article's segment (here the spool alone, without
// Relay.Expire resetting what sendable remembers), it is not sendable.
func TestSendableAfterSpoolExpiry(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
	cfg := relayConfig(t, t.TempDir(), peerText("p", s, "connections = 1"))
	h := startRelay(t, cfg, func(o *Options) { o.SegmentSize = 4 << 10 })
	var arts [][]byte
	for i := range 40 {
		arts = append(arts, testArticle(fmt.Sprintf("<x%d@t>", i), "misc.test", "up!x", 10))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 40 {
		t.Fatalf("inject: %s", res)
	}
	const id = "<x0@t>"
	e, ok := h.r.Spool().History().Lookup(id)
	if !ok {
		t.Fatalf("%s not in the history", id)
	}
	for _, what := range []string{"first check", "second check (remembered)"} {
		if !h.r.sendable(id, e.Token.String(), e.Token) {
			t.Fatalf("%s: %s not sendable", what, id)
		}
	}
	if !h.r.badBodies.ok.has(e.Token.String(), id) {
		t.Fatalf("%s not remembered as sendable", id)
	}
	if _, err := h.r.Spool().Expire(time.Now().Add(48*time.Hour), 24*time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	if h.r.Spool().Holds(e.Token) {
		t.Fatalf("the spool still holds %s after expiring its segment", id)
	}
	if h.r.sendable(id, e.Token.String(), e.Token) {
		t.Errorf("%s sendable after its segment expired", id)
	}
}

// TestCorruptLargeArticleNotSent is TestCorruptArticleSettledMissing for
// articles larger than drive.SmallBody, which leave by sendfile(2) after
// Relay.sendable read and CRC-checked them (Spool.Verify), on both
// runtimes: a byte flipped in one article's segment file after it was
// stored keeps that article from the peer (it is settled as missing), and
// every other article arrives intact. Without the check the damaged
// article reaches the peer.
func TestCorruptLargeArticleNotSent(t *testing.T) {
	forRuntimes(t, func(t *testing.T, rt string) {
		s := nntptest.Start(t, nntptest.Options{Hostname: "sink", KeepReceived: true})
		down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
		dir := t.TempDir()
		h := startRelay(t, relayConfigRT(t, rt, dir, peerText("p", s, "connections = 2")), nil)
		const n, bad = 12, "<big5@t>"
		var arts [][]byte
		for i := range n {
			a := testArticle(fmt.Sprintf("<big%d@t>", i), "misc.test", "up!x", 1500) // about 110 KB
			if len(a) <= drive.SmallBody {
				t.Fatalf("article of %d bytes: not larger than drive.SmallBody", len(a))
			}
			arts = append(arts, a)
		}
		if res := h.r.Inject(context.Background(), arts); res.Accepted != n {
			t.Fatalf("inject: %s", res)
		}
		flipInSpool(t, dir, []byte("body line 777 of "+bad))
		s.RemoveFault(down)
		h.settle()
		ps, _ := h.r.PeerStats("p")
		// Found at pull, before it was offered: no connection failed, so
		// nothing was offered twice.
		if ps.Accepted != n-1 || ps.Missing != 1 {
			t.Errorf("%s; want %d accepted and the damaged one missing", ps.Line(), n-1)
		}
		if s.Has(bad) {
			t.Error("the damaged article reached the peer")
		}
		for i := range n {
			id := fmt.Sprintf("<big%d@t>", i)
			if id == bad {
				continue
			}
			got, ok := s.ArticleBytes(id)
			if !ok {
				t.Errorf("%s did not reach the peer", id)
			} else if !bytes.Contains(got, []byte("body line 1499 of "+id)) || bytes.Contains(got, []byte("Xody line")) {
				t.Errorf("%s reached the peer damaged or cut (%d bytes)", id, len(got))
			}
		}
		h.checkStats()
	})
}

// flipInSpool overwrites the first byte of the last place mark occurs in
// the spool's segment files with 'X', as a disk error would.
func flipInSpool(t *testing.T, dir string, mark []byte) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "spool", "spool", "*"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		if i := bytes.LastIndex(data, mark); i >= 0 {
			f, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("X"), int64(i)); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("%q not found in the spool files %v", mark, files)
}
