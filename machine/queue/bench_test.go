package queue

import (
	"fmt"
	"testing"
)

// BenchmarkCycle measures one entry's way through the machine: Offer (with
// its journal line), Next, Done(accepted), with the queue never full; the
// actions are drained and dropped, as a runtime hands them to spoolfs.
// ops/s counts entries.
func BenchmarkCycle(b *testing.B) {
	for _, window := range []int{1, 64} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) {
			q, err := New(DefaultConfig(peer), t0, Recovered{})
			if err != nil {
				b.Fatal(err)
			}
			if err := q.ConnUp(t0, 1); err != nil {
				b.Fatal(err)
			}
			es := make([]Entry, window)
			for i := range es {
				es[i] = Entry{Token: fmt.Sprintf("@03010000000000000000000000000000%04x@", i),
					MessageID: fmt.Sprintf("<%d.bench@news.example.org>", i), Size: 4000, Offered: t0}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n += window {
				for i := range es {
					if err := q.Offer(t0, es[i]); err != nil {
						b.Fatal(err)
					}
				}
				for range es {
					if _, ok := q.Next(t0, 1); !ok {
						b.Fatal("Next: nothing")
					}
				}
				for i := range es {
					if err := q.Done(t0, 1, es[i].MessageID, OutcomeAccepted); err != nil {
						b.Fatal(err)
					}
				}
				for {
					if _, ok := q.NextAction(); !ok {
						break
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkSpill measures offers to a peer whose connection takes nothing:
// every third of a queue spills to .B (the actions are drained and
// dropped, as a runtime would hand them to spoolfs). ops/s counts offers.
func BenchmarkSpill(b *testing.B) {
	q, err := New(DefaultConfig(peer), t0, Recovered{})
	if err != nil {
		b.Fatal(err)
	}
	if err := q.ConnUp(t0, 1); err != nil {
		b.Fatal(err)
	}
	e := Entry{Token: "@030100000000000000000000000000000000@", MessageID: "<spill.bench@news.example.org>", Offered: t0}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if err := q.Offer(t0, e); err != nil {
			b.Fatal(err)
		}
		for {
			if _, ok := q.NextAction(); !ok {
				break
			}
		}
		for {
			if _, ok := q.NextEvent(); !ok {
				break
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// lineString is BenchmarkParseLine's line, held in a string as ReadReplay
// holds a refill's lines.
var lineString = "@0301000000000000002A0000000000000D2C@ <part17of42.Xc8fG2kLm@news.example.com>\n"

// BenchmarkParseLine parses a typical backlog line (an INN-style token and
// a message-id) one pass at a time (ParseLine, and ParseLineString on a
// string) and field by field (parseLineFields).
func BenchmarkParseLine(b *testing.B) {
	line := []byte("@0301000000000000002A0000000000000D2C@ <part17of42.Xc8fG2kLm@news.example.com>\n")
	for _, bc := range []struct {
		name  string
		parse func([]byte) (Entry, error)
	}{
		{"ParseLine", ParseLine},
		{"ParseLineString", func(l []byte) (Entry, error) { return ParseLineString(lineString) }},
		{"parseLineFields", parseLineFields},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.parse(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
