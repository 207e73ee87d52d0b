package newsfeed

import (
	"fmt"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestStatusErrorIsHistory: while a connection waits to reconnect its
// error is current; once it feeds again the error is shown as the last
// error, with its time, and no longer as current.
func TestStatusErrorIsHistory(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Drop: true})
	text := fmt.Sprintf("[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 1\nreconnect_max = \"10m\"\n", s.Port())
	h := startRelay(t, relayConfig(t, t.TempDir(), text), func(o *Options) { o.BackoffBase = 10 * time.Minute })
	waitFor(t, 30*time.Second, "the connection to fail and wait", func() bool {
		c := h.peer("sink").Connections
		return len(c) == 1 && c[0].State == "waiting"
	}, nil)
	c := h.peer("sink").Connections[0]
	if c.Error == "" || c.LastErr != c.Error || c.LastErrAt == "" {
		t.Errorf("waiting connection: error %q, last error %q at %q; want the error current, with its time", c.Error, c.LastErr, c.LastErrAt)
	}
	s.RemoveFault(down)
	if _, err := h.r.Kick("sink"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the connection to feed again", func() bool {
		return h.peer("sink").Connections[0].State == "feeding"
	}, nil)
	c = h.peer("sink").Connections[0]
	if c.Error != "" {
		t.Errorf("feeding connection shows error %q as current", c.Error)
	}
	if c.LastErr == "" || c.LastErrAt == "" {
		t.Errorf("feeding connection lost its last error: %q at %q", c.LastErr, c.LastErrAt)
	}
}
