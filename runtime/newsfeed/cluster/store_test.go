package cluster

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startJetStream starts n embedded NATS servers with JetStream (a
// cluster when n > 1), stopped when the test ends.
func startJetStream(t testing.TB, n int) *Embedded {
	t.Helper()
	e, err := StartEmbedded(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	if err := e.WaitJetStream(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return e
}

// connectPreferring connects to e preferring its server i, closed when
// the test ends.
func connectPreferring(t testing.TB, e *Embedded, i int) *nats.Conn {
	t.Helper()
	nc, err := Connect(ConnectOptions{URLs: preferring(e.URLs(), i), InOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

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

func TestPartsRoundTrip(t *testing.T) {
	p := Parts{Token: "0a1b2c3d", N: 2, Size: 1234}
	got, err := ParseParts(p.String())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Error(diff)
	}
	for _, bad := range []string{"", "t 2", "t a 10", "t 1 10", "t 3 2", "t.x 2 10", "t  2 10", "t 2 10 9", "* 2 10"} {
		if _, err := ParseParts(bad); err == nil {
			t.Errorf("ParseParts(%q) = nil error", bad)
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
// the article is stored the id is present, and the body reads back.
func TestReserveOnce(t *testing.T) {
	s, _ := testStore(t, Settings{Shards: 3})
	ctx := context.Background()
	const n = 8
	var mu sync.Mutex
	got := map[Verdict]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, err := s.Reserve(ctx, "<once@test>")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[v]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if diff := cmp.Diff(map[Verdict]int{Reserved: 1, InProgress: n - 1}, got); diff != "" {
		t.Fatalf("verdicts (-want +got):\n%s", diff)
	}
	wire := []byte("Message-ID: <once@test>\r\n\r\nbody\r\n.\r\n")
	if err := s.Put(ctx, "<once@test>", wire, []string{"p1"}); err != nil {
		t.Fatal(err)
	}
	if v, _, err := s.Reserve(ctx, "<once@test>"); err != nil || v != Present {
		t.Fatalf("after Put: Reserve = %v, %v; want Present", v, err)
	}
	body, err := s.Get(ctx, "<once@test>")
	if err != nil || !bytes.Equal(body, wire) {
		t.Fatalf("Get = %q, %v", body, err)
	}
}

// TestPutOnce: the same article published at once by several nodes (each
// its own NATS connection, to different servers of a replicas-3 cluster)
// is stored once: exactly one Put succeeds, the others are told
// ErrDuplicate, for small articles and for ones cut in parts.
func TestPutOnce(t *testing.T) {
	e := startJetStream(t, 3)
	var stores []*Store
	for i, url := range e.URLs() {
		nc, err := Connect(ConnectOptions{URLs: []string{url}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := OpenStore(ctx, nc, Settings{Name: "t", Node: "n" + itoa(i), Shards: 2, Replicas: 3,
			ReserveTTL: time.Minute, AckWait: 5 * time.Second, ChunkSize: 4096})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	ctx := context.Background()
	for _, size := range []int{100, 10000} {
		for round := range 20 {
			id := "<once" + itoa(round) + "." + itoa(size) + "@test>"
			wire := bytes.Repeat([]byte{byte('a' + round)}, size)
			var ok, dup atomic.Int32
			var wg sync.WaitGroup
			for _, s := range stores {
				for range 3 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						switch err := s.Put(ctx, id, wire, nil); {
						case err == nil:
							ok.Add(1)
						case errors.Is(err, ErrDuplicate):
							dup.Add(1)
						default:
							t.Errorf("Put %s: %v", id, err)
						}
					}()
				}
			}
			wg.Wait()
			if ok.Load() != 1 || dup.Load() != 8 {
				t.Fatalf("%s (%d octets): %d stored, %d duplicates; want 1 and 8", id, size, ok.Load(), dup.Load())
			}
			body, err := getApplied(ctx, stores[round%3], id)
			if err != nil || !bytes.Equal(body, wire) {
				t.Fatalf("Get %s: %d octets, %v", id, len(body), err)
			}
		}
	}
}

// getApplied is s.Get, asked again (at most 50 times, 100 ms apart) while
// it finds nothing: a quorum acknowledged the publish, and a direct get
// may be answered by the replica that has not applied it yet, as
// outConn.load allows (TestPutOnce failed so once under load).
func getApplied(ctx context.Context, s *Store, id string) ([]byte, error) {
	for i := 0; ; i++ {
		body, err := s.Get(ctx, id)
		// Not applied yet on the replica that answered, or no server
		// answering for the stream for a moment (its leader moving).
		again := errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, nats.ErrNoResponders)
		if !again || i == 50 {
			return body, err
		}
		time.Sleep(100 * time.Millisecond)
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

// TestLargeArticle: an article over max_payload goes in parts and comes
// back whole; a second copy is refused and leaves no parts behind.
func TestLargeArticle(t *testing.T) {
	s, _ := testStore(t, Settings{Shards: 2})
	ctx := context.Background()
	wire := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16) // 3 MiB
	if n := Chunks(len(wire), s.ChunkSize()); n < 4 {
		t.Fatalf("3 MiB in %d chunks of %d: want at least 4 with the 1 MB max_payload", n, s.ChunkSize())
	}
	if err := s.Put(ctx, "<big@test>", wire, nil); err != nil {
		t.Fatal(err)
	}
	body, err := s.Get(ctx, "<big@test>")
	if err != nil || !bytes.Equal(body, wire) {
		t.Fatalf("Get: %d octets, %v", len(body), err)
	}
	if err := s.Put(ctx, "<big@test>", wire, nil); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second Put = %v, want ErrDuplicate", err)
	}
	sh := Shard("<big@test>", 2)
	info, err := s.shards[sh].Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(Chunks(len(wire), s.ChunkSize())); info.State.Msgs != want {
		t.Errorf("shard holds %d messages after the refused copy, want %d (head and parts of one copy)", info.State.Msgs, want)
	}
}

// pendingSettled is q.Pending, asked again (at most 50 times, 100 ms
// apart) until it reads waiting and unacked: the server counts a stored
// message into its consumers' pending a moment after it acknowledged the
// publish (TestQueue read 0 of 3 so about once in 40 runs).
func pendingSettled(ctx context.Context, q *Queue, waiting, unacked int) (w, u int, err error) {
	for i := 0; ; i++ {
		w, u, err = q.Pending(ctx)
		if err != nil || (w == waiting && u == unacked) || i == 50 {
			return w, u, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestQueue: articles stored by Put come out of the peer's consumer with
// their bodies, marked for the peers they are for; a delayed nak brings
// one back, an ack settles it.
func TestQueue(t *testing.T) {
	s, _ := testStore(t, Settings{})
	ctx := context.Background()
	q, err := s.Queue(ctx, "p1", QueueLimits{})
	if err != nil {
		t.Fatal(err)
	}
	arts := map[string][]string{"<q1@t>": {"p1"}, "<q2@t>": {"p1", "p2"}, "<q3@t>": {"p2"}}
	for _, id := range []string{"<q1@t>", "<q2@t>", "<q3@t>"} {
		if err := s.Put(ctx, id, []byte(id+"\r\n.\r\n"), arts[id]); err != nil {
			t.Fatal(err)
		}
	}
	if w, u, err := pendingSettled(ctx, q, 3, 0); err != nil || w != 3 || u != 0 {
		t.Fatalf("Pending = %d, %d, %v; want 3, 0", w, u, err)
	}
	batch, err := q.Consumers[0].Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		e, err := ParseEntry(m.Headers())
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Data()) != e.MessageID+"\r\n.\r\n" {
			t.Errorf("%s delivered with %q", e.MessageID, m.Data())
		}
		ids = append(ids, e.MessageID+" "+strconv.FormatBool(e.For("p1")))
		msgs = append(msgs, m)
	}
	if diff := cmp.Diff([]string{"<q1@t> true", "<q2@t> true", "<q3@t> false"}, ids); diff != "" {
		t.Fatalf("queue (-want +got):\n%s", diff)
	}
	msgs[0].Ack()
	msgs[2].Ack()
	if err := msgs[1].NakWithDelay(500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	batch, err = q.Consumers[0].Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		e, _ := ParseEntry(m.Headers())
		if e.MessageID != "<q2@t>" {
			t.Errorf("redelivered %s, want <q2@t>", e.MessageID)
		}
		md, _ := m.Metadata()
		if md.NumDelivered != 2 {
			t.Errorf("delivered %d times, want 2", md.NumDelivered)
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
		t.Fatal(err)
	}
	if w, u, err := pendingSettled(ctx, q, 0, 0); err != nil || w != 0 || u != 0 {
		t.Fatalf("Pending = %d, %d, %v; want 0, 0", w, u, err)
	}
}

// TestHistoryOutlivesArticle: an article expired from the store
// (spool_max_age) is still refused until history_retention, then taken
// again.
func TestHistoryOutlivesArticle(t *testing.T) {
	s, _ := testStore(t, Settings{MaxAge: time.Second, History: 4 * time.Second})
	ctx := context.Background()
	wire := []byte("x\r\n.\r\n")
	if err := s.Put(ctx, "<old@t>", wire, nil); err != nil {
		t.Fatal(err)
	}
	// The server's clock decides; poll, with deadlines far beyond.
	expired := false
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the article was never expired, or the id never taken again")
		}
		if _, err := s.Get(ctx, "<old@t>"); err != nil && !expired {
			expired = true
			if v, _, err := s.Reserve(ctx, "<old@t>"); err != nil || v != Present {
				t.Fatalf("expired article: Reserve = %v, %v; want Present (the history remembers)", v, err)
			}
		}
		err := s.Put(ctx, "<old@t>", wire, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrDuplicate) {
			t.Fatal(err)
		}
	}
	if !expired {
		t.Fatal("stored again before the first copy expired")
	}
}

// TestOpenTogether: nodes starting at the same moment create the same
// streams, bucket and consumers on a 3-node NATS cluster; every one gets
// them.
func TestOpenTogether(t *testing.T) {
	e := startJetStream(t, 3)
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

// TestKnownPresent: ids this node stored or was refused are answered from
// memory: with the NATS server gone, Reserve still says Present and Put
// ErrDuplicate for them (and fails for others, which need NATS).
func TestKnownPresent(t *testing.T) {
	s, e := testStore(t, Settings{})
	ctx := context.Background()
	if err := s.Put(ctx, "<mine@t>", []byte("x\r\n.\r\n"), nil); err != nil {
		t.Fatal(err)
	}
	// One cut in parts too (its head is published apart from Publish).
	large := append(bytes.Repeat([]byte("y"), s.ChunkSize()+10), "\r\n.\r\n"...)
	if err := s.Put(ctx, "<large@t>", large, nil); err != nil {
		t.Fatal(err)
	}
	e.Shutdown()
	for _, id := range []string{"<mine@t>", "<large@t>"} {
		if !s.Known(id) {
			t.Errorf("%s stored, not known", id)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if v, _, err := s.Reserve(ctx, "<mine@t>"); err != nil || v != Present {
		t.Errorf("Reserve of a stored id without NATS = %v, %v; want Present", v, err)
	}
	if err := s.Put(ctx, "<mine@t>", []byte("x\r\n.\r\n"), nil); !errors.Is(err, ErrDuplicate) {
		t.Errorf("Put of a stored id without NATS = %v; want ErrDuplicate", err)
	}
	if _, _, err := s.Reserve(ctx, "<other@t>"); err == nil {
		t.Error("Reserve of an unknown id without NATS succeeded")
	}
}

// TestSeenGenerations: an id is remembered for one or two generations,
// then forgotten; a short history shortens them.
func TestSeenGenerations(t *testing.T) {
	s := newSeen(0)
	if s.age != seenAge {
		t.Errorf("age %v with no history bound, want %v", s.age, seenAge)
	}
	if short := newSeen(8 * time.Second); short.age != 2*time.Second {
		t.Errorf("age %v for an 8 s history, want 2s", short.age)
	}
	s.add("<a@t>")
	if !s.has("<a@t>") || s.has("<b@t>") {
		t.Fatal("has after add: want <a@t> only")
	}
	// Fill a generation: <a@t> moves to the previous one, still known.
	for i := range seenMax {
		s.add("<fill" + strconv.Itoa(i) + "@t>")
	}
	if !s.has("<a@t>") {
		t.Error("<a@t> forgotten after one generation")
	}
	for i := range seenMax + 1 {
		s.add("<more" + strconv.Itoa(i) + "@t>")
	}
	if s.has("<a@t>") {
		t.Error("<a@t> still known after two generations")
	}
	// Generations too old are not trusted (the clock moved on).
	s.began = s.began.Add(-3 * s.age)
	if s.has("<more1@t>") {
		t.Error("an id from generations older than twice their age is still known")
	}
}

// TestSeenIdleNotTrusted: after an idle spell longer than two
// generations, the next add starts afresh: the old generation must not
// become the previous one and be trusted for two generations more (its
// ids could outlive the history then, and an article it forgot be
// refused).
func TestSeenIdleNotTrusted(t *testing.T) {
	s := newSeen(time.Hour)
	s.add("<old@t>")
	s.began = s.began.Add(-3 * s.age) // idle: no add, no has
	s.add("<new@t>")
	if s.has("<old@t>") {
		t.Error("<old@t> still known after an idle spell of three generations")
	}
	if !s.has("<new@t>") {
		t.Error("<new@t> not known after add")
	}
}

// TestEmbeddedPortTaken: a server whose port another process took after
// it was chosen fails at once with errListen, naming the port, and does not
// wait out its readiness bound; StartEmbedded then starts on ports chosen
// afresh.
func TestEmbeddedPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	e := &Embedded{dir: t.TempDir(), client: []int{port}, route: []int{0}, servers: make([]*server.Server, 1)}
	defer e.Shutdown()
	err = e.Restart(0)
	if !errors.Is(err, errListen) || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Fatalf("Restart on a taken port = %v, want errListen naming port %d", err, port)
	}
}
