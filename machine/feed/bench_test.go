package feed

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/newsflow/newsflow/machine"
)

// responder is an in-memory peer that wants and accepts everything: it
// reads the Feed's segments (command lines as bytes, articles as tokens,
// as a runtime would write them) and answers each command.
type responder struct {
	replies []byte
	ihave   [][]byte // message-ids of IHAVEs answered 335, waiting for the article
}

func (r *responder) take(segs []machine.Segment) {
	for _, s := range segs {
		if s.Token != "" {
			if len(r.ihave) > 0 {
				r.replies = append(r.replies, "235 ok\r\n"...)
				r.ihave = r.ihave[1:]
			}
			continue
		}
		b := s.Bytes
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			line := b[:i-1]
			b = b[i+1:]
			sp := bytes.IndexByte(line, ' ')
			verb, id := line[:sp], line[sp+1:]
			switch string(verb) {
			case "CHECK":
				r.replies = append(r.replies, "238 "...)
			case "TAKETHIS":
				r.replies = append(r.replies, "239 "...)
			case "IHAVE":
				r.replies = append(r.replies, "335 go\r\n"...)
				r.ihave = append(r.ihave, id)
				continue
			}
			r.replies = append(r.replies, id...)
			r.replies = append(r.replies, '\r', '\n')
		}
	}
}

// BenchmarkFeed measures articles per second through one Feed driven by
// the responder, with replies arriving in batches as reads would bring
// them. Article bodies are not copied (token segments).
func BenchmarkFeed(b *testing.B) {
	pool := make([]Article, 1024)
	for i := range pool {
		id := fmt.Sprintf("<bench-%d@newsflow.invalid>", i)
		pool[i] = Article{Token: "@" + id + "@", MessageID: id, Size: 2000}
	}
	for _, mode := range []struct {
		name string
		cfg  Config
	}{
		{"check", Config{Streaming: true, NoCheckOff: true}},
		{"takethis", Config{Streaming: true, NoCheckHigh: 1, NoCheckLow: 1, NoCheckFilter: 1}},
		{"ihave", Config{}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			d := newDriver(New(t0, mode.cfg))
			b.ReportAllocs()
			b.ResetTimer()
			d.run(b, pool, b.N)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "articles/s")
		})
	}
}

// TestAcceptedAllocs checks that the Accepted event of an article sent is
// not an allocation of its own: 256 articles through a Feed in no-CHECK
// mode (articles, replies and events all reused) may allocate the four
// blocks of Accepted events' Articles and little else, not one per article.
func TestAcceptedAllocs(t *testing.T) {
	const n = 256
	pool := make([]Article, n)
	for i := range pool {
		id := fmt.Sprintf("<allocs-%d@newsflow.invalid>", i)
		pool[i] = Article{Token: "@" + id + "@", MessageID: id, Size: 2000}
	}
	d := newDriver(New(t0, Config{Streaming: true, NoCheckHigh: 1, NoCheckLow: 1, NoCheckFilter: 1}))
	run := func() { d.run(t, pool, n) }
	run() // grows the Feed's queues and buffers to their working size
	if a := testing.AllocsPerRun(5, run); a > n/acceptedBlock+2 {
		t.Errorf("%v allocations for %d articles accepted, want at most %d", a, n, n/acceptedBlock+2)
	}
}

// driver runs a Feed against a responder: it offers what the Feed asks
// for, hands its segments to the responder and the replies back, in
// batches as reads would bring them. Its buffers are reused from run to
// run.
type driver struct {
	f      *Feed
	r      *responder
	segs   []machine.Segment
	credit int
}

func newDriver(f *Feed) *driver { return &driver{f: f, r: &responder{}} }

// run feeds n articles, taken from pool in turn, until n are accepted.
func (d *driver) run(tb testing.TB, pool []Article, n int) {
	f, r := d.f, d.r
	done, offered := 0, 0
	for done < n {
		for {
			e, ok := f.NextEvent()
			if !ok {
				break
			}
			switch e := e.(type) {
			case WantMore:
				d.credit += e.N
			case Accepted:
				done++
			case Closed:
				tb.Fatalf("closed: %v", e)
			}
		}
		for ; d.credit > 0 && offered < n; d.credit-- {
			f.Offer(t0, pool[offered%len(pool)])
			offered++
		}
		d.segs = f.AppendSegments(d.segs[:0])
		r.take(d.segs)
		if len(r.replies) > 0 {
			if err := f.Receive(t0, r.replies); err != nil {
				tb.Fatal(err)
			}
			r.replies = r.replies[:0]
		}
	}
}
