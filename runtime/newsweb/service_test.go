package newsweb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// 100 identical requests in flight at one Service cost one ARTICLE: the
// server holds the answer until all 100 have joined the pending request.
func TestServiceCoalesces(t *testing.T) {
	srv := newsServer(t, 3)
	release := make(chan struct{})
	blockArticles(srv, release)
	m := NewMetrics(prometheus.NewRegistry())
	s := service(t, ServerConfig{Addr: srv.HostPort(), Connections: 4}, nil, m)

	const n = 100
	var wg sync.WaitGroup
	results := make([]mreader.Event, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { results[i], errs[i] = s.Do(context.Background(), mreader.GetArticle{MessageID: "<2@t>"}) })
	}
	await(t, "99 asks to join the first", func() bool {
		return testutil.ToFloat64(m.Coalesced.WithLabelValues("server")) == n-1
	})
	close(release)
	wg.Wait()
	want, _ := srv.ArticleBytes("<2@t>")
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("ask %d: %v", i, errs[i])
		}
		r, ok := results[i].(mreader.ArticleResult)
		if !ok || !bytes.Equal(r.Raw, want) {
			t.Fatalf("ask %d: got %#v", i, results[i])
		}
	}
	if got := srv.Count("ARTICLE"); got != 1 {
		t.Errorf("server received %d ARTICLE commands for 100 identical asks, want 1", got)
	}
	if got := testutil.ToFloat64(m.Commands.WithLabelValues(s.Name(), "ARTICLE")); got != 1 {
		t.Errorf("newsweb_nntp_commands_total{command=ARTICLE} = %v, want 1", got)
	}
}

// The same through the Federated service: singleflight, then the cache.
func TestFederatedCoalesces(t *testing.T) {
	srv := newsServer(t, 3)
	release := make(chan struct{})
	blockArticles(srv, release)
	m := NewMetrics(prometheus.NewRegistry())
	f := federated(t, nil, m, ServerConfig{Addr: srv.HostPort(), Connections: 4})

	const n = 100
	var wg sync.WaitGroup
	got := make([]Article, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			got[i], errs[i] = f.Article(context.Background(), "<3@t>")
		})
	}
	close(start)
	await(t, "the first ARTICLE to reach the server", func() bool { return srv.Count("ARTICLE") == 1 })
	close(release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || !bytes.Contains(got[i].Raw, []byte("body 3")) {
			t.Fatalf("ask %d: %v %q", i, errs[i], got[i].Raw)
		}
	}
	if c := srv.Count("ARTICLE"); c != 1 {
		t.Errorf("server received %d ARTICLE commands for 100 concurrent page views, want 1", c)
	}
	// Later views are cache hits.
	for range 10 {
		if _, err := f.Article(context.Background(), "<3@t>"); err != nil {
			t.Fatal(err)
		}
	}
	if c := srv.Count("ARTICLE"); c != 1 {
		t.Errorf("after cached views: %d ARTICLE commands, want 1", c)
	}
	if hits := testutil.ToFloat64(m.CacheHits.WithLabelValues("article")); hits < 10 {
		t.Errorf("article cache hits = %v, want at least 10", hits)
	}
}

// A cached thread list is brought up to date with HDR from its high-water
// mark only, at most once a second per group.
func TestIncrementalThreadUpdate(t *testing.T) {
	srv := newsServer(t, 5)
	clock := newFakeClock()
	f := federated(t, clock, nil, ServerConfig{Addr: srv.HostPort(), Connections: 1})
	ctx := context.Background()

	tl, err := f.Threads(ctx, "misc.test")
	if err != nil {
		t.Fatal(err)
	}
	if tl.HighWater != 5 || len(tl.Articles) != 5 {
		t.Fatalf("first fetch: high water %d, %d articles; want 5, 5", tl.HighWater, len(tl.Articles))
	}
	first := commandLines(srv, 0)
	wantFirst := []string{"GROUP misc.test", "LIST HEADERS",
		"HDR Message-ID 1-5", "HDR References 1-5", "HDR Subject 1-5", "HDR From 1-5", "HDR Date 1-5"}
	if d := cmp.Diff(wantFirst, first); d != "" {
		t.Fatalf("first fetch commands (-want +got):\n%s", d)
	}
	seen := len(srv.Commands())

	// Within the debounce interval a cache hit sends nothing.
	if _, err := f.Threads(ctx, "misc.test"); err != nil {
		t.Fatal(err)
	}
	if got := commandLines(srv, seen); len(got) != 0 {
		t.Fatalf("cache hit within 1 s sent %q, want nothing", got)
	}

	addArticles(t, srv, 6, 8) // <6@t> replies to <5@t>, <8@t> to <7@t>
	clock.Advance(2 * time.Second)
	tl, err = f.Threads(ctx, "misc.test")
	if err != nil {
		t.Fatal(err)
	}
	wantInc := []string{"GROUP misc.test",
		"HDR Message-ID 6-8", "HDR References 6-8", "HDR Subject 6-8", "HDR From 6-8", "HDR Date 6-8"}
	if d := cmp.Diff(wantInc, commandLines(srv, seen)); d != "" {
		t.Fatalf("incremental update commands (-want +got):\n%s", d)
	}
	if tl.HighWater != 8 || len(tl.Articles) != 8 {
		t.Fatalf("after update: high water %d, %d articles; want 8, 8", tl.HighWater, len(tl.Articles))
	}
	root, n := mreader.Find(tl.Threads, "<6@t>")
	if root == nil || root.ID != "<5@t>" || n.Parent != root {
		t.Errorf("<6@t> is not threaded under <5@t>: root %v", root)
	}
	// The thread page is served from the updated list without a fetch.
	seen = len(srv.Commands())
	tv, err := f.Thread(ctx, "misc.test", "<8@t>")
	if err != nil {
		t.Fatal(err)
	}
	if tv.Root.ID != "<7@t>" || len(tv.Root.Children) != 1 {
		t.Errorf("thread of <8@t>: root %s with %d children", tv.Root.ID, len(tv.Root.Children))
	}
	if got := commandLines(srv, seen); len(got) != 0 {
		t.Errorf("thread from the cached list sent %q", got)
	}
}

// Under a saturated pool (one connection, busy) waiting requests run High,
// then Normal, then Low; and after priority_aging without a Low request,
// the Low one goes first.
func TestPriorityAndAging(t *testing.T) {
	for _, tc := range []struct {
		name    string
		advance time.Duration
		want    []string
	}{
		{"priority", 0, []string{"ARTICLE <h1@t>", "ARTICLE <h2@t>", "GROUP normal.g", "GROUP low.g"}},
		{"aging", 11 * time.Second, []string{"GROUP low.g", "ARTICLE <h1@t>", "ARTICLE <h2@t>", "GROUP normal.g"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := nntptest.Start(t, nntptest.Options{})
			for _, g := range []string{"normal.g", "low.g", "block.g"} {
				srv.AddGroup(nntptest.Group{Name: g})
			}
			for _, id := range []string{"<h1@t>", "<h2@t>", "<block@t>"} {
				if err := srv.AddArticle(nntptest.NewArticle(id, "block.g", "s", []byte("b\n"))); err != nil {
					t.Fatal(err)
				}
			}
			release := make(chan struct{})
			blocked := make(chan struct{})
			srv.SetHandler("ARTICLE", func(conn int, cmd proto.Command) []byte {
				if cmd.Args[0] == "<block@t>" {
					close(blocked)
					<-release
				}
				raw, _ := srv.ArticleBytes(cmd.Args[0])
				return proto.AppendBlock(proto.AppendResponse(nil, proto.CodeArticleFollows, "0 "+cmd.Args[0]), raw)
			})
			clock := newFakeClock()
			s := service(t, ServerConfig{Addr: srv.HostPort(), Connections: 1}, clock, nil)
			ctx := context.Background()
			var wg sync.WaitGroup
			wg.Go(func() { s.Do(ctx, mreader.GetArticle{MessageID: "<block@t>"}) })
			<-blocked
			seen := len(srv.Commands())
			// Queued in the worst order for priority: Low first, High last.
			reqs := []mreader.Request{
				mreader.GetGroupStats{Group: "low.g"},
				mreader.GetThreads{Group: "normal.g"},
				mreader.GetArticle{MessageID: "<h1@t>"},
				mreader.GetArticle{MessageID: "<h2@t>"},
			}
			for i, r := range reqs {
				wg.Go(func() {
					if _, err := s.Do(ctx, r); err != nil {
						t.Errorf("%s: %v", r.Key(), err)
					}
				})
				await(t, fmt.Sprintf("request %d queued", i), func() bool {
					return s.QueueLen(mreader.High)+s.QueueLen(mreader.Normal)+s.QueueLen(mreader.Low) == i+1
				})
			}
			clock.Advance(tc.advance)
			close(release)
			wg.Wait()
			var order []string
			for _, l := range commandLines(srv, seen) {
				if l == "ARTICLE <block@t>" {
					continue
				}
				if len(l) > 5 && (l[:5] == "GROUP" || l[:7] == "ARTICLE") {
					order = append(order, l)
				}
			}
			if d := cmp.Diff(tc.want, order); d != "" {
				t.Errorf("order served (-want +got):\n%s", d)
			}
		})
	}
}

// A server that is down, refuses, or lacks the article passes the request
// to the next by priority.
func TestFailover(t *testing.T) {
	second := newsServer(t, 3)
	t.Run("down", func(t *testing.T) {
		f := federated(t, nil, nil, ServerConfig{Addr: deadAddr(t), Name: "dead"}, ServerConfig{Addr: second.HostPort(), Name: "second"})
		a, err := f.Article(context.Background(), "<1@t>")
		if err != nil {
			t.Fatal(err)
		}
		if a.Server != "second" {
			t.Errorf("served by %q, want second", a.Server)
		}
	})
	t.Run("unavailable", func(t *testing.T) {
		busy := nntptest.Start(t, nntptest.Options{})
		busy.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 502, Text: "too busy", Close: true})
		f := federated(t, nil, nil, ServerConfig{Addr: busy.HostPort(), Name: "busy"}, ServerConfig{Addr: second.HostPort(), Name: "second"})
		tl, err := f.Threads(context.Background(), "misc.test")
		if err != nil {
			t.Fatal(err)
		}
		if tl.Server != "second" || len(tl.Articles) != 3 {
			t.Errorf("thread list from %q with %d articles, want second with 3", tl.Server, len(tl.Articles))
		}
	})
	t.Run("not carried", func(t *testing.T) {
		empty := nntptest.Start(t, nntptest.Options{})
		empty.AddGroup(nntptest.Group{Name: "other.g", Description: "Only here"})
		f := federated(t, nil, nil, ServerConfig{Addr: empty.HostPort(), Name: "empty"}, ServerConfig{Addr: second.HostPort(), Name: "second"})
		a, err := f.Article(context.Background(), "<2@t>")
		if err != nil || a.Server != "second" {
			t.Fatalf("article: %v from %q", err, a.Server)
		}
		if c := empty.Count("ARTICLE"); c != 1 {
			t.Errorf("first server asked %d times, want 1", c)
		}
		groups, err := f.Groups(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := []Group{
			{Name: "misc.test", Description: "Testing", Status: "y", Low: 1, High: 3, Count: 3, Servers: []string{"second"}},
			{Name: "other.g", Description: "Only here", Status: "y", Low: 1, High: 0, Count: 0, Servers: []string{"empty"}},
		}
		if d := cmp.Diff(want, groups); d != "" {
			t.Errorf("merged groups (-want +got):\n%s", d)
		}
	})
	t.Run("all down", func(t *testing.T) {
		f := federated(t, nil, nil, ServerConfig{Addr: deadAddr(t)}, ServerConfig{Addr: deadAddr(t)})
		_, err := f.Article(context.Background(), "<1@t>")
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("every server down: %v, want ErrUnavailable", err)
		}
		if _, err := f.Groups(context.Background()); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("groups with every server down: %v, want ErrUnavailable", err)
		}
	})
}

// A message-id no server has is remembered for article_not_found's TTL.
func TestNegativeCache(t *testing.T) {
	a := newsServer(t, 1)
	b := newsServer(t, 1)
	clock := newFakeClock()
	m := NewMetrics(prometheus.NewRegistry())
	f := federated(t, clock, m, ServerConfig{Addr: a.HostPort()}, ServerConfig{Addr: b.HostPort()})
	ctx := context.Background()
	for i := range 3 {
		if _, err := f.Article(ctx, "<missing@t>"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("ask %d: %v, want ErrNotFound", i, err)
		}
	}
	if ca, cb := a.Count("ARTICLE"), b.Count("ARTICLE"); ca != 1 || cb != 1 {
		t.Errorf("ARTICLE sent %d and %d times for 3 asks, want 1 and 1", ca, cb)
	}
	if hits := testutil.ToFloat64(m.CacheHits.WithLabelValues("article_not_found")); hits != 2 {
		t.Errorf("negative cache hits %v, want 2", hits)
	}
	clock.Advance(61 * time.Second)
	if err := a.AddArticle(article("<missing@t>", "misc.test", "late", nil, "arrived\n")); err != nil {
		t.Fatal(err)
	}
	got, err := f.Article(ctx, "<missing@t>")
	if err != nil || !bytes.Contains(got.Raw, []byte("arrived")) {
		t.Fatalf("after the TTL: %v %q", err, got.Raw)
	}
}

// Background refresh: a group that is read gets a refresh task; when it is
// due the task fetches only the new articles; after five quiet minutes it
// stops.
func TestBackgroundRefresh(t *testing.T) {
	srv := newsServer(t, 2)
	clock := newFakeClock()
	f := federated(t, clock, nil, ServerConfig{Addr: srv.HostPort(), Connections: 1})
	var logs logbuf.Buffer
	f.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	if _, err := f.Threads(ctx, "misc.test"); err != nil {
		t.Fatal(err)
	}
	if n := f.RefreshTasks(); n != 1 {
		t.Fatalf("%d refresh tasks after the first read, want 1", n)
	}
	if n, _ := f.RunDueRefreshes(); n != 0 {
		t.Fatalf("%d refreshes ran before the period", n)
	}
	addArticles(t, srv, 3, 4)
	seen := len(srv.Commands())
	// One request in 5 minutes: period 30 s (the refresh period table).
	clock.Advance(30 * time.Second)
	n, done := f.RunDueRefreshes()
	if n != 1 {
		t.Fatalf("%d refreshes at 30 s, want 1", n)
	}
	<-done
	want := []string{"GROUP misc.test", "HDR Message-ID 3-4", "HDR References 3-4", "HDR Subject 3-4", "HDR From 3-4", "HDR Date 3-4"}
	if d := cmp.Diff(want, commandLines(srv, seen)); d != "" {
		t.Fatalf("refresh commands (-want +got):\n%s", d)
	}
	tl, ok := f.threads.get("misc.test")
	if !ok || tl.HighWater != 4 || len(tl.Articles) != 4 {
		t.Fatalf("cached list after refresh: %v", tl)
	}
	// Quiet for the whole window: the task stops and fetches nothing.
	seen = len(srv.Commands())
	clock.Advance(301 * time.Second)
	if n, _ := f.RunDueRefreshes(); n != 0 {
		t.Errorf("%d refreshes for a quiet group", n)
	}
	if n := f.RefreshTasks(); n != 0 {
		t.Errorf("%d refresh tasks after 5 quiet minutes, want 0", n)
	}
	if got := commandLines(srv, seen); len(got) != 0 {
		t.Errorf("quiet group: sent %q", got)
	}
	// The refresh's debug lines, in order.
	var msgs []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if m := regexp.MustCompile(`msg="([^"]*)" group=misc.test`).FindStringSubmatch(l); m != nil {
			msgs = append(msgs, m[1])
		}
	}
	want = []string{"Spawning background refresh task", "Group refresh scheduled", "Group refresh scheduled",
		"Triggering incremental update", "Found new articles", "Group inactive, stopping refresh task"}
	if d := cmp.Diff(want, msgs); d != "" {
		t.Errorf("debug log (-want +got):\n%s", d)
	}
	if !strings.Contains(logs.String(), `msg="Group refresh scheduled" group=misc.test rps=0 period_secs=30`) ||
		!strings.Contains(logs.String(), `msg="Found new articles" group=misc.test count=2`) {
		t.Errorf("log lines lack their fields:\n%s", logs.String())
	}
}

// A server that cannot be connected to is not dialled again for every
// request: requests fail at once (so the federated service moves on) until
// the backoff has passed.
func TestServerDownBackoff(t *testing.T) {
	srv := newsServer(t, 1)
	fault := srv.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 502, Text: "too busy", Close: true})
	clock := newFakeClock()
	s := service(t, ServerConfig{Addr: srv.HostPort(), Connections: 2}, clock, nil)
	ctx := context.Background()
	if _, err := s.Do(ctx, mreader.GetArticle{MessageID: "<1@t>"}); err == nil {
		t.Fatal("a server answering 502 served an article")
	}
	conns := srv.Conns()
	for i := range 5 {
		if _, err := s.Do(ctx, mreader.GetArticle{MessageID: fmt.Sprintf("<x%d@t>", i)}); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("request %d during the backoff: %v, want ErrUnavailable", i, err)
		}
	}
	if got := srv.Conns(); got != conns {
		t.Errorf("%d connections during the backoff, want none", got-conns)
	}
	srv.RemoveFault(fault)
	clock.Advance(time.Second)
	if _, err := s.Do(ctx, mreader.GetArticle{MessageID: "<1@t>"}); err != nil {
		t.Fatalf("after the backoff: %v", err)
	}
}

// An article older than the thread data covers still has a thread page: the
// article under placeholders for the ancestors it references.
func TestThreadBeyondLimit(t *testing.T) {
	srv := newsServer(t, 8)
	svc := NewService(ServerConfig{Addr: srv.HostPort()}, ServiceOptions{Logger: testLogger(t)})
	f := NewFederated([]*Service{svc}, FederatedOptions{Logger: testLogger(t), NoBackground: true, ThreadLimit: 3})
	t.Cleanup(f.Close)
	tv, err := f.Thread(context.Background(), "misc.test", "<2@t>")
	if err != nil {
		t.Fatal(err)
	}
	if tv.Root.ID != "<1@t>" || !tv.Root.Placeholder() || len(tv.Root.Children) != 1 || tv.Root.Children[0].ID != "<2@t>" {
		t.Errorf("thread of <2@t>: root %s placeholder=%v children %d", tv.Root.ID, tv.Root.Placeholder(), len(tv.Root.Children))
	}
	if _, err := f.Thread(context.Background(), "misc.test", "<nope@t>"); !errors.Is(err, ErrNotFound) {
		t.Errorf("thread of a missing article: %v, want ErrNotFound", err)
	}
}

// A connection the server closes between requests (an idle timeout) is
// replaced: the next request is sent on a new one and succeeds.
func TestReconnectAfterServerClose(t *testing.T) {
	srv := newsServer(t, 3)
	s := service(t, ServerConfig{Addr: srv.HostPort(), Connections: 1}, nil, nil)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		ev, err := s.Do(ctx, mreader.GetArticle{MessageID: fmt.Sprintf("<%d@t>", i)})
		if err != nil {
			t.Fatalf("article %d: %v", i, err)
		}
		if _, ok := ev.(mreader.ArticleResult); !ok {
			t.Fatalf("article %d: %T", i, ev)
		}
		srv.DropConns()
	}
	if n := srv.Conns(); n != 3 {
		t.Errorf("%d connections for 3 requests with the connection dropped after each, want 3", n)
	}
}

// A thread list's root index answers as mreader.Find does, for every id of
// the list (articles, placeholders for missing parents, ids that appear
// twice) and for an id it does not hold.
func TestThreadListRoot(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var arts []mreader.Summary
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 300 {
		s := mreader.Summary{Number: int64(i + 1), MessageID: fmt.Sprintf("<%d@t>", i), Subject: "s", Date: date.Add(time.Duration(i) * time.Minute)}
		switch {
		case i > 0 && r.IntN(4) != 0:
			s.References = []string{fmt.Sprintf("<%d@t>", r.IntN(i))}
		case r.IntN(5) == 0:
			s.References = []string{fmt.Sprintf("<missing%d@t>", i), fmt.Sprintf("<%d@t>", r.IntN(i+1))}
		}
		if i%50 == 49 {
			s.MessageID = "<0@t>" // a duplicate id
		}
		arts = append(arts, s)
	}
	tl := &ThreadList{CachedThreads: mreader.CachedThreads{Group: "misc.test", Articles: arts, Threads: mreader.Thread(arts)}}
	ids := []string{"<none@t>"}
	mreader.Walk(tl.Threads, func(n *mreader.Node, _ int) bool {
		ids = append(ids, n.ID)
		return true
	})
	for _, id := range ids {
		want, _ := mreader.Find(tl.Threads, id)
		if got := tl.root(id); got != want {
			t.Errorf("root(%s) = %p, Find says %p", id, got, want)
		}
	}
}
