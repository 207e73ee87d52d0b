package newsfeed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/spoolfs"
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

// TestVerifiedBodiesBounded checks the cache of articles found sendable:
// it knows what was added lately (most of the last thousand of a long run
// of 2 KB articles), never an article it was not given (another id under
// the same token, or another token in the same slot), and forgets what is
// dropped.
func TestVerifiedBodiesBounded(t *testing.T) {
	var v verifiedBodies
	tok := func(i int) spoolfs.Token {
		return spoolfs.Token{Seg: 1 + uint32(i/100000), Off: 64 + uint64(i%100000)*2100, Len: 2000}
	}
	n := 5*verifiedSlots + 17
	for i := range n {
		v.add(0, tok(i), "<a@b>")
	}
	for _, tc := range []struct {
		what  string
		token spoolfs.Token
		id    string
		want  bool
	}{
		{"the last one added", tok(n - 1), "<a@b>", true},
		{"the last token under another id (offsets reused)", tok(n - 1), "<c@d>", false},
		{"a token never added", spoolfs.Token{Seg: 99, Off: 64, Len: 2000}, "<a@b>", false},
	} {
		if got := v.has(tc.token, tc.id); got != tc.want {
			t.Errorf("%s: has = %v, want %v", tc.what, got, tc.want)
		}
	}
	known := 0
	for i := n - 1000; i < n; i++ {
		if v.has(tok(i), "<a@b>") {
			known++
		}
	}
	if known < 900 {
		t.Errorf("%d of the last 1000 articles added are known, want at least 900", known)
	}
	// Two tokens that share a slot: the later one takes it.
	a := tok(0)
	sa, ia := v.slot(a)
	b := a
	for j := 1; ; j++ {
		b = spoolfs.Token{Seg: 7, Off: 64 + uint64(j)*2100, Len: 2000}
		if sb, ib := v.slot(b); sb == sa && ib == ia {
			break
		}
	}
	v.add(0, a, "<a@b>")
	v.add(0, b, "<b@b>")
	if v.has(a, "<a@b>") || !v.has(b, "<b@b>") {
		t.Errorf("after adding two tokens of one slot: has(first) = %v, has(second) = %v; want false, true", v.has(a, "<a@b>"), v.has(b, "<b@b>"))
	}
	v.forget(b, "<b@b>")
	if v.has(b, "<b@b>") {
		t.Error("has = true after forget")
	}
}

// TestVerifiedBodiesReset: a reset forgets every article, and a check
// that began before the reset (its generation) cannot add what it found
// after it, since the reset may have been about to drop just that.
func TestVerifiedBodiesReset(t *testing.T) {
	var v verifiedBodies
	tA, tB, tC := spoolfs.Token{Seg: 1, Off: 100, Len: 10}, spoolfs.Token{Seg: 1, Off: 200, Len: 10}, spoolfs.Token{Seg: 1, Off: 300, Len: 10}
	before := v.generation()
	v.add(before, tA, "<a@b>")
	v.reset()
	if v.has(tA, "<a@b>") {
		t.Error("has = true after reset")
	}
	v.add(before, tB, "<b@b>")
	if v.has(tB, "<b@b>") {
		t.Error("a check begun before the reset added its article after it")
	}
	v.add(v.generation(), tC, "<c@b>")
	if !v.has(tC, "<c@b>") {
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
	if !h.r.badBodies.ok.has(e.Token, id) {
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
// larger articles, on both runtimes, in both ways they leave: up to
// driver.CopyBody octets read into the process, CRC-checked there and
// written from there (the damage is found when the article is sent: the
// connection's write fails before any byte of it leaves, and articles
// written before it on that connection are offered again and refused or
// rejected as already there); larger ones by sendfile(2) after Relay.sendable read and
// CRC-checked them (Spool.Verify: found at pull, before it is offered, so
// no connection fails). Either way a byte flipped in one article's
// segment file after it was stored keeps that article from the peer: it
// is settled as missing, forgotten by the history (so upstream may offer
// it again) and counted lost, and every other article arrives intact.
func TestCorruptLargeArticleNotSent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int // articles
		lines  int // of about 73 octets each
		copied bool
	}{
		{"copied", 12, 1500, true},    // about 110 KB each
		{"sendfile", 4, 15000, false}, // about 1.1 MB each
	} {
		t.Run(tc.name, func(t *testing.T) {
			forRuntimes(t, func(t *testing.T, rt string) {
				testCorruptLargeArticle(t, rt, tc.n, tc.lines, tc.copied)
			})
		})
	}
}

func testCorruptLargeArticle(t *testing.T, rt string, n, lines int, copied bool) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink", KeepReceived: true})
	down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
	dir := t.TempDir()
	h := startRelay(t, relayConfigRT(t, rt, dir, peerText("p", s, "connections = 2")), nil)
	const bad = "<big2@t>"
	var arts [][]byte
	for i := range n {
		a := testArticle(fmt.Sprintf("<big%d@t>", i), "misc.test", "up!x", lines)
		if len(a) <= driver.SmallBody || (len(a) <= driver.CopyBody) != copied {
			t.Fatalf("article of %d bytes: want one over driver.SmallBody, copied = %v (driver.CopyBody %d)", len(a), copied, driver.CopyBody)
		}
		arts = append(arts, a)
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != n {
		t.Fatalf("inject: %s", res)
	}
	flipInSpool(t, dir, []byte(fmt.Sprintf("body line %d of %s", lines/2, bad)))
	s.RemoveFault(down)
	h.settle()
	ps, _ := h.r.PeerStats("p")
	switch {
	case ps.Missing != 1:
		t.Errorf("%s; want the damaged one missing", ps.Line())
	case !copied && ps.Accepted != int64(n-1):
		// Found at pull, before it was offered: no connection failed, so
		// nothing was offered twice.
		t.Errorf("%s; want %d accepted", ps.Line(), n-1)
	case ps.Accepted+ps.Refused+ps.Rejected != int64(n-1):
		t.Errorf("%s; want %d accepted, or refused or rejected as already there", ps.Line(), n-1)
	}
	if s.Has(bad) {
		t.Error("the damaged article reached the peer")
	}
	if _, ok := h.r.Spool().History().Lookup(bad); ok {
		t.Errorf("the damaged %s is still in the history: upstream could never offer it again", bad)
	}
	if got := h.r.Status().LostArticles; got != 1 {
		t.Errorf("status lost_articles = %d, want 1", got)
	}
	for i := range n {
		id := fmt.Sprintf("<big%d@t>", i)
		if id == bad {
			continue
		}
		got, ok := s.ArticleBytes(id)
		want := fmt.Sprintf("body line %d of %s", lines-1, id)
		if !ok {
			t.Errorf("%s did not reach the peer", id)
		} else if !bytes.Contains(got, []byte(want)) || bytes.Contains(got, []byte("Xody line")) {
			t.Errorf("%s reached the peer damaged or cut (%d bytes)", id, len(got))
		}
	}
	h.checkStats()
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

// TestPlanBodies: the small articles of a write, named first
// (driver.BodyPlanner) and then appended one by one, are exactly the stored
// ones, in the planned order, out of it, and when not planned at all; a
// token that does not parse, planned among good ones, fails only its own
// AppendBody.
func TestPlanBodies(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
	h := startRelay(t, relayConfig(t, t.TempDir(), peerText("p", s, "connections = 1")), nil)
	var arts [][]byte
	for i := range 30 {
		arts = append(arts, testArticle(fmt.Sprintf("<pl%d@t>", i), "misc.test", "up!x", 20))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 30 {
		t.Fatalf("inject: %s", res)
	}
	sp := h.r.Spool()
	var toks []string
	want := map[string][]byte{}
	for i := range 30 {
		e, ok := sp.History().Lookup(fmt.Sprintf("<pl%d@t>", i))
		if !ok {
			t.Fatalf("<pl%d@t> not in the history", i)
		}
		body, err := sp.Get(e.Token)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, e.Token.String())
		want[e.Token.String()] = body
	}
	b := spoolBodies{s: sp, ra: newBodyReader(sp), bad: &h.r.badBodies}
	var _ driver.BodyPlanner = b
	check := func(what string, tok string, wantErr bool) {
		t.Helper()
		size := int64(len(want[tok]))
		if wantErr {
			size = 10
		}
		got, err := b.AppendBody([]byte("x"), tok, size)
		switch {
		case wantErr && err == nil:
			t.Fatalf("%s: AppendBody(%q) took it", what, tok)
		case wantErr:
		case err != nil:
			t.Fatalf("%s: AppendBody(%s): %v", what, tok, err)
		case !bytes.Equal(got, append([]byte("x"), want[tok]...)):
			t.Fatalf("%s: AppendBody(%s): %d bytes that differ from the %d stored", what, tok, len(got)-1, len(want[tok]))
		}
	}
	plan := append([]string(nil), toks[5:15]...)
	b.PlanBodies(plan)
	clear(plan) // the runtime reuses its slice
	for _, tok := range toks[5:15] {
		check("planned, in order", tok, false)
	}
	b.PlanBodies(toks[20:30])
	for _, i := range []int{29, 20, 25, 0, 21} {
		check("planned, out of order", toks[i], false)
	}
	for _, tok := range toks[:5] {
		check("not planned", tok, false)
	}
	b.PlanBodies([]string{toks[1], "not-a-token", toks[2]})
	check("planned before a bad token", toks[1], false)
	check("a bad token in the plan", "not-a-token", true)
	check("planned after a bad token", toks[2], false)
}

// TestVerifiedSlotKeepsNoMemory checks that a verified slot holds no
// pointer: a message-id kept there would keep its backlog refill's whole
// string alive (spoolfs.Backlog.ReadReplay parses a refill from one).
func TestVerifiedSlotKeepsNoMemory(t *testing.T) {
	typ := reflect.TypeFor[verifiedSlot]()
	for i := range typ.NumField() {
		switch f := typ.Field(i); f.Type.Kind() {
		case reflect.Struct, reflect.Uint32, reflect.Uint64:
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[spoolfs.Token]() {
				t.Errorf("verifiedSlot.%s is a %s, which may hold pointers", f.Name, f.Type)
			}
		default:
			t.Errorf("verifiedSlot.%s is a %s, which may hold memory", f.Name, f.Type)
		}
	}
}

// TestCopiedOnce: an article over driver.SmallBody is copied (read,
// checked and written from the process) until the append path has checked
// it once; the other connections then send it from its file
// (driver.BodyCopier). One whose copy failed is copied again, so that it
// is checked again.
func TestCopiedOnce(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
	h := startRelay(t, relayConfig(t, t.TempDir(), peerText("p", s, "connections = 1")), nil)
	arts := [][]byte{
		testArticle("<cp0@t>", "misc.test", "up!x", 1500),
		testArticle("<cp1@t>", "misc.test", "up!x", 1500),
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != len(arts) {
		t.Fatalf("inject: %s", res)
	}
	sp := h.r.Spool()
	b := spoolBodies{s: sp, ra: newBodyReader(sp), bad: &h.r.badBodies}
	var _ driver.BodyCopier = b
	for i := range arts {
		e, _ := sp.History().Lookup(fmt.Sprintf("<cp%d@t>", i))
		tok, size := e.Token.String(), int64(e.Token.Len)
		if size <= driver.SmallBody || size > driver.CopyBody {
			t.Fatalf("article of %d octets: want one over driver.SmallBody, at most driver.CopyBody", size)
		}
		if !b.Copied(tok, size) {
			t.Fatalf("<cp%d@t>: Copied = false before any copy", i)
		}
		if i == 1 {
			// A size that does not match fails the append: still copied.
			if _, err := b.AppendBody(nil, tok, size-1); err == nil {
				t.Fatal("AppendBody with the wrong size: no error")
			}
			if !b.Copied(tok, size) {
				t.Fatalf("<cp%d@t>: Copied = false after a failed copy", i)
			}
			continue
		}
		if _, err := b.AppendBody(nil, tok, size); err != nil {
			t.Fatal(err)
		}
		if b.Copied(tok, size) {
			t.Errorf("<cp%d@t>: Copied = true after it was copied and checked", i)
		}
	}
}
