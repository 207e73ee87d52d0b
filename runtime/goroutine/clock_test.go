package goroutine

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"
)

// deadlined is a stepMachine with a deadline.
type deadlined struct {
	stepMachine
	deadline time.Time
}

func (m *deadlined) Deadline() (time.Time, bool) { return m.deadline, true }

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
	m := &deadlined{stepMachine{out: []byte("HELLO\r\n"), done: true}, behind().Add(time.Minute)}
	if err := c.Run(context.Background(), m, nil); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if s := <-got; s != "HELLO\r\n" {
		t.Errorf("peer read %q, want HELLO", s)
	}
}
