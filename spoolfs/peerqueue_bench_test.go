package spoolfs

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
)

// BenchmarkPeerQueueOffer measures the durable path of an article for one
// peer whose connection keeps up: Offer (a journal line) for each article of
// a batch, one Sync for the batch (the group commit before acknowledging
// upstream), then Next and Done(accepted) for each, so the journal rotates
// and is deleted as a real one would. entries/s counts articles.
// BACKLOG_BENCH_DIR chooses the directory (default: the test's temp dir).
func BenchmarkPeerQueueOffer(b *testing.B) {
	for _, batch := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			dir := b.TempDir()
			if d := os.Getenv("BACKLOG_BENCH_DIR"); d != "" {
				var err error
				if dir, err = os.MkdirTemp(d, "bench"); err != nil {
					b.Fatal(err)
				}
				defer os.RemoveAll(dir)
			}
			cfg := queue.DefaultConfig("peer")
			now := time.Unix(0x5db93971, 0)
			p, err := OpenPeerQueue(dir, cfg, now, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.ConnUp(now, 1); err != nil {
				b.Fatal(err)
			}
			es, size := backlogBenchEntries(batch)
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, e := range es {
					if err := p.Offer(now, e); err != nil {
						b.Fatal(err)
					}
				}
				if err := p.Sync(); err != nil {
					b.Fatal(err)
				}
				for range es {
					e, ok, err := p.Next(now, 1)
					if err != nil || !ok {
						b.Fatalf("Next: %v %v", ok, err)
					}
					if err := p.Done(now, 1, e.MessageID, queue.OutcomeAccepted); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
			if err := p.Shutdown(now); err != nil {
				b.Fatal(err)
			}
		})
	}
}
