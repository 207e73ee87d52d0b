package spoolfs

import (
	"fmt"
	"os"
	"testing"

	"github.com/newsflow/newsflow/machine/queue"
)

// backlogBenchEntries are innfeed-shaped entries: 38-octet tokens, ~40-octet
// message-ids, about 80 octets a line.
func backlogBenchEntries(n int) ([]queue.Entry, int64) {
	es := make([]queue.Entry, n)
	var size int64
	for i := range es {
		es[i] = queue.Entry{Token: fmt.Sprintf("@0301%032X@", i), MessageID: fmt.Sprintf("<part%dof99.Xy7Qz%06d@news.example.net>", i%99, i)}
		size += queue.LineLen(es[i])
	}
	return es, size
}

// BenchmarkBacklogAppend measures appends to a .B file (MB/s of lines) in
// batches of the given size, without fsync and with a group-commit Sync
// after each batch. BACKLOG_BENCH_DIR chooses the directory (default: the
// test's temp dir, often tmpfs, where fsync is free).
func BenchmarkBacklogAppend(b *testing.B) {
	for _, bc := range []struct {
		batch int
		sync  bool
	}{{1, false}, {100, false}, {100, true}, {1000, true}} {
		b.Run(fmt.Sprintf("batch=%d/sync=%t", bc.batch, bc.sync), func(b *testing.B) {
			dir := b.TempDir()
			if d := os.Getenv("BACKLOG_BENCH_DIR"); d != "" {
				var err error
				if dir, err = os.MkdirTemp(d, "bench"); err != nil {
					b.Fatal(err)
				}
				defer os.RemoveAll(dir)
			}
			bl, err := OpenBacklog(dir, "peer", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer bl.Close()
			es, size := backlogBenchEntries(bc.batch)
			if err := bl.Rotate("", "peer.B.1"); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := bl.Append("peer.B.1", es); err != nil {
					b.Fatal(err)
				}
				if bc.sync {
					if err := bl.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*bc.batch)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// BenchmarkBacklogReadReplay measures reading <peer>.P back in refills of
// 2048 entries (MB/s of lines).
func BenchmarkBacklogReadReplay(b *testing.B) {
	dir := b.TempDir()
	bl, err := OpenBacklog(dir, "peer", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bl.Close()
	es, size := backlogBenchEntries(2048)
	if err := bl.Rotate("", "peer.B.1"); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 16; i++ {
		if err := bl.Append("peer.B.1", es); err != nil {
			b.Fatal(err)
		}
	}
	if err := bl.Promote("peer.B.1"); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ResetTimer()
	off := int64(0)
	for i := 0; i < b.N; i++ {
		batch, err := bl.ReadReplay(off, 2048)
		if err != nil {
			b.Fatal(err)
		}
		off = batch.Offset
		if batch.EOF {
			off = 0
		}
	}
}
