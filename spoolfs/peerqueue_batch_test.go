package spoolfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/machine/queue"
)

// TestPeerQueueOfferBatch: OfferBatch leaves exactly the files and counts
// that one Offer per entry leaves, through journal rotations and spills of
// a full memory queue, and with the peer down (straight to .B); an entry
// the machine refuses is skipped and reported, the rest are taken; and
// everything offered reaches the peer once.
func TestPeerQueueOfferBatch(t *testing.T) {
	entries := func(from, to int) []queue.Entry {
		var es []queue.Entry
		for i := from; i < to; i++ {
			es = append(es, queue.Entry{Token: fmt.Sprintf("@%032X@", i), MessageID: pqID(i)})
		}
		return es
	}
	contents := func(w *pqWorld) map[string]string {
		m := map[string]string{}
		for _, name := range w.files() {
			data, err := os.ReadFile(filepath.Join(w.dir, name))
			if err != nil {
				t.Fatal(err)
			}
			m[name] = string(data)
		}
		return m
	}
	for _, up := range []bool{true, false} {
		t.Run(fmt.Sprintf("up=%v", up), func(t *testing.T) {
			one, batch := newPQWorld(t), newPQWorld(t)
			batch.now = one.now
			for _, w := range []*pqWorld{one, batch} {
				if up {
					w.up()
				}
			}
			for _, e := range entries(0, 40) {
				e.Offered = one.now
				if err := one.p.Offer(one.now, e); err != nil {
					t.Fatal(err)
				}
			}
			es := entries(0, 40)
			for i := range es {
				es[i].Offered = batch.now
			}
			if err := batch.p.OfferBatch(batch.now, es); err != nil {
				t.Fatal(err)
			}
			for _, w := range []*pqWorld{one, batch} {
				if err := w.p.Sync(); err != nil {
					t.Fatal(err)
				}
				if err := w.p.Check(); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(contents(one), contents(batch)); diff != "" {
				t.Errorf("files after Offer each (-) and OfferBatch (+):\n%s", diff)
			}
			if diff := cmp.Diff(one.p.Stats(), batch.p.Stats()); diff != "" {
				t.Errorf("stats after Offer each (-) and OfferBatch (+):\n%s", diff)
			}
			if t.Failed() {
				return
			}
			// A refused entry does not stop the rest.
			bad := append(entries(40, 42), queue.Entry{Token: "", MessageID: pqID(99)})
			bad = append(bad, entries(42, 44)...)
			if err := batch.p.OfferBatch(batch.now, bad); err == nil {
				t.Error("OfferBatch with an entry without a token: no error")
			}
			if got := batch.p.Stats().Offered; got != 44 {
				t.Errorf("Offered = %d after the refused entry, want 44", got)
			}
			if err := batch.p.Sync(); err != nil {
				t.Fatal(err)
			}
			if up {
				batch.down() // drain brings its own connection up
			}
			batch.drain()
			for i := range 44 {
				if n := batch.answered[pqID(i)]; n != 1 {
					t.Errorf("%s reached the peer %d times, want once", pqID(i), n)
				}
			}
		})
	}
}

// BenchmarkPeerQueueOfferBatch compares one Offer per entry with OfferBatch
// for a group commit of 100 entries (journal lines only; no Sync, so the
// writes, not the fsync, are measured). ns/op is per entry.
func BenchmarkPeerQueueOfferBatch(b *testing.B) {
	for _, batched := range []bool{false, true} {
		b.Run(fmt.Sprintf("batched=%v", batched), func(b *testing.B) {
			cfg := queue.DefaultConfig("peer")
			cfg.QueueSize = 1 << 20
			now := time.Unix(0x5db93971, 0)
			p, err := OpenPeerQueue(b.TempDir(), cfg, now, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.ConnUp(now, 1); err != nil {
				b.Fatal(err)
			}
			es, _ := backlogBenchEntries(100)
			b.ResetTimer()
			for i := 0; i < b.N; i += len(es) {
				for j := range es {
					es[j].MessageID = fmt.Sprintf("<%d.%d@bench>", i, j)
				}
				if batched {
					if err := p.OfferBatch(now, es); err != nil {
						b.Fatal(err)
					}
					continue
				}
				for _, e := range es {
					if err := p.Offer(now, e); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
