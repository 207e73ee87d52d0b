package cluster

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
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
