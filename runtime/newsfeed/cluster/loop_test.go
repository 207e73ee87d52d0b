package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/newsfeed/peerconn"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// feeder is a relay or a cluster node feeding one peer, seen from outside.
type feeder struct {
	addr   string // ingest listener
	kick   func(peer string) (string, error)
	pause  func(peer string) (string, error)
	resume func(peer string) (string, error)
	peer   func() newsfeed.PeerStats
	stop   func()
}

// peerText is the [[peer]] table both feeders use: one connection, a
// reconnect backoff far longer than any test (only a kick ends the wait).
func peerText(port int) string {
	return fmt.Sprintf("[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 1\nreconnect_max = \"1h\"\n", port)
}

// startRelayFeeder runs a single-node relay feeding the peer at port.
func startRelayFeeder(t *testing.T, port int) feeder {
	t.Helper()
	text := fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"relay.test\"\nstats_interval = \"1h\"\n", t.TempDir()) + peerText(port)
	cfg, err := newsfeed.ParseConfig("relay.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	r, err := newsfeed.Open(cfg, newsfeed.Options{Logger: slog.New(slog.DiscardHandler), BackoffBase: time.Hour, StopTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return feeder{addr: r.Addr().String(), kick: r.Kick, pause: r.Pause, resume: r.Resume, stop: stop,
		peer: func() newsfeed.PeerStats { ps, _ := r.PeerStats("sink"); return ps }}
}

// startClusterFeeder runs a cluster node (one shard, one NATS server)
// feeding the peer at port.
func startClusterFeeder(t *testing.T, port int) feeder {
	t.Helper()
	e := startJetStream(t, 1)
	text := fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"node.test\"\nstats_interval = \"1h\"\n", t.TempDir()) +
		peerText(port) + fmt.Sprintf("[cluster]\nnats = [%q]\nnode = \"a\"\nreplicas = 1\nshards = 1\nack_wait = \"30s\"\n", e.URLs()[0])
	cfg, err := newsfeed.ParseConfig("node.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n, err := Open(ctx, cfg, Options{BackoffBase: time.Hour, StopTimeout: 2 * time.Second})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return feeder{addr: n.Addr().String(), kick: n.Kick, pause: n.Pause, resume: n.Resume, stop: stop,
		peer: func() newsfeed.PeerStats {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return n.Status(ctx).Peers[0]
		}}
}

// await polls cond until it holds, failing the test after a generous
// bound (a liveness bound, not a timing assertion).
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waited a minute for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// feedSession plays one scripted peer session against a feeder and
// returns its transcript: the feeder's answers, the peer's commands per
// connection (what concerns each article apart, since the order of
// commands for different articles depends on timing), and the feeder's
// counts.
//
// The script: the peer turns the first connection away (400 greeting), so
// the connection waits for its next try; the articles come in meanwhile;
// a kick ends the wait; the peer wants, refuses and rejects articles; the
// feeder is paused, takes one more article, resumes and sends it; then it
// stops (QUIT).
func feedSession(t *testing.T, start func(t *testing.T, port int) feeder) []string {
	peer := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	peer.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Nth: 1, Code: 400, Text: "not now", Close: true})
	verdicts := map[string]nntptest.Verdict{"<c2@cluster.test>": nntptest.Refuse, "<c3@cluster.test>": nntptest.Reject}
	peer.SetRule(nntptest.Verdicts(verdicts, nntptest.Want))
	f := start(t, peer.Port())
	var tr []string
	state := func() string {
		if cs := f.peer().Connections; len(cs) > 0 {
			return cs[0].State
		}
		return ""
	}
	await(t, "the first connection to be turned away", func() bool { return peer.Conns() == 1 && state() == "waiting" })
	arts := map[string][]byte{}
	for i := 1; i <= 4; i++ {
		id, a := testArticle(i, 2000)
		arts[id] = a
	}
	got := takeThis(t, f.addr, arts)
	tr = append(tr, fmt.Sprintf("ingest: %v", sortedAnswers(got)))
	msg, err := f.kick("sink")
	tr = append(tr, fmt.Sprintf("kick: %q %v", msg, err))
	await(t, "the peer's answers for four articles", func() bool {
		ps := f.peer()
		return ps.Accepted+ps.Refused+ps.Rejected == 4
	})
	msg, err = f.pause("sink")
	tr = append(tr, fmt.Sprintf("pause: %q %v", msg, err))
	id5, a5 := testArticle(5, 2000)
	got = takeThis(t, f.addr, map[string][]byte{id5: a5})
	tr = append(tr, fmt.Sprintf("ingest: %v", sortedAnswers(got)))
	msg, err = f.resume("sink")
	tr = append(tr, fmt.Sprintf("resume: %q %v", msg, err))
	await(t, "the article ingested while paused", func() bool { return peer.Has(id5) })
	ps := f.peer()
	tr = append(tr, fmt.Sprintf("counts: accepted %d refused %d rejected %d deferred %d", ps.Accepted, ps.Refused, ps.Rejected, ps.Deferred))
	f.stop()

	byConn := map[int][]string{}
	byID := map[string][]string{}
	for _, r := range peer.Commands() {
		name := r.Cmd.Name()
		switch name {
		case "CHECK", "TAKETHIS", "IHAVE":
			id := strings.Join(r.Cmd.Args, " ")
			byID[id] = append(byID[id], fmt.Sprintf("conn %d %s", r.Conn, name))
		default:
			byConn[r.Conn] = append(byConn[r.Conn], name)
		}
	}
	for c := 1; c <= peer.Conns(); c++ {
		tr = append(tr, fmt.Sprintf("conn %d: %s", c, strings.Join(byConn[c], ", ")))
	}
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range byID {
			if !yield(id) {
				return
			}
		}
	}) {
		tr = append(tr, fmt.Sprintf("%s: %s", id, strings.Join(byID[id], ", ")))
	}
	return tr
}

func sortedAnswers(m map[string]int) []string {
	var s []string
	for id, code := range m {
		s = append(s, fmt.Sprintf("%s=%d", id, code))
	}
	slices.Sort(s)
	return s
}

// TestOneLoopTranscripts: the relay and the cluster node feed a peer
// through the same connection loop, so one scripted peer session gives
// the same transcript against both: the same commands per article, the
// same handshake, kick ending the reconnect wait, pause holding new
// articles back, and QUIT at the stop.
func TestOneLoopTranscripts(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded NATS: not in -short")
	}
	relay := feedSession(t, startRelayFeeder)
	cluster := feedSession(t, startClusterFeeder)
	if diff := cmp.Diff(relay, cluster); diff != "" {
		t.Errorf("transcripts differ (-relay +cluster):\n%s", diff)
	}
	want := []string{
		`ingest: [<c1@cluster.test>=239 <c2@cluster.test>=239 <c3@cluster.test>=239 <c4@cluster.test>=239]`,
		`kick: "peer sink kicked: 1 connection(s) were waiting to reconnect" <nil>`,
		`pause: "peer sink paused" <nil>`,
		`ingest: [<c5@cluster.test>=239]`,
		`resume: "peer sink resumed" <nil>`,
		`counts: accepted 3 refused 1 rejected 1 deferred 0`,
		`conn 1: `,
		`conn 2: CAPABILITIES, MODE STREAM, QUIT`,
		`<c1@cluster.test>: conn 2 CHECK, conn 2 TAKETHIS`,
		`<c2@cluster.test>: conn 2 CHECK`,
		`<c3@cluster.test>: conn 2 CHECK, conn 2 TAKETHIS`,
		`<c4@cluster.test>: conn 2 CHECK, conn 2 TAKETHIS`,
		`<c5@cluster.test>: conn 2 CHECK, conn 2 TAKETHIS`,
	}
	if diff := cmp.Diff(want, relay); diff != "" {
		t.Errorf("relay transcript (-want +got):\n%s", diff)
	}
}

// TestAskPaused: while the peer is paused, a connection's subscriptions
// may take nothing, whatever room the feed has; resumed, they may take
// the room less what is ready or on its way.
func TestAskPaused(t *testing.T) {
	p := &peer{}
	c := &outConn{p: p}
	c.ready = make([]feed.Article, 2)
	c.pending = 1
	c.Ask(10, 100)
	if c.want != 7 {
		t.Errorf("want %d with room 10, 2 ready, 1 pending; want 7", c.want)
	}
	p.paused.Store(true)
	c.Ask(10, 100)
	if c.want != 0 || c.takeCredit() {
		t.Errorf("paused: want %d, want 0 and no entry taken", c.want)
	}
}

// TestUnreadableBody: an article a connection does not hold is an
// unreadable body, which reconnects without growing the backoff.
func TestUnreadableBody(t *testing.T) {
	b := bodies{m: map[string]*held{}}
	if _, err := b.Body("KV/1"); !errors.Is(err, peerconn.ErrUnreadableBody) {
		t.Errorf("Body of a token not held: %v, want ErrUnreadableBody", err)
	}
}
