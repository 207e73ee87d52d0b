package newsfeed

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// relayHarness runs a Relay on loopback for a test.
type relayHarness struct {
	t      testing.TB
	r      *Relay
	cfg    *Config
	cancel context.CancelFunc
	done   chan error
}

// testLog is the relays' log in tests: warnings and errors, or everything
// with NEWSFLOW_TEST_LOG=1.
func testLog(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("NEWSFLOW_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

// relayConfig parses a test configuration: listen on a free port, spool in
// dir, pathhost relay.test, and text (peers and more).
func relayConfig(t testing.TB, dir, text string) *Config {
	t.Helper()
	return relayConfigRT(t, "goroutine", dir, text)
}

// runtimes are the connection runtimes the end-to-end tests run under.
var runtimes = []string{"goroutine", "epoll"}

// forRuntimes runs test once per runtime, as a subtest named for it.
func forRuntimes(t *testing.T, test func(t *testing.T, rt string)) {
	for _, rt := range runtimes {
		t.Run(rt, func(t *testing.T) { test(t, rt) })
	}
}

// relayConfigRT is relayConfig with runtime = rt.
func relayConfigRT(t testing.TB, rt, dir, text string) *Config {
	t.Helper()
	head := fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"relay.test\"\nruntime = %q\n", dir, rt)
	if !strings.Contains(text, "stats_interval") {
		head += "stats_interval = \"1h\"\n"
	}
	cfg, err := ParseConfig("test.toml", []byte(head+text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startRelay opens and runs a relay on cfg until the test ends.
func startRelay(t testing.TB, cfg *Config, mod func(*Options)) *relayHarness {
	t.Helper()
	opts := Options{Logger: testLog(t), BackoffBase: 10 * time.Millisecond, ProbeInterval: 50 * time.Millisecond, StopTimeout: 500 * time.Millisecond}
	if mod != nil {
		mod(&opts)
	}
	r, err := Open(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &relayHarness{t: t, r: r, cfg: cfg, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- r.Run(ctx) }()
	t.Cleanup(func() { h.stop() })
	return h
}

// stop shuts the relay down and returns Run's result (once; later calls
// return nil).
func (h *relayHarness) stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		return err
	case <-time.After(30 * time.Second):
		h.t.Error("relay did not stop within 30s")
		return nil
	}
}

// settle waits until no peer has anything queued, and fails the test
// after a generous bound.
func (h *relayHarness) settle() {
	h.t.Helper()
	waitFor(h.t, 30*time.Second, "every peer's queue to drain", func() bool {
		for _, p := range h.r.Status().Peers {
			if p.Queued != 0 {
				return false
			}
		}
		return true
	}, func() string { return h.r.StatsLines() })
}

// checkStats fails the test if a peer's counts do not add up.
func (h *relayHarness) checkStats() {
	h.t.Helper()
	for _, p := range h.r.Status().Peers {
		if err := p.Check(); err != nil {
			h.t.Error(err)
		}
	}
}

// peerText is a [[peer]] table for sink s.
func peerText(name string, s *nntptest.Server, extra string) string {
	return fmt.Sprintf("[[peer]]\nname = %q\nhost = \"127.0.0.1\"\nport = %d\nreconnect_max = \"200ms\"\n%s\n", name, s.Port(), extra)
}

// waitFor polls cond until it holds; after limit it fails the test with
// what and the output of show. The limit only bounds a hung test.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool, show func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			extra := ""
			if show != nil {
				extra = "\n" + show()
			}
			t.Fatalf("gave up waiting for %s%s", what, extra)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testArticle builds a native article.
func testArticle(id, groups, path string, bodyLines int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Path: %s\nFrom: Tester <t@example.invalid>\nNewsgroups: %s\nSubject: test %s\n", path, groups, id)
	fmt.Fprintf(&b, "Date: %s\nMessage-ID: %s\n\n", time.Now().UTC().Format(time.RFC1123Z), id)
	for i := 0; i < bodyLines; i++ {
		fmt.Fprintf(&b, "body line %d of %s, padded to look like text...........................\n", i, id)
	}
	return []byte(b.String())
}

// ingestClient is a raw NNTP client feeding the relay's listener.
type ingestClient struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

func dialIngest(t testing.TB, addr string) *ingestClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ic := &ingestClient{t: t, c: c, br: bufio.NewReader(c)}
	if g := ic.line(); !strings.HasPrefix(g, "200 ") {
		t.Fatalf("greeting %q", g)
	}
	return ic
}

// line reads one response line (without CRLF); "" at EOF.
func (ic *ingestClient) line() string {
	ic.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	l, err := ic.br.ReadString('\n')
	if err != nil && l == "" {
		return ""
	}
	return strings.TrimRight(l, "\r\n")
}

// cmd sends one command and returns the response line.
func (ic *ingestClient) cmd(line string) string {
	if _, err := io.WriteString(ic.c, line+"\r\n"); err != nil {
		return ""
	}
	return ic.line()
}

// takethis pipelines TAKETHIS for every article (after MODE STREAM) and
// returns the response codes by message-id.
func (ic *ingestClient) takethis(arts map[string][]byte) map[string]string {
	ic.t.Helper()
	if r := ic.cmd("MODE STREAM"); !strings.HasPrefix(r, "203") {
		ic.t.Fatalf("MODE STREAM: %q", r)
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range arts {
			if !yield(id) {
				return
			}
		}
	})
	go func() {
		w := bufio.NewWriter(ic.c)
		for _, id := range ids {
			fmt.Fprintf(w, "TAKETHIS %s\r\n", id)
			w.Write(proto.ToWire(arts[id]))
		}
		w.Flush()
	}()
	got := map[string]string{}
	for range ids {
		l := ic.line()
		f := strings.Fields(l)
		if len(f) < 2 {
			got["?"] = l
			break
		}
		got[f[1]] = f[0]
	}
	return got
}
