package goroutine

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"
)

// deadlined says one line with a deadline a minute after it was made, on
// its owner's clock, and closes once it is written.
type deadlined struct {
	out      []byte
	deadline time.Time
}

func (m *deadlined) Receive(time.Time, []byte) error { return nil }
func (m *deadlined) Timeout(time.Time)               {}
func (m *deadlined) Deadline() (time.Time, bool)     { return m.deadline, true }
func (m *deadlined) Closed() bool                    { return len(m.out) == 0 }
func (m *deadlined) AppendOutgoing(dst []byte) []byte {
	dst = append(dst, m.out...)
	m.out = nil
	return dst
}

// TestWriteDeadlineFromClock: a machine's deadline is a time on
// Options.Now's clock; the socket's write deadline is as far from the wall
// clock. With a clock an hour behind, a write due within a minute succeeds
// (it once got the machine's time as a wall-clock deadline, an hour past,
// and failed with "i/o timeout" at once).
func TestWriteDeadlineFromClock(t *testing.T) {
	got := make(chan string, 1)
	addr := serve(t, func(c net.Conn, r *bufio.Reader) {
		line, _ := r.ReadString('\n')
		got <- line
	})
	behind := func() time.Time { return time.Now().Add(-time.Hour) }
	c := New(dial(t, addr), Options{Now: behind})
	defer c.Close()
	m := &deadlined{out: []byte("HELLO\r\n"), deadline: behind().Add(time.Minute)}
	if err := c.Run(context.Background(), m, nil); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if s := <-got; s != "HELLO\r\n" {
		t.Errorf("peer read %q, want HELLO", s)
	}
}
