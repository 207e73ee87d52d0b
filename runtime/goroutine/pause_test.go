package goroutine

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"
)

// pauseMachine records what it receives and, while paused, asks the runtime
// (through machine.Pauser) not to read. It closes after receiving "bye\r\n".
type pauseMachine struct {
	paused   bool
	received []byte
	closed   bool
}

func (m *pauseMachine) Receive(now time.Time, p []byte) error {
	m.received = append(m.received, p...)
	if string(m.received) == "hello\r\nbye\r\n" {
		m.closed = true
	}
	return nil
}
func (m *pauseMachine) Timeout(time.Time)                {}
func (m *pauseMachine) AppendOutgoing(dst []byte) []byte { return dst }
func (m *pauseMachine) Deadline() (time.Time, bool)      { return time.Time{}, false }
func (m *pauseMachine) Closed() bool                     { return m.closed }
func (m *pauseMachine) Paused() bool                     { return m.paused }

// TestRunPaused checks that no read is requested while the machine is
// paused: bytes the peer sent meanwhile reach Receive only after the owner
// un-pauses it through Do.
func TestRunPaused(t *testing.T) {
	sent := make(chan struct{})
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		c.Write([]byte("hello\r\n"))
		close(sent)
		c.Write([]byte("bye\r\n"))
		r.ReadByte() // wait for the client to close
	})
	c := New(dial(t, addr), Options{})
	m := &pauseMachine{paused: true}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, m, nil) }()

	<-sent
	// Give a wrongly issued read every chance to deliver the bytes first.
	time.Sleep(50 * time.Millisecond)
	var seen int
	if err := c.Do(ctx, func(time.Time) {
		seen = len(m.received)
		m.paused = false
	}); err != nil {
		t.Fatal(err)
	}
	if seen != 0 {
		t.Errorf("machine received %d bytes while paused; want 0", seen)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := string(m.received); got != "hello\r\nbye\r\n" {
		t.Errorf("received %q after un-pausing", got)
	}
}
