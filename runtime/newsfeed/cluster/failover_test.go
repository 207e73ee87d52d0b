package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

// envNATSChild makes the test binary one NATS server of an Embedded
// cluster ("dir;i;client ports;route ports"), so that a test can kill it
// with SIGKILL: Embedded.Kill shuts a server down in order, handing its
// leaderships over and telling its clients, which a crashed server does
// not.
const envNATSChild = "NEWSFLOW_TEST_NATS_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(envNATSChild); v != "" {
		os.Exit(runNATSChild(v))
	}
	os.Exit(m.Run())
}

func runNATSChild(v string) int {
	f := strings.Split(v, ";")
	if len(f) != 4 {
		fmt.Fprintf(os.Stderr, "%s=%q: want dir;i;ports;ports\n", envNATSChild, v)
		return 2
	}
	i, _ := strconv.Atoi(f[1])
	e := &Embedded{dir: f[0], client: atois(f[2]), route: atois(f[3])}
	e.servers = make([]*server.Server, len(e.client))
	if err := e.Restart(i); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	// Until killed, or the test process is gone (it holds our stdin).
	io.Copy(io.Discard, os.Stdin)
	return 0
}

func itoas(n []int) string {
	s := make([]string, len(n))
	for k, v := range n {
		s[k] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func atois(s string) []int {
	var n []int
	for _, f := range strings.Split(s, ",") {
		v, _ := strconv.Atoi(f)
		n = append(n, v)
	}
	return n
}

// procCluster is a NATS cluster whose servers are child processes.
type procCluster struct {
	e     *Embedded // ports and directory; its servers run in children
	procs []*exec.Cmd
	ready []io.Reader // stdout of servers started and not yet waited for
}

func startProcCluster(t *testing.T, n int) *procCluster {
	t.Helper()
	ports, err := freePorts(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	pc := &procCluster{e: &Embedded{dir: t.TempDir(), client: ports[:n], route: ports[n:]}, procs: make([]*exec.Cmd, n)}
	t.Cleanup(func() {
		for i := range pc.procs {
			pc.kill(i)
		}
	})
	for i := range n {
		pc.start(t, i)
	}
	pc.wait(t)
	return pc
}

func (pc *procCluster) start(t *testing.T, i int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;%d;%s;%s", envNATSChild, pc.e.dir, i, itoas(pc.e.client), itoas(pc.e.route)))
	cmd.Stderr = os.Stderr
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pc.procs[i] = cmd
	pc.ready = append(pc.ready, out)
}

// wait waits until every server started takes connections and JetStream
// answers (a meta leader is elected).
func (pc *procCluster) wait(t *testing.T) {
	t.Helper()
	for _, out := range pc.ready {
		line, err := bufio.NewReader(out).ReadString('\n')
		if line != "ready\n" {
			t.Fatalf("nats child: %q, %v", line, err)
		}
	}
	pc.ready = nil
	nc, err := Connect(ConnectOptions{URLs: pc.e.URLs()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := retry(ctx, func(ctx context.Context) error { _, err := js.AccountInfo(ctx); return err }); err != nil {
		t.Fatalf("nats children: no JetStream: %v", err)
	}
}

// kill ends server i with SIGKILL: no goodbyes to its clients or peers.
func (pc *procCluster) kill(i int) {
	if c := pc.procs[i]; c != nil {
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
		pc.procs[i] = nil
	}
}

// TestFeedOverConsumerLeaderDeath: the NATS server that leads a peer's
// queue consumer dies (SIGKILL) mid-feed. The pulls it held die with it,
// silently; the node's connections must pull again from the consumer's
// new leader within seconds, not after nats.go's default 30 s of missed
// heartbeats: the cluster goes on.
func TestFeedOverConsumerLeaderDeath(t *testing.T) {
	pc := startProcCluster(t, 3)
	sk, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{RecordIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	n := startNode(t, nodeConfig(t, "a", pc.e.URLs(), 3, map[string]int{"sink": sk.Port()}, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	arts := func(from, to int) map[string][]byte {
		m := map[string][]byte{}
		for i := from; i < to; i++ {
			id, a := testArticle(i, 2000)
			m[id] = a
		}
		return m
	}
	begin := time.Now()
	for id, code := range takeThis(t, n.Addr().String(), arts(0, 50)) {
		if code != 239 {
			t.Fatalf("%s: answer %d, want 239", id, code)
		}
	}
	if err := sk.Wait(ctx, 50); err != nil {
		t.Fatalf("before the death: the sink got %d of 50: %v", sk.Articles(), err)
	}
	t.Logf("first 50 at the sink in %v", time.Since(begin).Round(time.Millisecond))
	js, err := jetstream.New(n.nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := js.Consumer(ctx, n.store.shardStream(0), "q-sink")
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var leader int
	if _, err := fmt.Sscanf(info.Cluster.Leader, "nats-%d", &leader); err != nil {
		t.Fatalf("consumer leader %q: %v", info.Cluster.Leader, err)
	}
	pc.kill(leader)
	start := time.Now()
	for id, code := range takeThis(t, n.Addr().String(), arts(50, 150)) {
		if code != 239 && code != 439 {
			t.Fatalf("%s: answer %d, want 239", id, code)
		}
	}
	t.Logf("nats-%d killed: 100 more taken in %v", leader, time.Since(start).Round(time.Millisecond))
	if err := waitDistinct(ctx, sk, 150, 20*time.Second); err != nil {
		t.Fatalf("after killing nats-%d (the queue's leader), %v later: %v", leader, time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("all 150 at the sink %v after the kill", time.Since(start).Round(time.Millisecond))
	// The crashed server comes back on its directory and catches up; the
	// feed goes on through it.
	pc.start(t, leader)
	pc.wait(t)
	for id, code := range takeThis(t, n.Addr().String(), arts(150, 200)) {
		if code != 239 {
			t.Fatalf("%s: answer %d, want 239", id, code)
		}
	}
	if err := waitDistinct(ctx, sk, 200, 20*time.Second); err != nil {
		t.Fatalf("after nats-%d's restart: %v", leader, err)
	}
	// At least once: an entry whose ack died with the leader may come
	// twice (a real peer refuses the second copy, 439).
	_, twice := distinct(sk.IDs())
	t.Logf("%d deliveries of 200 articles; twice: %v", len(sk.IDs()), twice)
}

// waitDistinct waits up to d until the sink has n different message-ids.
func waitDistinct(ctx context.Context, sk *nullpeer.Sink, n int, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		got, _ := distinct(sk.IDs())
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the sink has %d of %d articles after %v", got, n, d)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// distinct counts the different ids and lists those that came more than
// once.
func distinct(ids []string) (n int, twice []string) {
	seen := map[string]int{}
	for _, id := range ids {
		if seen[id]++; seen[id] == 2 {
			twice = append(twice, id)
		}
	}
	return len(seen), twice
}
