package newsweb

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/spoolfs/searchindex"
)

// bodyArticle is an article in wire form with extra header fields.
func bodyArticle(n int, group, subject, headers, body string) nntptest.Article {
	id := fmt.Sprintf("<b%d@t>", n)
	raw := "From: Tester <tester@example.com>\nNewsgroups: " + group + "\nSubject: " + subject +
		"\nDate: " + time.Date(2024, 1, 2, 3, n, 0, 0, time.UTC).Format(time.RFC1123Z) + "\nMessage-ID: " + id + "\n" + headers + "\n" + body
	return nntptest.Article{MessageID: id, Raw: []byte(raw)}
}

// bodyArticles are comp.test's articles: what is indexed and what is not.
var bodyArticles = []struct {
	subject, headers, body string
}{
	{"plain", "", "The zebrafish regrows its fins.\nSomeone wrote:\n> a quoted kangaroo\n\n-- \nsignature platypus\n"},
	{"latin-1", "MIME-Version: 1.0\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: quoted-printable\n",
		"Un caf=E9 cr=E8me, s'il vous pla=EEt.\n"},
	{"multipart", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n",
		"--XX\nContent-Type: text/plain\n\nalpha words here\n--XX\nContent-Type: text/html\n\n<p>htmlonly</p>\n" +
			"--XX\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\nYXR0YWNobWVudHdvcmQ=\n--XX--\n"},
	{"yenc", "", "=ybegin line=128 size=8 name=x.bin\nyencword\n=yend size=8\n"},
	{"uuencoded", "", "intro text\nbegin 644 file.txt\nuuword\n`\nend\ntrailer text\n"},
	{"viewed first", "", "the cached marmot\n"},
	{"markup", "", "<script>alert(1)</script> needle & thread\n"},
	{"phrase", "", "brown fox jumps over the lazy dog\n"},
	{"phrase apart", "", "the fox is brown\n"},
}

// Body search end to end over a loopback news server: the bodies of the
// groups search_bodies names are indexed after the overview, at Low
// priority; only their own text (no quotes, signature, HTML or binaries);
// a body in the article cache is not fetched again; the snippet is
// escaped; an interrupted index goes on from the range it covers.
func TestSearchBodies(t *testing.T) {
	news := nntptest.Start(t, nntptest.Options{})
	news.AddGroup(nntptest.Group{Name: "comp.test"})
	news.AddGroup(nntptest.Group{Name: "misc.test"})
	for i, a := range bodyArticles {
		if err := news.AddArticle(bodyArticle(i+1, "comp.test", a.subject, a.headers, a.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := news.AddArticle(bodyArticle(100, "misc.test", "elsewhere", "", "the zebrafish again\n")); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := NewService(ServerConfig{Addr: news.HostPort(), Name: "loop", Connections: 2}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	dir := t.TempDir()
	opts := SearchOptions{Dir: dir, Bodies: "comp.*,!comp.binaries.*", Logger: log}
	search, err := NewSearch(fed, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := newFrontServer(t, New(fed, Options{Logger: log, Search: search}))
	t.Cleanup(func() { srv.Close(); search.Close(); fed.Close() })

	// A reader views one article before the index reads bodies.
	if resp, body := get(t, srv.URL+"/api/articles/b6@t"); resp.StatusCode != 200 {
		t.Fatalf("viewing b6: %d %s", resp.StatusCode, clip(body))
	}
	ask := func(query string) searchAnswer { t.Helper(); return askSearch(t, srv.URL, query) }
	ask("group=comp.test&q=x")
	ask("group=misc.test&q=x")
	search.Wait()

	for _, tc := range []struct {
		q    string
		want []string // "message-id snippet", the matches in [brackets]
	}{
		{"zebrafish", []string{"<b1@t> The [zebrafish] regrows its fins. Someone wrote:"}},
		{"kangaroo", nil}, // quoted
		{"platypus", nil}, // signature
		{"café", []string{"<b2@t> Un [café] crème, s'il vous plaît."}},
		{"CRÈME", []string{"<b2@t> Un café [crème], s'il vous plaît."}},
		{"alpha", []string{"<b3@t> [alpha] words here"}},
		{"htmlonly", nil},
		{"attachmentword", nil},
		{"yencword", nil},
		{"uuword", nil},
		{"trailer", []string{"<b5@t> intro text [trailer] text"}},
		{"marmot", []string{"<b6@t> the cached [marmot]"}},
		{`"brown fox"`, []string{"<b8@t> [brown fox] jumps over the lazy dog"}},
		{"brown fox", []string{"<b9@t> the [fox] is [brown]", "<b8@t> [brown] [fox] jumps over the lazy dog"}},
		{"zebrafish fins", []string{"<b1@t> The [zebrafish] regrows its [fins]. Someone wrote:"}},
		{"zebrafish marmot", nil},
		{"plain regrows", []string{"<b1@t> The zebrafish [regrows] its fins. Someone wrote:"}}, // subject and body
	} {
		a := ask("group=comp.test&q=" + url.QueryEscape(tc.q))
		var got []string
		for _, h := range a.Hits {
			got = append(got, h.ID+" "+snippetText(h.Snippet))
		}
		if d := cmp.Diff(tc.want, got); d != "" || a.Total != len(tc.want) {
			t.Errorf("q=%s: total %d, hits (-want +got):\n%s", tc.q, a.Total, d)
		}
	}
	a := ask("group=comp.test&q=zebrafish")
	if a.BodiesIndexed == nil || *a.BodiesIndexed != len(bodyArticles) || a.Indexed != len(bodyArticles) || !a.Complete {
		t.Errorf("comp.test: indexed %d, bodies %v, complete %v; want %d of each", a.Indexed, a.BodiesIndexed, a.Complete, len(bodyArticles))
	}
	// misc.test is not in search_bodies: its bodies are neither fetched
	// nor searched, across groups either.
	if a := ask("group=misc.test&q=zebrafish"); a.Total != 0 || a.BodiesIndexed != nil {
		t.Errorf("misc.test bodies searched: %+v", a)
	}
	if a := ask("q=zebrafish"); len(a.Hits) != 1 || a.Hits[0].Group != "comp.test" {
		t.Errorf("across groups: %+v", a.Hits)
	}
	// One ARTICLE per comp.test article: the reader's for b6, the index's
	// (in the Low queue) for the others; the cache had b6.
	fetched := articleCommands(news)
	var want []string
	for i := range bodyArticles {
		want = append(want, fmt.Sprintf("<b%d@t>", i+1))
	}
	if d := cmp.Diff(want, fetched); d != "" {
		t.Errorf("ARTICLE commands (-want +got):\n%s", d)
	}

	// The page: the snippet escaped, the match marked.
	_, page := get(t, srv.URL+"/search?group=comp.test&q=needle")
	if !strings.Contains(page, `<div class="snippet">&lt;script&gt;alert(1)&lt;/script&gt; <mark>needle</mark> &amp; thread</div>`) || strings.Contains(page, "<script>") {
		t.Errorf("search page snippet:\n%s", page)
	}

	// A restart, and new articles: only they are fetched, above the
	// range indexed.
	search.Close()
	for i := 10; i <= 11; i++ {
		if err := news.AddArticle(bodyArticle(i, "comp.test", "later", "", fmt.Sprintf("later okapi %d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	// (A new Federated: the old one caches the group's stats.)
	svc2 := NewService(ServerConfig{Addr: news.HostPort(), Name: "loop", Connections: 2}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
	fed2 := NewFederated([]*Service{svc2}, FederatedOptions{Logger: log, NoBackground: true})
	again, err := NewSearch(fed2, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv2 := newFrontServer(t, New(fed2, Options{Logger: log, Search: again}))
	t.Cleanup(func() { srv2.Close(); again.Close(); fed2.Close() })
	srv = srv2
	ask("group=comp.test&q=okapi")
	again.Wait()
	if a := ask("group=comp.test&q=okapi"); a.Total != 2 {
		t.Errorf("after a restart, the new articles' bodies: %d found, want 2", a.Total)
	}
	if d := cmp.Diff([]string{"<b10@t>", "<b11@t>"}, articleCommands(news)[len(fetched):]); d != "" {
		t.Errorf("ARTICLE commands after the restart (-want +got):\n%s", d)
	}
}

// snippetText writes a snippet with its matches in brackets.
func snippetText(fs []searchindex.Fragment) string {
	var b strings.Builder
	for _, f := range fs {
		if f.Match {
			b.WriteString("[" + f.Text + "]")
		} else {
			b.WriteString(f.Text)
		}
	}
	return b.String()
}

// articleCommands lists the message-ids of the ARTICLE commands the
// server received, in order of their numbers.
func articleCommands(s *nntptest.Server) []string {
	var out []string
	for _, r := range s.Commands() {
		if r.Cmd.Verb == "ARTICLE" {
			out = append(out, r.Cmd.Args[0])
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	return out
}

// A body file damaged while newsweb was down: the log says where, search
// goes on serving the rest, and the next body pass indexes the lost body
// again.
func TestSearchBodiesDamaged(t *testing.T) {
	news := nntptest.Start(t, nntptest.Options{})
	news.AddGroup(nntptest.Group{Name: "comp.test"})
	for i, a := range bodyArticles {
		if err := news.AddArticle(bodyArticle(i+1, "comp.test", a.subject, a.headers, a.body)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	var logs logbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	start := func() (*Search, string) {
		svc := NewService(ServerConfig{Addr: news.HostPort(), Name: "loop", Connections: 2}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
		fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
		search, err := NewSearch(fed, SearchOptions{Dir: dir, Bodies: "comp.*", Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		srv := newFrontServer(t, New(fed, Options{Logger: log, Search: search}))
		t.Cleanup(func() { srv.Close(); search.Close(); fed.Close() })
		return search, srv.URL
	}
	total := func(base, q string) int {
		t.Helper()
		resp, body := get(t, base+"/api/search?"+q)
		var a struct{ Total int }
		if err := json.Unmarshal([]byte(body), &a); err != nil || resp.StatusCode != 200 {
			t.Fatalf("search %s: %d %v %s", q, resp.StatusCode, err, clip(body))
		}
		return a.Total
	}
	search, base := start()
	total(base, "group=comp.test&q=x")
	search.Wait()
	if n := total(base, "group=comp.test&q=zebrafish"); n != 1 {
		t.Fatalf("zebrafish before the damage: %d", n)
	}
	search.Close()

	// A byte of the first record's text (article 1's) flipped.
	path := filepath.Join(dir, "comp.test.body")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[20] ^= 0x20
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	search, base = start()
	await(t, "the body files loaded", func() bool {
		select {
		case <-search.loaded:
			return true
		default:
			return false
		}
	})
	if !strings.Contains(logs.String(), "comp.test.body: bytes 0-70 damaged: the bodies there are indexed again; the rest is kept") {
		t.Errorf("the log does not say what was damaged:\n%s", logs.String())
	}
	// Searched across groups, no job starts: the index as loaded.
	if n := total(base, "q=zebrafish"); n != 0 {
		t.Errorf("the damaged body still found: %d", n)
	}
	if n, m := total(base, "q=alpha"), total(base, "q=marmot"); n != 1 || m != 1 {
		t.Errorf("the bodies after the damaged one: alpha %d, marmot %d; want 1, 1", n, m)
	}
	if n := total(base, "q=plain"); n != 1 {
		t.Errorf("the damaged article's subject: %d hits, want 1", n)
	}
	// The group's next job indexes the lost body again.
	total(base, "group=comp.test&q=x")
	search.Wait()
	if n := total(base, "q=zebrafish"); n != 1 {
		t.Errorf("the damaged body not indexed again: %d", n)
	}
}

// The search page in a real browser: a body holding <script> and <img
// onerror> matched by a word shows them as text in its snippet, the match
// marked; nothing runs.
func TestBrowserSearchSnippet(t *testing.T) {
	ctx := browser(t)
	news := nntptest.Start(t, nntptest.Options{})
	news.AddGroup(nntptest.Group{Name: "comp.test"})
	body := "Look: <script>document.title='pwned'</script> the needle <img src=x onerror=\"document.title='pwned'\"> here\n"
	if err := news.AddArticle(bodyArticle(1, "comp.test", "hostile", "", body)); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := NewService(ServerConfig{Addr: news.HostPort(), Name: "loop", Connections: 2}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	search, err := NewSearch(fed, SearchOptions{Dir: t.TempDir(), Bodies: "comp.*", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := newFrontServer(t, New(fed, Options{Logger: log, Search: search}))
	t.Cleanup(func() { srv.Close(); search.Close(); fed.Close() })
	get(t, srv.URL+"/api/search?group=comp.test&q=x")
	search.Wait()

	do(t, ctx, "search page", chromedp.Navigate(srv.URL+"/search?group=comp.test&q=needle"), chromedp.WaitVisible(chromedp.CSS(".snippet mark")))
	if m := run(t, ctx, "the mark", chromedp.Text(chromedp.CSS(".snippet mark"))); m != "needle" {
		t.Errorf("marked %q, want needle", m)
	}
	snip := run(t, ctx, "the snippet", chromedp.Text(chromedp.CSS(".snippet")))
	if !strings.Contains(snip, "<script>document.title='pwned'</script> the needle <img src=x") {
		t.Errorf("the snippet does not show the markup as text: %q", snip)
	}
	injected := run(t, ctx, "elements", chromedp.Evaluate[bool](`document.querySelectorAll('main script, main img').length > 0`))
	if title := run(t, ctx, "title", chromedp.Title()); title == "pwned" || injected {
		t.Errorf("the body's markup ran or became elements: title %q, elements %v", title, injected)
	}
}

// TestIndexText: the text a body contributes to the index.
func TestIndexText(t *testing.T) {
	head := "From: a@b\nSubject: s\nMessage-ID: <x@y>\n"
	for _, tc := range []struct{ name, raw, want string }{
		{"plain, quotes and signature left out", head + "\nHello there.\nYou wrote:\n> quoted\n>> deeper\nReply.\n-- \nsig\n",
			"Hello there.\nYou wrote:\nReply.\n"},
		{"yEnc near the start: a binary post, as the page shows it", head + "\nSee the file:\n=ybegin line=128 size=3 name=a.bin\nabc\n=yend size=3\nThanks.\n",
			""},
		{"yEnc further down a text body", head + "\n" + strings.Repeat("words words words\n", 70) + "=ybegin line=128 size=3 name=a.bin\nabc\n=yend size=3\nThanks.\n",
			strings.Repeat("words words words\n", 70) + "Thanks.\n"},
		{"uuencode inside a text body", head + "\nHere:\nbegin 644 a.txt\nM86)C\n`\nend\nBye.\n", "Here:\nBye.\n"},
		{"\"begin\" as a word is text", head + "\nbegin again tomorrow\n", "begin again tomorrow\n"},
		{"base64 text in UTF-8", head + "MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\nR3LDvMOfZQ==\n",
			"Grüße\n"},
		{"alternative: the plain part only", head + "MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=b\n\n--b\nContent-Type: text/plain\n\nplain words\n--b\nContent-Type: text/html\n\n<p>html words</p>\n--b--\n",
			"plain words\n"},
		{"an HTML-only article", head + "MIME-Version: 1.0\nContent-Type: text/html\n\n<p>html words</p>\n", ""},
		{"a binary attachment", head + "MIME-Version: 1.0\nContent-Type: application/zip\nContent-Transfer-Encoding: base64\n\nUEsDBA==\n", ""},
		{"no article", "", ""},
	} {
		if d := cmp.Diff(tc.want, indexText([]byte(tc.raw))); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// BenchmarkIndexText: the text of a 2 KB article with quotes and a
// signature, as the body pass takes it from every article it reads.
func BenchmarkIndexText(b *testing.B) {
	var body strings.Builder
	body.WriteString("From: a@b\nSubject: s\nMessage-ID: <x@y>\n\nSomeone wrote:\n")
	for i := range 10 {
		fmt.Fprintf(&body, "> quoted line %d of the parent article, with some words in it\n", i)
	}
	for i := range 20 {
		fmt.Fprintf(&body, "A line %d of the reply, about generics, channels and the compiler.\n", i)
	}
	body.WriteString("-- \nsignature\n")
	raw := []byte(body.String())
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		indexText(raw)
	}
}
