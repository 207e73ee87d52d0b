package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed/cluster"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// clusterConf writes the configuration of cluster node name: ingest on a
// port of its choosing (written to its spool dir/name's address file),
// feeding sinks a and b, NATS at urls with 3 replicas.
func clusterConf(t *testing.T, dir, name string, urls []string, sinkA, sinkB int) string {
	t.Helper()
	text := fmt.Sprintf(`listen = "127.0.0.1:0"
admin = "127.0.0.1:0"
spool = %q
pathhost = "%s.test"
stats_interval = "1s"

[[peer]]
name = "a"
host = "127.0.0.1"
port = %d
connections = 2
reconnect_max = "300ms"
defer_delay = "500ms"
defer_max_delay = "1s"

[[peer]]
name = "b"
host = "127.0.0.1"
port = %d
connections = 1
groups = ["*", "!skip.*"]
reconnect_max = "300ms"

[cluster]
nats = ["%s"]
node = %q
replicas = 3
shards = 3
ack_wait = "3s"
reserve_ttl = "2s"
`, filepath.Join(dir, name), name, sinkA, sinkB, strings.Join(urls, `", "`), name)
	conf := filepath.Join(dir, name+".toml")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

// TestCluster is the cluster's durability test, on a 3-node NATS cluster
// embedded in the test (replicas 3) and two newsfeed nodes run as child
// processes. Both nodes are fed the same articles at the same moment; one
// node is killed with SIGKILL mid-feed and restarted, then a NATS server
// is killed and restarted, while peer b goes down for a while and peer a
// defers some articles at first. At the end every article acknowledged by
// either node reached every peer that wants it, no article was
// acknowledged twice, and after a restart of the whole cluster (NATS and
// newsfeed) the history still refuses what was stored.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("the cluster test runs a 3-node NATS cluster and two newsfeed processes; skipped with -short")
	}
	dir := t.TempDir()
	if d := os.Getenv("NEWSFLOW_KEEP"); d != "" {
		dir = d // keep the logs and stores for a look afterwards
	}
	nats, err := cluster.StartEmbedded(filepath.Join(dir, "nats"), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer nats.Shutdown()
	if err := nats.WaitJetStream(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	sinkA := nntptest.Start(t, nntptest.Options{Hostname: "sink-a"})
	sinkB := nntptest.Start(t, nntptest.Options{Hostname: "sink-b"})
	// Peer a defers every seventh article the first time it is offered.
	var ruleMu sync.Mutex
	deferred := map[string]bool{}
	sinkA.SetRule(func(cmd, id string) nntptest.Verdict {
		var i int
		fmt.Sscanf(id, "<kill.%d@", &i)
		ruleMu.Lock()
		defer ruleMu.Unlock()
		if i%7 == 0 && cmd == "CHECK" && !deferred[id] {
			deferred[id] = true
			return nntptest.Defer
		}
		return nntptest.Want
	})
	logf, err := os.Create(filepath.Join(dir, "newsfeed.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	spools := []string{filepath.Join(dir, "node-a"), filepath.Join(dir, "node-b")}
	confs := []string{
		clusterConf(t, dir, "node-a", nats.URLs(), sinkA.Port(), sinkB.Port()),
		clusterConf(t, dir, "node-b", nats.URLs(), sinkA.Port(), sinkB.Port()),
	}
	nodes := []*child{startChild(t, logf, "-config", confs[0]), startChild(t, logf, "-config", confs[1])}
	defer func() {
		for _, c := range nodes {
			if c != nil {
				c.cmd.Process.Signal(syscall.SIGKILL)
				c.cmd.Wait()
			}
		}
	}()
	for _, s := range spools {
		waitRelay(t, s)
	}
	groups := func(i int) string {
		if i%5 == 0 {
			return "skip.test" // only peer a wants these
		}
		return "misc.test"
	}
	// Two upstreams offer the same articles (the same ids, in the same
	// order) to the two nodes at the same time.
	feeders := make([]*feeder, 2)
	for i := range feeders {
		feeders[i] = &feeder{addr: relayAddr(spools[i]), acked: map[string]bool{}, sent: map[string]bool{},
			stop: make(chan struct{}), done: make(chan struct{}), groups: groups}
		go feeders[i].run()
	}
	began := time.Now()
	step := func(format string, args ...any) {
		msg := fmt.Sprintf("%5.1fs ", time.Since(began).Seconds()) + fmt.Sprintf(format, args...)
		fmt.Fprintf(logf, "=== test: %s\n", msg)
		t.Log(msg)
	}
	// ackedAny counts the ids either node acknowledged.
	ackedAny := func() int {
		seen := map[string]bool{}
		for _, f := range feeders {
			for _, id := range f.ackedIDs() {
				seen[id] = true
			}
		}
		return len(seen)
	}
	// waitAckedAny waits until the nodes acknowledged n ids, however
	// loaded the machine; the limit only bounds a hung feed.
	waitAckedAny := func(n int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for ackedAny() < n {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d articles acknowledged after a minute: the feed is not running (log: %s)", ackedAny(), n, logf.Name())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The feed runs a while, and has made progress, before each fault.
	time.Sleep(1500 * time.Millisecond)
	waitAckedAny(50)
	step("SIGKILL node-a (acked so far %d + %d)", len(feeders[0].ackedIDs()), len(feeders[1].ackedIDs()))
	nodes[0].cmd.Process.Signal(syscall.SIGKILL)
	nodes[0].cmd.Wait()
	// Meanwhile node-b carries both peers' feeds on: sink b must receive
	// articles while node-a is down.
	before := len(sinkB.AcceptedIDs())
	time.Sleep(1500 * time.Millisecond)
	for deadline := time.Now().Add(60 * time.Second); len(sinkB.AcceptedIDs()) <= before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("while node-a was down, sink b received nothing in a minute (log: %s)", logf.Name())
		}
	}
	nodes[0] = startChild(t, logf, "-config", confs[0])
	waitRelay(t, spools[0])
	time.Sleep(time.Second)
	step("peer b down")
	down := sinkB.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down for a while", Close: true})
	sinkB.DropConns()
	time.Sleep(time.Second)
	step("NATS server 0 killed (acked so far %d + %d)", len(feeders[0].ackedIDs()), len(feeders[1].ackedIDs()))
	nats.Kill(0)
	time.Sleep(1500 * time.Millisecond)
	step("peer b back")
	sinkB.RemoveFault(down)
	step("NATS server 0 restarted")
	if err := nats.Restart(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	waitAckedAny(200)
	for _, f := range feeders {
		close(f.stop)
		<-f.done
	}

	ackedBy := map[string]int{}
	var acked []string
	for _, f := range feeders {
		for _, id := range f.ackedIDs() {
			ackedBy[id]++
			if ackedBy[id] == 1 {
				acked = append(acked, id)
			}
		}
	}
	for id, n := range ackedBy {
		if n > 1 {
			t.Errorf("%s acknowledged by both nodes", id)
		}
	}
	if len(acked) < 200 {
		t.Fatalf("only %d articles acknowledged: the feed barely ran (see %s)", len(acked), logf.Name())
	}
	missing := undelivered(acked, sinkA, sinkB, groups)
	waitDelivered(missing, 60*time.Second)
	if lost := missing(); len(lost) > 0 {
		t.Fatalf("%d acknowledged articles never reached a peer that wants them, e.g. %v (log: %s)", len(lost), lost[:min(5, len(lost))], logf.Name())
	}
	ruleMu.Lock()
	nDeferred := len(deferred)
	ruleMu.Unlock()
	if nDeferred == 0 {
		t.Error("peer a deferred nothing: the deferral path did not run")
	}
	step("all %d acknowledged articles delivered (%d deferred once by peer a); restarting the whole cluster", len(acked), nDeferred)

	// The whole cluster goes down and comes back: what was stored is
	// still known (refused), and new articles flow.
	for i, c := range nodes {
		c.cmd.Process.Signal(syscall.SIGTERM)
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("node %d after SIGTERM: %v", i, err)
		}
		nodes[i] = nil
	}
	step("whole cluster stopped")
	nats.Shutdown()
	for i := range 3 {
		go nats.Restart(i)
	}
	if err := nats.WaitJetStream(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	step("NATS restarted")
	nodes[1] = startChild(t, logf, "-config", confs[1])
	waitRelay(t, spools[1])
	step("node-b restarted")
	again := &feeder{addr: relayAddr(spools[1]), acked: map[string]bool{}, sent: map[string]bool{},
		stop: make(chan struct{}), done: make(chan struct{}), groups: groups}
	again.next = 0 // offers the old ids again first, then new ones
	go again.run()
	maxOld := 0 // the highest index acknowledged before the restart
	for id := range ackedBy {
		var i int
		fmt.Sscanf(id, "<kill.%d@", &i)
		maxOld = max(maxOld, i)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		again.mu.Lock()
		n := again.next
		again.mu.Unlock()
		if n > maxOld+50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(again.stop)
	<-again.done
	step("offered the old articles again and new ones")
	var reacked, fresh []string
	for _, id := range again.ackedIDs() {
		if ackedBy[id] > 0 {
			reacked = append(reacked, id)
		} else {
			fresh = append(fresh, id)
		}
	}
	if len(reacked) > 0 {
		t.Errorf("after the restart, %d stored articles were taken again, e.g. %v", len(reacked), reacked[:min(3, len(reacked))])
	}
	if len(fresh) == 0 {
		t.Fatalf("after the restart no new article was acknowledged (log: %s)", logf.Name())
	}
	deadline = time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if sinkA.Has(fresh[len(fresh)-1]) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !sinkA.Has(fresh[len(fresh)-1]) {
		t.Errorf("after the restart, %s never reached peer a", fresh[len(fresh)-1])
	}
	// newsfeed inject with a cluster configuration hands the articles to
	// the running node; newsfeed status reads the node's queues.
	var batch bytes.Buffer
	var injected []string
	for i := range 3 {
		id, a := killArticle(1_000_000+i, "misc.test")
		injected = append(injected, id)
		fmt.Fprintf(&batch, "#! rnews %d\n", len(a))
		batch.Write(a)
	}
	file := filepath.Join(dir, "inject.rnews")
	if err := os.WriteFile(file, batch.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := Main([]string{"inject", "-config", confs[1], file}, &out, &errs); code != 0 || !strings.Contains(out.String(), "accepted 3") {
		t.Errorf("newsfeed inject into the cluster: exit %d\n%s%s", code, out.String(), errs.String())
	}
	out.Reset()
	if code := Main([]string{"status", "-config", confs[1], "-wait", "30s", "-drained"}, &out, &errs); code != 0 {
		t.Errorf("newsfeed status -drained: exit %d\n%s%s", code, out.String(), errs.String())
	}
	for _, id := range injected {
		if !sinkA.Has(id) || !sinkB.Has(id) {
			t.Errorf("injected %s: not at both sinks once the cluster's queues drained", id)
		}
	}
	t.Logf("newsfeed status:\n%s", out.String())
	b, _ := os.ReadFile(logf.Name())
	t.Logf("cluster: %d acked before the restart (none twice), %d deferred once, %d new after; log %d lines",
		len(acked), nDeferred, len(fresh), bytes.Count(b, []byte("\n")))
}

// TestClusterDemo runs `newsfeed demo -cluster` as a user would (three
// embedded NATS servers, two newsfeed processes, node-1 killed with
// SIGKILL, a NATS server killed and restarted): it must exit 0, having
// seen every injected article at both sinks.
func TestClusterDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the cluster demo runs a 3-node NATS cluster and two newsfeed processes; skipped with -short")
	}
	var out, errs bytes.Buffer
	code := Main([]string{"demo", "-cluster", "-n", "90"}, &out, &errs)
	if code != 0 {
		t.Fatalf("newsfeed demo -cluster: exit %d\n%s%s", code, out.String(), errs.String())
	}
	for _, want := range []string{
		"injected 30 articles into node-1",
		"node-1 killed with SIGKILL",
		"injected 30 articles into node-2",
		"both sinks have all 60, node-1 still down",
		"NATS server 0 killed",
		"every one of the 90 articles reached both peers",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
