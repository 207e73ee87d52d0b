//go:build linux

package epoll

// The harness that runs one scenario through both runtimes. A scenario
// gets a runtime (runtime/goroutine or this package) and returns what the
// owner saw: events and the run's result. The bytes on the wire are
// recorded by a tap, a recording TCP proxy between the runtime and its
// peer: the same code for both runtimes, and outside both, so it records
// exactly the bytes each side put on the wire.
//
// Normalisation, and why. Per direction, the bytes are compared exactly,
// with how each side ended (EOF or reset). How the two directions
// interleave is not compared: with pipelining it depends on scheduling and
// on how reads split the input, even between two runs on one runtime.
// Events are compared exactly; a machine whose events depended on read
// chunking would show up here as a difference. Run's error is compared by
// kind (errKind): the two runtimes word their own errors differently.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/goroutine"
	"github.com/newsflow/newsflow/runtime/testpeer/loopback"
)

// conn is what both runtimes' connections offer an owner.
type conn = driver.Driver

var (
	_ conn = (*goroutine.Conn)(nil)
	_ conn = (*Conn)(nil)
)

// rt is one runtime under test: how to dial a peer with it, and how to
// serve a listener's connections with it.
type rt struct {
	name string
	dial func(t testing.TB, addr string, bodies machine.BodySource) conn
	// serve accepts connections on a new loopback listener and calls
	// handle for each, on a goroutine of the runtime's choosing; handle
	// runs one machine with the conn and returns.
	serve func(t testing.TB, handle func(c conn)) string
}

// runtimes are the two runtimes, goroutine first.
var runtimes = []rt{
	{name: "goroutine", dial: goroutineDial, serve: goroutineServe},
	{name: "epoll", dial: epollDial, serve: epollServe},
}

func goroutineDial(t testing.TB, addr string, bodies machine.BodySource) conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := goroutine.New(nc, goroutine.Options{Bodies: bodies})
	t.Cleanup(func() { c.Close() })
	return c
}

// newLoop starts a Loop closed at the end of the test.
func newLoop(t testing.TB, opts Options) *Loop {
	t.Helper()
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Loop.Close: %v", err)
		}
	})
	return l
}

func epollDial(t testing.TB, addr string, bodies machine.BodySource) conn {
	t.Helper()
	l := newLoop(t, Options{Bodies: bodies})
	c, err := l.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// goroutineServe runs handle on runtime/goroutine for every connection
// accepted until the test ends.
func goroutineServe(t testing.TB, handle func(c conn)) string {
	t.Helper()
	return loopback.Serve(t, func(nc net.Conn) {
		c := goroutine.New(nc, goroutine.Options{})
		defer c.Close()
		handle(c)
	})
}

// epollServe runs handle on a goroutine per accepted connection only
// because handle is written in the blocking style (Run); the connections
// themselves are driven by the loop.
func epollServe(t testing.TB, handle func(c conn)) string {
	t.Helper()
	l := newLoop(t, Options{})
	var wg sync.WaitGroup
	ln, err := l.Listen("127.0.0.1:0", func(now time.Time, c *Conn) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			handle(c)
		}()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// wire is what a tap saw: the bytes each side sent, and how each side's
// stream ended.
type wire struct {
	Client, Server       []byte
	ClientEnd, ServerEnd string // "closed", "closed by the tap", or an error's text
}

// diff compares two wires, showing differing byte streams line by line.
func (w wire) diff(o wire) string {
	var b strings.Builder
	for _, s := range []struct {
		name string
		a, b []byte
	}{{"client bytes", w.Client, o.Client}, {"server bytes", w.Server, o.Server}} {
		if !bytes.Equal(s.a, s.b) {
			fmt.Fprintf(&b, "%s differ (%d vs %d bytes):\n%s", s.name, len(s.a), len(s.b),
				cmp.Diff(lines(s.a), lines(s.b)))
		}
	}
	if w.ClientEnd != o.ClientEnd || w.ServerEnd != o.ServerEnd {
		fmt.Fprintf(&b, "ends differ: client %s/%s, server %s/%s\n", w.ClientEnd, o.ClientEnd, w.ServerEnd, o.ServerEnd)
	}
	return b.String()
}

// lines splits b into wire lines, shortening long ones, for diffs.
func lines(b []byte) []string {
	var out []string
	for _, e := range transcript.Lines(transcript.Client, b) {
		s := string(e.Data)
		if len(s) > 200 {
			s = fmt.Sprintf("%s...(%d bytes)", s[:100], len(s))
		}
		out = append(out, s)
	}
	return out
}

// tap is a recording proxy for one connection: the runtime under test
// dials it, it dials the peer. Client bytes are recorded as read from the
// client, server bytes as read from the server, so what is recorded does
// not depend on whether the other side was still there to take it. When
// one side ends its stream, the tap half-closes the other (CloseWrite), so
// the far side sees an orderly EOF, never a reset caused by the tap.
type tap struct {
	ln   net.Listener
	done chan struct{}
	mu   sync.Mutex
	w    wire
	// kill closes the server side, for peers that hang forever.
	kill func()
}

func startTap(t testing.TB, target string) *tap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(tp.done)
		cc, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		sc, err := net.Dial("tcp", target)
		if err != nil {
			cc.Close()
			t.Errorf("tap: %v", err)
			return
		}
		tp.mu.Lock()
		tp.kill = func() { sc.Close() }
		tp.mu.Unlock()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // client -> server
			defer wg.Done()
			end := tp.copy(sc, cc, &tp.w.Client)
			tp.mu.Lock()
			tp.w.ClientEnd = end
			tp.mu.Unlock()
			sc.(*net.TCPConn).CloseWrite()
		}()
		go func() { // server -> client
			defer wg.Done()
			end := tp.copy(cc, sc, &tp.w.Server)
			tp.mu.Lock()
			tp.w.ServerEnd = end
			tp.mu.Unlock()
			cc.(*net.TCPConn).CloseWrite()
		}()
		wg.Wait()
		cc.Close()
		sc.Close()
	}()
	t.Cleanup(func() {
		ln.Close()
		tp.closeServer()
		<-tp.done
	})
	return tp
}

// copy forwards src to dst, recording what it read from src in rec, and
// returns how src's stream ended. A failing dst does not stop the reading.
func (tp *tap) copy(dst, src net.Conn, rec *[]byte) string {
	buf := make([]byte, 64<<10)
	dstOK := true
	for {
		n, err := src.Read(buf)
		if n > 0 {
			tp.mu.Lock()
			*rec = append(*rec, buf[:n]...)
			tp.mu.Unlock()
			if dstOK {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					dstOK = false
				}
			}
		}
		if err != nil {
			return endKind(err)
		}
	}
}

// endKind says how a stream ended. EOF and reset are both "closed": a
// side that closes with unread input in its socket sends RST instead of
// FIN, and whether the peer's last words (205 to a QUIT it did not wait
// for) arrived before the close is a matter of scheduling, not of the
// runtime.
func endKind(err error) string {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return "closed"
	case errors.Is(err, net.ErrClosed):
		return "closed by the tap"
	}
	return err.Error()
}

func (tp *tap) addr() string { return tp.ln.Addr().String() }

// closeServer closes the tap's connection to the peer (a peer that hangs
// would otherwise keep it open forever).
func (tp *tap) closeServer() {
	tp.mu.Lock()
	kill := tp.kill
	tp.mu.Unlock()
	if kill != nil {
		kill()
	}
}

// wait returns the wire once both directions ended. A peer that is still
// silent after the client ended (a hanging fault) gets grace to finish,
// then the tap closes its side; the server's end then reads "closed by
// the tap", on both runtimes alike.
func (tp *tap) wait(t testing.TB, grace time.Duration) wire {
	t.Helper()
	select {
	case <-tp.done:
	case <-time.After(grace):
		tp.closeServer()
		select {
		case <-tp.done:
		case <-time.After(20 * time.Second):
			t.Fatal("tap: the connection did not end")
		}
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.w
}

// errKind is Run's result in words both runtimes share: nil is "", a
// machine's own error keeps its text, the runtime's wording is dropped.
func errKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "context deadline"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "write timeout"
	case errors.Is(err, io.EOF):
		return "read: EOF"
	case errors.Is(err, syscall.ECONNRESET):
		return "read: reset"
	case errors.Is(err, syscall.EPIPE):
		return "write: broken pipe"
	case errors.Is(err, goroutine.ErrClosed), errors.Is(err, ErrClosed):
		return "closed"
	}
	s := err.Error()
	for _, p := range []string{"goroutine: ", "epoll: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// outcome is what one runtime produced for one scenario.
type outcome struct {
	Events []string // the owner's events, formatted with %#v
	Err    string   // errKind of the run(s)
	Extra  []string // scenario-specific facts (server counters, ...)
	Wire   wire
}

// compare runs a scenario on both runtimes and fails on any difference.
// It returns the goroutine runtime's outcome for further checks.
func compare(t *testing.T, run func(t *testing.T, r rt) outcome) outcome {
	t.Helper()
	var outs []outcome
	for _, r := range runtimes {
		var o outcome
		if !t.Run(r.name, func(t *testing.T) { o = run(t, r) }) {
			t.FailNow()
		}
		outs = append(outs, o)
	}
	g, e := outs[0], outs[1]
	if d := cmp.Diff(g.Events, e.Events); d != "" {
		t.Errorf("events differ (-goroutine +epoll):\n%s", d)
	}
	if g.Err != e.Err {
		t.Errorf("run results differ: goroutine %q, epoll %q", g.Err, e.Err)
	}
	if d := cmp.Diff(g.Extra, e.Extra); d != "" {
		t.Errorf("facts differ (-goroutine +epoll):\n%s", d)
	}
	if d := g.Wire.diff(e.Wire); d != "" {
		t.Errorf("wire differs (goroutine, then epoll):\n%s", d)
	}
	return g
}

// eventStrings formats events for comparison.
func eventStrings[E any](evs []E) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%#v", e))
	}
	return out
}
