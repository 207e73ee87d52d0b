package newsweb

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// testArticle is an article of the test group.
type testArticle struct {
	id, subject, refs, body string
	date                    string
}

func rawArticle(group string, a testArticle) []byte {
	date := a.date
	if date == "" {
		date = "Tue, 02 Jan 2024 03:04:05 +0000"
	}
	h := []string{"Path: test!not-for-mail", "From: Tester <tester@example.com>", "Newsgroups: " + group,
		"Subject: " + a.subject, "Date: " + date, "Message-ID: " + a.id}
	if a.refs != "" {
		h = append(h, "References: "+a.refs)
	}
	return art(h, a.body)
}

// threadArticles is a small group: a thread of five with a missing
// article in the middle (<m2@t> is referenced, never posted) and a single.
var threadArticles = []testArticle{
	{id: "<m1@t>", subject: "Root", body: "the root article\n", date: "Mon, 01 Jan 2024 10:00:00 +0000"},
	{id: "<m3@t>", subject: "Re: Root", refs: "<m1@t> <m2@t>", body: "> quoted from m2\nreply to the missing one\n", date: "Mon, 01 Jan 2024 12:00:00 +0000"},
	{id: "<m4@t>", subject: "Re: Root", refs: "<m1@t>", body: "> the root article\nfirst reply\n", date: "Mon, 01 Jan 2024 11:00:00 +0000"},
	{id: "<m5@t>", subject: "Re: Root", refs: "<m1@t> <m4@t>", body: "reply to m4\n", date: "Mon, 01 Jan 2024 13:00:00 +0000"},
	{id: "<s1@t>", subject: "Single", body: "alone\n", date: "Tue, 02 Jan 2024 09:00:00 +0000"},
	{id: "<xss@t>", subject: "<script>document.title='pwned'</script>", body: "<script>document.title='pwned';document.body.appendChild(document.createElement('blink')).id='pwned'</script>\n<img src=x onerror=\"document.title='pwned'\">\n", date: "Mon, 01 Jan 2024 09:00:00 +0000"},
}

type site struct {
	url  string
	news *nntptest.Server
	fed  *Federated
	reg  *prometheus.Registry // the handler's metrics
	// h is the handler, front what serves it at url.
	h     *Server
	front *Front
}

// startSite runs newsweb's handler over an nntptest server holding
// misc.test (threadArticles) and empty.test.
func startSite(t testing.TB) *site {
	t.Helper()
	news := nntptest.Start(t, nntptest.Options{})
	news.AddGroup(nntptest.Group{Name: "misc.test", Description: "Testing <b>bold</b> & co"})
	news.AddGroup(nntptest.Group{Name: "empty.test", Description: "Nothing here"})
	for _, a := range threadArticles {
		if err := news.AddArticle(nntptest.Article{Raw: rawArticle("misc.test", a)}); err != nil {
			t.Fatal(err)
		}
	}
	return startSiteOver(t, news, news.HostPort())
}

func startSiteOver(t testing.TB, news *nntptest.Server, addrs ...string) *site {
	t.Helper()
	return startSiteWith(t, news, Options{}, addrs...)
}

// startSiteWith is startSiteOver with opts for the handler (PerPage 2 and
// the test's logger and registry unless set).
func startSiteWith(t testing.TB, news *nntptest.Server, opts Options, addrs ...string) *site {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var svcs []*Service
	for i, a := range addrs {
		svcs = append(svcs, NewService(ServerConfig{Addr: a, Priority: i, Connections: 2},
			ServiceOptions{Logger: log, DialTimeout: 5 * time.Second}))
	}
	fed := NewFederated(svcs, FederatedOptions{Logger: log, NoBackground: true})
	reg := prometheus.NewRegistry()
	if opts.PerPage == 0 {
		opts.PerPage = 2
	}
	if opts.Logger == nil {
		opts.Logger = log
	}
	opts.Registerer, opts.Gatherer = reg, reg
	h := New(fed, opts)
	srv := newFrontServer(t, h)
	t.Cleanup(func() { srv.Close(); fed.Close() })
	return &site{url: srv.URL, news: news, fed: fed, reg: reg, h: h, front: srv.front}
}

func get(t testing.TB, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// treeShape lists a thread page's nodes as "depth msgid" from the nested
// lists, so the structure the browser sees is compared, not the markup.
func treeShape(page string) []string {
	tok := regexp.MustCompile(`<ul class="tree( root)?">|</ul>|data-msgid="([^"]*)"`)
	var out []string
	depth := -1
	for _, m := range tok.FindAllStringSubmatch(page, -1) {
		switch {
		case strings.HasPrefix(m[0], "<ul"):
			depth++
		case m[0] == "</ul>":
			depth--
		default:
			out = append(out, fmt.Sprintf("%d %s", depth, html.UnescapeString(m[2])))
		}
	}
	return out
}

func TestPages(t *testing.T) {
	s := startSite(t)

	resp, body := get(t, s.url+"/")
	if resp.StatusCode != 200 {
		t.Fatalf("group list: %d\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{`href="/groups/misc.test"`, "Testing &lt;b&gt;bold&lt;/b&gt; &amp; co", `<td class="num">6<span class="unit"> articles</span></td>`, "Nothing here"} {
		if !strings.Contains(body, want) {
			t.Errorf("group list lacks %q", want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Errorf("Content-Security-Policy %q", csp)
	}

	// Newest activity first, two threads per page.
	_, p1 := get(t, s.url+"/groups/misc.test")
	_, p2 := get(t, s.url+"/groups/misc.test?page=2")
	link := regexp.MustCompile(`class="thread" href="([^"]*)">([^<]*)<`)
	var subjects []string
	for _, p := range []string{p1, p2} {
		for _, m := range link.FindAllStringSubmatch(p, -1) {
			subjects = append(subjects, html.UnescapeString(m[2]))
		}
	}
	want := []string{"Single", "Root", "<script>document.title='pwned'</script>"}
	if d := cmp.Diff(want, subjects); d != "" {
		t.Errorf("threads over two pages (-want +got):\n%s", d)
	}
	if !strings.Contains(p1, `rel="next" href="/groups/misc.test?page=2"`) || !strings.Contains(p2, `rel="prev"`) {
		t.Errorf("pager links missing")
	}

	// The thread as a tree: <m2@t> is missing but keeps <m3@t> in place.
	_, tp := get(t, s.url+"/groups/misc.test/threads/m4@t")
	wantTree := []string{"0 <m1@t>", "1 <m4@t>", "2 <m5@t>", "1 <m2@t>", "2 <m3@t>"}
	if d := cmp.Diff(wantTree, treeShape(tp)); d != "" {
		t.Errorf("thread tree (-want +got):\n%s", d)
	}
	if !strings.Contains(tp, "(article not available)") || !strings.Contains(tp, `class="node current"`) {
		t.Errorf("thread page lacks the placeholder or the current mark:\n%s", tp)
	}

	// An article: headers, quoted text set off, link to its thread.
	_, ap := get(t, s.url+"/articles/m3@t?group=misc.test")
	for _, want := range []string{`<div class="blk q1">&gt; quoted from m2</div>`, `<div class="blk">reply to the missing one</div>`,
		`href="/groups/misc.test/threads/m3@t#` + postAnchor("<m3@t>") + `"`, `<dd class="from">Tester &lt;tester@example.com&gt;</dd>`} {
		if !strings.Contains(ap, want) {
			t.Errorf("article page lacks %q", want)
		}
	}
}

// An article's markup is text: escaped, never elements.
func TestArticleEscaped(t *testing.T) {
	s := startSite(t)
	for _, path := range []string{"/articles/xss@t", "/groups/misc.test?page=2", "/groups/misc.test/threads/xss@t"} {
		resp, body := get(t, s.url+path)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") {
			t.Errorf("%s: article markup reached the page as markup", path)
		}
		if !strings.Contains(body, "&lt;script&gt;") {
			t.Errorf("%s: the script text is not shown escaped", path)
		}
	}
}

func TestAPI(t *testing.T) {
	s := startSite(t)
	var groups struct{ Groups []Group }
	resp, body := get(t, s.url+"/api/groups")
	if err := json.Unmarshal([]byte(body), &groups); err != nil || len(groups.Groups) != 2 {
		t.Fatalf("groups: %v %s", err, body)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Header.Get("Cache-Control") != cacheGroups {
		t.Errorf("ETag %q Cache-Control %q", etag, resp.Header.Get("Cache-Control"))
	}
	resp, body = get(t, s.url+"/api/groups", "If-None-Match", etag)
	if resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("If-None-Match: %d %q, want 304 and no body", resp.StatusCode, body)
	}

	var threads struct {
		HighWater int64 `json:"high_water"`
		Total     int   `json:"total_threads"`
		Threads   []threadRow
	}
	_, body = get(t, s.url+"/api/groups/misc.test/threads")
	if err := json.Unmarshal([]byte(body), &threads); err != nil {
		t.Fatal(err)
	}
	if threads.HighWater != 6 || threads.Total != 3 || len(threads.Threads) != 2 || threads.Threads[0].ID != "<s1@t>" {
		t.Errorf("threads: %s", body)
	}

	var thread struct {
		Group string
		Root  *treeNode
	}
	_, body = get(t, s.url+"/api/threads/m5@t") // group from the article's Newsgroups
	if err := json.Unmarshal([]byte(body), &thread); err != nil {
		t.Fatal(err)
	}
	shape := func(n *treeNode) []string {
		var out []string
		var walk func(n *treeNode, d int)
		walk = func(n *treeNode, d int) {
			out = append(out, fmt.Sprintf("%d %s %v", d, n.ID, n.Missing))
			for _, c := range n.Children {
				walk(c, d+1)
			}
		}
		walk(n, 0)
		return out
	}
	wantShape := []string{"0 <m1@t> false", "1 <m4@t> false", "2 <m5@t> false", "1 <m2@t> true", "2 <m3@t> false"}
	if d := cmp.Diff(wantShape, shape(thread.Root)); d != "" || thread.Group != "misc.test" {
		t.Errorf("thread %q (-want +got):\n%s", thread.Group, d)
	}

	var a struct {
		MessageID string `json:"message_id"`
		Text      string
		Subject   string
	}
	resp, body = get(t, s.url+"/api/articles/%3Cm4@t%3E")
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	if a.MessageID != "<m4@t>" || a.Text != "> the root article\nfirst reply\n" || resp.Header.Get("Cache-Control") != cacheArticle {
		t.Errorf("article: %s", body)
	}
}

func TestErrors(t *testing.T) {
	s := startSite(t)
	for _, tc := range []struct {
		method, path string
		status       int
		contains     string
	}{
		{"GET", "/groups/no.such.group", 404, "No news server has this group"},
		{"GET", "/articles/nope@t", 404, "Not found"},
		{"GET", "/api/articles/nope@t", 404, `"status":404`},
		{"GET", "/api/groups/no.such.group/threads", 404, `"error"`},
		{"GET", "/articles/bad%20id@t", 400, "Bad address"},
		{"GET", "/groups/misc.test?page=zero", 400, "Bad address"},
		{"GET", "/nowhere", 404, "No such page"},
		{"POST", "/api/groups", 405, ""},
		{"GET", "/articles/" + strings.Repeat("x", 5000) + "@t", 414, ""},
	} {
		req, _ := http.NewRequest(tc.method, s.url+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.contains) {
			t.Errorf("%s %s: %d %q, want %d containing %q", tc.method, tc.path, resp.StatusCode, clip(string(b)), tc.status, tc.contains)
		}
	}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// Every server down: 502 with a page that says so.
func TestAllServersDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	s := startSiteOver(t, nil, dead)
	for _, path := range []string{"/", "/groups/misc.test", "/articles/a@t", "/api/groups"} {
		resp, body := get(t, s.url+path)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "None of the news servers behind this site answered") {
			t.Errorf("%s: %d %q", path, resp.StatusCode, clip(body))
		}
	}
}

// etagMatchSlow is the plain reading of If-None-Match that etagMatch walks
// in place.
func etagMatchSlow(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "" { // empty list elements are ignored
			continue
		}
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// FuzzETagMatch: etagMatch agrees with the split-based reading.
func FuzzETagMatch(f *testing.F) {
	for _, h := range []string{"", "*", `"a"`, `W/"a"`, `"b", "a"`, `"b",W/"a" ,`, ` , ,"a-gz"`} {
		f.Add(h, `"a"`)
	}
	f.Add(`"/"a" ,`, "") // a trailing empty element against an empty tag (found by the fuzzer)
	f.Fuzz(func(t *testing.T, header, etag string) {
		if got, want := etagMatch(header, etag), etagMatchSlow(header, etag); got != want {
			t.Errorf("etagMatch(%q, %q) = %v, the split-based reading says %v", header, etag, got, want)
		}
	})
}

// requestCount is newsweb_http_requests_total{route, code} in reg (0 when
// absent).
func requestCount(t *testing.T, reg *prometheus.Registry, route, code string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "newsweb_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] == route && labels["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// Every answer is counted by route and status: the usual ones (200, 304)
// through series looked up once, the others as they happen.
func TestRequestMetrics(t *testing.T) {
	s := startSite(t)
	resp, _ := get(t, s.url+"/articles/m1@t", "Accept-Encoding", "gzip")
	get(t, s.url+"/articles/m1@t")
	get(t, s.url+"/articles/m1@t", "If-None-Match", resp.Header.Get("ETag"))
	get(t, s.url+"/articles/nope@t")
	get(t, s.url+"/nowhere")
	for _, tc := range []struct {
		route, code string
		want        float64
	}{
		{"article", "200", 2}, {"article", "304", 1}, {"article", "404", 1}, {"notfound", "404", 1}, {"group", "200", 0},
	} {
		if got := requestCount(t, s.reg, tc.route, tc.code); got != tc.want {
			t.Errorf("newsweb_http_requests_total{route=%q,code=%q} = %v, want %v", tc.route, tc.code, got, tc.want)
		}
	}
}

// A message-id is one path segment or several ({msgid...}, also
// registered as {msgid}): both reach the same handler with the same,
// unescaped id, on each route that takes one.
func TestMessageIDSegments(t *testing.T) {
	news := nntptest.Start(t, nntptest.Options{})
	news.AddGroup(nntptest.Group{Name: "misc.test"})
	for _, a := range []testArticle{
		{id: "<one@t>", subject: "One segment", body: "one\n"},
		{id: "<two/parts@t>", subject: "Two segments", body: "two\n"},
	} {
		if err := news.AddArticle(nntptest.Article{Raw: rawArticle("misc.test", a)}); err != nil {
			t.Fatal(err)
		}
	}
	s := startSiteOver(t, news, news.HostPort())
	for _, tc := range []struct{ path, want string }{
		{"/articles/one@t", "One segment"},
		{"/articles/two/parts@t", "Two segments"},
		{"/articles/two%2Fparts@t", "Two segments"},
		{"/articles/%6Fne@t", "One segment"},
		{"/api/articles/one@t", `"subject": "One segment"`},
		{"/api/articles/two/parts@t", `"subject": "Two segments"`},
		{"/groups/misc.test/threads/one@t", "One segment"},
		{"/groups/misc.test/threads/two/parts@t", "Two segments"},
		{"/api/threads/two/parts@t?group=misc.test", "two/parts@t"},
	} {
		resp, body := get(t, s.url+tc.path)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d %q, want 200 containing %q", tc.path, resp.StatusCode, clip(body), tc.want)
		}
	}
	if resp, _ := get(t, s.url+"/groups/misc.test/threads/one@t/feed.atom"); resp.StatusCode != http.StatusOK ||
		resp.Header.Get("Content-Type") != "application/atom+xml; charset=utf-8" {
		t.Errorf("thread feed: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// The group page dates the group by its newest article, not by its
// highest-numbered one: in misc.test the last article (<xss@t>) is older
// than <s1@t>.
func TestGroupPageNewestDate(t *testing.T) {
	s := startSite(t)
	_, page := get(t, s.url+"/groups/misc.test")
	if !strings.Contains(page, "the newest dated 2024-01-02 09:00") || strings.Contains(page, "dated 2024-01-01 09:00") {
		t.Errorf("group page does not date the group by its newest article (2024-01-02 09:00):\n%s", clip(page))
	}
}

// newestDated takes the newest Date of the list and of the stats, skips
// dates more than a day ahead, and without a dated article in the list
// says the stats' date is the highest-numbered article's.
func TestNewestDated(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	list := func(dates ...time.Time) *ThreadList {
		tl := &ThreadList{}
		for i, d := range dates {
			tl.Articles = append(tl.Articles, mreader.Summary{Number: int64(i + 1), Date: d})
		}
		return tl
	}
	day := func(d int) time.Time { return now.AddDate(0, 0, d) }
	for _, tc := range []struct {
		what string
		tl   *ThreadList
		st   *GroupStats
		want string
	}{
		{"the newest is not the last", list(day(-1), day(-3)), &GroupStats{LastDate: day(-3)}, "the newest dated 2026-11-28 12:00"},
		{"no stats", list(day(-3), day(-2)), nil, "the newest dated 2026-11-27 12:00"},
		{"the stats newer than the list", list(day(-3)), &GroupStats{LastDate: day(-1)}, "the newest dated 2026-11-28 12:00"},
		{"a date in the future", list(day(-2), day(30)), nil, "the newest dated 2026-11-27 12:00"},
		{"an undated list", list(time.Time{}), &GroupStats{LastDate: day(-5)}, "the highest-numbered one dated 2026-11-24 12:00"},
		{"nothing dated", list(), &GroupStats{}, ""},
	} {
		if got := newestDated(tc.tl, tc.st, now); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.what, got, tc.want)
		}
	}
}
