package ingest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testBudget is a Budget of max octets that records the most it held.
type testBudget struct {
	max, used, peak int
}

func (b *testBudget) Chunk() []byte {
	if b.used+ArticleChunk > b.max {
		return nil
	}
	b.used += ArticleChunk
	b.peak = max(b.peak, b.used)
	return make([]byte, 0, ArticleChunk)
}

func (b *testBudget) Free(c []byte) {
	if cap(c) != ArticleChunk {
		panic("freed a buffer that is not a chunk")
	}
	b.used -= ArticleChunk
}

// TestBudget reads a 3.5 MB article with a budget of two chunks: the
// machine takes a chunk before it allocates it, stops decoding (Starved,
// Paused) when the budget refuses one, and after Resume, with room again,
// finishes the article byte for byte; every chunk is given back once the
// article is handed out.
func TestBudget(t *testing.T) {
	b := &testBudget{max: 2 * ArticleChunk}
	cfg := testCfg
	cfg.Budget = b
	cfg.MaxBuffered = 16 << 20
	g := New(t0, cfg)
	art := article(a1) + strings.Repeat("body line of a large article......................\r\n", 3_500_000/52)
	in := []byte(takethis(a1, art))
	// The runtime stops reading while Paused: offer input 64 KiB at a
	// time, only while the machine takes it.
	off := 0
	for off < len(in) && !g.Paused() {
		n := min(64<<10, len(in)-off)
		g.Receive(t0, in[off:off+n])
		off += n
	}
	if !g.Starved() || !g.Paused() {
		t.Fatalf("after %d of %d octets with a budget of two chunks: Starved %v, Paused %v; want both", off, len(in), g.Starved(), g.Paused())
	}
	if b.used != 2*ArticleChunk || b.peak > b.max {
		t.Errorf("budget used %d (peak %d), want %d", b.used, b.peak, 2*ArticleChunk)
	}
	if _, ok := g.NextEvent(); ok {
		t.Error("an event before the article is complete")
	}
	b.max = 4 * ArticleChunk
	g.Resume(t0)
	for off < len(in) {
		if g.Paused() {
			t.Fatalf("paused again at %d of %d with room in the budget", off, len(in))
		}
		n := min(64<<10, len(in)-off)
		g.Receive(t0, in[off:off+n])
		off += n
	}
	ev, ok := g.NextEvent()
	a, isArt := ev.(Article)
	if !ok || !isArt {
		t.Fatalf("event %v, want the article", ev)
	}
	if diff := cmp.Diff(art, string(a.Data)); diff != "" {
		t.Errorf("Data differs from the article (-want +got):\n%.500s", diff)
	}
	if b.used != 0 {
		t.Errorf("budget still charged %d after the article was handed out", b.used)
	}
	if b.peak > b.max {
		t.Errorf("budget peak %d over its %d", b.peak, b.max)
	}
}

// TestBudgetGivenBack: an article dropped half-read (the peer's EOF, a
// connection ended under the machine) gives its chunks back.
func TestBudgetGivenBack(t *testing.T) {
	for _, end := range []string{"eof", "drop"} {
		b := &testBudget{max: 8 * ArticleChunk}
		cfg := testCfg
		cfg.Budget = b
		g := New(t0, cfg)
		g.Receive(t0, []byte("TAKETHIS "+a1+"\r\n"+strings.Repeat("x", 100)+"\r\n"))
		for range 40 {
			g.Receive(t0, []byte(strings.Repeat("y", 64<<10)+"\r\n"))
		}
		if b.used == 0 {
			t.Fatalf("%s: nothing charged for a 2.5 MB partial article", end)
		}
		if end == "eof" {
			g.ReceiveEOF(t0)
		} else {
			g.Drop()
		}
		if b.used != 0 {
			t.Errorf("%s: %d octets still charged", end, b.used)
		}
	}
}
