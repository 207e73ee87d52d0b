package newsfeed

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// innPeer is a [[peer]] table for a real innd.
func innPeer(name string, inn *inntest.Server, conns int) string {
	host, port, _ := strings.Cut(inn.Addr(), ":")
	return fmt.Sprintf("[[peer]]\nname = %q\nhost = %q\nport = %s\nconnections = %d\npathname = %q\nreconnect_max = \"10m\"\n",
		name, host, port, conns, inn.PathHost())
}

// innArts makes n articles for local.test (a group inntest's innd carries).
func innArts(prefix string, n int) ([][]byte, []string) {
	var arts [][]byte
	var ids []string
	for i := range n {
		id := fmt.Sprintf("<%s%d@relay.test>", prefix, i)
		ids = append(ids, id)
		arts = append(arts, testArticle(id, "local.test", "origin.test!not-for-mail", 3+i%10))
	}
	return arts, ids
}

// TestINNControl runs the operator's commands against real innd peers:
// reload adds innd B under load (nothing lost at A, A's connections kept);
// B is throttled, so its connection waits out a backoff of minutes, and a
// kick after `ctlinnd go` delivers long before that backoff would end;
// pause sends A nothing (A's history lacks every article), flush and
// resume deliver them; trace agrees with what each innd has.
func TestINNControl(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	innA := inntest.Start(t, inntest.Options{})
	innB := inntest.Start(t, inntest.Options{})
	if out, err := innB.Ctlinnd("throttle", "down for the test"); err != nil {
		t.Fatalf("ctlinnd throttle: %v: %s", err, out)
	}
	dir := t.TempDir()
	cfg := relayConfig(t, dir, "article_log = \"news\"\n"+innPeer("a", innA, 2))
	h := startRelay(t, cfg, func(o *Options) { o.BackoffBase = 10 * time.Minute })
	waitFor(t, time.Minute, "a's connections", func() bool { return h.peer("a").ConnsUp == 2 }, h.r.StatsLines)
	pa, _ := h.r.findPeer("a")
	connectsA := pa.connects.Load()

	// Load while the configuration changes.
	var all []string
	inject := func(prefix string, n int) []string {
		arts, ids := innArts(prefix, n)
		if res := h.r.Inject(context.Background(), arts); res.Accepted != n {
			t.Errorf("inject %s: %s", prefix, res)
		}
		return ids
	}
	loadDone := make(chan []string)
	go func() {
		var ids []string
		for i := range 10 {
			arts, batch := innArts(fmt.Sprintf("load%d.", i), 20)
			h.r.Inject(context.Background(), arts)
			ids = append(ids, batch...)
		}
		loadDone <- ids
	}()
	cfg3, err := ParseConfig("test.toml", []byte(fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"relay.test\"\nstats_interval = \"1h\"\narticle_log = \"news\"\n%s%s",
		dir, innPeer("a", innA, 2), innPeer("b", innB, 1))))
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.r.Reload(cfg3)
	if err != nil || strings.Join(res.Added, ",") != "b" || strings.Join(res.Unchanged, ",") != "a" {
		t.Fatalf("reload: %+v, %v", res, err)
	}
	all = append(all, <-loadDone...)
	after := inject("after", 10)
	all = append(all, after...)

	// B is throttled: its connection fails and waits 7.5 to 12.5 minutes.
	waitFor(t, time.Minute, "b's connection to wait", func() bool {
		c := h.peer("b").Connections
		return len(c) == 1 && c[0].State == "waiting"
	}, h.r.StatsLines)
	if out, err := innB.Ctlinnd("go", "down for the test"); err != nil {
		t.Fatalf("ctlinnd go: %v: %s", err, out)
	}
	kicked := time.Now()
	if _, err := h.r.Kick("b"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "b to get what was routed after the reload", func() bool {
		for _, id := range after {
			if !innB.HasArticle(id) {
				return false
			}
		}
		return true
	}, h.r.StatsLines)
	if d := time.Since(kicked); d >= 7*time.Minute {
		t.Errorf("b got its articles %v after the kick: that is the backoff, not the kick", d)
	}
	h.settle()
	for _, id := range all {
		if !innA.HasArticle(id) {
			t.Errorf("%s lost: innd A lacks it", id)
		}
	}
	if n := pa.connects.Load(); n != connectsA {
		t.Errorf("a connected %d times, %d before the reload: its connections were dropped", n, connectsA)
	}

	// Pause A: it gets nothing; flush; resume: it gets everything.
	h.r.Pause("a")
	held := inject("held", 10)
	if _, err := h.r.Flush("a"); err != nil {
		t.Fatal(err)
	}
	for _, id := range held {
		if innA.HasArticle(id) {
			t.Errorf("%s reached innd A while a was paused", id)
		}
		tr, err := h.r.Trace(id)
		if err != nil {
			t.Fatal(err)
		}
		if w := tracePeer(tr, "a").Waiting; !strings.HasPrefix(w, "backlog file a.B.") {
			t.Errorf("trace %s while paused and flushed: a waiting %q, want a backlog file", id, w)
		}
	}
	h.r.Resume("a")
	h.settle()
	for _, id := range append(held, after...) {
		tr, err := h.r.Trace(id)
		if err != nil {
			t.Fatal(err)
		}
		for name, inn := range map[string]*inntest.Server{"a": innA, "b": innB} {
			pt := tracePeer(tr, name)
			said := ""
			if n := len(pt.Answers); n > 0 {
				said = pt.Answers[n-1].Verdict
			}
			if has := inn.HasArticle(id); has != (said == "accepted") || pt.Waiting != "" {
				t.Errorf("trace %s says %s answered %q (waiting %q); innd %s has it: %v", id, name, said, pt.Waiting, name, has)
			}
		}
	}
	h.checkStats()
}

func tracePeer(tr TraceResult, name string) PeerTrace {
	for _, p := range tr.Peers {
		if p.Name == name {
			return p
		}
	}
	return PeerTrace{}
}
