package newsfeed

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// TestResendDuplicateINN: articles a real innd stored whose 239 never
// reached the relay (the connection went down first) are sent again in
// TAKETHIS on the peer's other connection; innd answers 439, and they
// count as refused (innd holds them), not rejected.
//
// Between the relay and innd sits a proxy that can swallow innd's answers
// on one connection and cut it. Low no-CHECK thresholds put both
// connections in TAKETHIS mode before the articles under test are fed.
func TestResendDuplicateINN(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	inn := inntest.Start(t, inntest.Options{})
	px := startCutProxy(t, inn.Addr())
	text := fmt.Sprintf("[[peer]]\nname = \"inn\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 2\nmax_connections = 2\n"+
		"window = 10\nreconnect_max = \"200ms\"\npathname = %q\nno_check_high = 60\nno_check_low = 50\nno_check_filter = 1\n",
		px.port(), inn.PathHost())
	h := startRelay(t, relayConfig(t, t.TempDir(), text), nil)
	n := 0
	feed := func(prefix string, count int) []string {
		var arts [][]byte
		var ids []string
		for range count {
			n++
			id := fmt.Sprintf("<%s%d@relay.test>", prefix, n)
			ids = append(ids, id)
			arts = append(arts, testArticle(id, "local.test", "origin.test!not-for-mail", 3))
		}
		if res := h.r.Inject(context.Background(), arts); res.Accepted != len(arts) {
			t.Fatalf("inject: %s", res)
		}
		return ids
	}

	// Both connections up and sending TAKETHIS without CHECK.
	fresh := 0
	for round := 0; ; round++ {
		ps, _ := h.r.PeerStats("inn")
		if len(ps.Connections) == 2 && ps.Connections[0].Mode == "takethis" && ps.Connections[1].Mode == "takethis" && px.count() == 2 {
			break
		}
		if round == 50 {
			t.Fatalf("after %d articles the connections are %+v", fresh, ps.Connections)
		}
		fresh += len(feed("warm", 10))
		h.settle()
	}

	// innd's answers on one connection are swallowed: what it is sent
	// there is stored, and the relay never hears so.
	x := px.conn(0)
	answered := len(x.sent())
	x.swallow.Store(true)
	var onX []string
	for round := 0; len(onX) == 0; round++ {
		if round == 20 {
			t.Fatal("no article went out on the connection whose answers are swallowed")
		}
		ids := feed("dup", 10)
		fresh += len(ids)
		waitFor(t, time.Minute, "innd to store the articles", func() bool {
			for _, id := range ids {
				if !inn.HasArticle(id) {
					return false
				}
			}
			return true
		}, h.r.StatsLines)
		onX = x.sent()[answered:]
	}

	// The connection goes down; the proxy turns the relay's reconnects
	// away, so the other connection, in TAKETHIS mode, sends them again.
	px.refuse.Store(true)
	x.cut()
	h.settle()
	y := px.conn(1)
	again := 0
	for _, id := range y.sent() {
		for _, s := range onX {
			if id == s {
				again++
			}
		}
	}
	if again == 0 {
		t.Fatalf("none of the %d articles whose answers were lost was sent again with TAKETHIS on the other connection", len(onX))
	}
	ps, _ := h.r.PeerStats("inn")
	if ps.Accepted != int64(fresh-len(onX)) || ps.Refused != int64(len(onX)) || ps.Rejected != 0 {
		t.Errorf("stats: %s; want %d accepted, %d refused (sent again after the answers were lost, %d of them with TAKETHIS), 0 rejected",
			ps.Line(), fresh-len(onX), len(onX), again)
	}
	h.checkStats()
}

// TestResendAfterStopINN: articles a real innd stored whose 239 never
// reached the relay are still in flight when the relay stops cleanly;
// after the restart they are sent again from the backlog with TAKETHIS,
// innd answers 439, and they count as refused (innd holds them), not
// rejected: the backlog file keeps the mark of the earlier offer.
//
// A proxy between the relay and innd swallows innd's answers and holds
// back the first article of the batch (so that innd never sees it):
// after the restart that one goes first, innd wants it, and the
// connection turns to TAKETHIS-only (no_check_high is tiny) before the
// duplicates follow. The restarted relay has window 1, so that no CHECK
// for a duplicate goes out before that answer; a 438 to CHECK would be
// refused anyway and test nothing.
func TestResendAfterStopINN(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	inn := inntest.Start(t, inntest.Options{})
	px := startCutProxy(t, inn.Addr())
	dir := t.TempDir()
	conf := func(window int) *Config {
		return relayConfig(t, dir, fmt.Sprintf("article_log = \"news\"\n[[peer]]\nname = \"inn\"\nhost = \"127.0.0.1\"\nport = %d\n"+
			"connections = 1\nmax_connections = 1\nwindow = %d\nreconnect_max = \"200ms\"\npathname = %q\nno_check_high = 0.5\nno_check_low = 0.01\nno_check_filter = 100\n",
			px.port(), window, inn.PathHost()))
	}
	h := startRelay(t, conf(20), nil)
	n := 0
	feed := func(prefix string, count int) []string {
		var arts [][]byte
		var ids []string
		for range count {
			n++
			id := fmt.Sprintf("<%s%d@relay.test>", prefix, n)
			ids = append(ids, id)
			arts = append(arts, testArticle(id, "local.test", "origin.test!not-for-mail", 3))
		}
		if res := h.r.Inject(context.Background(), arts); res.Accepted != len(arts) {
			t.Fatalf("inject: %s", res)
		}
		return ids
	}
	mode := func() string {
		ps, _ := h.r.PeerStats("inn")
		if len(ps.Connections) != 1 {
			return fmt.Sprint(len(ps.Connections), " connections")
		}
		return ps.Connections[0].Mode
	}
	for round := 0; mode() != "takethis"; round++ {
		if round == 20 {
			t.Fatalf("the connection is in mode %s after %d rounds of articles", mode(), round)
		}
		feed("warm", 2)
		h.settle()
	}

	// The connection goes deaf: innd's answers are swallowed, and the
	// next TAKETHIS is held back whole.
	x := px.conn(px.count() - 1)
	x.swallow.Store(true)
	x.hold.Store(true)
	fresh := feed("fresh", 1)
	waitFor(t, time.Minute, "the proxy to hold back "+fresh[0], func() bool { return x.held.Load() == 1 }, h.r.StatsLines)
	x.hold.Store(false)
	dups := feed("dup", 5)
	waitFor(t, time.Minute, "innd to store the articles", func() bool {
		for _, id := range dups {
			if !inn.HasArticle(id) {
				return false
			}
		}
		return true
	}, h.r.StatsLines)
	if inn.HasArticle(fresh[0]) {
		t.Fatalf("innd has %s, which the proxy held back", fresh[0])
	}
	if err := h.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	// The restart sends the backlog: the fresh article (238, 239), then
	// the duplicates with TAKETHIS (439 each).
	before := px.count()
	h = startRelay(t, conf(1), nil)
	h.settle()
	if px.count() == before {
		t.Fatal("the restarted relay never connected")
	}
	y := px.conn(px.count() - 1)
	again := 0
	for _, id := range y.sent() {
		for _, d := range dups {
			if id == d {
				again++
			}
		}
	}
	if again != len(dups) {
		t.Fatalf("%d of the %d duplicates went out with TAKETHIS after the restart (sent: %v)", again, len(dups), y.sent())
	}
	ps, _ := h.r.PeerStats("inn")
	if ps.Accepted != 1 || ps.Refused != int64(len(dups)) || ps.Rejected != 0 {
		t.Errorf("stats after the restart: %s; want 1 accepted (%s), %d refused (the duplicates), 0 rejected",
			ps.Line(), fresh[0], len(dups))
	}
	h.checkStats()

	// The article log agrees: each duplicate's 439 is written as refused.
	h.stop()
	log, err := os.ReadFile(h.cfg.ArticleLogPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dups {
		verdicts := ""
		for _, l := range strings.Split(string(log), "\n") {
			if f := strings.Fields(l); len(f) >= 4 && f[1] == d && f[2] == ">inn" {
				verdicts += f[3]
			}
		}
		if verdicts != "=" {
			t.Errorf("article log: answers %q from inn for %s after the restart, want \"=\" (refused); log:\n%s", verdicts, d, log)
		}
	}
}

// cutProxy passes NNTP connections through to a server, noting the
// message-ids of the TAKETHIS commands each carries; it can swallow the
// server's answers on one, hold back its TAKETHIS commands, cut one, and
// turn new ones away.
type cutProxy struct {
	t      *testing.T
	ln     net.Listener
	target string
	refuse atomic.Bool // close new connections at once

	mu    sync.Mutex
	conns []*proxied // in the order accepted (and let through)
}

type proxied struct {
	client, server net.Conn
	swallow        atomic.Bool // the server's bytes are dropped
	hold           atomic.Bool // TAKETHIS commands, article included, are dropped
	held           atomic.Int64

	mu  sync.Mutex
	ids []string // TAKETHIS message-ids, in order
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, ln: ln, target: target}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.cut()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			if p.refuse.Load() {
				nc.Close()
				continue
			}
			sc, err := net.Dial("tcp", target)
			if err != nil {
				nc.Close()
				continue
			}
			c := &proxied{client: nc, server: sc}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); c.up(); c.cut() }()
			go func() { defer wg.Done(); c.down(); c.cut() }()
		}
	}()
	return p
}

func (p *cutProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *cutProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

func (p *cutProxy) conn(i int) *proxied {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns[i]
}

// up copies the client's lines to the server, but for the TAKETHIS
// commands it holds back (up to the article's terminating dot line).
func (c *proxied) up() {
	br := bufio.NewReader(c.client)
	holding := false
	for {
		line, err := br.ReadString('\n')
		if id, ok := strings.CutPrefix(line, "TAKETHIS "); ok {
			c.mu.Lock()
			c.ids = append(c.ids, strings.TrimRight(id, "\r\n"))
			c.mu.Unlock()
			holding = c.hold.Load()
		}
		if holding {
			if line == ".\r\n" {
				holding = false
				c.held.Add(1)
			}
			if err != nil {
				return
			}
			continue
		}
		if _, werr := io.WriteString(c.server, line); werr != nil || err != nil {
			return
		}
	}
}

// down copies the server's bytes to the client unless they are swallowed.
func (c *proxied) down() {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.server.Read(buf)
		if n > 0 && !c.swallow.Load() {
			if _, werr := c.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *proxied) cut() {
	c.client.Close()
	c.server.Close()
}

func (c *proxied) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ids...)
}
