//go:build linux

package newsfeed

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestEpollLoopPerCore checks that runtime = "epoll" runs one loop per
// core and spreads a peer's connections over them, so that they do not
// all share one core.
func TestEpollLoopPerCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	sink := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	h := startRelay(t, relayConfigRT(t, "epoll", t.TempDir(), peerText("sink", sink, "connections = 4")), nil)
	arts := map[string][]byte{"<spread@t>": testArticle("<spread@t>", "misc.test", "up.example!not-for-mail", 5)}
	if codes := dialIngest(t, h.r.Addr().String()).takethis(arts); codes["<spread@t>"] != "239" {
		t.Fatalf("TAKETHIS answered %v, want 239", codes)
	}
	h.settle()
	if got := len(h.r.loop.loops); got != 2 {
		t.Fatalf("%d epoll loops with GOMAXPROCS 2, want 2", got)
	}
	var conns []int
	waitFor(t, 10*time.Second, "every loop to hold connections", func() bool {
		conns = conns[:0]
		for _, l := range h.r.loop.loops {
			conns = append(conns, l.Stats().Conns)
		}
		for _, n := range conns {
			if n == 0 {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprint("connections per loop: ", conns) })
}
