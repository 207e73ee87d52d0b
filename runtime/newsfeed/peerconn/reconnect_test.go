package peerconn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/goroutine"
	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// downPeer is a peer on a loopback port that goes down (its listener
// closed: connects are refused) and comes back on the same port. An
// nntptest server behind it answers what it lets through.
type downPeer struct {
	t       *testing.T
	addr    string
	backend *nntptest.Server

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
	wg    sync.WaitGroup
}

// newDownPeer makes a peer that is down: its port is free, nothing
// listens on it.
func newDownPeer(t *testing.T, backend *nntptest.Server) *downPeer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &downPeer{t: t, addr: ln.Addr().String(), backend: backend}
	ln.Close()
	t.Cleanup(func() { p.down(); p.wg.Wait() })
	return p
}

// up listens on the peer's port again and forwards what connects to the
// backend.
func (p *downPeer) up() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("the peer cannot listen on its port again: %v", err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			bc, err := net.Dial("tcp", p.backend.HostPort())
			if err != nil {
				nc.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, nc, bc)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(bc, nc); bc.Close(); nc.Close() }()
			go func() { defer p.wg.Done(); io.Copy(nc, bc); bc.Close(); nc.Close() }()
		}
	}()
}

// down closes the listener and cuts the connections.
func (p *downPeer) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// idleQueue is a Queue with nothing to send.
type idleQueue struct{}

func (idleQueue) Begin(context.Context, time.Time)              {}
func (idleQueue) Take(dst []feed.Article, _ int) []feed.Article { return dst }
func (idleQueue) Answer(time.Time, Answer)                      {}
func (idleQueue) Ask(int, int)                                  {}
func (idleQueue) End(time.Time)                                 {}

// testConn is a running Conn and its counters.
type testConn struct {
	*Conn
	connects, fails atomic.Int64
}

// startConn runs connection id to addr with the given backoff, in group
// g, until the test ends.
func startConn(t *testing.T, addr string, id int, g *Group, base, ceiling time.Duration, q Queue) *testConn {
	tc := &testConn{}
	cfg := Config{Name: "p", Addr: addr, Streaming: "auto", Feed: feed.Config{Window: 8, ResponseTimeout: time.Minute},
		ConnectTimeout: 10 * time.Second, BackoffBase: base, ReconnectMax: ceiling}
	tc.Conn = New(Options{Config: cfg, ID: id, Queue: q, Group: g, Connects: &tc.connects, Fails: &tc.fails,
		Driver: func(nc net.Conn) (driver.Driver, error) { return goroutine.New(nc, goroutine.Options{}), nil }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tc.Run(ctx) }()
	t.Cleanup(func() {
		tc.Stop()
		cancel()
		<-done
	})
	return tc
}

// waitUntil polls cond until it holds; the limit only bounds a hung test.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGroupReconnect: while a peer is down, each of its connections
// retries on its own backoff only; when one of them gets through, the
// others end their backoff wait and connect, each with a connect of its
// own.
func TestGroupReconnect(t *testing.T) {
	backend := nntptest.Start(t, nntptest.Options{})
	peer := newDownPeer(t, backend)
	var g Group
	// Connection 1 retries at once and often; connection 2's backoff is an
	// hour, so only a handshake of connection 1 brings it back in time.
	fast := startConn(t, peer.addr, 1, &g, 5*time.Millisecond, 20*time.Millisecond, idleQueue{})
	slow := startConn(t, peer.addr, 2, &g, time.Hour, time.Hour, idleQueue{})

	waitUntil(t, "both connections to fail, the fast one five times", func() bool {
		return fast.fails.Load() >= 5 && slow.Status().State == "waiting"
	})
	// The peer stays down: the failures of connection 1 do not wake
	// connection 2.
	if n := slow.fails.Load(); n != 1 {
		t.Errorf("connection 2 failed %d times while the peer was down, want once (its backoff is an hour)", n)
	}

	peer.up()
	waitUntil(t, "connection 2 to feed after connection 1 got through", func() bool {
		return slow.Status().State == "feeding" && fast.Status().State == "feeding"
	})
	if n := slow.connects.Load(); n != 1 {
		t.Errorf("connection 2 connected %d times, want 1", n)
	}
	if n := backend.Conns(); n != 2 {
		t.Errorf("the peer saw %d connections, want 2 (one each)", n)
	}
}

// TestGroupKeepsBackoffWithoutHandshake: a connect that fails before the
// handshake (the peer answers 400) wakes nobody: the other connection
// keeps waiting out its backoff.
func TestGroupKeepsBackoffWithoutHandshake(t *testing.T) {
	backend := nntptest.Start(t, nntptest.Options{})
	backend.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "not now", Close: true})
	var g Group
	fast := startConn(t, backend.HostPort(), 1, &g, 5*time.Millisecond, 20*time.Millisecond, idleQueue{})
	slow := startConn(t, backend.HostPort(), 2, &g, time.Hour, time.Hour, idleQueue{})
	waitUntil(t, "the fast connection to fail five times", func() bool {
		return fast.fails.Load() >= 5 && slow.Status().State == "waiting"
	})
	if n := slow.fails.Load(); n != 1 {
		t.Errorf("connection 2 failed %d times, want once", n)
	}
	if fast.connects.Load() != 0 || slow.connects.Load() != 0 {
		t.Error("a connection got through a peer that answers 400")
	}
}

// TestGroupNoWakeAfterHandshake: a peer that drops every connection right
// after the handshake wakes no connection: each waits out its backoff, so
// the connections do not wake one another in turn.
func TestGroupNoWakeAfterHandshake(t *testing.T) {
	backend := nntptest.Start(t, nntptest.Options{})
	backend.AddFault(nntptest.Fault{Cmd: "MODE STREAM", Close: true})
	var g Group
	fast := startConn(t, backend.HostPort(), 1, &g, 5*time.Millisecond, 20*time.Millisecond, idleQueue{})
	slow := startConn(t, backend.HostPort(), 2, &g, time.Hour, time.Hour, idleQueue{})
	waitUntil(t, "the fast connection to connect and fail five times", func() bool {
		return fast.connects.Load() >= 5 && fast.fails.Load() >= 5 && slow.Status().State == "waiting"
	})
	if n := slow.connects.Load(); n != 1 {
		t.Errorf("connection 2 connected %d times, want once (its backoff is an hour)", n)
	}
}

// TestStatusRetryAt: a waiting connection's status says when it connects
// again, from its own backoff (an hour here, spread by ±25%); a feeding one
// has no retry time.
func TestStatusRetryAt(t *testing.T) {
	backend := nntptest.Start(t, nntptest.Options{})
	peer := newDownPeer(t, backend)
	c := startConn(t, peer.addr, 1, nil, time.Hour, time.Hour, idleQueue{})
	waitUntil(t, "the connection to wait", func() bool { return c.Status().State == "waiting" })
	st := c.Status()
	if d := st.RetryAt.Sub(st.Since); d < 44*time.Minute || d > 76*time.Minute {
		t.Errorf("waiting since %v, retry at %v: in %v, want 45m..75m", st.Since, st.RetryAt, d)
	}
	peer.up()
	c.Kick()
	waitUntil(t, "the connection to feed", func() bool { return c.Status().State == "feeding" })
	if st := c.Status(); !st.RetryAt.IsZero() {
		t.Errorf("a feeding connection has a retry time %v", st.RetryAt)
	}
}

// listQueue offers a fixed list of articles once and counts the answers.
type listQueue struct {
	mu       sync.Mutex
	arts     []feed.Article
	bodies   map[string][]byte
	answered atomic.Int64
}

func newListQueue(n int) *listQueue {
	q := &listQueue{bodies: map[string][]byte{}}
	for i := range n {
		id := fmt.Sprintf("<a%d@peerconn.test>", i)
		body := []byte("Message-ID: " + id + "\r\nNewsgroups: misc.test\r\nPath: x!not-for-mail\r\n\r\nbody\r\n.\r\n")
		tok := strconv.Itoa(i)
		q.bodies[tok] = body
		q.arts = append(q.arts, feed.Article{Token: tok, MessageID: id, Size: int64(len(body))})
	}
	return q
}

func (q *listQueue) Body(token string) ([]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	b, ok := q.bodies[token]
	if !ok {
		return nil, fmt.Errorf("%w: no article %s", ErrUnreadableBody, token)
	}
	return b, nil
}

func (q *listQueue) Begin(context.Context, time.Time) {}
func (q *listQueue) Take(dst []feed.Article, n int) []feed.Article {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.arts))
	dst = append(dst, q.arts[:n]...)
	q.arts = q.arts[n:]
	return dst
}
func (q *listQueue) Answer(time.Time, Answer) { q.answered.Add(1) }
func (q *listQueue) Ask(int, int)             {}
func (q *listQueue) End(time.Time)            {}

// TestModeChangedPercent: the log line of a switch to no-CHECK mode gives
// the percentage of wanted articles to one decimal place. With a filter of
// three articles, all wanted, it passes 60% at 100 × (1 − (2/3)³) =
// 70.370370…%.
func TestModeChangedPercent(t *testing.T) {
	backend := nntptest.Start(t, nntptest.Options{})
	q := newListQueue(10)
	logb := &logbuf.Buffer{}
	cfg := Config{Name: "p", Addr: backend.HostPort(), Streaming: "auto",
		Feed:           feed.Config{Window: 1, ResponseTimeout: time.Minute, NoCheckHigh: 60, NoCheckLow: 50, NoCheckFilter: 3},
		ConnectTimeout: 10 * time.Second, BackoffBase: time.Hour, ReconnectMax: time.Hour}
	c := New(Options{Config: cfg, ID: 1, Queue: q, Log: slog.New(slog.NewTextHandler(logb, nil)),
		Driver: func(nc net.Conn) (driver.Driver, error) {
			return goroutine.New(nc, goroutine.Options{Bodies: q}), nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { c.Stop(); cancel(); <-done }()
	waitUntil(t, "every article answered", func() bool { return q.answered.Load() == 10 })
	m := regexp.MustCompile(`msg="feed mode changed" .*percent=(\S+)`).FindStringSubmatch(logb.String())
	if m == nil {
		t.Fatalf("no mode change logged:\n%s", logb.String())
	}
	if m[1] != "70.4" {
		t.Errorf("mode change logged with percent=%s, want 70.4", m[1])
	}
}
