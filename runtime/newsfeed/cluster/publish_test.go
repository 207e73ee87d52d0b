package cluster

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestWaitAllForgets: when a wait fails (here the caller's context ends
// while no acknowledgement comes), the publishes not yet waited for leave
// the waiting table too: nobody will wait for them, and an
// acknowledgement that never comes (its server died) would keep them
// there for good.
func TestWaitAllForgets(t *testing.T) {
	s, _ := testStore(t, Settings{Shards: 1, Replicas: 1})
	// A subscriber that never answers: the publishes are taken (no "no
	// responders") and never acknowledged.
	sub, err := s.nc.SubscribeSync("swallow.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	p, err := newPublisher(s.nc)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	var ws []*ackWait
	for range 3 {
		w, err := p.publish(&nats.Msg{Subject: "swallow.part", Data: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.waitAll(ctx, ws); !errors.Is(err, context.Canceled) {
		t.Fatalf("waitAll with its context ended = %v, want context.Canceled", err)
	}
	p.mu.Lock()
	left := len(p.waiting)
	p.mu.Unlock()
	if left != 0 {
		t.Errorf("%d publishes still wait for an acknowledgement after waitAll failed, want 0", left)
	}
}

// testPublisher is a publisher on a fresh store's connection, closed
// when the test ends.
func testPublisher(t *testing.T) (*Store, *publisher) {
	t.Helper()
	s, _ := testStore(t, Settings{Shards: 1, Replicas: 1})
	p, err := newPublisher(s.nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return s, p
}

// listen subscribes fn to subject on s's connection for the rest of the
// test, and returns once the server has the subscription.
func listen(t *testing.T, s *Store, subject string, fn nats.MsgHandler) {
	t.Helper()
	sub, err := s.nc.Subscribe(subject, fn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := s.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestResendNoResponders: a publish answered "no responders" (nobody
// listens on its subject yet: a stream without a leader) is sent again,
// the caller's buffer reused meanwhile, and the acknowledgement of the
// copy that found a listener is the answer.
func TestResendNoResponders(t *testing.T) {
	s, p := testPublisher(t)
	data := []byte("the article")
	buf := wireBuffer(len(data))
	*buf = append(*buf, data...)
	w, err := p.publishOwned(&nats.Msg{Subject: "late.head", Data: *buf}, buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(data, "overwritten")
	// Wait for the server's 503 to have been seen (a resend scheduled),
	// then start listening.
	for {
		p.mu.Lock()
		resends := w.resends
		p.mu.Unlock()
		if resends > 0 {
			break
		}
		select {
		case <-w.done:
			t.Fatalf("answered before anyone listened: %v", w.err)
		default:
		}
		runtime.Gosched()
	}
	got := make(chan string, 10)
	listen(t, s, "late.head", func(m *nats.Msg) {
		got <- string(m.Data)
		m.Respond([]byte(`{"stream":"t-art-0","seq":1}`))
	})
	if err := p.wait(context.Background(), w); err != nil {
		t.Fatalf("wait = %v, want the listener's acknowledgement", err)
	}
	if d := <-got; d != "the article" {
		t.Errorf("sent again: %q, want the data as first published", d)
	}
}

// TestResendSilent: a publish that gets no answer at all (taken by a
// stream's server that has just lost its leadership) is sent again after
// resendSilent, and the answer to the second copy is the answer.
func TestResendSilent(t *testing.T) {
	s, p := testPublisher(t)
	var copies atomic.Int32
	listen(t, s, "silent.head", func(m *nats.Msg) {
		if copies.Add(1) == 1 {
			return // the first copy is dropped
		}
		m.Respond([]byte(`{"stream":"t-art-0","seq":1}`))
	})
	w, err := p.publish(&nats.Msg{Subject: "silent.head", Data: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.wait(context.Background(), w); err != nil {
		t.Fatalf("wait = %v, want the second copy's acknowledgement", err)
	}
	if n := copies.Load(); n != 2 {
		t.Errorf("%d copies sent, want 2", n)
	}
}

// TestNoResendWhileAnswered: a stream that keeps answering earlier
// publishes is busy, not gone: a publish queued behind them longer than
// the silence is not sent again (a head sent twice is answered as a
// duplicate, 439, though offered once).
//
// The stream here answers every 50 ms, as long as the test process runs:
// a machine that stops it for half the silence or more (a loaded CI
// runner) makes a silence the publisher rightly answers with a copy, so
// such a round is played again, and the claim checked on a round whose
// stream answered all along.
func TestNoResendWhileAnswered(t *testing.T) {
	s, p := testPublisher(t)
	p.silent = time.Second
	for round := 0; ; round++ {
		resent, gap := noResendRound(t, s, p, round)
		if gap < p.silent/2 {
			for _, r := range resent {
				t.Error(r)
			}
			return
		}
		if round == 9 {
			t.Fatalf("in each of %d rounds the stream fell silent for %v or more (the last gap %v): the machine is too busy to play the case", round+1, p.silent/2, gap)
		}
		t.Logf("round %d: the stream fell silent for %v (the process was not run); playing it again", round, gap)
	}
}

// noResendRound plays one round of TestNoResendWhileAnswered on its own
// stream and returns the publishes sent again, and the longest time the
// stream went without answering while any waited.
func noResendRound(t *testing.T, s *Store, p *publisher, round int) (resent []string, gap time.Duration) {
	const n = 40
	subject := "busy" + strconv.Itoa(round) + ".art.0."
	seen := make(chan *nats.Msg, 2*n)
	listen(t, s, subject+"*", func(m *nats.Msg) { seen <- m })
	// The stream answers in order, one publish every 50 ms: the last
	// waits 2 s, twice the silence, with answers coming all along.
	stop := make(chan struct{})
	defer close(stop)
	gaps := make(chan time.Duration, 1)
	go func() {
		var maxGap time.Duration
		defer func() { gaps <- maxGap }()
		last := time.Now()
		for {
			select {
			case m := <-seen:
				time.Sleep(50 * time.Millisecond)
				m.Respond([]byte(`{"stream":"t-art-0","seq":1}`))
				now := time.Now()
				maxGap = max(maxGap, now.Sub(last))
				last = now
			case <-stop:
				return
			}
		}
	}()
	var ws []*ackWait
	for i := range n {
		w, err := p.publish(&nats.Msg{Subject: subject + strconv.Itoa(i), Data: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	if err := p.waitAll(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	stop <- struct{}{}
	gap = <-gaps
	for _, w := range ws {
		if w.resends > 0 {
			resent = append(resent, fmt.Sprintf("publish %d sent again %d times while its stream answered the ones before it", w.n, w.resends))
		}
	}
	return resent, gap
}

// TestWireBuffer: a wire buffer has room for what was asked and less than
// four times that, also when it comes back from the pool: a 2 KB article
// never holds a buffer a 500 KB one grew.
func TestWireBuffer(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 2 << 10, 2<<10 + 1, 500 << 10, 1<<20 - 8<<10} {
		for round := range 2 {
			b := wireBuffer(n)
			if len(*b) != 0 || cap(*b) < n || cap(*b) >= 4*max(n, 1) {
				t.Fatalf("wireBuffer(%d), round %d: len %d cap %d", n, round, len(*b), cap(*b))
			}
			*b = append(*b, make([]byte, n)...)
			putWire(b)
		}
	}
	big := wireBuffer(500 << 10)
	*big = append(*big, make([]byte, 600<<10)...) // grown past its class
	putWire(big)
	for range 4 {
		if b := wireBuffer(2 << 10); cap(*b) >= 8<<10 {
			t.Fatalf("wireBuffer(2048) gave a buffer of cap %d", cap(*b))
		}
	}
}
