package goroutine

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// owing is an EOFReceiver that owes an answer after the peer's EOF: it
// closes only once its owner gives the answer (Answer), which it then
// writes, like machine/ingest with verdicts still due.
type owing struct {
	stepMachine
	eof bool
}

func (m *owing) ReceiveEOF(time.Time) { m.eof = true }
func (m *owing) Answer(time.Time) {
	m.out = append(m.out, "239 late answer\r\n"...)
	m.done = true
}

// TestEOFKeepsOwner: after the peer's EOF a machine.EOFReceiver that is not
// Closed keeps running on its owner's inputs (here Post), and its last
// words reach the peer, which only shut down its sending side. The run
// ends well when the machine closes. (runtime/goroutine once ended the run
// with "read: EOF" here; runtime/epoll never did: drive.Settle decides for
// both now.)
func TestEOFKeepsOwner(t *testing.T) {
	got := make(chan string, 1)
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(r)
		got <- string(b)
	})
	c := New(dial(t, addr), Options{})
	defer c.Close()
	m := &owing{}
	sawEOF := make(chan struct{})
	told := false // Run's goroutine only
	step := func(time.Time) error {
		if m.eof && !told {
			told = true
			close(sawEOF)
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background(), m, step) }()
	<-sawEOF // closed by step, on Run's goroutine, once ReceiveEOF ran
	if err := c.Post(m.Answer); err != nil {
		t.Fatalf("Post: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil (the machine closed)", err)
	}
	if s := <-got; s != "239 late answer\r\n" {
		t.Errorf("peer read %q, want the late answer", s)
	}
}

// TestEOFWithoutReceiver: a machine that cannot hear of the EOF ends the
// run with an error wrapping io.EOF.
func TestEOFWithoutReceiver(t *testing.T) {
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {})
	c := New(dial(t, addr), Options{})
	defer c.Close()
	if err := c.Run(context.Background(), &pinger{}, nil); !errors.Is(err, io.EOF) {
		t.Errorf("Run = %v, want an error wrapping io.EOF", err)
	}
}

// TestPost: functions posted before Run wait for it, run in order on
// Run's goroutine, and Post on a closed Conn fails with ErrClosed.
func TestPost(t *testing.T) {
	got := make(chan string, 1)
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		line, _ := r.ReadString('\n')
		got <- line
	})
	c := New(dial(t, addr), Options{})
	p := &pinger{}
	ran := 0
	for _, n := range []int{1, 2} {
		if err := c.Post(func(time.Time) { p.Ping(n); ran++ }); err != nil {
			t.Fatalf("Post: %v", err)
		}
	}
	stop := errors.New("stop")
	err := c.Run(context.Background(), p, func(time.Time) error {
		if ran == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("Run = %v, want the step's error", err)
	}
	if s := <-got; s != "PING !\r\n" {
		t.Errorf("peer read %q first, want the first Post's ping", s)
	}
	c.Close()
	if err := c.Post(func(time.Time) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Post after Close = %v, want ErrClosed", err)
	}
}
