package cluster

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
)

// testStore opens a store on a fresh embedded single NATS server.
func testStore(t *testing.T, set Settings) (*Store, *Embedded) {
	t.Helper()
	e, err := StartEmbedded(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	s := openStore(t, e, set)
	return s, e
}

func openStore(t *testing.T, e *Embedded, set Settings) *Store {
	t.Helper()
	nc, err := Connect(ConnectOptions{URLs: e.URLs(), Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if set.Name == "" {
		set.Name = "t"
	}
	if set.Node == "" {
		set.Node = "n1"
	}
	if set.ReserveTTL == 0 {
		set.ReserveTTL = time.Minute
	}
	if set.AckWait == 0 {
		set.AckWait = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := OpenStore(ctx, nc, set)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestShard(t *testing.T) {
	// The first four octets of MD5, big-endian, mod n (vectors from
	// Python's hashlib): MD5("<a@b>") = 88619db5..., 0x88619db5 = 2288098741.
	for _, tc := range []struct {
		id   string
		n    int
		want int
	}{
		{"<a@b>", 1, 0},
		{"<a@b>", 4, 1},
		{"<a@b>", 7, 5},
		{"<part1of3.xyz@news.example>", 4, 3}, // 9afc8763...
		{"<part1of3.xyz@news.example>", 7, 2},
	} {
		if got := Shard(tc.id, tc.n); got != tc.want || got < 0 || got >= tc.n {
			t.Errorf("Shard(%q, %d) = %d, want %d", tc.id, tc.n, got, tc.want)
		}
	}
	// Spread: 4000 ids over 4 shards, none empty nor holding over half.
	count := make([]int, 4)
	for i := range 4000 {
		count[Shard("<"+string(rune('a'+i%26))+itoa(i)+"@x>", 4)]++
	}
	for i, c := range count {
		if c < 500 || c > 2000 {
			t.Errorf("shard %d holds %d of 4000 ids: %v", i, c, count)
		}
	}
}

func itoa(i int) string {
	return string([]byte{byte('0' + i/1000%10), byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)})
}

func TestRefRoundTrip(t *testing.T) {
	r := Ref{MessageID: "<x@y>", Size: 1234, Chunks: 2}
	got, err := ParseRef([]byte(r.String()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Error(diff)
	}
	for _, bad := range []string{"", "<x@y> 1", "<x@y> a 1", "<x@y> 1 2", "x@y 10 1", "<x@y> 0 1", "<x@y> 10 0 9"} {
		if _, err := ParseRef([]byte(bad)); err == nil {
			t.Errorf("ParseRef(%q) = nil error", bad)
		}
	}
}

func TestChunks(t *testing.T) {
	for _, tc := range []struct{ size, chunk, want int }{{1, 10, 1}, {10, 10, 1}, {11, 10, 2}, {0, 10, 1}, {30, 10, 3}} {
		if got := Chunks(tc.size, tc.chunk); got != tc.want {
			t.Errorf("Chunks(%d, %d) = %d, want %d", tc.size, tc.chunk, got, tc.want)
		}
	}
}

// TestReserveOnce: many concurrent reservations of one id, one wins; once
// it is complete the id is present, and the body reads back.
func TestReserveOnce(t *testing.T) {
	s, _ := testStore(t, Settings{Shards: 3})
	ctx := context.Background()
	if _, err := s.Queue(ctx, "p1", QueueLimits{}); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var mu sync.Mutex
	got := map[Verdict]int{}
	var won Reservation
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, r, err := s.Reserve(ctx, "<once@test>")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[v]++
			if v == Reserved {
				won = r
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if diff := cmp.Diff(map[Verdict]int{Reserved: 1, InProgress: n - 1}, got); diff != "" {
		t.Fatalf("verdicts (-want +got):\n%s", diff)
	}
	wire := []byte("Message-ID: <once@test>\r\n\r\nbody\r\n.\r\n")
	if err := s.Put(ctx, won, "<once@test>", wire, []string{"p1"}); err != nil {
		t.Fatal(err)
	}
	if v, _, err := s.Reserve(ctx, "<once@test>"); err != nil || v != Present {
		t.Fatalf("after Put: Reserve = %v, %v; want Present", v, err)
	}
	body, err := s.Body(ctx, Ref{MessageID: "<once@test>", Size: len(wire), Chunks: 1})
	if err != nil || !bytes.Equal(body, wire) {
		t.Fatalf("Body = %q, %v", body, err)
	}
}

// TestReleaseAndExpiry: a released reservation can be taken at once; one
// never completed (its node died) expires after reserve_ttl.
func TestReleaseAndExpiry(t *testing.T) {
	s, _ := testStore(t, Settings{ReserveTTL: time.Second})
	ctx := context.Background()
	v, r, err := s.Reserve(ctx, "<rel@test>")
	if err != nil || v != Reserved {
		t.Fatalf("Reserve = %v, %v", v, err)
	}
	if err := s.Release(ctx, r); err != nil {
		t.Fatal(err)
	}
	if v, _, err = s.Reserve(ctx, "<rel@test>"); err != nil || v != Reserved {
		t.Fatalf("after Release: Reserve = %v, %v; want Reserved", v, err)
	}
	// Abandoned: wait for the TTL (the server's clock, not ours to fake).
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, _, err = s.Reserve(ctx, "<rel@test>")
		if err != nil {
			t.Fatal(err)
		}
		if v == Reserved {
			break
		}
		if v != InProgress || time.Now().After(deadline) {
			t.Fatalf("abandoned reservation: Reserve = %v after 20s, want Reserved once it expired", v)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLargeArticle: an article over max_payload goes in chunks and comes
// back whole.
func TestLargeArticle(t *testing.T) {
	s, _ := testStore(t, Settings{Shards: 2})
	ctx := context.Background()
	wire := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16) // 3 MiB
	_, r, err := s.Reserve(ctx, "<big@test>")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, r, "<big@test>", wire, nil); err != nil {
		t.Fatal(err)
	}
	ref := Ref{MessageID: "<big@test>", Size: len(wire), Chunks: Chunks(len(wire), s.ChunkSize())}
	if ref.Chunks < 4 {
		t.Fatalf("3 MiB in %d chunks of %d: want at least 4 with the 1 MB max_payload", ref.Chunks, s.ChunkSize())
	}
	body, err := s.Body(ctx, ref)
	if err != nil || !bytes.Equal(body, wire) {
		t.Fatalf("Body: %d octets, %v", len(body), err)
	}
}

// TestQueue: entries queued by Put come out of the peer's consumer, a
// delayed nak brings one back, an ack removes it.
func TestQueue(t *testing.T) {
	s, _ := testStore(t, Settings{})
	ctx := context.Background()
	c, err := s.Queue(ctx, "p1", QueueLimits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"<q1@t>", "<q2@t>"} {
		_, r, err := s.Reserve(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, r, id, []byte("x\r\n.\r\n"), []string{"p1"}); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := c.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		ref, err := ParseRef(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.MessageID)
		msgs = append(msgs, m)
	}
	if diff := cmp.Diff([]string{"<q1@t>", "<q2@t>"}, ids); diff != "" {
		t.Fatalf("queue (-want +got):\n%s", diff)
	}
	if err := msgs[0].Ack(); err != nil {
		t.Fatal(err)
	}
	if err := msgs[1].NakWithDelay(500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	batch, err = c.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		ref, _ := ParseRef(m.Data())
		if ref.MessageID != "<q2@t>" {
			t.Errorf("redelivered %s, want <q2@t>", ref.MessageID)
		}
		md, _ := m.Metadata()
		if md.NumDelivered != 2 {
			t.Errorf("delivered %d times, want 2", md.NumDelivered)
		}
		m.Ack()
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
		t.Fatal(err)
	}
}

// TestOpenTogether: nodes starting at the same moment create the same
// streams, bucket and consumers on a 3-node NATS cluster; every one gets
// them.
func TestOpenTogether(t *testing.T) {
	e, err := StartEmbedded(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	if err := e.WaitJetStream(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := Connect(ConnectOptions{URLs: e.URLs()})
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			s, err := OpenStore(ctx, nc, Settings{Name: "t", Node: "n" + itoa(i), Shards: 3, Replicas: 3, ReserveTTL: time.Minute, AckWait: 5 * time.Second})
			if err != nil {
				t.Errorf("node %d: %v", i, err)
				return
			}
			if _, err := s.Queue(ctx, "p1", QueueLimits{}); err != nil {
				t.Errorf("node %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
}
