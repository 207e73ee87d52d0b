package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestMain lets the test binary be newsfeed itself: with NEWSFEED_CHILD set
// it runs Main with its arguments, so tests can start, kill and restart the
// real program as a child process without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("NEWSFEED_CHILD") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// child is newsfeed running as a child process.
type child struct {
	cmd *exec.Cmd
	log *bytes.Buffer
}

func startChild(t *testing.T, logw io.Writer, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "NEWSFEED_CHILD=1")
	var buf bytes.Buffer
	cmd.Stdout = io.MultiWriter(&buf, logw)
	cmd.Stderr = io.MultiWriter(&buf, logw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &child{cmd: cmd, log: &buf}
}

// relayAddr returns a func giving the ingest address of the newsfeed
// running on spool, as it wrote it to its address file ("" while there is
// none). The tests' relays listen on port 0: a port chosen beforehand may
// be taken by another process before the child listens, and each life of
// a restarted child gets a port of its own.
func relayAddr(spool string) func() string {
	return func() string {
		listen, _, _ := newsfeed.ReadAddrs(spool)
		return listen
	}
}

// waitRelay waits until the newsfeed running on spool takes connections
// at the address it wrote (a child killed before leaves its address
// file, so the address alone does not say that the new one runs), for up
// to a minute.
func waitRelay(t *testing.T, spool string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if addr := relayAddr(spool)(); addr != "" {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no newsfeed takes connections on %s after a minute", spool)
}

// feeder streams articles to the relay over TAKETHIS, reconnecting whenever
// the relay goes away, and records every id acknowledged with 239.
type feeder struct {
	addr   func() string // the relay's address now ("" while unknown)
	mu     sync.Mutex
	acked  map[string]bool
	next   int
	sent   map[string]bool // sent, no answer yet
	stop   chan struct{}
	done   chan struct{}
	groups func(i int) string
}

func (f *feeder) ackedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, 0, len(f.acked))
	for id := range f.acked {
		ids = append(ids, id)
	}
	return ids
}

// undelivered returns a check listing the acknowledged ids (<kill.N@...>)
// that a sink wanting them does not have: sinkA wants every article,
// sinkB those not in skip.test.
func undelivered(acked []string, sinkA, sinkB *nntptest.Server, groups func(int) string) func() []string {
	wants := func(id string, s *nntptest.Server) bool {
		var i int
		fmt.Sscanf(id, "<kill.%d@", &i)
		return s == sinkA || groups(i) != "skip.test"
	}
	return func() (lost []string) {
		for _, id := range acked {
			for _, s := range []*nntptest.Server{sinkA, sinkB} {
				if wants(id, s) && !s.Has(id) {
					lost = append(lost, id)
				}
			}
		}
		return lost
	}
}

// waitDelivered waits until missing lists nothing or timeout passes.
func waitDelivered(missing func() []string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

// waitAcked waits until at least n articles are acknowledged, failing the
// test after timeout.
func (f *feeder) waitAcked(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for len(f.ackedIDs()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d articles acknowledged after %v: the feed is not running", len(f.ackedIDs()), n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *feeder) run() {
	defer close(f.done)
	var retry []int // unanswered articles to offer again, like a real upstream
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		retry = f.session(retry)
		time.Sleep(10 * time.Millisecond)
	}
}

// session feeds one connection until it breaks or stop; it returns the
// articles that got no answer.
func (f *feeder) session(retry []int) []int {
	addr := f.addr()
	if addr == "" {
		return retry
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return retry
	}
	defer c.Close()
	br := bufio.NewReader(c)
	readLine := func() (string, error) {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		l, err := br.ReadString('\n')
		return strings.TrimRight(l, "\r\n"), err
	}
	if l, err := readLine(); err != nil || !strings.HasPrefix(l, "200") {
		return retry
	}
	io.WriteString(c, "MODE STREAM\r\n")
	if l, err := readLine(); err != nil || !strings.HasPrefix(l, "203") {
		return retry
	}
	const window = 16
	var out []int // sent, in order
	w := bufio.NewWriter(c)
	for {
		select {
		case <-f.stop:
			return append(retry, out...)
		default:
		}
		for len(out) < window {
			var i int
			if len(retry) > 0 {
				i, retry = retry[0], retry[1:]
			} else {
				f.mu.Lock()
				i = f.next
				f.next++
				f.mu.Unlock()
			}
			id, art := killArticle(i, f.groups(i))
			fmt.Fprintf(w, "TAKETHIS %s\r\n", id)
			w.Write(proto.ToWire(art))
			out = append(out, i)
		}
		if err := w.Flush(); err != nil {
			return append(retry, out...)
		}
		l, err := readLine()
		if err != nil {
			return append(retry, out...)
		}
		i := out[0]
		out = out[1:]
		id, _ := killArticle(i, "")
		switch {
		case strings.HasPrefix(l, "239 "+id):
			f.mu.Lock()
			f.acked[id] = true
			f.mu.Unlock()
		case strings.HasPrefix(l, "439 "+id):
			// refused: a duplicate of an article stored before a crash
			// but never acknowledged; not counted as acked.
		default:
			// 400 (shutting down, cannot store): offer again later.
			return append(retry, append([]int{i}, out...)...)
		}
	}
}

// killArticle is article i of the durability test.
func killArticle(i int, groups string) (string, []byte) {
	id := fmt.Sprintf("<kill.%d@test.invalid>", i)
	if groups == "" {
		return id, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Path: upstream.invalid!not-for-mail\nFrom: k@test.invalid\nNewsgroups: %s\nSubject: kill %d\n", groups, i)
	fmt.Fprintf(&b, "Date: %s\nMessage-ID: %s\n\n", time.Now().UTC().Format(time.RFC1123Z), id)
	for l := 0; l < 10+i%50; l++ {
		fmt.Fprintf(&b, "line %d of article %d ..........................................\n", l, i)
	}
	return id, []byte(b.String())
}

// TestKill9 is the durability test: newsfeed is fed over TCP while its
// peers flap, killed with SIGKILL at random moments and restarted; at the
// end every article it acknowledged (239) must have reached every peer that
// wants it. Duplicates (articles offered to a peer more than once) are
// allowed and reported.
func TestKill9(t *testing.T) {
	for _, rt := range []string{"goroutine", "epoll"} {
		t.Run(rt, func(t *testing.T) { testKill9(t, rt) })
	}
}

// testKill9 is TestKill9 with runtime = rt.
func testKill9(t *testing.T, rt string) {
	const kills = 5
	dir := t.TempDir()
	sinkA := nntptest.Start(t, nntptest.Options{Hostname: "sink-a"})
	sinkB := nntptest.Start(t, nntptest.Options{Hostname: "sink-b"})
	spool := filepath.Join(dir, "spool")
	conf := filepath.Join(dir, "newsfeed.toml")
	text := fmt.Sprintf(`listen = "127.0.0.1:0"
spool = %q
pathhost = "relay.test"
stats_interval = "1s"
runtime = %q

[[peer]]
name = "a"
host = "127.0.0.1"
port = %d
connections = 2
reconnect_max = "200ms"

[[peer]]
name = "b"
host = "127.0.0.1"
port = %d
connections = 1
groups = ["*", "!skip.*"]
reconnect_max = "200ms"
`, spool, rt, sinkA.Port(), sinkB.Port())
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "newsfeed.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()

	groups := func(i int) string {
		if i%5 == 0 {
			return "skip.test" // only peer a wants these
		}
		return "misc.test"
	}
	f := &feeder{addr: relayAddr(spool), acked: map[string]bool{}, sent: map[string]bool{},
		stop: make(chan struct{}), done: make(chan struct{}), groups: groups}

	// Peers flap: connections dropped, and now and then refused with 400.
	flapStop := make(chan struct{})
	flapDone := make(chan struct{})
	go func() {
		defer close(flapDone)
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-flapStop:
				return
			case <-time.After(time.Duration(50+rng.IntN(200)) * time.Millisecond):
			}
			s := []*nntptest.Server{sinkA, sinkB}[rng.IntN(2)]
			if rng.IntN(3) == 0 {
				id := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Times: 2, Code: 400, Text: "flapping", Close: true})
				time.AfterFunc(150*time.Millisecond, func() { s.RemoveFault(id) })
			}
			s.DropConns()
		}
	}()

	ch := startChild(t, logf, "-config", conf)
	go f.run()
	rng := rand.New(rand.NewPCG(3, 4))
	for k := 0; k < kills; k++ {
		// Each life acknowledges some articles before it dies, however
		// loaded the machine: wait for progress, then a random moment more.
		f.waitAcked(t, len(f.ackedIDs())+20, 60*time.Second)
		time.Sleep(time.Duration(50+rng.IntN(350)) * time.Millisecond)
		ch.cmd.Process.Signal(syscall.SIGKILL)
		ch.cmd.Wait()
		fmt.Fprintf(logf, "=== test: SIGKILL %d (acked so far %d)\n", k+1, len(f.ackedIDs()))
		ch = startChild(t, logf, "-config", conf)
	}
	time.Sleep(300 * time.Millisecond)
	close(f.stop)
	<-f.done
	close(flapStop)
	<-flapDone

	acked := f.ackedIDs()
	if len(acked) < 100 {
		t.Fatalf("only %d articles acknowledged: the feed barely ran (see %s)", len(acked), logf.Name())
	}
	missing := undelivered(acked, sinkA, sinkB, groups)
	waitDelivered(missing, 60*time.Second)
	ch.cmd.Process.Signal(syscall.SIGTERM)
	if err := ch.cmd.Wait(); err != nil {
		t.Errorf("newsfeed after SIGTERM: %v", err)
	}
	lost := missing()
	if b, err := os.ReadFile(logf.Name()); err != nil || !bytes.Contains(b, []byte(`msg="final stats" peer=b offered=`)) {
		t.Errorf("the log lacks the final stats lines; its end:\n%s", b[max(0, len(b)-3000):])
	} else {
		// The last final stats line of each peer adds up.
		re := regexp.MustCompile(`msg="final stats" peer=(\w+) offered=(\d+) accepted=(\d+) refused=(\d+) rejected=(\d+) deferred=\d+ dropped=(\d+) missing=(\d+) too_old=(\d+) queued=(\d+)`)
		last := map[string][]string{}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			last[m[1]] = m
		}
		for peer, m := range last {
			n := make([]int, len(m))
			for i := 2; i < len(m); i++ {
				n[i], _ = strconv.Atoi(m[i])
			}
			if n[2] != n[3]+n[4]+n[5]+n[6]+n[7]+n[8]+n[9] {
				t.Errorf("peer %s: final stats do not add up: %s", peer, m[0])
			}
		}
		if len(last) != 2 {
			t.Errorf("final stats for %d peers, want 2", len(last))
		}
	}

	// Duplicates: offers of an article to a sink beyond the first.
	dups := 0
	for _, s := range []*nntptest.Server{sinkA, sinkB} {
		checks, takes := map[string]int{}, map[string]int{}
		for _, c := range s.Commands() {
			switch strings.ToUpper(c.Cmd.Verb) {
			case "CHECK":
				checks[c.Cmd.Args[0]]++
			case "TAKETHIS":
				takes[c.Cmd.Args[0]]++
			}
		}
		for id, n := range takes {
			if m := max(n, checks[id]); m > 1 {
				dups += m - 1
			}
		}
	}
	t.Logf("kill -9 durability: %d kills, %d articles acked, %d lost, %d duplicate offers", kills, len(acked), len(lost), dups)
	if len(lost) > 0 {
		t.Errorf("%d acknowledged articles never reached a peer that wants them, e.g. %v (log: %s)", len(lost), lost[:min(5, len(lost))], logf.Name())
	}
}
