package spoolfs

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/machine/jobs"
)

// BenchmarkJobQueueProgress measures recording download progress: one op
// is Record of a batch of segment-done records and the Sync that makes them
// durable (write + fdatasync of the entry's log; compaction every 8192
// records, the default). records/s is what a downloader can acknowledge.
func BenchmarkJobQueueProgress(b *testing.B) {
	for _, batch := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "q")
			q, err := OpenJobQueue(dir, JobQueueOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			q.Recover()
			m := jobs.Metadata{Files: make([]jobs.FileProgress, 100)}
			qs, err := q.Enqueue("", strings.NewReader("NZB"), m)
			if err != nil {
				b.Fatal(err)
			}
			ij, err := q.SendStart(qs[0])
			if err != nil {
				b.Fatal(err)
			}
			if _, f, err := q.ReadInflight(ij); err != nil {
				b.Fatal(err)
			} else {
				f.Close()
			}
			recs := make([]jobs.Record, batch)
			n := 0
			b.ResetTimer()
			for b.Loop() {
				for i := range recs {
					recs[i] = jobs.Record{Kind: jobs.SegmentDone, File: n / 100000 % 100, Segment: 1 + n%100000}
					n++
				}
				if err := q.Record(ij, recs...); err != nil {
					b.Fatal(err)
				}
				if err := q.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "syncs/s")
		})
	}
}

// BenchmarkJobQueueRecord measures Record alone (no I/O): the cost a
// download pays per finished segment between Syncs.
func BenchmarkJobQueueRecord(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "q")
	q, err := OpenJobQueue(dir, JobQueueOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	q.Recover()
	qs, _ := q.Enqueue("", strings.NewReader("NZB"), jobs.Metadata{})
	ij, _ := q.SendStart(qs[0])
	if _, f, err := q.ReadInflight(ij); err != nil {
		b.Fatal(err)
	} else {
		f.Close()
	}
	n := 0
	for b.Loop() {
		n++
		if err := q.Record(ij, jobs.Record{Kind: jobs.SegmentDone, File: n / 100000 % 100, Segment: 1 + n%100000}); err != nil {
			b.Fatal(err)
		}
		if n%4096 == 0 {
			b.StopTimer()
			q.Sync()
			b.StartTimer()
		}
	}
}
