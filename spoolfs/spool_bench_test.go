package spoolfs

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// The benchmarks write to b.TempDir(), i.e. the real disk under $TMPDIR, so
// the Sync figures include real fdatasync latency.

func benchIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("<%s.%d@bench.example>", prefix, i)
	}
	return ids
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "articles/s")
}

// BenchmarkPut2K stores 2 KB articles with one Sync per batch, as an ingest
// loop that acks after each group commit would.
func BenchmarkPut2K(b *testing.B) {
	wire := wireArticle("<bench@x>", 2000)
	for _, every := range []int{100, 1000} {
		b.Run(fmt.Sprintf("sync=%d", every), func(b *testing.B) {
			s := openT(b, b.TempDir(), SpoolOptions{})
			defer s.Close()
			ids := benchIDs("p", b.N)
			b.SetBytes(int64(len(wire)))
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Put(ids[i], wire, t0); err != nil {
					b.Fatal(err)
				}
				if (i+1)%every == 0 {
					if err := s.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := s.Sync(); err != nil {
				b.Fatal(err)
			}
			reportRate(b)
		})
	}
	// Many connections, each acking every article as soon as it is durable:
	// Put then Sync per article; concurrent Syncs share one fdatasync.
	b.Run("conns=64,sync=each", func(b *testing.B) {
		s := openT(b, b.TempDir(), SpoolOptions{})
		defer s.Close()
		ids := benchIDs("c", b.N)
		var next atomic.Int64
		b.SetBytes(int64(len(wire)))
		b.SetParallelism(32) // x GOMAXPROCS (2 here) = 64 goroutines
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1) - 1
				if _, err := s.Put(ids[i], wire, t0); err != nil {
					b.Error(err)
					return
				}
				if err := s.Sync(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportRate(b)
	})
}

// BenchmarkGet reads random synced 2 KB articles (page cache warm), with CRC
// check, into a reused buffer.
// BenchmarkCommitRound is one group commit of a relay: a round of
// articles Put, then one Sync, as newsfeed's committer does for innfeed's
// window (about 18 articles of 2 KB a round in the relay chain of issue
// 15), and rounds of 500 KB articles. An op is one round; sync_us is the
// Sync's share. With and without the zeros written ahead (PreWrite).
func BenchmarkCommitRound(b *testing.B) {
	for _, c := range []struct {
		size, n int
	}{{2000, 18}, {500 << 10, 8}} {
		for _, pre := range []int64{-1, 0} {
			name := fmt.Sprintf("size=%d,round=%d,prewrite=%v", c.size, c.n, pre == 0)
			b.Run(name, func(b *testing.B) {
				s := openT(b, b.TempDir(), SpoolOptions{PreWrite: pre})
				defer s.Close()
				wire := wireArticle("<bench@x>", c.size)
				ids := benchIDs("r", b.N*c.n)
				var syncTime time.Duration
				b.SetBytes(int64(c.n * len(wire)))
				b.ResetTimer()
				for i := range b.N {
					for j := range c.n {
						if _, err := s.Put(ids[i*c.n+j], wire, t0); err != nil {
							b.Fatal(err)
						}
					}
					start := time.Now()
					if err := s.Sync(); err != nil {
						b.Fatal(err)
					}
					syncTime += time.Since(start)
				}
				b.ReportMetric(float64(syncTime.Microseconds())/float64(b.N), "sync_us")
			})
		}
	}
}

func BenchmarkGet(b *testing.B) {
	s := openT(b, b.TempDir(), SpoolOptions{})
	defer s.Close()
	wire := wireArticle("<bench@x>", 2000)
	ids := benchIDs("g", 20000)
	toks := make([]Token, len(ids))
	for i, id := range ids {
		toks[i] = putT(b, s, id, wire, t0)
	}
	if err := s.Sync(); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	var buf []byte
	b.SetBytes(int64(len(wire)))
	b.ResetTimer()
	for range b.N {
		var err error
		if buf, err = s.AppendArticle(buf[:0], toks[r.IntN(len(toks))]); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

// BenchmarkHistoryLookup answers CHECK for a history of a million ids
// loaded from the log: hits (each reads its record from the log: the page
// cache), and misses (a new article being offered: the index alone).
func BenchmarkHistoryLookup(b *testing.B) {
	const n = 1_000_000
	ids := benchIDs("h", n)
	s := openWithHistoryLog(b, ids)
	defer s.Close()
	h := s.History()
	misses := benchIDs("miss", 1<<16)
	b.Run("hit", func(b *testing.B) {
		r := rand.New(rand.NewPCG(2, 2))
		for range b.N {
			if st := h.Status(ids[r.IntN(n)], t0); st != Stored {
				b.Fatalf("status %v", st)
			}
		}
	})
	b.Run("hit-in-log-order", func(b *testing.B) {
		// A backlog draining: the send path looks each article up.
		for i := range b.N {
			if st := h.Status(ids[i%n], t0); st != Stored {
				b.Fatalf("status %v", st)
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		for i := range b.N {
			if st := h.Status(misses[i&(1<<16-1)], t0); st != Unknown {
				b.Fatalf("status %v", st)
			}
		}
	})
	b.Run("hit-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			r := rand.New(rand.NewPCG(rand.Uint64(), 3))
			for pb.Next() {
				h.Status(ids[r.IntN(n)], t0)
			}
		})
	})
}

// openWithHistoryLog opens a spool whose history log holds an article
// record for each of ids (the spool itself is empty: the articles are in
// segment 0, which no spool has, so they count as expired long ago, as
// most of a history's are).
func openWithHistoryLog(b *testing.B, ids []string) *Spool {
	dir := b.TempDir()
	s := openT(b, dir, SpoolOptions{})
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	log := append([]byte(nil), histMagic[:]...)
	for i, id := range ids {
		log = appendHistRecord(log, kindArticle, id, Token{Seg: 0, Off: uint64(48 + i*2100), Len: 2000}, t0.UnixNano())
	}
	log = appendCheckpoint(log, Position{Seg: 1, Off: segHeaderSize}, 0)
	if err := WriteFileDurable(filepath.Join(dir, histFileName), log, 0o644); err != nil {
		b.Fatal(err)
	}
	s = openT(b, dir, SpoolOptions{})
	if got := s.History().Len(); got != len(ids) {
		b.Fatalf("replayed %d entries, want %d", got, len(ids))
	}
	return s
}

// BenchmarkOpenHistory1M measures start-up: replaying a history log of a
// million entries into memory (the spool itself is empty).
func BenchmarkOpenHistory1M(b *testing.B) {
	dir := b.TempDir()
	s := openT(b, dir, SpoolOptions{})
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	const n = 1_000_000
	log := append([]byte(nil), histMagic[:]...)
	for i, id := range benchIDs("o", n) {
		log = appendHistRecord(log, kindArticle, id, Token{Seg: 0, Off: uint64(48 + i), Len: 2000}, t0.UnixNano())
	}
	log = appendCheckpoint(log, Position{Seg: 1, Off: segHeaderSize}, 0)
	if err := WriteFileDurable(filepath.Join(dir, histFileName), log, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(log)))
	b.ResetTimer()
	for range b.N {
		s := openT(b, dir, SpoolOptions{})
		if s.History().Len() != n {
			b.Fatalf("replayed %d entries, want %d", s.History().Len(), n)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
