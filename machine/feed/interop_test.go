package feed

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/goroutine"
	"github.com/newsflow/newsflow/runtime/recorder"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// feedRun is one connection driven through runtime/goroutine over loopback
// TCP: a handshake, then a Feed that offers every article up front and
// closes gracefully once each has an outcome.
type feedRun struct {
	ready  handshake.Ready
	events []Event
	runErr error
	rec    *recorder.Recorder
}

func runFeed(t testing.TB, addr string, hcfg handshake.Config, cfg Config, articles []innArticle, recording bool) feedRun {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var r feedRun
	conn := net.Conn(nc)
	if recording {
		r.rec = recorder.NewRecorder(nc, transcript.Client)
		conn = r.rec
	}
	bodies := bodyMap{}
	for _, a := range articles {
		bodies[a.Token] = a.wire
	}
	gc := goroutine.New(conn, goroutine.Options{Bodies: bodies})
	defer gc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	h := handshake.New(time.Now(), hcfg)
	var hev handshake.Event
	err = gc.Run(ctx, h, func(time.Time) error {
		if e, ok := h.NextEvent(); ok {
			hev = e
			if _, ok := e.(handshake.Ready); ok {
				return goroutine.ErrStop
			}
		}
		return nil
	})
	ready, ok := hev.(handshake.Ready)
	if err != nil || !ok {
		t.Fatalf("handshake: %v, %v", err, hev)
	}
	r.ready = ready

	cfg.Streaming = ready.Streaming
	f := New(time.Now(), cfg)
	if lo := h.Leftover(); len(lo) > 0 {
		if err := f.Receive(time.Now(), lo); err != nil {
			t.Fatalf("leftover: %v", err)
		}
	}
	for _, a := range articles {
		f.Offer(time.Now(), a.Article)
	}
	resolved := 0
	drain := func() {
		for {
			e, ok := f.NextEvent()
			if !ok {
				return
			}
			r.events = append(r.events, e)
			switch e := e.(type) {
			case Accepted, Refused, Rejected, Deferred:
				resolved++
			case Requeue:
				resolved += len(e.Articles)
			}
		}
	}
	r.runErr = gc.Run(ctx, f, func(now time.Time) error {
		drain()
		if resolved == len(articles) {
			f.Close(now) // a no-op once closing
		}
		return nil
	})
	if r.runErr != nil {
		// The connection failed under the Feed: the owner aborts it, which
		// requeues whatever it still held.
		f.Abort(time.Now(), r.runErr.Error())
	}
	drain()
	return r
}

// tally counts a run's outcomes.
type tally struct {
	Accepted, Refused, Rejected, Deferred, Requeued int
	Closed                                          Reason
	ModeChanges                                     []string
}

// String writes the tally as transcripts' "# tally:" lines do.
func (c tally) String() string {
	s := fmt.Sprintf("accepted %d, refused %d, rejected %d, deferred %d, requeued %d",
		c.Accepted, c.Refused, c.Rejected, c.Deferred, c.Requeued)
	if len(c.ModeChanges) > 0 {
		s += "; modes " + strings.Join(c.ModeChanges, " ")
	}
	return s + "; closed " + c.Closed.String()
}

func count(evs []Event) tally {
	var c tally
	for _, e := range evs {
		switch e := e.(type) {
		case Accepted:
			c.Accepted++
		case Refused:
			c.Refused++
		case Rejected:
			c.Rejected++
		case Deferred:
			c.Deferred++
		case Requeue:
			c.Requeued += len(e.Articles)
		case ModeChanged:
			c.ModeChanges = append(c.ModeChanges, fmt.Sprintf("%s->%s", e.From, e.To))
		case Closed:
			c.Closed = e.Reason
		}
	}
	return c
}

// accountedFor checks that every article has exactly one outcome.
func accountedFor(t *testing.T, articles []innArticle, evs []Event) {
	t.Helper()
	got := outcomes(evs)
	for _, a := range articles {
		if got[a.MessageID] != 1 {
			t.Errorf("%s: %d outcomes, want 1", a.MessageID, got[a.MessageID])
		}
	}
	if len(got) != len(articles) {
		t.Errorf("outcomes for %d message-ids, %d offered", len(got), len(articles))
	}
}

func TestInteropNNTPTest(t *testing.T) {
	arts := innArticles(10)
	id := func(i int) string { return arts[i].MessageID }
	status500 := func(int, proto.Command) []byte { return proto.AppendResponse(nil, 500, "What?") }
	tests := []struct {
		name     string
		opts     nntptest.Options
		rule     nntptest.Rule
		faults   []nntptest.Fault
		handlers map[string]nntptest.Handler
		cfg      Config
		want     tally
		wantCmds map[string]int // exact numbers of commands the server read
		// wantServer is how many articles the server accepted; -1 skips.
		wantServer int
	}{
		{
			name:       "all wanted",
			want:       tally{Accepted: 10, Closed: ReasonQuit},
			wantCmds:   map[string]int{"MODE STREAM": 1, "CHECK": 10, "TAKETHIS": 10, "IHAVE": 0, "QUIT": 1},
			wantServer: 10,
		},
		{
			name: "want, defer, refuse, reject",
			rule: nntptest.Verdicts(map[string]nntptest.Verdict{
				id(0): nntptest.Defer, id(1): nntptest.Refuse, id(2): nntptest.Reject, id(7): nntptest.Defer,
			}, nntptest.Want),
			want:       tally{Accepted: 6, Refused: 1, Rejected: 1, Deferred: 2, Closed: ReasonQuit},
			wantCmds:   map[string]int{"CHECK": 10, "TAKETHIS": 7, "QUIT": 1},
			wantServer: 6,
		},
		{
			name:       "defers everything",
			rule:       nntptest.Verdicts(nil, nntptest.Defer),
			want:       tally{Deferred: 10, Closed: ReasonQuit},
			wantCmds:   map[string]int{"CHECK": 10, "TAKETHIS": 0, "QUIT": 1},
			wantServer: 0,
		},
		{
			name:       "refuses everything",
			rule:       nntptest.Verdicts(nil, nntptest.Refuse),
			want:       tally{Refused: 10, Closed: ReasonQuit},
			wantCmds:   map[string]int{"CHECK": 10, "TAKETHIS": 0, "QUIT": 1},
			wantServer: 0,
		},
		{
			// The server takes the third article, sends one byte of its
			// 239 and closes: that article comes back (a duplicate later,
			// never a loss), with every one after it.
			name:       "peer closes mid-TAKETHIS",
			faults:     []nntptest.Fault{{Cmd: "TAKETHIS", Nth: 3, CloseAfter: 1}},
			want:       tally{Accepted: 2, Requeued: 8, Closed: ReasonPeerClosed},
			wantCmds:   map[string]int{"CHECK": 10, "TAKETHIS": 3, "QUIT": 0},
			wantServer: 3,
		},
		{
			name:       "answers 400",
			faults:     []nntptest.Fault{{Cmd: "CHECK", Nth: 4, Code: 400, Text: "going down", Close: true}},
			want:       tally{Requeued: 10, Closed: ReasonUnavailable},
			wantCmds:   map[string]int{"CHECK": 4, "TAKETHIS": 0, "QUIT": 0},
			wantServer: 0,
		},
		{
			name:       "never answers",
			faults:     []nntptest.Fault{{Cmd: "CHECK", Nth: 1, Hang: true}},
			cfg:        Config{ResponseTimeout: 300 * time.Millisecond},
			want:       tally{Requeued: 10, Closed: ReasonTimeout},
			wantCmds:   map[string]int{"CHECK": 1, "TAKETHIS": 0, "QUIT": 0},
			wantServer: 0,
		},
		{
			name:       "480 mid-session, then AUTHINFO",
			opts:       nntptest.Options{Auth: &nntptest.Auth{User: "feeder", Pass: "secret"}},
			faults:     []nntptest.Fault{{Cmd: "CHECK", Nth: 1, Code: 480, Text: "Authentication required"}},
			cfg:        Config{User: "feeder", Pass: "secret"},
			want:       tally{Accepted: 10, Closed: ReasonQuit},
			wantCmds:   map[string]int{"CHECK": 11, "TAKETHIS": 10, "AUTHINFO": 2, "QUIT": 1},
			wantServer: 10,
		},
		{
			name: "no streaming: IHAVE",
			opts: nntptest.Options{NoStreaming: true},
			rule: nntptest.Verdicts(map[string]nntptest.Verdict{
				id(0): nntptest.Defer, id(1): nntptest.Refuse, id(2): nntptest.Reject,
			}, nntptest.Want),
			want:       tally{Accepted: 7, Refused: 1, Rejected: 1, Deferred: 1, Closed: ReasonQuit},
			wantCmds:   map[string]int{"MODE STREAM": 0, "CHECK": 0, "TAKETHIS": 0, "IHAVE": 10, "QUIT": 1},
			wantServer: 7,
		},
		{
			name:       "CHECK answered 500: fall back to IHAVE",
			handlers:   map[string]nntptest.Handler{"CHECK": status500},
			want:       tally{Accepted: 10, Closed: ReasonQuit, ModeChanges: []string{"check->ihave"}},
			wantCmds:   map[string]int{"MODE STREAM": 1, "CHECK": 10, "TAKETHIS": 0, "IHAVE": 10, "QUIT": 1},
			wantServer: 10,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := nntptest.Start(t, tc.opts)
			if tc.rule != nil {
				s.SetRule(tc.rule)
			}
			for _, f := range tc.faults {
				s.AddFault(f)
			}
			for name, h := range tc.handlers {
				s.SetHandler(name, h)
			}
			r := runFeed(t, s.HostPort(), handshake.Config{Stream: true}, tc.cfg, arts, false)
			if r.runErr != nil && tc.want.Closed != ReasonProtocol {
				t.Errorf("Run: %v", r.runErr)
			}
			if d := cmp.Diff(tc.want, count(r.events)); d != "" {
				t.Errorf("outcomes (-want +got):\n%s\nevents: %s", d, summarize(r.events))
			}
			accountedFor(t, arts, r.events)
			got := map[string]int{}
			for name := range tc.wantCmds {
				got[name] = s.Count(name)
			}
			if d := cmp.Diff(tc.wantCmds, got); d != "" {
				t.Errorf("commands the server read (-want +got):\n%s", d)
			}
			// What the Feed reports accepted the server has; what the
			// server has, the Feed reports accepted or requeued.
			server := s.AcceptedIDs()
			if tc.wantServer >= 0 && len(server) != tc.wantServer {
				t.Errorf("server accepted %d articles, want %d", len(server), tc.wantServer)
			}
			fate := map[string]string{}
			for _, e := range r.events {
				switch e := e.(type) {
				case Accepted:
					fate[e.Article.MessageID] = "accepted"
					if !slices.Contains(server, e.Article.MessageID) {
						t.Errorf("%s reported accepted, but the server does not have it", e.Article.MessageID)
					}
				case Requeue:
					for _, a := range e.Articles {
						fate[a.MessageID] = "requeued"
					}
				}
			}
			for _, id := range server {
				if fate[id] == "" {
					t.Errorf("the server accepted %s, the Feed reported neither accepted nor requeued", id)
				}
			}
		})
	}
}

// TestInteropAbortOnWriteFailure: when the runtime fails under the Feed
// (here: an unreadable stored article), the owner's Abort gives everything
// back.
func TestInteropAbortOnWriteFailure(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	arts := innArticles(3)
	broken := append([]innArticle(nil), arts...)
	broken[1].wire = broken[1].wire[:10] // the spool lost bytes: size mismatch
	r := runFeed(t, s.HostPort(), handshake.Config{Stream: true}, Config{}, broken, false)
	if r.runErr == nil || !strings.Contains(r.runErr.Error(), "read article @feed1@") {
		t.Fatalf("Run = %v, want the runtime's error", r.runErr)
	}
	c := count(r.events)
	if c.Closed != ReasonAborted || c.Accepted+c.Requeued != 3 {
		t.Fatalf("outcomes %+v: %s", c, summarize(r.events))
	}
	accountedFor(t, arts, r.events)
}

// BenchmarkLoopback streams b.N articles of about 400 bytes through the
// handshake and a Feed on runtime/goroutine over loopback TCP into
// nntptest (which records every command, so it is the slower side).
func BenchmarkLoopback(b *testing.B) {
	arts := innArticles(b.N)
	s := nntptest.Start(b, nntptest.Options{})
	b.ResetTimer()
	r := runFeed(b, s.HostPort(), handshake.Config{Stream: true}, Config{}, arts, false)
	b.StopTimer()
	if c := count(r.events); c.Accepted != b.N {
		b.Fatalf("outcomes %v", c)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "articles/s")
}
