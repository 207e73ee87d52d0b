package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

// holdProxy forwards TCP connections to a NATS server on loopback. While
// held, it stops reading what the server sends on every connection but
// the node's publish connection (its CONNECT names "publish"), as a
// client process that the scheduler does not run for a while: the
// server's writes back up and its outbound queue for the connection
// grows.
type holdProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	held   bool
	cond   *sync.Cond
}

func startHoldProxy(t *testing.T, target string) *holdProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &holdProxy{ln: ln, target: target}
	px.cond = sync.NewCond(&px.mu)
	t.Cleanup(func() { ln.Close(); px.release() })
	go px.accept()
	return px
}

func (px *holdProxy) url() string { return "nats://" + px.ln.Addr().String() }

func (px *holdProxy) hold() {
	px.mu.Lock()
	px.held = true
	px.mu.Unlock()
}

func (px *holdProxy) release() {
	px.mu.Lock()
	px.held = false
	px.mu.Unlock()
	px.cond.Broadcast()
}

func (px *holdProxy) accept() {
	for {
		cc, err := px.ln.Accept()
		if err != nil {
			return
		}
		sc, err := net.Dial("tcp", px.target)
		if err != nil {
			cc.Close()
			continue
		}
		// holdable: 0 until the client's CONNECT is seen, then 1 for a
		// connection the hold applies to, 2 for the publish connection.
		var holdable atomic.Int32
		go func() {
			defer sc.Close()
			br := bufio.NewReader(cc)
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if strings.Contains(line, "publish") {
				holdable.Store(2)
			} else {
				holdable.Store(1)
			}
			if _, err := io.WriteString(sc, line); err != nil {
				return
			}
			io.Copy(sc, br)
		}()
		go func() {
			defer cc.Close()
			buf := make([]byte, 32<<10)
			for {
				px.mu.Lock()
				for px.held && holdable.Load() == 1 {
					px.cond.Wait()
				}
				px.mu.Unlock()
				n, err := sc.Read(buf)
				if n > 0 {
					if _, err := cc.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// TestFeedNotCutOff: a node that does not read its deliveries for a while
// (a CPU-starved process) is not cut off by its NATS server, and so loses
// neither deliveries (which would come back only after ack_wait, a stall
// of 30 s) nor acks (which would send articles to the peer twice). With eight connections to the peer on one
// NATS connection, each asking for 4 MB from each of four shards, the
// server's queue for the connection passed its max_pending (64 MB). The
// hold lasts as long as the articles take to store, which on a loaded
// machine passes the server's write_deadline (10 s by default), after
// which any server cuts off a client that reads nothing: here the
// write_deadline is longer than the test's bound, so only max_pending can
// cut the node off.
func TestFeedNotCutOff(t *testing.T) {
	e, err := startEmbedded(t.TempDir(), 1, func(o *server.Options) { o.WriteDeadline = 10 * time.Minute })
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	px := startHoldProxy(t, strings.TrimPrefix(e.URLs()[0], "nats://"))
	sk, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{RecordIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	const conns, arts = 8, 200
	text := fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"a.test\"\nstats_interval = \"1h\"\nmax_article_size = \"2M\"\n"+
		"[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = %d\n"+
		"[cluster]\nnats = [%q]\nnode = \"a\"\nreplicas = 1\nshards = 4\nack_wait = \"1h\"\n",
		t.TempDir(), sk.Port(), conns, px.url())
	cfg, err := newsfeed.ParseConfig("test.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Every connection is feeding (its consumers bound) before the hold.
	if err := sk.WaitConns(ctx, conns); err != nil {
		t.Fatal(err)
	}
	px.hold()
	all := map[string][]byte{}
	for i := range arts {
		id, a := testArticle(i, 500<<10)
		all[id] = a
	}
	for id, code := range takeThis(t, n.Addr().String(), all) {
		if code != 239 {
			t.Fatalf("%s: answer %d, want 239", id, code)
		}
	}
	// Wait until the server has queued all it will for the held
	// connections: every shard's entries delivered, or its pulls used up.
	mon, err := Connect(ConnectOptions{URLs: e.URLs()})
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	js, err := jetstream.New(mon)
	if err != nil {
		t.Fatal(err)
	}
	for e.SlowConsumers() == 0 {
		settled := true
		for i := range 4 {
			c, err := js.Consumer(ctx, fmt.Sprintf("%s-art-%d", cfg.Cluster.Name, i), "q-sink")
			if err != nil {
				t.Fatal(err)
			}
			info, err := c.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.NumPending > 0 && info.NumWaiting > 0 {
				settled = false
			}
		}
		if settled {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the server never delivered what was pulled")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if sc := e.SlowConsumers(); sc > 0 {
		// What was in flight is lost until ack_wait (1h) redelivers it.
		t.Fatalf("NATS cut off %d connection(s) of the node as slow consumers", sc)
	}
	px.release()
	if err := sk.Wait(ctx, arts); err != nil {
		t.Fatalf("the sink got %d of %d articles : %v", sk.Articles(), arts, err)
	}
	seen := map[string]bool{}
	for _, id := range sk.IDs() {
		if seen[id] {
			t.Errorf("%s reached the peer twice", id)
		}
		seen[id] = true
	}
}

// TestPullBytes: a connection's subscriptions together ask for at most
// feedBudget, each for at least one message of max_payload.
func TestPullBytes(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		shards, maxPayload, want int
	}{
		{1, mb, 4 * mb},           // one shard: the per-subscription ceiling
		{4, mb, 4 * mb},           // 4 x 4 MB = the budget
		{8, mb, 2 * mb},           // 8 x 2 MB
		{16, mb, mb + 8<<10},      // the budget's share is below one message: one message
		{4, 8 * mb, 8*mb + 8<<10}, // a server with a larger max_payload
		{0, mb, 4 * mb},           // no shards (not configurable): as one
	} {
		if got := pullBytes(c.shards, c.maxPayload); got != c.want {
			t.Errorf("pullBytes(%d shards, max_payload %d) = %d, want %d", c.shards, c.maxPayload, got, c.want)
		}
		if c.shards > 0 && c.shards*(c.maxPayload+8<<10) <= feedBudget && c.shards*pullBytes(c.shards, c.maxPayload) > feedBudget {
			t.Errorf("%d shards ask for %d octets in all, over the budget %d", c.shards, c.shards*pullBytes(c.shards, c.maxPayload), feedBudget)
		}
	}
}
