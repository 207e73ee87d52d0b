package newsfeed

import (
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestConnSinceFromClock checks that a peer connection's state time on the
// status page comes from Options.Now, not the wall clock: with a clock a
// year ahead, "since" is a year ahead too. (Ahead, not behind: the
// runtimes set socket deadlines from the same clock.)
func TestConnSinceFromClock(t *testing.T) {
	const lag = 365 * 24 * time.Hour
	sink := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	h := startRelay(t, relayConfig(t, t.TempDir(), peerText("sink", sink, "connections = 1")), func(o *Options) {
		o.Now = func() time.Time { return time.Now().Add(lag) }
	})
	feeding := func() (string, bool) {
		for _, p := range h.r.Status().Peers {
			for _, c := range p.Connections {
				if c.State == "feeding" {
					return c.Since, true
				}
			}
		}
		return "", false
	}
	waitFor(t, 10*time.Second, "the peer connection to feed", func() bool { _, ok := feeding(); return ok }, nil)
	s, _ := feeding()
	since, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("since %q: %v", s, err)
	}
	if limit := time.Now().Add(lag / 2); !since.After(limit) {
		t.Errorf("since = %s, want it from the injected clock (after %s)", since, limit.UTC().Format(time.RFC3339))
	}
}
