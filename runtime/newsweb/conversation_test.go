package newsweb

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// addChain adds a thread of n articles to misc.test, each a reply to the
// one before (<c1@t> is the root), so the thread is n deep.
func addChain(t testing.TB, s *site, n int) {
	t.Helper()
	refs := ""
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("<c%d@t>", i)
		subj := "Chain"
		if i > 1 {
			subj = "Re: Chain"
		}
		body := fmt.Sprintf("> line one of %d\n> line two\n> line three\n> line four\nanswer %d\n", i-1, i)
		date := time.Date(2024, 2, 1, 0, i, 0, 0, time.UTC).Format(time.RFC1123Z)
		a := testArticle{id: id, subject: subj, refs: strings.TrimSpace(refs), body: body, date: date}
		if err := s.news.AddArticle(nntptest.Article{Raw: rawArticle("misc.test", a)}); err != nil {
			t.Fatal(err)
		}
		refs += " " + id
	}
}

// postsOf lists a conversation page's posts by message-id.
func postsOf(page string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`data-post="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

func TestConversation(t *testing.T) {
	s := startSite(t)
	resp, body := get(t, s.url+"/groups/misc.test/threads/m1@t")
	if resp.StatusCode != 200 {
		t.Fatalf("thread page: %d\n%s", resp.StatusCode, body)
	}
	// Thread order: each parent before its replies, the missing <m2@t>
	// in its place.
	if d := cmp.Diff([]string{"<m1@t>", "<m4@t>", "<m5@t>", "<m2@t>", "<m3@t>"}, postsOf(body)); d != "" {
		t.Errorf("posts (-want +got):\n%s", d)
	}
	for _, want := range []string{
		"the root article", "first reply", "reply to m4", // bodies in the page
		`<div class="blk q1">&gt; the root article</div>`, // a short quote is not folded
		`<p class="note">(article not available)</p>`,
		`<a class="permalink" href="/articles/m4@t?group=misc.test">`,
		`<a class="parent" href="#` + postAnchor("<m1@t>") + `">`,
		`<a class="feed" href="/groups/misc.test/threads/m1@t/feed.atom">`,
		`<a class="newer" href="/groups/misc.test/threads/s1@t">`, // the group's threads on either side
		`<a class="older" href="/groups/misc.test/threads/xss@t">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("thread page lacks %s", want)
		}
	}
}

// A 52-article thread comes in pages of convPerPage; a link to one of its
// articles opens the page that holds it; long quotes fold; depth beyond
// the indentation is written out.
func TestConversationPages(t *testing.T) {
	s := startSite(t)
	addChain(t, s, 52)
	_, p1 := get(t, s.url+"/groups/misc.test/threads/c1@t")
	got := postsOf(p1)
	if len(got) != convPerPage || got[0] != "<c1@t>" || got[convPerPage-1] != fmt.Sprintf("<c%d@t>", convPerPage) {
		t.Fatalf("page 1 posts: %v", got)
	}
	if !strings.Contains(p1, `<a rel="next" href="/groups/misc.test/threads/c1@t?page=2">Later →</a>`) {
		t.Errorf("page 1 has no link to page 2")
	}
	if !strings.Contains(p1, `<details class="quote"><summary>4 quoted lines</summary><div class="blk q1">&gt; line one of 1`) {
		t.Errorf("a four-line quote is not folded")
	}
	if !strings.Contains(p1, `<span class="depth">depth 9</span>`) || !strings.Contains(p1, `class="post d5"`) || strings.Contains(p1, `class="post d6"`) {
		t.Errorf("deep posts: want indentation capped at d5 and the depth written")
	}
	_, p3 := get(t, s.url+"/groups/misc.test/threads/c45@t")
	got = postsOf(p3)
	if len(got) != 12 || got[0] != "<c41@t>" || got[11] != "<c52@t>" {
		t.Errorf("page of <c45@t>: %v", got)
	}
	if resp, _ := get(t, s.url+"/groups/misc.test/threads/c1@t?page=0"); resp.StatusCode != 400 {
		t.Errorf("page=0: %d", resp.StatusCode)
	}
}

// JSON dates are RFC 3339.
func TestAPIDates(t *testing.T) {
	s := startSite(t)
	var threads struct {
		Threads []struct{ Date, Latest string }
	}
	_, body := get(t, s.url+"/api/groups/misc.test/threads")
	if err := json.Unmarshal([]byte(body), &threads); err != nil || len(threads.Threads) == 0 {
		t.Fatalf("threads: %v\n%s", err, body)
	}
	var art struct{ Date string }
	_, abody := get(t, s.url+"/api/articles/m1@t")
	if err := json.Unmarshal([]byte(abody), &art); err != nil {
		t.Fatal(err)
	}
	var th struct {
		Root struct{ Date string }
	}
	_, tbody := get(t, s.url+"/api/threads/m1@t?group=misc.test")
	if err := json.Unmarshal([]byte(tbody), &th); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{threads.Threads[0].Date, threads.Threads[0].Latest, art.Date, th.Root.Date} {
		if _, err := time.Parse(time.RFC3339, d); err != nil {
			t.Errorf("date %q is not RFC 3339: %v", d, err)
		}
	}
	if art.Date != "2024-01-01T10:00:00Z" {
		t.Errorf("article date %q", art.Date)
	}
}

// Pages go gzipped to clients that take gzip, with their own ETag, and
// plain to those that do not.
func TestGzip(t *testing.T) {
	s := startSite(t)
	addChain(t, s, 5)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	fetch := func(enc string) *http.Response {
		req, _ := http.NewRequest("GET", s.url+"/groups/misc.test/threads/c1@t", nil)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	plainResp := fetch("")
	plain, _ := io.ReadAll(plainResp.Body)
	plainResp.Body.Close()
	zResp := fetch("br;q=1, gzip;q=0.8")
	defer zResp.Body.Close()
	if zResp.Header.Get("Content-Encoding") != "gzip" || plainResp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("Content-Encoding %q with gzip, %q without", zResp.Header.Get("Content-Encoding"), plainResp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(zResp.Body)
	if err != nil {
		t.Fatal(err)
	}
	unz, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unz, plain) {
		t.Errorf("gunzipped body differs from the plain one (%v)", err)
	}
	if zResp.Header.Get("ETag") == plainResp.Header.Get("ETag") || zResp.Header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("ETag %q for both; Vary %q", zResp.Header.Get("ETag"), zResp.Header.Get("Vary"))
	}
	if r := fetch("gzip;q=0"); r.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got %q", r.Header.Get("Content-Encoding"))
	}
}

func TestAcceptsGzip(t *testing.T) {
	for v, want := range map[string]bool{"": false, "gzip": true, "GZIP ; q=0.5": true, "deflate, br": false,
		"*": true, "gzip;q=0": false, "identity, gzip;q=0.001": true, "gzip;q=0.0": false} {
		if got := acceptsGzip(v); got != want {
			t.Errorf("acceptsGzip(%q) = %v", v, got)
		}
	}
}

// The group and thread feeds are Atom documents with news: ids, absolute
// links, and the thread feed with the articles' text.
func TestAtomFeeds(t *testing.T) {
	s := startSite(t)
	type feed struct {
		XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
		ID      string   `xml:"id"`
		Updated string   `xml:"updated"`
		Entries []struct {
			ID      string `xml:"id"`
			Title   string `xml:"title"`
			Updated string `xml:"updated"`
			Link    struct {
				Href string `xml:"href,attr"`
			} `xml:"link"`
			Content string `xml:"content"`
		} `xml:"entry"`
	}
	resp, body := get(t, s.url+"/groups/misc.test/feed.atom")
	var g feed
	if err := xml.Unmarshal([]byte(body), &g); err != nil || resp.Header.Get("Content-Type") != "application/atom+xml; charset=utf-8" {
		t.Fatalf("group feed (%s): %v\n%s", resp.Header.Get("Content-Type"), err, body)
	}
	if len(g.Entries) != len(threadArticles) || g.Entries[0].ID != "news:s1@t" || g.Updated != "2024-01-02T09:00:00Z" ||
		g.Entries[0].Link.Href != s.url+"/articles/s1@t?group=misc.test" || g.ID != s.url+"/groups/misc.test" {
		t.Errorf("group feed: %+v", g)
	}
	_, body = get(t, s.url+"/groups/misc.test/threads/m4@t/feed.atom")
	var th feed
	if err := xml.Unmarshal([]byte(body), &th); err != nil {
		t.Fatalf("thread feed: %v\n%s", err, body)
	}
	var ids []string
	for _, e := range th.Entries {
		ids = append(ids, e.ID)
	}
	if d := cmp.Diff([]string{"news:m5@t", "news:m3@t", "news:m4@t", "news:m1@t"}, ids); d != "" {
		t.Errorf("thread feed entries (-want +got):\n%s", d)
	}
	if len(th.Entries) > 0 && th.Entries[0].Content != "reply to m4\n" {
		t.Errorf("thread feed content %q", th.Entries[0].Content)
	}
	if resp, _ := get(t, s.url+"/groups/misc.test/threads/no@such/feed.atom"); resp.StatusCode != 404 {
		t.Errorf("feed of an unknown thread: %d", resp.StatusCode)
	}
}
