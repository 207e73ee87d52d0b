package goroutine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/loopback"
)

// serve and dial are the loopback kit's, under the short names the tests
// here use.
var (
	serve = loopback.ServeOne
	dial  = loopback.Dial
)

// expect reads one line and fails the test (from the server goroutine,
// with Error) if it is not want.
func expect(t *testing.T, r *bufio.Reader, want string) bool {
	line, err := r.ReadString('\n')
	if err != nil || line != want+"\r\n" {
		t.Errorf("server read %q, %v; want %q", line, err, want)
		return false
	}
	return true
}

// events collects a handshake's (or session's) events and stops the run
// after the final one, so the connection stays open.
type events struct {
	list []handshake.Event
	next func() (handshake.Event, bool)
}

func (e *events) step(now time.Time) error {
	for {
		ev, ok := e.next()
		if !ok {
			return nil
		}
		e.list = append(e.list, ev)
		if _, ok := ev.(handshake.Ready); ok {
			return ErrStop
		}
		if _, ok := ev.(handshake.Done); ok {
			return ErrStop
		}
	}
}

func TestRunHandshakeThenSession(t *testing.T) {
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		c.Write([]byte("200 scripted ready\r\n"))
		expect(t, r, "CAPABILITIES")
		// Split the list over several writes.
		c.Write([]byte("101 Capability list:\r\nVERSION 2\r\nIH"))
		c.Write([]byte("AVE\r\nSTREAMING\r\n.\r\n"))
		expect(t, r, "MODE STREAM")
		c.Write([]byte("203 StreamOK.\r\n"))
		expect(t, r, "GROUP misc.test")
		c.Write([]byte("480 who are you\r\n"))
		expect(t, r, "AUTHINFO USER alice")
		c.Write([]byte("281 ok\r\n"))
		expect(t, r, "GROUP misc.test")
		c.Write([]byte("211 1 1 1 misc.test\r\n"))
		expect(t, r, "QUIT")
	})
	conn := New(dial(t, addr), Options{})
	defer conn.Close()
	ctx := context.Background()
	cfg := handshake.Config{Stream: true, User: "alice", Pass: "pw"}
	h := handshake.New(time.Now(), cfg)
	ev := &events{next: h.NextEvent}
	if err := conn.Run(ctx, h, ev.step); err != nil {
		t.Fatal(err)
	}
	want := []handshake.Event{handshake.Ready{
		Greeting:     proto.Response{Code: 200, Text: "scripted ready"},
		Capabilities: mustCaps(t, "VERSION 2", "IHAVE", "STREAMING"),
		Streaming:    true,
	}}
	if d := cmp.Diff(want, ev.list); d != "" {
		t.Fatalf("handshake events (-want +got):\n%s", d)
	}
	// The same connection goes on with the next machine.
	s := handshake.NewSession(time.Now(), cfg, proto.Group("misc.test"))
	if err := s.Receive(time.Now(), h.Leftover()); err != nil {
		t.Fatal(err)
	}
	ev = &events{next: s.NextEvent}
	if err := conn.Run(ctx, s, ev.step); err != nil {
		t.Fatal(err)
	}
	want = []handshake.Event{handshake.Done{Response: proto.Response{Code: 211, Text: "1 1 1 misc.test"}, Authenticated: true}}
	if d := cmp.Diff(want, ev.list); d != "" {
		t.Fatalf("session events (-want +got):\n%s", d)
	}
	if _, err := conn.NetConn().Write([]byte("QUIT\r\n")); err != nil {
		t.Fatal(err)
	}
}

func mustCaps(t *testing.T, lines ...string) proto.CapabilitySet {
	t.Helper()
	c, err := proto.ParseCapabilities(lines)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRunTimeout(t *testing.T) {
	release := make(chan struct{})
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		<-release // say nothing until the client gave up
	})
	defer close(release)
	conn := New(dial(t, addr), Options{})
	h := handshake.New(time.Now(), handshake.Config{StepTimeout: 50 * time.Millisecond})
	ev := &events{next: h.NextEvent}
	if err := conn.Run(context.Background(), h, ev.step); err != nil {
		t.Fatalf("Run = %v, want nil (the machine closed)", err)
	}
	want := []handshake.Event{handshake.Failed{State: handshake.StateGreeting, Reason: handshake.ReasonTimeout, Detail: "no answer within 50ms"}}
	if d := cmp.Diff(want, ev.list); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if err := conn.Run(context.Background(), h, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after close = %v, want ErrClosed", err)
	}
}

func TestRunPeerCloses(t *testing.T) {
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		c.Write([]byte("200 hi\r\n"))
		expect(t, r, "CAPABILITIES")
		c.Write([]byte("101 caps\r\nVERSION 2\r\n"))
	})
	conn := New(dial(t, addr), Options{})
	h := handshake.New(time.Now(), handshake.Config{})
	ev := &events{next: h.NextEvent}
	if err := conn.Run(context.Background(), h, ev.step); err != nil {
		t.Fatalf("Run = %v, want nil (the machine closed after EOF)", err)
	}
	want := []handshake.Event{handshake.Failed{State: handshake.StateCapabilityList, Reason: handshake.ReasonClosed}}
	if d := cmp.Diff(want, ev.list); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

func TestRunReceiveError(t *testing.T) {
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
		io.Copy(io.Discard, r)
	})
	conn := New(dial(t, addr), Options{})
	h := handshake.New(time.Now(), handshake.Config{})
	ev := &events{next: h.NextEvent}
	err := conn.Run(context.Background(), h, ev.step)
	if err == nil || !strings.Contains(err.Error(), "status code is not three digits") {
		t.Fatalf("Run = %v, want the protocol error", err)
	}
	if len(ev.list) != 1 {
		t.Fatalf("events %v, want the Failed event delivered before Run returned", ev.list)
	}
}

func TestRunContextCancel(t *testing.T) {
	accepted := make(chan struct{})
	release := make(chan struct{})
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		close(accepted)
		<-release
	})
	defer close(release)
	conn := New(dial(t, addr), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-accepted; cancel() }()
	h := handshake.New(time.Now(), handshake.Config{StepTimeout: time.Hour})
	if err := conn.Run(ctx, h, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if _, err := conn.NetConn().Write([]byte("x")); err == nil {
		t.Error("the connection is still open after cancellation")
	}
}

// pinger is a toy machine with an owner input: Ping queues "PING n", and
// every line received is kept.
type pinger struct {
	out   []byte
	lines []string
	buf   []byte
}

func (p *pinger) Ping(n int) { p.out = append(p.out, "PING "+strings.Repeat("!", n)+"\r\n"...) }
func (p *pinger) Receive(now time.Time, b []byte) error {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return nil
		}
		p.lines = append(p.lines, string(p.buf[:i+1]))
		p.buf = p.buf[i+1:]
	}
}
func (p *pinger) Timeout(now time.Time) {}
func (p *pinger) AppendOutgoing(dst []byte) []byte {
	dst = append(dst, p.out...)
	p.out = p.out[:0]
	return dst
}
func (p *pinger) Deadline() (time.Time, bool) { return time.Time{}, false }
func (p *pinger) Closed() bool                { return false }

func TestDo(t *testing.T) {
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		for i := 0; i < 3; i++ {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			c.Write([]byte("PONG " + line))
		}
	})
	conn := New(dial(t, addr), Options{})
	defer conn.Close()
	p := &pinger{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() {
		runErr <- conn.Run(ctx, p, func(time.Time) error {
			if len(p.lines) == 3 {
				return ErrStop
			}
			return nil
		})
	}()
	for i := 1; i <= 3; i++ {
		if err := conn.Do(ctx, func(time.Time) { p.Ping(i) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	want := []string{"PONG PING !\r\n", "PONG PING !!\r\n", "PONG PING !!!\r\n"}
	if d := cmp.Diff(want, p.lines); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestDeadlineFakeTime runs the loop in a synctest bubble over net.Pipe:
// the timeout fires exactly at the machine's deadline in fake time.
func TestDeadlineFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := net.Pipe()
		defer server.Close()
		go func() {
			server.Write([]byte("200 hi\r\n"))
			r := bufio.NewReader(server)
			r.ReadString('\n') // CAPABILITIES, never answered
			io.Copy(io.Discard, r)
		}()
		start := time.Now()
		conn := New(client, Options{})
		h := handshake.New(start, handshake.Config{StepTimeout: 30 * time.Second})
		ev := &events{next: h.NextEvent}
		if err := conn.Run(context.Background(), h, ev.step); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 30*time.Second {
			t.Errorf("timed out after %v of fake time, want exactly 30s", got)
		}
		want := []handshake.Event{handshake.Failed{State: handshake.StateCapabilities, Reason: handshake.ReasonTimeout, Detail: "no answer within 30s"}}
		if d := cmp.Diff(want, ev.list); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
}

func TestStartTLSWithoutConfig(t *testing.T) {
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		c.Write([]byte("200 hi\r\n"))
		expect(t, r, "CAPABILITIES")
		c.Write([]byte("101 caps\r\nSTARTTLS\r\n.\r\n"))
		expect(t, r, "STARTTLS")
		c.Write([]byte("382 go\r\n"))
		io.Copy(io.Discard, r)
	})
	conn := New(dial(t, addr), Options{})
	h := handshake.New(time.Now(), handshake.Config{TLS: handshake.TLSRequired})
	ev := &events{next: h.NextEvent}
	if err := conn.Run(context.Background(), h, ev.step); err != nil {
		t.Fatal(err)
	}
	want := []handshake.Event{handshake.Failed{State: handshake.StateTLS, Reason: handshake.ReasonTLSFailed,
		Detail: "goroutine: STARTTLS asked for, but no TLS configuration was given"}}
	if d := cmp.Diff(want, ev.list); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
