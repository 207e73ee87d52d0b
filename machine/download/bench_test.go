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
