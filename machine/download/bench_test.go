package download

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/newsflow/newsflow/proto"
)

// benchStream is a server's answer to n pipelined BODY requests for 700 KiB
// yEnc parts of random bytes (128-character lines, about 1.6% escapes), as
// on the wire.
func benchStream(n int) (stream []byte, reqs []Request) {
	rng := rand.New(rand.NewPCG(42, 42))
	const part = 700 << 10
	for i := range n {
		data := make([]byte, part)
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		id := fmt.Sprintf("<part%d@bench>", i+1)
		stream = append(stream, "222 0 "+id+"\r\n"...)
		stream = proto.YencEncode(stream, data, proto.YencOptions{Name: "bench.bin", Part: i + 1, Total: n,
			Begin: int64(i)*part + 1, Size: int64(n) * part, Wire: true})
		reqs = append(reqs, Request{Segment: Key{1, i + 1}, MessageID: id})
	}
	return stream, reqs
}

// BenchmarkFetch measures a Fetch decoding pipelined 700 KiB yEnc bodies
// (status lines, dot-unstuffing, yEnc, CRC-32, Data events, verification)
// in MB/s of encoded input, fed in reads of the given size, with the
// owner keeping the pipeline (2) full as answers complete.
func BenchmarkFetch(b *testing.B) {
	stream, reqs := benchStream(8)
	for _, read := range []int{64 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("read=%dK", read>>10), func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			var decoded int64
			for b.Loop() {
				f := NewFetch(epoch, FetchConfig{Pipeline: 2})
				next := 0
				for next < 2 {
					f.Request(epoch, reqs[next])
					next++
				}
				for off := 0; off < len(stream); off += read {
					if err := f.Receive(epoch, stream[off:min(off+read, len(stream))]); err != nil {
						b.Fatal(err)
					}
					for e, ok := f.NextEvent(); ok; e, ok = f.NextEvent() {
						switch e := e.(type) {
						case Data:
							decoded += int64(len(e.Bytes))
						case SegmentOK:
							if next < len(reqs) {
								f.Request(epoch, reqs[next])
								next++
							}
						default:
							b.Fatalf("event %v", e)
						}
					}
					f.AppendOutgoing(nil)
				}
			}
			if decoded == 0 {
				b.Fatal("nothing decoded")
			}
		})
	}
}

// BenchmarkScheduler runs a whole download through a Scheduler: 20,000
// segments, two level-0 servers in a group and a level-1 fill server, 20
// connections each with pipeline 2; one segment in ten is missing on level
// 0 and fetched from level 1. The figure is per segment.
func BenchmarkScheduler(b *testing.B) {
	const n = 20000
	segs := make([]Segment, n)
	for i := range segs {
		segs[i] = Segment{Key: Key{File: i / 100, Number: i % 100}, MessageID: fmt.Sprintf("<%d@b>", i)}
	}
	servers := []Server{
		{ID: 1, Level: 0, Group: 1, Active: true, Connections: 20},
		{ID: 2, Level: 0, Group: 1, Active: true, Connections: 20},
		{ID: 3, Level: 1, Active: true, Connections: 20},
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := NewScheduler(Config{}, servers)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Add(epoch, segs...); err != nil {
			b.Fatal(err)
		}
		type req struct {
			c ConnID
			k Key
			s int
		}
		var queue []req // requests in flight, answered in order of assignment
		for {
			for e, ok := s.NextEvent(); ok; e, ok = s.NextEvent() {
				switch e := e.(type) {
				case Dial:
					queue = append(queue, req{c: e.Conn, s: -1})
				case Assign:
					queue = append(queue, req{c: e.Conn, k: e.Segment, s: e.Server})
				}
			}
			if len(queue) == 0 {
				break
			}
			r := queue[0]
			queue = queue[1:]
			if r.s < 0 {
				s.Connected(epoch, r.c)
				continue
			}
			o := OK
			if r.s != 3 && (r.k.File*100+r.k.Number)%10 == 0 {
				o = Missing
			}
			if err := s.Report(epoch, r.c, r.k, o); err != nil {
				b.Fatal(err)
			}
		}
		if st := s.Stats(); st.Done != n {
			b.Fatalf("done %d of %d: %+v", st.Done, n, st)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/segment")
}
