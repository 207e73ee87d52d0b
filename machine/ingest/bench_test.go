package ingest

import (
	"fmt"
	"strings"
	"testing"
)

// benchStream returns n commands made by one(i), concatenated.
func benchStream(n int, one func(i int) string) []byte {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(one(i))
	}
	return []byte(b.String())
}

// benchArticle is a 2 KB article: the test headers and 2 KB of body.
func benchArticle(id string) string {
	return article(id, "body:"+strings.Repeat("the quick brown fox jumps over the lazy dog, again and again and again\r\n", 26))
}

// runBench feeds stream to one Ingest in 64 KiB reads, as a runtime would,
// with an owner that wants and stores everything at once, until b.N
// commands (perPass per pass over stream) have been answered.
func runBench(b *testing.B, stream []byte, perPass int, wantCode string) {
	g := New(t0, Config{PathHost: "relay.example"})
	out := g.AppendOutgoing(nil)
	b.ResetTimer()
	for done := 0; done < b.N; done += perPass {
		for p := stream; len(p) > 0; {
			n := min(len(p), 64<<10)
			if err := g.Receive(t0, p[:n]); err != nil {
				b.Fatal(err)
			}
			p = p[n:]
			for {
				ev, ok := g.NextEvent()
				if !ok {
					break
				}
				switch e := ev.(type) {
				case Article:
					g.Stored(t0, e.Seq, Result{Outcome: StoreAccepted})
				case Check:
					g.Decide(t0, e.Seq, Want)
				default:
					b.Fatalf("event %v", summary(ev))
				}
			}
			out = g.AppendOutgoing(out[:0])
		}
	}
	b.StopTimer()
	if !strings.HasPrefix(string(out), wantCode) {
		b.Fatalf("last responses %q", out)
	}
	if c := g.Counters(); c.RejectedTotal() != 0 {
		b.Fatalf("rejections: %v", c)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commands/s")
}

// BenchmarkTakeThis2K: TAKETHIS with 2 KB articles through an Ingest:
// parse, dot-unstuff, header parse, validation, event, ordered 239.
func BenchmarkTakeThis2K(b *testing.B) {
	const n = 256
	stream := benchStream(n, func(i int) string {
		id := fmt.Sprintf("<bench.%d@upstream.example>", i)
		return takethis(id, benchArticle(id))
	})
	b.SetBytes(int64(len(stream) / n))
	runBench(b, stream, n, "239 ")
}

// BenchmarkCheck: pipelined CHECK lines answered 238.
func BenchmarkCheck(b *testing.B) {
	const n = 1024
	stream := benchStream(n, func(i int) string {
		return fmt.Sprintf("CHECK <bench.%d@upstream.example>\r\n", i)
	})
	b.SetBytes(int64(len(stream) / n))
	runBench(b, stream, n, "238 ")
}
