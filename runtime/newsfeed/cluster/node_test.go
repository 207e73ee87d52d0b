package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// nodeConfig is a node's configuration on loopback against NATS at urls,
// feeding the peers (name -> port).
func nodeConfig(t *testing.T, node string, urls []string, replicas int, peers map[string]int, extra string) *newsfeed.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"%s.test\"\nstats_interval = \"1s\"\n", t.TempDir(), node)
	for name, port := range peers {
		fmt.Fprintf(&b, "[[peer]]\nname = %q\nhost = \"127.0.0.1\"\nport = %d\nconnections = 2\nreconnect_max = \"300ms\"\ndefer_delay = \"1s\"\ndefer_max_delay = \"2s\"\n", name, port)
	}
	fmt.Fprintf(&b, "[cluster]\nnats = [\"%s\"]\nnode = %q\nreplicas = %d\nshards = 2\nack_wait = \"3s\"\nreserve_ttl = \"2s\"\n%s", strings.Join(urls, `", "`), node, replicas, extra)
	cfg, err := newsfeed.ParseConfig("test.toml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// sinkNodeConfig is node a's configuration on e with shards shards and
// one peer, "sink" at port, whose block ends with peerKeys (TOML lines).
func sinkNodeConfig(t *testing.T, e *Embedded, shards, port int, peerKeys string) *newsfeed.Config {
	t.Helper()
	text := fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"a.test\"\n"+
		"[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %d\n%s"+
		"[cluster]\nnats = [\"%s\"]\nnode = \"a\"\nreplicas = 1\nshards = %d\n", t.TempDir(), port, peerKeys, strings.Join(e.URLs(), `", "`), shards)
	cfg, err := newsfeed.ParseConfig("test.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startNode runs a node until the test ends.
func startNode(t *testing.T, cfg *newsfeed.Config) *Node {
	t.Helper()
	return startNodeWith(t, cfg, Options{})
}

// startNodeWith runs a node with opts until the test ends.
func startNodeWith(t *testing.T, cfg *newsfeed.Config, opts Options) *Node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := Open(ctx, cfg, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return n
}

// testArticle is article i: a little over size octets.
func testArticle(i, size int) (string, []byte) {
	id := fmt.Sprintf("<c%d@cluster.test>", i)
	var b strings.Builder
	fmt.Fprintf(&b, "Path: up.test!not-for-mail\nFrom: t@cluster.test\nNewsgroups: misc.test\nSubject: %d\n", i)
	fmt.Fprintf(&b, "Date: %s\nMessage-ID: %s\n\n", time.Now().UTC().Format(time.RFC1123Z), id)
	for b.Len() < size {
		b.WriteString("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n")
	}
	return id, []byte(b.String())
}

// streamSession dials addr, reads the greeting and switches to streaming;
// it returns the connection and a reader of its answer lines.
func streamSession(t *testing.T, addr string) (net.Conn, func() string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReader(c)
	// Each answer has a minute (a bound for a hung node only); the whole
	// session may take longer on a loaded machine.
	line := func() string {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading from %s: %v", addr, err)
		}
		return strings.TrimRight(l, "\r\n")
	}
	if l := line(); !strings.HasPrefix(l, "200") {
		t.Fatalf("greeting %q", l)
	}
	io.WriteString(c, "MODE STREAM\r\n")
	if l := line(); !strings.HasPrefix(l, "203") {
		t.Fatalf("MODE STREAM: %q", l)
	}
	return c, line
}

// takeThis streams the articles with TAKETHIS and returns each answer's
// code by message-id.
func takeThis(t *testing.T, addr string, arts map[string][]byte) map[string]int {
	t.Helper()
	c, line := streamSession(t, addr)
	go func() {
		w := bufio.NewWriter(c)
		for id, a := range arts {
			fmt.Fprintf(w, "TAKETHIS %s\r\n", id)
			w.Write(proto.ToWire(a))
		}
		w.Flush()
	}()
	got := map[string]int{}
	for range arts {
		var code int
		var id string
		l := line()
		if _, err := fmt.Sscanf(l, "%d %s", &code, &id); err != nil {
			t.Fatalf("answer %q", l)
		}
		got[id] = code
	}
	return got
}

// check sends CHECK for each id in one stream and returns the codes of
// the answers, in order.
func check(t *testing.T, addr string, ids ...string) []int {
	t.Helper()
	c, line := streamSession(t, addr)
	for _, id := range ids {
		fmt.Fprintf(c, "CHECK %s\r\n", id)
	}
	codes := make([]int, len(ids))
	for i := range ids {
		l := line()
		var id string
		if _, err := fmt.Sscanf(l, "%d %s", &codes[i], &id); err != nil || id != ids[i] {
			t.Fatalf("answer %q to CHECK %s", l, ids[i])
		}
	}
	return codes
}

// TestNodeFeeds: one node on one NATS server takes articles in (small and
// over max_payload) and feeds them to a peer that defers some at first.
func TestNodeFeeds(t *testing.T) {
	e, err := StartEmbedded(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	peer := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	peer.SetRule(nntptest.Sequence(map[string][]nntptest.Verdict{
		"<c3@cluster.test>": {nntptest.Defer, nntptest.Want},
	}, nntptest.Want))
	n := startNode(t, nodeConfig(t, "a", e.URLs(), 1, map[string]int{"sink": peer.Port()}, ""))
	arts := map[string][]byte{}
	for i := range 40 {
		size := 2000
		if i%10 == 9 {
			size = 1500 << 10 // over the 1 MB max_payload
		}
		id, a := testArticle(i, size)
		arts[id] = a
	}
	got := takeThis(t, n.Addr().String(), arts)
	for id := range arts {
		if got[id] != 239 {
			t.Errorf("%s: answer %d, want 239", id, got[id])
		}
	}
	// Offered again: the history refuses every one.
	again := takeThis(t, n.Addr().String(), map[string][]byte{"<c1@cluster.test>": arts["<c1@cluster.test>"]})
	if again["<c1@cluster.test>"] != 439 {
		t.Errorf("second TAKETHIS of <c1@cluster.test>: %d, want 439", again["<c1@cluster.test>"])
	}
	// CHECK: a stored id refused (answered from the node's memory, on the
	// connection's goroutine), an unknown one wanted.
	if got := check(t, n.Addr().String(), "<c2@cluster.test>", "<new@cluster.test>"); got[0] != 438 || got[1] != 238 {
		t.Errorf("CHECK of a stored and a new id: %v, want [438 238]", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = peer.Await(ctx, func() bool {
		for id := range arts {
			if !peer.Has(id) {
				return false
			}
		}
		return true
	})
	if err != nil {
		var missing []string
		for id := range arts {
			if !peer.Has(id) {
				missing = append(missing, id)
			}
		}
		t.Fatalf("peer lacks %d articles, e.g. %v", len(missing), missing[:min(3, len(missing))])
	}
	// The articles arrive whole, chunked ones too, with our Path identity.
	checked := 0
	for _, x := range peer.Transfers() {
		a, ok := arts[x.MessageID]
		if !ok || x.Code != 239 {
			continue
		}
		_, body, _ := bytes.Cut(a, []byte("\n\n"))
		wantBody := bytes.ReplaceAll(body, []byte("\n"), []byte("\r\n"))
		if !bytes.HasSuffix(x.Article, wantBody) || !bytes.HasPrefix(x.Article, []byte("Path: a.test!up.test!")) {
			t.Errorf("%s arrived altered: %d octets, starts %q", x.MessageID, len(x.Article), x.Article[:min(40, len(x.Article))])
		}
		checked++
	}
	if checked != len(arts) {
		t.Errorf("%d articles accepted by the peer, want %d", checked, len(arts))
	}
	st := n.Status(ctx)
	if st.Peers[0].Deferred < 1 {
		t.Errorf("deferrals %d, want at least 1 (the peer deferred <c3@cluster.test>)", st.Peers[0].Deferred)
	}
	// The queue drains (acks reach the server asynchronously).
	for {
		st = n.Status(ctx)
		if st.Peers[0].Queued == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("queue not drained: %+v", st.Cluster.Peers)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestStatusSkipped: the masterfeed's skips show in a node's status and
// metrics per reason, as a single relay's do: a peer with a hashfeed of
// half the ids is not offered the other half, nor an article over its
// max_size.
func TestStatusSkipped(t *testing.T) {
	e := startJetStream(t, 1)
	peer := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	n := startNode(t, sinkNodeConfig(t, e, 2, peer.Port(), "hashfeed = \"1/2\"\nmax_size = \"4K\"\n"))
	arts := map[string][]byte{}
	for i := range 20 {
		id, a := testArticle(i, 1000)
		arts[id] = a
	}
	id, big := testArticle(99, 8000)
	arts[id] = big
	for id, code := range takeThis(t, n.Addr().String(), arts) {
		if code != 239 {
			t.Errorf("%s: answer %d, want 239", id, code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := n.Status(ctx).Peers[0]
	// The size check comes before the hashfeed's: the big article is
	// counted once, as too big.
	if p.SkippedHash == 0 || p.SkippedHash >= 20 || p.SkippedSize != 1 {
		t.Errorf("skipped: hashfeed %d (want some of 20, not all), size %d (want 1)", p.SkippedHash, p.SkippedSize)
	}
	m := string(n.Status(ctx).Metrics())
	for _, want := range []string{
		fmt.Sprintf("newsfeed_peer_skipped_total{node=\"a\",peer=\"sink\",reason=\"hashfeed\"} %d\n", p.SkippedHash),
		"newsfeed_peer_skipped_total{node=\"a\",peer=\"sink\",reason=\"size\"} 1\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
}

// TestStatusMissing: an article whose parts expired from the store before
// its turn counts as missing, as the single node counts an article gone
// from its spool, not as dropped; the cluster has no too old or lost
// articles.
func TestStatusMissing(t *testing.T) {
	e := startJetStream(t, 1)
	peer := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	n := startNode(t, sinkNodeConfig(t, e, 2, peer.Port(), "connections = 1\n"))
	if _, err := n.Pause("sink"); err != nil {
		t.Fatal(err)
	}
	id, big := testArticle(1, n.store.ChunkSize()+1000) // a head and a part
	if got := takeThis(t, n.Addr().String(), map[string][]byte{id: big}); got[id] != 239 {
		t.Fatalf("answer %d, want 239", got[id])
	}
	// The part expires (spool_max_age) before the peer's turn.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	subj, sh := n.store.head(id)
	if err := n.store.shards[sh].Purge(ctx, jetstream.WithPurgeSubject(subj+".*.*")); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Resume("sink"); err != nil {
		t.Fatal(err)
	}
	var p newsfeed.PeerStats
	deadline := time.Now().Add(time.Minute)
	for {
		p = n.Status(ctx).Peers[0]
		if p.Missing+p.Dropped > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p.Missing != 1 || p.Dropped != 0 || p.TooOld != 0 || p.Lost != 0 {
		t.Errorf("missing %d, dropped %d, too old %d, lost %d; want the article missing, nothing else", p.Missing, p.Dropped, p.TooOld, p.Lost)
	}
	if peer.Count("TAKETHIS")+peer.Count("CHECK") != 0 {
		t.Error("the article without its part was offered")
	}
}

// TestPeerComesBackTogether: when one of a peer's connections on a node
// gets through after an outage, the node's others end their reconnect
// backoff (an hour here) and connect too. Connection 1's retry comes
// first because the test kicks it alone.
func TestPeerComesBackTogether(t *testing.T) {
	e := startJetStream(t, 1)
	peer := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	down := peer.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Drop: true})
	n := startNodeWith(t, sinkNodeConfig(t, e, 1, peer.Port(), "connections = 3\nreconnect_max = \"1h\"\n"),
		Options{BackoffBase: time.Hour, StopTimeout: 2 * time.Second})
	states := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var s []string
		for _, c := range n.Status(ctx).Peers[0].Connections {
			s = append(s, c.State)
		}
		return strings.Join(s, " ")
	}
	await(t, "every connection to wait", func() bool { return states() == "waiting waiting waiting" })
	peer.RemoveFault(down)
	n.peers[0].conns[0].pc.Kick()
	await(t, "every connection to feed", func() bool { return states() == "feeding feeding feeding" })
}
