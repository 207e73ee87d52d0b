//go:build linux

package epoll

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/ingest"
	"github.com/newsflow/newsflow/runtime/testpeer/loopback"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// peer accepts one connection on a loopback listener and runs handler on
// it; the connection is closed when handler returns.
var peer = loopback.ServeOne

func dialLoop(t *testing.T, l *Loop, addr string) *Conn {
	t.Helper()
	c, err := l.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
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

// echo answers every line with "PONG <line>" until EOF.
func echo(c net.Conn, r *bufio.Reader) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		c.Write([]byte("PONG " + line))
	}
}

func TestDoAndPost(t *testing.T) {
	l := newLoop(t, Options{})
	c := dialLoop(t, l, peer(t, echo))
	p := &pinger{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	posted := false
	go func() {
		runErr <- c.Run(ctx, p, func(time.Time) error {
			switch {
			case len(p.lines) == 3 && !posted:
				// Post from step: runs after this step, as an input.
				c.Post(func(time.Time) { p.Ping(4) })
				posted = true
			case len(p.lines) == 4:
				return ErrStop
			}
			return nil
		})
	}()
	for i := 1; i <= 3; i++ {
		if err := c.Do(ctx, func(time.Time) { p.Ping(i) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	want := []string{"PONG PING !\r\n", "PONG PING !!\r\n", "PONG PING !!!\r\n", "PONG PING !!!!\r\n"}
	if d := cmp.Diff(want, p.lines); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}

	// Between runs, Do waits for the next one.
	done := make(chan error, 1)
	go func() { done <- c.Do(ctx, func(time.Time) { p.Ping(5) }) }()
	err := c.Run(ctx, p, func(time.Time) error {
		if len(p.lines) == 5 {
			return ErrStop
		}
		return nil
	})
	if err != nil || <-done != nil {
		t.Fatalf("Run = %v", err)
	}

	// A Do whose ctx ends before the loop takes it never runs.
	dctx, dcancel := context.WithCancel(ctx)
	dcancel()
	ran := false
	if err := c.Do(dctx, func(time.Time) { ran = true }); !errors.Is(err, context.Canceled) {
		t.Errorf("Do with a cancelled ctx = %v", err)
	}
	// Closing ends pending Do calls with ErrClosed.
	go func() { done <- c.Do(ctx, func(time.Time) { ran = true }) }()
	c.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("Do on a closed connection = %v, want ErrClosed", err)
	}
	if err := c.Run(ctx, p, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Run on a closed connection = %v, want ErrClosed", err)
	}
	if ran {
		t.Error("a cancelled or refused Do ran")
	}
}

func TestStartTwice(t *testing.T) {
	l := newLoop(t, Options{})
	c := dialLoop(t, l, peer(t, echo))
	defer c.Close()
	p := &pinger{}
	first := make(chan error, 1)
	if err := c.Start(nil, p, nil, func(err error) { first <- err }); err != nil {
		t.Fatal(err)
	}
	err := c.Run(context.Background(), p, nil)
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Run = %v", err)
	}
	c.Close()
	if err := <-first; !errors.Is(err, ErrClosed) {
		t.Errorf("first run = %v, want ErrClosed", err)
	}
}

func TestContextCancel(t *testing.T) {
	asked := make(chan struct{})
	gotEOF := make(chan bool, 1)
	addr := peer(t, func(c net.Conn, r *bufio.Reader) {
		c.Write([]byte("200 hi\r\n"))
		r.ReadString('\n') // CAPABILITIES, never answered
		close(asked)
		_, err := r.ReadByte()
		gotEOF <- err == io.EOF
	})
	l := newLoop(t, Options{})
	c := dialLoop(t, l, addr)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-asked; cancel() }()
	h := handshake.New(time.Now(), handshake.Config{StepTimeout: time.Hour})
	if err := c.Run(ctx, h, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if !<-gotEOF {
		t.Error("the peer did not see the connection close")
	}
	if n := l.Stats().Conns; n != 0 {
		t.Errorf("%d connections left", n)
	}
}

func TestDialErrors(t *testing.T) {
	l := newLoop(t, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := l.Dial(context.Background(), addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial to a closed port = %v, want ECONNREFUSED", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A cancelled Dial to loopback may still connect first: then it
	// succeeds, otherwise it fails with the context's error.
	if c, err := l.Dial(ctx, peer(t, echo)); err == nil {
		c.Close()
	} else if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Dial = %v", err)
	}
	if _, err := l.Listen("localhost:0", nil); err == nil {
		t.Error("Listen on a name, want an error (literal addresses only)")
	}
	if n := l.Stats().Conns; n != 0 {
		t.Errorf("%d connections left", n)
	}
}

// TestAttach takes over a connection dialled with net, runs a handshake
// on it, and checks that net's connection is closed.
func TestAttach(t *testing.T) {
	sc := nntptest.StartScript(t, "S: 200 hi\r\nC: CAPABILITIES\r\nS: 101 caps\r\nS: VERSION 2\r\nS: READER\r\nS: .\r\nC! eof\r\n", nntptest.ScriptOptions{})
	nc, err := net.Dial("tcp", sc.HostPort())
	if err != nil {
		t.Fatal(err)
	}
	l := newLoop(t, Options{})
	c, err := l.Attach(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write on the attached net.Conn = %v, want net.ErrClosed", err)
	}
	if c.RemoteAddr().String() != sc.HostPort() {
		t.Errorf("RemoteAddr %v, want %s", c.RemoteAddr(), sc.HostPort())
	}
	h := handshake.New(time.Now(), handshake.Config{Reader: true})
	err = c.Run(context.Background(), h, func(time.Time) error {
		if e, ok := h.NextEvent(); ok {
			if _, ok := e.(handshake.Ready); !ok {
				t.Errorf("event %#v", e)
			}
			return ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitScript(t, sc)

	// Something without a descriptor is refused.
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, err := l.Attach(a); err == nil || !strings.Contains(err.Error(), "no file descriptor") {
		t.Errorf("Attach(net.Pipe) = %v", err)
	}
}

// TestLoopClose: closing the Loop ends every run with ErrClosed, closes
// every socket and listener, and refuses work afterwards.
func TestLoopClose(t *testing.T) {
	l, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg, accepted sync.WaitGroup
	wg.Add(2 * n)
	accepted.Add(n)
	results := make(chan error, 2*n)
	ln, err := l.Listen("127.0.0.1:0", func(now time.Time, c *Conn) {
		c.Start(nil, &pinger{}, nil, func(err error) { results <- err; wg.Done() })
		accepted.Done()
	})
	if err != nil {
		t.Fatal(err)
	}
	var peers []net.Conn
	for i := 0; i < n; i++ {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		peers = append(peers, nc)
		c := dialLoop(t, l, peer(t, func(c net.Conn, r *bufio.Reader) { io.Copy(io.Discard, r) }))
		c.Start(nil, &pinger{}, nil, func(err error) { results <- err; wg.Done() })
	}
	accepted.Wait()
	if got := l.Stats().Conns; got != 2*n {
		t.Errorf("%d connections, want %d", got, 2*n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(results)
	for err := range results {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("run ended with %v, want ErrClosed", err)
		}
	}
	for _, nc := range peers {
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("peer read %v, want EOF", err)
		}
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts")
	}
	if _, err := l.Dial(context.Background(), ln.Addr().String()); !errors.Is(err, ErrClosed) {
		t.Errorf("Dial after Close = %v", err)
	}
	if l.Close() != nil {
		t.Error("second Close failed")
	}
}

// TestNoFDLeak opens and closes many connections and checks that the
// process holds as many descriptors as before.
func TestNoFDLeak(t *testing.T) {
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	before := count()
	l, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 64)
	ln, err := l.Listen("127.0.0.1:0", func(now time.Time, c *Conn) {
		g := ingest.New(now, ingest.Config{PathHost: "relay.example"})
		c.Start(nil, g, nil, func(err error) { done <- err })
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64; i++ {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc.Write([]byte("QUIT\r\n"))
		io.Copy(io.Discard, nc)
		nc.Close()
	}
	for i := 0; i < 64; i++ {
		if err := <-done; err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	l.Close()
	if after := count(); after != before {
		t.Errorf("%d descriptors before, %d after", before, after)
	}
}

// segMachine is a SegmentSender that writes its script of segments at
// the start and closes; it counts how its output was taken.
type segMachine struct {
	segs      []machine.Segment
	bodies    machine.BodySource
	byteCalls int
	deadline  time.Time
}

func (m *segMachine) Receive(time.Time, []byte) error { return nil }
func (m *segMachine) Timeout(time.Time)               {}
func (m *segMachine) Deadline() (time.Time, bool)     { return m.deadline, !m.deadline.IsZero() }
func (m *segMachine) Closed() bool                    { return len(m.segs) == 0 }

func (m *segMachine) AppendSegments(dst []machine.Segment) []machine.Segment {
	dst = append(dst, m.segs...)
	m.segs = nil
	return dst
}

func (m *segMachine) AppendOutgoing(dst []byte) []byte {
	if len(m.segs) == 0 {
		return dst
	}
	m.byteCalls++
	dst, _ = machine.AppendSegmentBytes(dst, m.segs, m.bodies)
	m.segs = nil
	return dst
}

// TestSegments writes commands and stored articles in every way the loop
// knows, through a small send buffer and a peer that reads slowly, so
// that writes are partial and meet EAGAIN.
func TestSegments(t *testing.T) {
	arts := makeArticles("seg", 2, 3<<20)
	arts = append(arts, makeArticles("tiny", 40, 100)...)
	mem := bodiesOf(arts)
	var script []machine.Segment
	var want bytes.Buffer
	for i, a := range arts {
		cmd := fmt.Sprintf("TAKETHIS %s\r\n", a.MessageID)
		if i%3 == 0 {
			cmd = fmt.Sprintf("CHECK <c%d@x>\r\n", i) + cmd
		}
		script = append(script, machine.Segment{Bytes: []byte(cmd)}, machine.Segment{Token: a.Token, Size: a.Size})
		want.WriteString(cmd)
		want.Write(a.wire)
	}
	script = append(script, machine.Segment{Bytes: []byte("QUIT\r\n")})
	want.WriteString("QUIT\r\n")

	tests := []struct {
		name          string
		bodies        func(t *testing.T) machine.BodySource
		wantErr       string
		wantSendfile  bool
		wantByteCalls int
	}{
		{name: "bytes, writev", bodies: func(*testing.T) machine.BodySource { return mem }},
		{name: "file, sendfile", bodies: func(t *testing.T) machine.BodySource { return fileOnly{newFileStore(t, arts)} }, wantSendfile: true},
		{name: "file, small ones appended", bodies: func(t *testing.T) machine.BodySource { return newFileStore(t, arts) }, wantSendfile: true},
		{name: "no body source: AppendOutgoing", bodies: func(*testing.T) machine.BodySource { return nil }, wantByteCalls: 1},
		{name: "missing article", bodies: func(*testing.T) machine.BodySource {
			m := bodyMap{}
			for k, v := range mem {
				m[k] = v
			}
			delete(m, "@tiny3@")
			return m
		}, wantErr: "read article @tiny3@: no article @tiny3@"},
		{name: "size differs", bodies: func(*testing.T) machine.BodySource {
			m := bodyMap{}
			for k, v := range mem {
				m[k] = v
			}
			m[arts[1].Token] = []byte("short\r\n.\r\n")
			return m
		}, wantErr: "read article @seg1@: 10 bytes, want"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan []byte, 1)
			addr := peer(t, func(c net.Conn, r *bufio.Reader) {
				// Read slowly at first, so the sender's buffer fills.
				var b bytes.Buffer
				buf := make([]byte, 512)
				for i := 0; i < 200; i++ {
					n, err := r.Read(buf)
					b.Write(buf[:n])
					if err != nil {
						got <- b.Bytes()
						return
					}
				}
				io.Copy(&b, r)
				got <- b.Bytes()
			})
			src := tc.bodies(t)
			l := newLoop(t, Options{Bodies: src})
			c := dialLoop(t, l, addr)
			m := &segMachine{segs: slices.Clone(script), bodies: mem}
			// A small send buffer: many partial writes.
			onLoop(t, l, func() { unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 256<<10) })
			err := c.Run(context.Background(), m, nil)
			written := <-got
			st := l.Stats()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run = %v, want %q", err, tc.wantErr)
				}
				if !bytes.HasPrefix(want.Bytes(), written) {
					t.Error("what was written before the failure is not a prefix of the output")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(written, want.Bytes()) {
				t.Errorf("peer got %d bytes, want %d; first difference at %d", len(written), want.Len(), firstDiff(written, want.Bytes()))
			}
			if m.byteCalls != tc.wantByteCalls {
				t.Errorf("AppendOutgoing found output %d times, want %d", m.byteCalls, tc.wantByteCalls)
			}
			if (st.Sendfiles > 0) != tc.wantSendfile {
				t.Errorf("%d sendfile calls; want some: %v", st.Sendfiles, tc.wantSendfile)
			}
			if st.WouldBlock == 0 {
				t.Errorf("stats %+v: no write met a full socket; the test does not exercise EPOLLOUT", st)
			}
			switch fs := src.(type) {
			case fileOnly:
				if fs.s.opened.Load() != int64(len(arts)) || fs.s.released.Load() != fs.s.opened.Load() {
					t.Errorf("BodyFile %d calls, %d released; want %d", fs.s.opened.Load(), fs.s.released.Load(), len(arts))
				}
			case *fileStore:
				// 2 large articles by sendfile, 40 small ones appended.
				if fs.opened.Load() != 2 || fs.released.Load() != 2 || fs.appended.Load() != 40 {
					t.Errorf("BodyFile %d calls, %d released, AppendBody %d; want 2, 2, 40", fs.opened.Load(), fs.released.Load(), fs.appended.Load())
				}
			}
		})
	}
}

// onLoop runs fn on the loop goroutine and waits for it.
func onLoop(t *testing.T, l *Loop, fn func()) {
	done := make(chan struct{})
	if err := l.post(func() { fn(); close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestWriteTimeout: output the peer never reads is abandoned at the
// machine's deadline with a timeout error, on both runtimes (the goroutine
// runtime's write deadline is the machine's deadline).
func TestWriteTimeout(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 64<<20)
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			release := make(chan struct{})
			addr := peer(t, func(c net.Conn, r *bufio.Reader) { <-release })
			defer close(release)
			c := r.dial(t, addr, bodyMap{"@big@": big})
			m := &segMachine{segs: []machine.Segment{{Bytes: []byte("TAKETHIS <a@b>\r\n")}, {Token: "@big@", Size: int64(len(big))}},
				deadline: time.Now().Add(200 * time.Millisecond)}
			err := c.Run(context.Background(), m, nil)
			if errKind(err) != "write timeout" {
				t.Errorf("Run = %v, want a write timeout", err)
			}
		})
	}
}

// unpaused hides an Ingest's Paused from the runtime (but keeps its
// ReceiveEOF), like a runtime that knows nothing of machine.Pauser.
type unpaused struct{ g *ingest.Ingest }

func (u unpaused) Receive(now time.Time, p []byte) error { return u.g.Receive(now, p) }
func (u unpaused) Timeout(now time.Time)                 { u.g.Timeout(now) }
func (u unpaused) AppendOutgoing(dst []byte) []byte      { return u.g.AppendOutgoing(dst) }
func (u unpaused) Deadline() (time.Time, bool)           { return u.g.Deadline() }
func (u unpaused) Closed() bool                          { return u.g.Closed() }
func (u unpaused) ReceiveEOF(now time.Time)              { u.g.ReceiveEOF(now) }

// TestBackPressure: an Ingest that may queue two answers and hold 128 KiB
// of input, a feeder that pipelines 10,000 CHECKs (330 KiB), and an owner
// that answers nothing until the feeder has written everything (or is
// blocked writing). Both runtimes stop reading while the machine is Paused
// (machine.Pauser), so the input waits in the kernel (the machine holds at
// most one read, 64 KiB) and every CHECK is answered. With Paused hidden
// from the runtime and an owner that never answers, the runtime reads on
// and the machine's input limit breaks the connection: the check can fail.
func TestBackPressure(t *testing.T) {
	cfg := ingest.Config{PathHost: "relay.example", MaxPending: 2, MaxBuffered: 128 << 10}
	const n = 10000
	var in strings.Builder
	in.WriteString("MODE STREAM\r\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "CHECK <bp%d@upstream.example>\r\n", i)
	}
	in.WriteString("QUIT\r\n")
	for _, hide := range []bool{false, true} {
		for _, r := range runtimes {
			t.Run(fmt.Sprintf("%s/hidden=%v", r.name, hide), func(t *testing.T) {
				gate := make(chan struct{})
				type result struct {
					answers int
					err     error
				}
				res := make(chan result, 1)
				addr := r.serve(t, func(c conn) {
					g := ingest.New(time.Now(), cfg)
					var m machine.Conn = g
					if hide {
						m = unpaused{g}
					}
					var owed []uint64
					var open atomic.Bool
					answers := 0
					answer := func(now time.Time) {
						for _, s := range owed {
							g.Decide(now, s, ingest.Want)
							answers++
						}
						owed = owed[:0]
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					go func() {
						select {
						case <-gate:
							if hide {
								return // never answer: the input limit must break it
							}
							open.Store(true)
							c.Do(ctx, answer)
						case <-ctx.Done():
						}
					}()
					err := c.Run(ctx, m, func(now time.Time) error {
						for {
							e, ok := g.NextEvent()
							if !ok {
								return nil
							}
							if ck, ok := e.(ingest.Check); ok {
								owed = append(owed, ck.Seq)
							}
							if open.Load() {
								// Answers let the machine parse on: its
								// new events come in this same loop.
								answer(now)
							}
						}
					})
					res <- result{answers, err}
				})
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				wrote := make(chan struct{})
				go func() {
					nc.Write([]byte(in.String()))
					close(wrote)
				}()
				// Open the gate when the feeder is done writing, or after
				// a while if the kernel's buffers cannot take all it
				// writes (then its write waits for the server to read).
				select {
				case <-wrote:
				case <-time.After(300 * time.Millisecond):
				}
				close(gate)
				got, _ := io.ReadAll(nc)
				out := <-res
				if hide {
					if out.err == nil || !strings.Contains(out.err.Error(), "must stop reading while Paused") {
						t.Errorf("Run = %v; want the machine's input limit to break a runtime that reads on", out.err)
					}
					return
				}
				if out.err != nil || out.answers != n || bytes.Count(got, []byte("238 ")) != n {
					t.Errorf("Run = %v, %d answers, %d 238s; want nil, %d, %d", out.err, out.answers, bytes.Count(got, []byte("238 ")), n, n)
				}
			})
		}
	}
}

// TestManyConnections serves 300 feeders at once on one loop, each a
// short pipelined session, and checks every answer.
func TestManyConnections(t *testing.T) {
	l := newLoop(t, Options{})
	const n = 300
	ended := make(chan error, n)
	ln, err := l.Listen("127.0.0.1:0", func(now time.Time, c *Conn) {
		g := ingest.New(now, ingest.Config{PathHost: "relay.example", IdleTimeout: time.Minute})
		c.Start(nil, g, func(now time.Time) error {
			for {
				e, ok := g.NextEvent()
				if !ok {
					return nil
				}
				switch e := e.(type) {
				case ingest.Check:
					g.Decide(now, e.Seq, ingest.Want)
				case ingest.Article:
					g.Stored(now, e.Seq, ingest.Result{Outcome: ingest.StoreAccepted})
				}
			}
		}, func(err error) { ended <- err })
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(time.Minute))
			var b strings.Builder
			b.WriteString("MODE STREAM\r\n")
			for k := 0; k < 5; k++ {
				id := fmt.Sprintf("<m%d.%d@upstream.example>", i, k)
				b.WriteString("CHECK " + id + "\r\nTAKETHIS " + id + "\r\n" + article(id, "", k))
			}
			b.WriteString("QUIT\r\n")
			nc.Write([]byte(b.String()))
			got, err := io.ReadAll(nc)
			if err != nil {
				errs <- err
				return
			}
			if bytes.Count(got, []byte("\r\n239 ")) != 5 || !bytes.HasSuffix(got, []byte("205 Bye\r\n")) {
				errs <- fmt.Errorf("connection %d got %q", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := 0; i < n; i++ {
		if err := <-ended; err != nil {
			t.Errorf("run: %v", err)
		}
	}
	if c := l.Stats().Conns; c != 0 {
		t.Errorf("%d connections left", c)
	}
}

// TestTimerHeap checks the heap against a sorted reference under random
// sets, moves and removals.
func TestTimerHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Unix(1e9, 0)
	conns := make([]*Conn, 50)
	for i := range conns {
		conns[i] = &Conn{hidx: -1}
	}
	var h timerHeap
	for step := 0; step < 5000; step++ {
		c := conns[rng.IntN(len(conns))]
		switch rng.IntN(4) {
		case 0, 1:
			h.set(c, base.Add(time.Duration(rng.IntN(1000))*time.Millisecond))
		case 2:
			h.remove(c)
		case 3:
			if len(h) > 0 {
				min := h[0].key
				for _, o := range conns {
					if o.hidx >= 0 && o.key.Before(min) {
						t.Fatalf("step %d: heap top %v, but %v is in the heap", step, min, o.key)
					}
				}
				h.pop()
			}
		}
		for i, o := range h {
			if o.hidx != i {
				t.Fatalf("step %d: index %d holds hidx %d", step, i, o.hidx)
			}
			if i > 0 && o.key.Before(h[(i-1)/2].key) {
				t.Fatalf("step %d: heap order broken at %d", step, i)
			}
		}
	}
}

// greeter says "HELLO <name>" when it starts and closes after "BYE".
type greeter struct {
	pinger
	closed bool
}

func (g *greeter) Receive(now time.Time, b []byte) error {
	g.pinger.Receive(now, b)
	if len(g.lines) > 0 && g.lines[len(g.lines)-1] == "BYE\r\n" {
		g.closed = true
	}
	return nil
}
func (g *greeter) Closed() bool { return g.closed }

// TestStartsInOneRound: many connections accepted at once are started in
// one round of the loop; each must get its own first output (output
// staged in the loop's scratch space must not be shared).
func TestStartsInOneRound(t *testing.T) {
	l := newLoop(t, Options{})
	var next atomic.Int64
	ln, err := l.Listen("127.0.0.1:0", func(now time.Time, c *Conn) {
		g := &greeter{}
		g.out = fmt.Appendf(nil, "HELLO %d %s\r\n", next.Add(1), strings.Repeat("x", int(next.Load()%7)*100))
		c.Start(nil, g, nil, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	var ncs []net.Conn
	for i := 0; i < n; i++ {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		ncs = append(ncs, nc)
	}
	seen := map[string]bool{}
	for _, nc := range ncs {
		nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, err := bufio.NewReader(nc).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(line)
		want := "HELLO " + f[1] + " "
		num, _ := strconv.Atoi(f[1])
		want += strings.Repeat("x", num%7*100)
		if strings.TrimRight(line, " \r\n") != strings.TrimRight(want, " ") {
			t.Errorf("got %.40q..., a greeting not its own", line)
		}
		if seen[f[1]] {
			t.Errorf("greeting %s seen twice", f[1])
		}
		seen[f[1]] = true
		nc.Write([]byte("BYE\r\n"))
	}
}
