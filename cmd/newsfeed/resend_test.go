package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestResendAfterKill feeds 500 articles while peer "down" refuses every
// connection and peer "up" takes them all, kills newsfeed with SIGKILL at
// several moments after "up" has them, and restarts it with "down" back.
// Each article may be offered again to a peer at most once after the
// kill: "up", which answered for all of them, gets no article twice more
// than once; "down" gets each exactly once. The distribution of offers per
// article is reported for every kill point.
func TestResendAfterKill(t *testing.T) {
	for _, wait := range []time.Duration{0, 20 * time.Millisecond, 200 * time.Millisecond, 1500 * time.Millisecond} {
		t.Run(wait.String(), func(t *testing.T) { testResendAfterKill(t, wait) })
	}
}

func testResendAfterKill(t *testing.T, wait time.Duration) {
	const n = 500
	dir := t.TempDir()
	up := nntptest.Start(t, nntptest.Options{Hostname: "up"})
	down := nntptest.Start(t, nntptest.Options{Hostname: "down"})
	refuse := down.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
	spool := filepath.Join(dir, "spool")
	conf := filepath.Join(dir, "newsfeed.toml")
	text := fmt.Sprintf(`listen = "127.0.0.1:0"
spool = %q
pathhost = "relay.test"
stats_interval = "1h"

[[peer]]
name = "up"
host = "127.0.0.1"
port = %d
reconnect_max = "100ms"

[[peer]]
name = "down"
host = "127.0.0.1"
port = %d
reconnect_max = "100ms"
`, spool, up.Port(), down.Port())
	os.WriteFile(conf, []byte(text), 0o644)
	logf, err := os.Create(filepath.Join(dir, "newsfeed.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("newsfeed's log:\n%s", b)
		}
	})
	ch := startChild(t, logf, "-config", conf)
	t.Cleanup(func() { // a test that fails half-way leaves no relay behind
		if ch.cmd.ProcessState == nil {
			ch.cmd.Process.Kill()
			ch.cmd.Wait()
		}
	})
	waitRelay(t, spool)
	addr := relayAddr(spool)()
	var ids []string
	for i := range n {
		id, _ := killArticle(i, "")
		ids = append(ids, id)
	}
	feedAll(t, addr, n)
	waitDelivered(func() []string {
		var miss []string
		for _, id := range ids {
			if !up.Has(id) {
				miss = append(miss, id)
			}
		}
		return miss
	}, 60*time.Second)
	time.Sleep(wait)
	before := offers(up)
	ch.cmd.Process.Signal(syscall.SIGKILL)
	ch.cmd.Wait()
	down.RemoveFault(refuse)
	ch = startChild(t, logf, "-config", conf)
	waitDelivered(func() []string {
		var miss []string
		for _, id := range ids {
			if !down.Has(id) {
				miss = append(miss, id)
			}
		}
		return miss
	}, 60*time.Second)
	// Let the restarted relay go through whatever it would resend.
	time.Sleep(500 * time.Millisecond)
	ch.cmd.Process.Signal(syscall.SIGTERM)
	ch.cmd.Wait()

	after := offers(up)
	again := map[int]int{} // offers after the kill -> articles
	for _, id := range ids {
		again[after[id]-before[id]]++
	}
	toDown := map[int]int{}
	downOffers := offers(down)
	for _, id := range ids {
		toDown[downOffers[id]]++
	}
	t.Logf("kill %v after peer up had all %d: offers again to up per article %v; offers to down per article %v", wait, n, dist(again), dist(toDown))
	for k := range again {
		if k > 1 {
			t.Errorf("articles offered again to up %d times after the kill: %d", k, again[k])
		}
	}
	for k := range toDown {
		if k != 1 {
			t.Errorf("articles offered to down %d times: %d", k, toDown[k])
		}
	}
}

// feedAll gives the relay articles 0..n-1 with TAKETHIS and waits for
// every 239.
func feedAll(t *testing.T, addr string, n int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	for i := 0; err != nil && i < 100; i++ {
		time.Sleep(50 * time.Millisecond)
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if l, _ := br.ReadString('\n'); !strings.HasPrefix(l, "200") {
		t.Fatalf("greeting %q", l)
	}
	go func() {
		w := bufio.NewWriter(c)
		for i := range n {
			id, art := killArticle(i, "misc.test")
			fmt.Fprintf(w, "TAKETHIS %s\r\n", id)
			w.Write(proto.ToWire(art))
		}
		w.Flush()
	}()
	for i := range n {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		l, err := br.ReadString('\n')
		if err != nil && err != io.EOF || !strings.HasPrefix(l, "239 ") {
			t.Fatalf("answer %d: %q %v", i, l, err)
		}
	}
}

// offers counts the offers (CHECK or TAKETHIS, whichever came more often)
// of each id that s received.
func offers(s *nntptest.Server) map[string]int {
	checks, takes := map[string]int{}, map[string]int{}
	for _, c := range s.Commands() {
		switch strings.ToUpper(c.Cmd.Verb) {
		case "CHECK":
			checks[c.Cmd.Args[0]]++
		case "TAKETHIS", "IHAVE":
			takes[c.Cmd.Args[0]]++
		}
	}
	out := map[string]int{}
	for id, n := range takes {
		out[id] = max(n, checks[id])
	}
	for id, n := range checks {
		out[id] = max(n, out[id])
	}
	return out
}

// dist formats a count -> articles map in order.
func dist(m map[int]int) string {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "%dx:%d ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}
