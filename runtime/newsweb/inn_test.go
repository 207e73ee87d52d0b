package newsweb

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// innThread is a generated group: articles with their parents, in posting
// order (dates increase with the index).
type innGroup struct {
	ids     []string
	parent  map[string]string // "" for a root
	roots   []string
	threads map[string][]string // root -> its articles in posting order
}

// genGroup makes n articles in threads of random shape (seeded, so the
// same every run): each article either starts a thread (one in eight) or
// answers a random earlier article of a random thread.
func genGroup(n int) innGroup {
	r := rand.New(rand.NewPCG(6, 2024))
	g := innGroup{parent: map[string]string{}, threads: map[string][]string{}}
	root := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("<a%03d@inn.test>", i)
		if i == 0 || r.IntN(8) == 0 {
			g.parent[id], root[id] = "", id
			g.roots = append(g.roots, id)
		} else {
			p := g.ids[r.IntN(len(g.ids))]
			g.parent[id], root[id] = p, root[p]
		}
		g.ids = append(g.ids, id)
		g.threads[root[id]] = append(g.threads[root[id]], id)
	}
	return g
}

// references is the References chain of id (oldest first).
func (g innGroup) references(id string) []string {
	var refs []string
	for p := g.parent[id]; p != ""; p = g.parent[p] {
		refs = append([]string{p}, refs...)
	}
	return refs
}

func (g innGroup) article(i int, group string) []byte {
	id := g.ids[i]
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	h := []string{"Path: poster.inn.test!not-for-mail", fmt.Sprintf("From: Poster %d <p%d@inn.test>", i%7, i%7),
		"Newsgroups: " + group, fmt.Sprintf("Subject: topic %s", strings.Trim(g.threadOf(id), "<>")),
		"Date: " + proto.FormatArticleDate(date), "Message-ID: " + id}
	if refs := g.references(id); len(refs) > 0 {
		h = append(h, "References: "+strings.Join(refs, " "))
	}
	return art(h, fmt.Sprintf("Article %d.\n> quoting the parent\n", i))
}

func (g innGroup) threadOf(id string) string {
	for g.parent[id] != "" {
		id = g.parent[id]
	}
	return id
}

// ihave offers every article to innd with IHAVE (RFC 3977 §6.3.2).
func ihave(t *testing.T, addr string, g innGroup, group string) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(60 * time.Second))
	r := bufio.NewReader(nc)
	line := func() string {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("innd: %v", err)
		}
		return strings.TrimRight(l, "\r\n")
	}
	if l := line(); !strings.HasPrefix(l, "200") {
		t.Fatalf("innd greeting %q", l)
	}
	for i, id := range g.ids {
		fmt.Fprintf(nc, "IHAVE %s\r\n", id)
		if l := line(); !strings.HasPrefix(l, "335") {
			t.Fatalf("IHAVE %s: %q", id, l)
		}
		nc.Write(proto.AppendBlock(nil, g.article(i, group)))
		if l := line(); !strings.HasPrefix(l, "235") {
			t.Fatalf("IHAVE %s: article answered %q", id, l)
		}
	}
	fmt.Fprintf(nc, "QUIT\r\n")
}

// A group of 300 threaded articles posted to a real INN by IHAVE and read
// back from its nnrpd: the JSON API and the HTML pages show every thread
// with exactly the parent of each article.
func TestINNGroupRenders(t *testing.T) {
	const group = "test.threads"
	inn := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: group, Description: "Threads from INN"}}})
	g := genGroup(300)
	ihave(t, inn.Addr(), g, group)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := NewService(ServerConfig{Addr: inn.ReaderAddr(), Name: "inn", Connections: 2},
		ServiceOptions{Logger: log})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	srv := newFrontServer(t, New(fed, Options{Logger: log, PerPage: 100}))
	t.Cleanup(func() { srv.Close(); fed.Close() })

	_, body := get(t, srv.URL+"/")
	if !strings.Contains(body, `href="/groups/test.threads"`) || !strings.Contains(body, "Threads from INN") {
		t.Fatalf("group list:\n%s", body)
	}

	var list struct {
		Articles int
		Total    int `json:"total_threads"`
		Threads  []threadRow
	}
	_, body = get(t, srv.URL+"/api/groups/"+group+"/threads")
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if list.Articles != len(g.ids) || list.Total != len(g.roots) {
		t.Fatalf("INN's group: %d articles in %d threads, want %d in %d", list.Articles, list.Total, len(g.ids), len(g.roots))
	}
	// Newest activity first: a thread's latest article is its last posted.
	for i := 1; i < len(list.Threads); i++ {
		if list.Threads[i-1].Latest < list.Threads[i].Latest {
			t.Errorf("thread %d (latest %s) listed before %d (latest %s)", i-1, list.Threads[i-1].Latest, i, list.Threads[i].Latest)
		}
	}

	// Every thread: each article under exactly its parent.
	for _, root := range g.roots {
		var th struct{ Root *treeNode }
		_, body = get(t, srv.URL+"/api/threads/"+stripID(root)+"?group="+group)
		if err := json.Unmarshal([]byte(body), &th); err != nil || th.Root == nil {
			t.Fatalf("thread %s: %v %s", root, err, clip(body))
		}
		got := map[string]string{}
		var walk func(n *treeNode, parent string)
		walk = func(n *treeNode, parent string) {
			got[n.ID] = parent
			for _, c := range n.Children {
				walk(c, n.ID)
			}
		}
		walk(th.Root, "")
		want := map[string]string{}
		for _, id := range g.threads[root] {
			want[id] = g.parent[id]
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("thread %s: parents (-want +got):\n%s", root, d)
		}
	}

	// The biggest thread's page: the nested lists in document order are a
	// depth-first walk with children oldest first.
	big := g.roots[0]
	for _, r := range g.roots {
		if len(g.threads[r]) > len(g.threads[big]) {
			big = r
		}
	}
	var want []string
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		want = append(want, fmt.Sprintf("%d %s", depth, id))
		for _, c := range g.threads[g.threadOf(id)] { // posting order = date order
			if g.parent[c] == id {
				walk(c, depth+1)
			}
		}
	}
	walk(big, 0)
	_, page := get(t, srv.URL+"/groups/"+group+"/threads/"+stripID(big))
	if d := cmp.Diff(want, treeShape(page)); d != "" {
		t.Errorf("HTML tree of %s (%d articles) (-want +got):\n%s", big, len(g.threads[big]), d)
	}
	t.Logf("INN: %d articles in %d threads, biggest %d articles", len(g.ids), len(g.roots), len(g.threads[big]))
}

// Posting through a real INN: a reply goes out by POST to nnrpd (240),
// is in its thread at once, and once INN's numbered copy comes in by the
// incremental update it replaces the cached one (the count stays right);
// a post to a group INN does not carry is refused (441) with INN's reason.
func TestINNPosting(t *testing.T) {
	const group = "test.post"
	inn := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: group}}})
	g := genGroup(3)
	ihave(t, inn.Addr(), g, group)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := NewService(ServerConfig{Addr: inn.ReaderAddr(), Name: "inn", Connections: 2}, ServiceOptions{Logger: log})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true, Debounce: time.Millisecond})
	p, err := NewPosting(PostingOptions{TrustedHeader: "X-Forwarded-User", FromDomain: "readers.example"})
	if err != nil {
		t.Fatal(err)
	}
	srv := newFrontServer(t, New(fed, Options{Logger: log, Posting: p}))
	t.Cleanup(func() { srv.Close(); fed.Close() })

	get(t, srv.URL+"/groups/"+group) // cache the thread list
	body := fmt.Sprintf(`{"newsgroups":[%q],"subject":"Re: topic","body":"A reply through INN.","references":%q}`, group, g.ids[2])
	resp, out := postJSON(t, http.DefaultClient, srv.URL, "erin", body)
	id, _ := out["message_id"].(string)
	if resp.StatusCode != 201 || id == "" {
		t.Fatalf("post to INN: %d %v", resp.StatusCode, out)
	}
	_, page := get(t, srv.URL+"/groups/"+group+"/threads/"+stripID(g.roots[0]))
	if !strings.Contains(page, "A reply through INN.") {
		t.Errorf("the reply is not on its thread page at once")
	}
	// INN has it, numbered: asked directly, past the caches.
	ev, err := svc.Do(context.Background(), mreader.GetArticle{MessageID: id})
	a, ok := ev.(mreader.ArticleResult)
	if err != nil || !ok || !strings.Contains(string(a.Raw), "References: "+strings.Join(append(g.references(g.ids[2]), g.ids[2]), " ")) {
		t.Fatalf("INN's copy of %s: %v %T\n%s", id, err, ev, a.Raw)
	}
	// INN takes the trace header (it refuses an Injection-Info from a
	// client) and adds its own Injection-Info.
	if h, _, err := proto.ParseHeaders(a.Raw); err != nil || !strings.HasPrefix(h.Get(traceHeader), "readers.example; posting-host=") ||
		h.Get("Injection-Info") == "" || h.Get("From") != `"erin" <erin@readers.example>` {
		t.Errorf("INN's copy lacks the trace, Injection-Info or the account's From:\n%s", a.Raw)
	}
	// The incremental update brings INN's copy; it replaces ours. INN
	// files the article in its overview in its own time: poll, with a
	// deadline that only bounds a hang.
	var list struct{ Articles int }
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, b := get(t, srv.URL+"/api/groups/"+group+"/threads")
		json.Unmarshal([]byte(b), &list)
		tl, _ := fed.Threads(context.Background(), group)
		if n := numberOf(tl, id); n > 0 {
			break
		}
	}
	tl, _ := fed.Threads(context.Background(), group)
	if numberOf(tl, id) == 0 || list.Articles != len(g.ids)+1 {
		t.Errorf("after the update: number %d, %d articles listed, want a number and %d", numberOf(tl, id), list.Articles, len(g.ids)+1)
	}

	resp, out = postJSON(t, http.DefaultClient, srv.URL, "erin", `{"newsgroups":["no.such.group"],"subject":"s","body":"b"}`)
	msg, _ := out["error"].(string)
	if resp.StatusCode != 422 || !strings.HasPrefix(msg, "The news server refused the article: ") || len(msg) < len("The news server refused the article: ")+5 {
		t.Errorf("post to a group INN lacks: %d %q", resp.StatusCode, msg)
	}
	t.Logf("INN refused: %s", msg)
}

// numberOf is the article number of id in tl (0 when absent or unnumbered).
func numberOf(tl *ThreadList, id string) int64 {
	if tl == nil {
		return 0
	}
	for _, a := range tl.Articles {
		if a.MessageID == id {
			return a.Number
		}
	}
	return 0
}

// The whole group, past the thread limit: 1,200 articles in a real INN
// with a thread limit of 500 are the newest list (701-1200) and two
// archive ranges below it (201-700, 1-200), reached by the older links of
// the pages and the API's older_before; together they hold every article
// once, and a range asked for again costs no command.
func TestINNArchivePaging(t *testing.T) {
	const group = "test.archive"
	inn := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: group}}})
	g := genGroup(1200)
	ihave(t, inn.Addr(), g, group)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg)
	svc := NewService(ServerConfig{Addr: inn.ReaderAddr(), Name: "inn", Connections: 2}, ServiceOptions{Logger: log, Metrics: metrics})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true, ThreadLimit: 500, Metrics: metrics})
	srv := newFrontServer(t, New(fed, Options{Logger: log, PerPage: 50}))
	t.Cleanup(func() { srv.Close(); fed.Close() })

	type listing struct {
		Articles int
		Low      int64
		Pages    int
		Older    int64 `json:"older_before"`
		Threads  []threadRow
	}
	var lows []int64
	total, before := 0, int64(0)
	seen := map[string]bool{}
	for {
		base := srv.URL + "/api/groups/" + group + "/threads?"
		if before > 0 {
			base += fmt.Sprintf("before=%d&", before)
		}
		var l listing
		for page := 1; ; page++ {
			_, body := get(t, base+fmt.Sprintf("page=%d", page))
			l = listing{}
			if err := json.Unmarshal([]byte(body), &l); err != nil {
				t.Fatalf("%s page %d: %v %s", base, page, err, clip(body))
			}
			for _, r := range l.Threads {
				seen[r.ID] = true
			}
			if page >= l.Pages {
				break
			}
		}
		total += l.Articles
		lows = append(lows, l.Low)
		if l.Older == 0 {
			break
		}
		if len(lows) > 10 {
			t.Fatalf("no end to the older links: lows %v", lows)
		}
		before = l.Older
	}
	if d := cmp.Diff([]int64{701, 201, 1}, lows); d != "" {
		t.Errorf("ranges' low numbers (-want +got):\n%s", d)
	}
	if total != len(g.ids) {
		t.Errorf("the ranges hold %d articles, want %d", total, len(g.ids))
	}
	if !seen[g.roots[0]] {
		t.Errorf("the oldest thread %s is on no page", g.roots[0])
	}

	// The HTML: the newest list's last page links to the range below it,
	// whose first page links back to the newest.
	_, page := get(t, srv.URL+"/groups/"+group+"?page=1000")
	if !strings.Contains(page, `href="/groups/test.archive?before=701"`) {
		t.Fatalf("the last page of the newest list has no older link:\n%s", page)
	}
	_, page = get(t, srv.URL+"/groups/"+group+"?before=201")
	if !strings.Contains(page, "topic a000@inn.test") || !strings.Contains(page, `rel="prev" href="/groups/test.archive"`) {
		t.Errorf("the oldest range's page:\n%s", page)
	}
	if strings.Contains(page, "before=1\"") {
		t.Errorf("the oldest range links further down:\n%s", page)
	}
	// Cached: the ranges again cost nothing.
	sent := commandCount(t, reg)
	get(t, srv.URL+"/api/groups/"+group+"/threads?before=701")
	get(t, srv.URL+"/groups/"+group+"?before=201&page=2")
	if n := commandCount(t, reg); n != sent {
		t.Errorf("cached archive ranges cost %v commands", n-sent)
	}
	if resp, _ := get(t, srv.URL+"/groups/"+group+"?before=x"); resp.StatusCode != 400 {
		t.Errorf("?before=x: %d, want 400", resp.StatusCode)
	}
}

// commandCount is the NNTP commands reader connections sent so far.
func commandCount(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "newsweb_nntp_commands_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// Search over a real INN's group of 1,200 articles, indexed in ranges of
// 500 at Low priority: subject words, author, dates, across groups; the
// hits name the articles INN holds, and the index survives a restart.
func TestINNSearch(t *testing.T) {
	const group = "test.search"
	inn := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: group}}})
	g := genGroup(1200)
	ihave(t, inn.Addr(), g, group)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := NewService(ServerConfig{Addr: inn.ReaderAddr(), Name: "inn", Connections: 2}, ServiceOptions{Logger: log})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	dir := t.TempDir()
	search, err := NewSearch(fed, SearchOptions{Dir: dir, Chunk: 500, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := newFrontServer(t, New(fed, Options{Logger: log, Search: search}))
	t.Cleanup(func() { srv.Close(); search.Close(); fed.Close() })

	ask := func(query string) searchAnswer { t.Helper(); return askSearch(t, srv.URL, query) }
	if a := ask("group=" + group + "&q=topic"); a.Complete {
		t.Fatalf("complete before any indexing: %+v", a)
	}
	search.Wait()
	root := g.roots[0]
	poster3 := 0
	for i := range g.ids {
		if i%7 == 3 {
			poster3++
		}
	}
	for _, tc := range []struct {
		query string
		total int
	}{
		{"group=" + group + "&q=" + strings.Trim(root, "<>"), len(g.threads[root])},
		{"group=" + group + "&author=poster+3", poster3},
		{"group=" + group + "&q=P3@INN.test", poster3}, // q looks at authors too
		{"group=" + group + "&author=poster+3&until=2024-01-01", poster3},
		{"group=" + group + "&author=poster+3&since=2024-01-02", 0},
		{"q=" + strings.Trim(root, "<>"), len(g.threads[root])}, // across groups
		{"group=" + group + "&q=nothing+like+this", 0},
	} {
		a := ask(tc.query)
		if indexed := a.Indexed; a.Total != tc.total || !a.Complete || (strings.Contains(tc.query, "group=") && indexed != len(g.ids)) {
			t.Errorf("%s: total %d complete %v indexed %d, want %d true %d", tc.query, a.Total, a.Complete, a.Indexed, tc.total, len(g.ids))
		}
		if len(a.Hits) != min(tc.total, maxSearchHits) {
			t.Errorf("%s: %d hits for %d found", tc.query, len(a.Hits), a.Total)
		}
	}
	a := ask("group=" + group + "&q=" + strings.Trim(root, "<>"))
	want := map[string]bool{}
	for _, id := range g.threads[root] {
		want[id] = true
	}
	for i, h := range a.Hits {
		if !want[h.ID] || h.Group != group || h.Number <= 0 {
			t.Errorf("hit %+v is not an article of the thread", h)
		}
		if i > 0 && a.Hits[i-1].Date < h.Date {
			t.Errorf("hits not newest first at %d", i)
		}
	}
	_, page := get(t, srv.URL+"/search?group="+group+"&q="+strings.Trim(root, "<>"))
	if !strings.Contains(page, fmt.Sprintf("%d articles found", len(g.threads[root]))) || !strings.Contains(page, `class="hit" href="/articles/`+stripID(g.threads[root][len(g.threads[root])-1])+`?group=test.search"`) {
		t.Errorf("search page:\n%s", page)
	}
	if resp, _ := get(t, srv.URL+"/api/search?since=yesterday"); resp.StatusCode != 400 {
		t.Errorf("a bad date: %d, want 400", resp.StatusCode)
	}

	// A restart: the index is on disk.
	search.Close()
	again, err := NewSearch(fed, SearchOptions{Dir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if n := again.ix.Len(group); n != len(g.ids) {
		t.Errorf("after a restart %d articles indexed, want %d", n, len(g.ids))
	}
}

// Body search over a real INN: the bodies of a group search_bodies names
// are read from INN at Low priority after its overview, their own text
// found (a phrase, with its snippet), their quotes not.
func TestINNSearchBodies(t *testing.T) {
	const group = "test.bodies"
	inn := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: group}}})
	g := genGroup(300)
	ihave(t, inn.Addr(), g, group)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := NewService(ServerConfig{Addr: inn.ReaderAddr(), Name: "inn", Connections: 2}, ServiceOptions{Logger: log})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	search, err := NewSearch(fed, SearchOptions{Dir: t.TempDir(), Chunk: 100, Bodies: "test.*", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := newFrontServer(t, New(fed, Options{Logger: log, Search: search}))
	t.Cleanup(func() { srv.Close(); search.Close(); fed.Close() })

	type answer struct {
		Total         int
		BodiesIndexed int `json:"bodies_indexed"`
		Hits          []searchHit
	}
	ask := func(query string) answer {
		t.Helper()
		resp, body := get(t, srv.URL+"/api/search?group="+group+"&"+query)
		var a answer
		if err := json.Unmarshal([]byte(body), &a); err != nil || resp.StatusCode != 200 {
			t.Fatalf("search %s: %d %v %s", query, resp.StatusCode, err, clip(body))
		}
		return a
	}
	ask("q=x")
	search.Wait()
	a := ask("q=%22article+117%22")
	if a.BodiesIndexed != len(g.ids) || a.Total != 1 || len(a.Hits) != 1 || a.Hits[0].ID != g.ids[117] {
		t.Fatalf("\"article 117\": bodies indexed %d (want %d), hits %+v", a.BodiesIndexed, len(g.ids), a.Hits)
	}
	if got := snippetText(a.Hits[0].Snippet); got != "[Article 117]." {
		t.Errorf("snippet %q, want %q", got, "[Article 117].")
	}
	if a := ask("q=quoting"); a.Total != 0 {
		t.Errorf("quoted lines indexed: %d hits for a word only they hold", a.Total)
	}
	if a := ask("q=article"); a.Total != len(g.ids) || len(a.Hits) != maxSearchHits {
		t.Errorf("a word of every body: %d found, %d shown", a.Total, len(a.Hits))
	}
}

// Two INN instances carrying one group, the second with more articles:
// the group's list through newsweb is the union, each article once.
func TestINNFederationUnion(t *testing.T) {
	const group = "test.union"
	g := genGroup(12)
	part := g
	part.ids = g.ids[:8]
	first := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: group}}})
	second := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: group}}})
	ihave(t, first.Addr(), part, group)
	ihave(t, second.Addr(), g, group)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var svcs []*Service
	for i, addr := range []string{first.ReaderAddr(), second.ReaderAddr()} {
		svcs = append(svcs, NewService(ServerConfig{Addr: addr, Name: fmt.Sprintf("inn%d", i+1), Priority: i, Connections: 2}, ServiceOptions{Logger: log}))
	}
	fed := NewFederated(svcs, FederatedOptions{Logger: log, NoBackground: true})
	srv := newFrontServer(t, New(fed, Options{Logger: log}))
	t.Cleanup(func() { srv.Close(); fed.Close() })

	_, body := get(t, srv.URL+"/api/groups/"+group+"/threads")
	var list struct {
		Server     string `json:"server"`
		Articles   int    `json:"articles"`
		FromOthers int    `json:"from_other_servers"`
	}
	json.Unmarshal([]byte(body), &list)
	if list.Server != "inn1" || list.Articles != len(g.ids) || list.FromOthers != len(g.ids)-len(part.ids) {
		t.Errorf("the union over two INNs: %+v, want inn1 with %d articles, %d from the other\n%s", list, len(g.ids), len(g.ids)-len(part.ids), body)
	}
	last := g.ids[len(g.ids)-1]
	if _, page := get(t, srv.URL+"/articles/"+stripID(last)); !strings.Contains(page, fmt.Sprintf("Article %d.", len(g.ids)-1)) {
		t.Errorf("the article only the second INN has does not read")
	}
}
