package cluster

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/newsflow/newsflow/proto"
)

// BenchmarkPut measures the ingest side's store path alone: Put (one
// conditional publish: article, history and queue entry) of 2 KB
// articles from 256 goroutines, on an embedded single NATS server.
func BenchmarkPut(b *testing.B) {
	s, _ := testStoreB(b)
	ctx := context.Background()
	if _, err := s.Queue(ctx, "p1", QueueLimits{}); err != nil {
		b.Fatal(err)
	}
	wire := make([]byte, 2048)
	var next atomic.Int64
	b.SetBytes(int64(len(wire)))
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				id := "<b" + strconv.FormatInt(i, 10) + "@bench>"
				if err := s.Put(ctx, id, wire, []string{"p1"}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func testStoreB(b *testing.B) (*Store, *Embedded) {
	e, err := StartEmbedded(b.TempDir(), 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Shutdown)
	nc, err := Connect(ConnectOptions{URLs: e.URLs()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	s, err := OpenStore(context.Background(), nc, Settings{Name: "b", Node: "n", Shards: 4, Replicas: 1, ReserveTTL: 60e9, AckWait: 30e9})
	if err != nil {
		b.Fatal(err)
	}
	return s, e
}

// BenchmarkSpoolForm measures the wire form an ingest connection hands to
// its publish, per article of 2 KB and 500 KB (newsbench's articles: a
// header and CRLF lines of text): "copies" is how the node made it before
// (our Path into a copy of the whole article, proto.AppendWire of that,
// then publishCopy's copy into the publish's buffer), "owned" is
// appendSpoolForm straight into the buffer the publish takes over.
func BenchmarkSpoolForm(b *testing.B) {
	for _, size := range []int{2 << 10, 500 << 10} {
		head := "Path: origin.invalid!not-for-mail\r\nFrom: b <b@origin.invalid>\r\nNewsgroups: misc.test\r\n" +
			"Subject: bench\r\nMessage-ID: <1@bench.invalid>\r\n\r\n"
		line := "The quick brown fox jumps over the lazy dog; .dots at a line start are stuffed.\r\n"
		article := []byte(head + strings.Repeat(line, (size-len(head))/len(line)))
		h, body, err := proto.ParseHeaders(article)
		if err != nil {
			b.Fatal(err)
		}
		var scratch, wire []byte
		b.Run(strconv.Itoa(size>>10)+"k/copies", func(b *testing.B) {
			b.SetBytes(int64(len(article)))
			for range b.N {
				withPath, err := proto.PrependPathIdentity(scratch[:0], article, h, "feed.example")
				if err != nil {
					b.Fatal(err)
				}
				scratch = withPath
				wire = proto.AppendWire(wire[:0], withPath)
				buf := wireBuffer(len(wire))
				*buf = append(*buf, wire...)
				putWire(buf)
			}
		})
		b.Run(strconv.Itoa(size>>10)+"k/owned", func(b *testing.B) {
			b.SetBytes(int64(len(article)))
			for range b.N {
				buf := wireBuffer(len(article) + 64)
				w, s, err := appendSpoolForm(*buf, scratch[:0], article, h, body, "feed.example")
				if err != nil {
					b.Fatal(err)
				}
				*buf, scratch = w, s
				putWire(buf)
			}
		})
	}
}
