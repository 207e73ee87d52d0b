//go:build linux

package epoll

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// runFeed drives one feeding connection through r: a handshake, then a
// Feed that is offered every article up front and closed gracefully once
// each has an outcome. A failed run aborts the Feed, as an owner does.
func runFeed(t *testing.T, r rt, addr string, hcfg handshake.Config, cfg feed.Config, arts []stored,
	bodies machine.BodySource, grace time.Duration) outcome {
	tp := startTap(t, addr)
	c := r.dial(t, tp.addr(), bodies)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	h := handshake.New(time.Now(), hcfg)
	var hevs []handshake.Event
	err := c.Run(ctx, h, func(time.Time) error {
		for {
			e, ok := h.NextEvent()
			if !ok {
				return nil
			}
			hevs = append(hevs, e)
			if _, ok := e.(handshake.Ready); ok {
				return ErrStop
			}
		}
	})
	ready, ok := hevs[len(hevs)-1].(handshake.Ready)
	if err != nil || !ok {
		t.Fatalf("handshake: %v, %v", err, hevs)
	}
	cfg.Streaming = ready.Streaming
	f := feed.New(time.Now(), cfg)
	if lo := h.Leftover(); len(lo) > 0 {
		if err := f.Receive(time.Now(), lo); err != nil {
			t.Fatalf("leftover: %v", err)
		}
	}
	for _, a := range arts {
		f.Offer(time.Now(), a.Article)
	}
	var evs []feed.Event
	resolved := 0
	drain := func() {
		for {
			e, ok := f.NextEvent()
			if !ok {
				return
			}
			evs = append(evs, e)
			switch e := e.(type) {
			case feed.Accepted, feed.Refused, feed.Rejected, feed.Deferred:
				resolved++
			case feed.Requeue:
				resolved += len(e.Articles)
			}
		}
	}
	err = c.Run(ctx, f, func(now time.Time) error {
		drain()
		if resolved == len(arts) {
			f.Close(now) // a no-op once closing
		}
		return nil
	})
	if err != nil {
		f.Abort(time.Now(), "run failed") // requeues what the Feed held
	}
	drain()
	c.Close()
	return outcome{Events: eventStrings(evs), Err: errKind(err), Wire: tp.wait(t, grace)}
}

// serverFacts are what the feed's peer recorded, for comparison.
func serverFacts(s *nntptest.Server) []string {
	var out []string
	for _, x := range s.Transfers() {
		out = append(out, fmt.Sprintf("%s %s %d bytes -> %d", x.Cmd, x.MessageID, len(x.Article), x.Code))
	}
	return append(out, fmt.Sprintf("accepted %v", s.AcceptedIDs()))
}

// TestFeedNNTPTest feeds nntptest, with verdicts and faults, through both
// runtimes.
func TestFeedNNTPTest(t *testing.T) {
	arts := makeArticles("feed", 10, 600)
	id := func(i int) string { return arts[i].MessageID }
	many := makeArticles("many", 150, 300)
	big := makeArticles("big", 6, 500<<10)
	tests := []struct {
		name   string
		opts   nntptest.Options
		rule   nntptest.Rule
		faults []nntptest.Fault
		cfg    feed.Config
		arts   []stored
		hang   bool
	}{
		{name: "all wanted"},
		{name: "want, defer, refuse, reject", rule: nntptest.Verdicts(map[string]nntptest.Verdict{
			id(0): nntptest.Defer, id(1): nntptest.Refuse, id(2): nntptest.Reject, id(7): nntptest.Defer,
		}, nntptest.Want)},
		{name: "defers everything", rule: nntptest.Verdicts(nil, nntptest.Defer)},
		{name: "refuses everything", rule: nntptest.Verdicts(nil, nntptest.Refuse)},
		{name: "peer closes mid-TAKETHIS", faults: []nntptest.Fault{{Cmd: "TAKETHIS", Nth: 3, CloseAfter: 1}}},
		{name: "peer drops the connection at CHECK", faults: []nntptest.Fault{{Cmd: "CHECK", Nth: 5, Drop: true}}},
		{name: "answers 400", faults: []nntptest.Fault{{Cmd: "CHECK", Nth: 4, Code: 400, Text: "going down", Close: true}}},
		{name: "garbage reply", faults: []nntptest.Fault{{Cmd: "CHECK", Nth: 2, Garbage: "hello?\r\n"}}},
		{name: "never answers", faults: []nntptest.Fault{{Cmd: "CHECK", Nth: 1, Hang: true}},
			cfg: feed.Config{ResponseTimeout: 300 * time.Millisecond}, hang: true},
		{name: "480 mid-session, then AUTHINFO", opts: nntptest.Options{Auth: &nntptest.Auth{User: "feeder", Pass: "secret"}},
			faults: []nntptest.Fault{{Cmd: "CHECK", Nth: 1, Code: 480, Text: "Authentication required"}},
			cfg:    feed.Config{User: "feeder", Pass: "secret"}},
		{name: "no streaming: IHAVE", opts: nntptest.Options{NoStreaming: true}, rule: nntptest.Verdicts(map[string]nntptest.Verdict{
			id(0): nntptest.Defer, id(1): nntptest.Refuse, id(2): nntptest.Reject,
		}, nntptest.Want)},
		{name: "slow peer", faults: []nntptest.Fault{{Cmd: "TAKETHIS", Rate: 20000}}},
		{name: "small window, no-CHECK mode", cfg: feed.Config{Window: 7, NoCheckFilter: 10}, arts: many},
		{name: "500 KB articles", cfg: feed.Config{Window: 4}, arts: big},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			arts := arts
			if tc.arts != nil {
				arts = tc.arts
			}
			compare(t, func(t *testing.T, r rt) outcome {
				s := nntptest.Start(t, tc.opts)
				if tc.rule != nil {
					s.SetRule(tc.rule)
				}
				for _, f := range tc.faults {
					s.AddFault(f)
				}
				grace := 20 * time.Second
				if tc.hang {
					grace = 500 * time.Millisecond
				}
				o := runFeed(t, r, s.HostPort(), handshake.Config{Stream: true}, tc.cfg, arts, bodiesOf(arts), grace)
				o.Extra = serverFacts(s)
				return o
			})
		})
	}
}

// TestFeedFromFile sends articles from a file, as from the spool: those
// of up to driver.CopyBody octets copied in (driver.BodyAppender on both
// runtimes; small ones with the commands around them, larger ones each
// ending a write), larger ones by sendfile (runtime/goroutine's
// BodyWriter, this runtime's FileBodySource, at an explicit offset,
// through EAGAIN on a full socket); the peer must see the same.
func TestFeedFromFile(t *testing.T) {
	arts := append(makeArticles("small", 20, 2000), makeArticles("medium", 3, 300<<10)...)
	arts = append(arts, makeArticles("large", 5, driver.CopyBody+100<<10)...)
	var stores []*fileStore
	compare(t, func(t *testing.T, r rt) outcome {
		st := newFileStore(t, arts)
		stores = append(stores, st)
		s := nntptest.Start(t, nntptest.Options{})
		s.SetRule(nntptest.Verdicts(map[string]nntptest.Verdict{arts[3].MessageID: nntptest.Refuse}, nntptest.Want))
		o := runFeed(t, r, s.HostPort(), handshake.Config{Stream: true}, feed.Config{Window: 8}, arts, st, 20*time.Second)
		o.Extra = serverFacts(s)
		return o
	})
	g, e := stores[0], stores[1]
	if g.written.Load() != 5 || g.appended.Load() != 22 {
		t.Errorf("goroutine: WriteBody %d calls, AppendBody %d; want 5, 22", g.written.Load(), g.appended.Load())
	}
	if e.opened.Load() != 5 || e.released.Load() != 5 || e.appended.Load() != 22 {
		t.Errorf("epoll: BodyFile %d calls, %d released, AppendBody %d; want 5, 5, 22", e.opened.Load(), e.released.Load(), e.appended.Load())
	}
	// Both runtimes name the small articles of a write before they append
	// them (driver.BodyPlanner), so that a read-ahead reads only those.
	for i, st := range stores {
		if st.unplanned != 0 || len(st.planned) != 19 {
			t.Errorf("%s: %d small articles planned, %d appended unplanned; want 19, 0", []string{"goroutine", "epoll"}[i], len(st.planned), st.unplanned)
		}
	}
}

// TestFeedReadChunking feeds a peer that answers byte by byte (Rate makes
// nntptest write in small pieces), so the runtimes' reads split every
// reply differently; events must not change.
func TestFeedReadChunking(t *testing.T) {
	arts := makeArticles("chunk", 12, 400)
	compare(t, func(t *testing.T, r rt) outcome {
		s := nntptest.Start(t, nntptest.Options{})
		s.SetRule(nntptest.Verdicts(map[string]nntptest.Verdict{
			arts[1].MessageID: nntptest.Defer, arts[4].MessageID: nntptest.Reject,
		}, nntptest.Want))
		s.AddFault(nntptest.Fault{Cmd: "", Rate: 3000})
		o := runFeed(t, r, s.HostPort(), handshake.Config{Stream: true}, feed.Config{Window: 5}, arts, bodiesOf(arts), 20*time.Second)
		o.Extra = serverFacts(s)
		return o
	})
}
