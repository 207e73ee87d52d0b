package newsfeed

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestMaxAge: articles that waited longer than the peer's max_age are not
// offered when the peer comes back; they are counted as too old, and the
// counts still add up. Articles younger than it go out.
func TestMaxAge(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Drop: true})
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	text := fmt.Sprintf("[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 1\nmax_age = \"1h\"\nreconnect_max = \"10m\"\n", s.Port())
	h := startRelay(t, relayConfig(t, t.TempDir(), text), func(o *Options) { o.Now = now; o.BackoffBase = 10 * time.Minute })
	old := arts("old", 3)
	h.feedAll(old)
	skew.Store(int64(2 * time.Hour))
	fresh := arts("fresh", 2)
	h.feedAll(fresh)
	s.RemoveFault(down)
	if _, err := h.r.Kick("sink"); err != nil {
		t.Fatal(err)
	}
	h.settle()
	st := h.peer("sink")
	if st.TooOld != 3 || st.Accepted != 2 || st.Missing != 0 {
		t.Errorf("too old %d accepted %d missing %d, want 3 2 0", st.TooOld, st.Accepted, st.Missing)
	}
	for id := range old {
		if s.Has(id) {
			t.Errorf("%s, older than max_age, reached the peer", id)
		}
	}
	for id := range fresh {
		if !s.Has(id) {
			t.Errorf("%s never reached the peer", id)
		}
	}
	h.checkStats()
}

// TestBacklogLimitDropsCounted: past backlog_max_bytes the oldest backlog
// is dropped, and the drops are counted by reason.
func TestBacklogLimitDropsCounted(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Drop: true})
	text := fmt.Sprintf("[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 1\nbacklog_max_bytes = \"2K\"\nreconnect_max = \"10m\"\n", s.Port())
	h := startRelay(t, relayConfig(t, t.TempDir(), text), func(o *Options) { o.BackoffBase = 10 * time.Minute })
	waitFor(t, 30*time.Second, "the connection to fail", func() bool {
		c := h.peer("sink").Connections
		return len(c) == 1 && c[0].State == "waiting"
	}, nil)
	h.feedAll(arts("b", 200))
	if _, err := h.r.Flush("sink"); err != nil {
		t.Fatal(err)
	}
	st := h.peer("sink")
	if st.Dropped == 0 || st.DroppedBy["backlog-bytes"] != st.Dropped {
		t.Errorf("dropped %d, by reason %v; want drops, all backlog-bytes", st.Dropped, st.DroppedBy)
	}
	if st.BacklogBytes > 2048 {
		t.Errorf("backlog holds %d octets, over backlog_max_bytes", st.BacklogBytes)
	}
	h.checkStats()
}

// TestMaxAgeReload: a max_age set by a reload applies to the articles
// already waiting for the peer: its connections are made again with it.
func TestMaxAgeReload(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Drop: true})
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	dir := t.TempDir()
	text := fmt.Sprintf("[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 1\nreconnect_max = \"10m\"\n", s.Port())
	h := startRelay(t, relayConfig(t, dir, text), func(o *Options) { o.Now = now; o.BackoffBase = 10 * time.Minute })
	old := arts("old", 3)
	h.feedAll(old)
	res, err := h.r.Reload(relayConfig(t, dir, text+"max_age = \"1h\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(2 * time.Hour))
	s.RemoveFault(down)
	if _, err := h.r.Kick("sink"); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if st := h.peer("sink"); st.TooOld != 3 || st.Accepted != 0 {
		t.Errorf("after the reload (%s): too old %d accepted %d, want 3 0", res, st.TooOld, st.Accepted)
	}
	for id := range old {
		if s.Has(id) {
			t.Errorf("%s, older than the reloaded max_age, reached the peer", id)
		}
	}
	h.checkStats()
}
