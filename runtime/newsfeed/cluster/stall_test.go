package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

// maxPause is the longest a feed of waiting articles may go without a
// delivery: a liveness bound (a pull left to expire, a consumer waiting
// for its leader), far above what a loaded machine needs between two
// articles.
const maxPause = time.Second

// TestLargeArticlesNoPause: a fresh three-server cluster at replicas 3
// takes 500 KB articles and feeds them to a peer, several times over (the
// streams and consumers new each time, their leaders just elected); the
// peer must never wait over maxPause for the next article while some are
// due.
func TestLargeArticlesNoPause(t *testing.T) {
	if testing.Short() {
		t.Skip("three embedded NATS servers: not in -short")
	}
	for round := range 3 {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) {
			e := startJetStream(t, 3)
			sink, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sink.Close() })
			text := fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"node.test\"\nstats_interval = \"1h\"\nmax_article_size = \"2M\"\n"+
				"[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 2\n"+
				"[cluster]\nnats = [\"%s\"]\nnode = \"a\"\nreplicas = 3\nshards = 2\n",
				t.TempDir(), sink.Port(), strings.Join(e.URLs(), `", "`))
			cfg, err := newsfeed.ParseConfig("node.toml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			n := startNode(t, cfg)
			arts := map[string][]byte{}
			for i := range 30 {
				id, a := testArticle(1000*round+i, 500<<10)
				arts[id] = a
			}
			pushed := make(chan map[string]int, 1)
			start := time.Now()
			go func() { pushed <- takeThis(t, n.Addr().String(), arts) }()
			last, lastAt, worst := int64(0), start, time.Duration(0)
			deadline := time.After(2 * time.Minute)
			for last < int64(len(arts)) {
				select {
				case <-deadline:
					t.Fatalf("the sink got %d of %d articles in two minutes", last, len(arts))
				case <-time.After(5 * time.Millisecond):
				}
				now := time.Now()
				if got := sink.Articles(); got != last {
					last, lastAt = got, now
				}
				worst = max(worst, now.Sub(lastAt))
			}
			for id, code := range <-pushed {
				if code != 239 {
					t.Errorf("%s: ingest answered %d", id, code)
				}
			}
			t.Logf("%d articles in %v, longest wait for the next %v", len(arts), time.Since(start).Round(time.Millisecond), worst.Round(time.Millisecond))
			if worst > maxPause {
				t.Errorf("the peer waited %v for an article while %d were due (bound %v)", worst.Round(time.Millisecond), len(arts), maxPause)
			}
		})
	}
}
