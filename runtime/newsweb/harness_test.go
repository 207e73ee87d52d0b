package newsweb

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// fakeClock is a clock tests move by hand. It starts at the real time: the
// goroutine runtime turns machine deadlines into socket deadlines, so the
// clock may run ahead of the real one but not behind it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Now()}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testLogger writes slog records to the test log (quiet unless -v or failure).
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = tWriter{}

// article builds a test article with optional references.
func article(id, group, subject string, refs []string, body string) nntptest.Article {
	a := nntptest.NewArticle(id, group, subject, []byte(body))
	if len(refs) > 0 {
		raw := string(a.Raw)
		raw = strings.Replace(raw, "Message-ID: ", "References: "+strings.Join(refs, " ")+"\nMessage-ID: ", 1)
		a.Raw = []byte(raw)
	}
	return a
}

// newsServer starts an nntptest server with group misc.test holding n
// articles <1@t>..<n@t>, each odd one a reply to the one before.
func newsServer(t testing.TB, n int) *nntptest.Server {
	t.Helper()
	s := nntptest.Start(t, nntptest.Options{})
	s.AddGroup(nntptest.Group{Name: "misc.test", Description: "Testing"})
	addArticles(t, s, 1, n)
	return s
}

// addArticles adds <from@t>..<to@t> to misc.test.
func addArticles(t testing.TB, s *nntptest.Server, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		var refs []string
		if i%2 == 0 {
			refs = []string{fmt.Sprintf("<%d@t>", i-1)}
		}
		if err := s.AddArticle(article(fmt.Sprintf("<%d@t>", i), "misc.test", fmt.Sprintf("subject %d", i), refs, fmt.Sprintf("body %d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
}

// service starts a Service for addr with the test's clock and logger.
func service(t testing.TB, cfg ServerConfig, clock *fakeClock, m *Metrics) *Service {
	t.Helper()
	opts := ServiceOptions{Logger: testLogger(t), Metrics: m, RequestTimeout: 20 * time.Second}
	if clock != nil {
		opts.Now = clock.Now
	}
	s := NewService(cfg, opts)
	t.Cleanup(s.Close)
	return s
}

// federated builds a Federated service over the servers at addrs (priority
// in order), with background refresh off.
func federated(t testing.TB, clock *fakeClock, m *Metrics, cfgs ...ServerConfig) *Federated {
	t.Helper()
	var svcs []*Service
	for i, c := range cfgs {
		if c.Priority == 0 {
			c.Priority = i + 1
		}
		opts := ServiceOptions{Logger: testLogger(t), Metrics: m, RequestTimeout: 20 * time.Second, DialTimeout: 5 * time.Second}
		if clock != nil {
			opts.Now = clock.Now
		}
		svcs = append(svcs, NewService(c, opts))
	}
	opts := FederatedOptions{Logger: testLogger(t), Metrics: m, NoBackground: true, IncrementalWait: 20 * time.Second}
	if clock != nil {
		opts.Now = clock.Now
	}
	f := NewFederated(svcs, opts)
	t.Cleanup(f.Close)
	return f
}

// deadAddr is a loopback address that refuses connections for the rest of
// the test (nntptest.RefusedPort).
func deadAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", nntptest.RefusedPort(t))
}

// await polls cond until it holds or the test's time runs out (30 s): a
// wait, not a timed assertion.
func await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// blockArticles makes the server hold every ARTICLE answer until release
// is closed, then answer it from the store.
func blockArticles(s *nntptest.Server, release <-chan struct{}) {
	s.SetHandler("ARTICLE", func(conn int, cmd proto.Command) []byte {
		<-release
		id := cmd.Args[0]
		raw, ok := s.ArticleBytes(id)
		if !ok {
			return proto.AppendResponse(nil, proto.CodeNoSuchID, "No such article")
		}
		return proto.AppendBlock(proto.AppendResponse(nil, proto.CodeArticleFollows, "0 "+id), raw)
	})
}

// commandLines lists the command lines the server received after the first
// skip commands, without the handshake's.
func commandLines(s *nntptest.Server, skip int) []string {
	var out []string
	for i, r := range s.Commands() {
		if i < skip {
			continue
		}
		switch r.Cmd.Verb {
		case "CAPABILITIES", "MODE", "QUIT", "AUTHINFO", "STARTTLS":
			continue
		}
		out = append(out, strings.TrimSpace(r.Cmd.Verb+" "+strings.Join(r.Cmd.Args, " ")))
	}
	return out
}

// searchAnswer is what /api/search answers, as the tests read it.
type searchAnswer struct {
	Total         int
	Complete      bool
	Indexed       int
	BodiesIndexed *int `json:"bodies_indexed"`
	Hits          []searchHit
}

// askSearch asks the server at base's /api/search with query, failing the
// test unless it answers 200 with JSON.
func askSearch(t *testing.T, base, query string) searchAnswer {
	t.Helper()
	resp, body := get(t, base+"/api/search?"+query)
	var a searchAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil || resp.StatusCode != 200 {
		t.Fatalf("search %s: %d %v %s", query, resp.StatusCode, err, clip(body))
	}
	return a
}

// frontServer is newsweb's handler served as cmd/newsweb serves it: the
// http.Server of NewHTTPServer behind a Front, on loopback.
type frontServer struct {
	URL   string
	front *Front
}

// newFrontServer starts h on a Front (the test's stand-in for
// httptest.NewServer); Close ends it.
func newFrontServer(t testing.TB, h http.Handler) *frontServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := NewFront(NewHTTPServer("", h), ln)
	go f.Serve()
	s := &frontServer{URL: "http://" + ln.Addr().String(), front: f}
	t.Cleanup(s.Close)
	return s
}

// Close closes the listener and every connection.
func (s *frontServer) Close() { s.front.Close() }
