package newsweb

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// longThread adds to misc.test a thread of n articles <L0@t>..: each a
// reply to an earlier one, posted in an order unlike the tree's, the
// subject changing at L40 and L80. It returns how many articles have a
// subject other than their parent's.
func longThread(t *testing.T, news *nntptest.Server, n int) (changes int) {
	t.Helper()
	subjects, parents := make([]string, n), make([]int, n)
	start := time.Date(2024, 2, 1, 8, 0, 0, 0, time.UTC)
	refs := map[int][]string{0: nil}
	for i := range n {
		a := testArticle{id: fmt.Sprintf("<L%d@t>", i), subject: "Re: A long topic", body: fmt.Sprintf("Post number %d.\n", i),
			date: start.Add(time.Duration(i) * time.Hour).Format(time.RFC1123Z)}
		if i == 0 {
			a.subject = "A long topic"
		} else {
			p := int(uint32(i)*2654435761%(1<<20)) % i // an earlier post, spread over the thread
			refs[i] = append(append([]string{}, refs[p]...), fmt.Sprintf("<L%d@t>", p))
			a.refs = strings.Join(refs[i], " ")
		}
		if i == 40 || i == 80 {
			a.subject = fmt.Sprintf("Side topic %d (was: A long topic)", i)
		}
		subjects[i] = baseSubject(a.subject)
		if i > 0 {
			parents[i] = int(uint32(i)*2654435761%(1<<20)) % i
			if subjects[i] != subjects[parents[i]] {
				changes++
			}
		}
		if err := news.AddArticle(nntptest.Article{Raw: rawArticle("misc.test", a)}); err != nil {
			t.Fatal(err)
		}
	}
	return changes
}

var (
	outlineLink = regexp.MustCompile(`<div class="node[^"]*" data-msgid="([^"]+)"><a class="article" href="([^"]+)">`)
	postOrder   = regexp.MustCompile(`<article class="post[^"]*" id="[^"]+" data-post="([^"]+)">`)
)

// A long thread: the outline starts closed and links every post to its
// anchor (on this page, or the page that holds it), shows a subject only
// where it changes; a flat by-date view pages the posts oldest first; the
// newest post is a link away in both views.
func TestLongThread(t *testing.T) {
	s := startSite(t)
	changes := longThread(t, s.news, 109)
	_, page := get(t, s.url+"/groups/misc.test/threads/L0@t")
	if !strings.Contains(page, `<details class="outline"><summary>Outline of the 109 posts</summary>`) {
		t.Errorf("the outline of a long thread does not start closed")
	}
	if _, short := get(t, s.url+"/groups/misc.test/threads/m1@t"); !strings.Contains(short, `<details class="outline" open>`) {
		t.Errorf("the outline of a short thread does not start open")
	}
	links := outlineLink.FindAllStringSubmatch(page, -1)
	if len(links) != 109 {
		t.Fatalf("%d outline links, want 109", len(links))
	}
	onPage := map[string]bool{}
	for _, m := range postOrder.FindAllStringSubmatch(page, -1) {
		onPage[html.UnescapeString(m[1])] = true
	}
	for _, m := range links {
		id, href := html.UnescapeString(m[1]), html.UnescapeString(m[2])
		want := "#" + postAnchor(id)
		if !onPage[id] {
			want = "/groups/misc.test/threads/L0@t?page="
		}
		if !strings.HasPrefix(href, want) || !strings.HasSuffix(href, "#"+postAnchor(id)) {
			t.Errorf("outline link of %s: %q, want %q...#%s", id, href, want, postAnchor(id))
		}
	}
	if n := strings.Count(page, `<span class="subj">`); n != changes || changes < 2 {
		t.Errorf("the outline shows %d subjects, want the %d changes", n, changes)
	}
	newest := regexp.MustCompile(`<a class="newest" href="([^"]+)">`).FindStringSubmatch(page)
	if newest == nil || !strings.HasSuffix(newest[1], "#"+postAnchor("<L108@t>")) {
		t.Errorf("newest link %v, want L108's post", newest)
	}

	// By date: 20 a page, oldest first; the last page ends with the newest.
	var order []string
	for p := 1; p <= 6; p++ {
		_, dp := get(t, fmt.Sprintf("%s/groups/misc.test/threads/L0@t?view=date&page=%d", s.url, p))
		for _, m := range postOrder.FindAllStringSubmatch(dp, -1) {
			order = append(order, html.UnescapeString(m[1]))
		}
		if p == 1 && !strings.Contains(dp, `<a class="threaded" href="/groups/misc.test/threads/L0@t">Threaded</a>`) {
			t.Errorf("the by-date view does not link the threaded one")
		}
		if p == 1 && !strings.Contains(dp, `href="/groups/misc.test/threads/L0@t?view=date&amp;page=2"`) {
			t.Errorf("the by-date view's pager leaves the view")
		}
	}
	if len(order) != 109 {
		t.Fatalf("by date: %d posts over 6 pages, want 109", len(order))
	}
	for i, id := range order {
		if id != fmt.Sprintf("<L%d@t>", i) {
			t.Fatalf("by date, post %d is %s, want <L%d@t>", i, id, i)
		}
	}
	_, dp := get(t, s.url+"/groups/misc.test/threads/L0@t?view=date")
	if !strings.Contains(dp, `<a class="newest" href="/groups/misc.test/threads/L0@t?view=date&amp;page=6#`+postAnchor("<L108@t>")+`">`) {
		t.Errorf("the by-date view's newest link does not lead to its last page")
	}
}

// On a phone (390 px) and a desktop (1280 px) the first post of a
// 109-post thread starts within the first screen, the outline closed
// above it. NEWSWEB_SHOTS=DIR keeps the screenshots there.
func TestBrowserLongThread(t *testing.T) {
	ctx := browser(t)
	s := startSite(t)
	longThread(t, s.news, 109)
	for _, vp := range []struct {
		name string
		w, h int64
	}{{"phone", 390, 844}, {"desktop", 1280, 800}} {
		do(t, ctx, vp.name, chromedp.EmulateViewport(vp.w, vp.h), chromedp.Navigate(s.url+"/groups/misc.test/threads/L0@t"),
			chromedp.WaitVisible(chromedp.CSS("section.conversation")))
		top := run(t, ctx, "first post", chromedp.Evaluate[float64](`document.querySelector('article.post').getBoundingClientRect().top`))
		if top >= float64(vp.h)-100 {
			t.Errorf("%s: the first post starts at %.0f px of a %d px screen", vp.name, top, vp.h)
		}
		w := run(t, ctx, "widths", chromedp.Evaluate[[]float64](`[document.documentElement.scrollWidth, window.innerWidth]`))
		if w[0] > w[1] {
			t.Errorf("%s: scrollWidth %.0f > viewport %.0f", vp.name, w[0], w[1])
		}
		if dir := os.Getenv("NEWSWEB_SHOTS"); dir != "" {
			shot := run(t, ctx, "screenshot", chromedp.CaptureScreenshot())
			os.WriteFile(filepath.Join(dir, "longthread-"+vp.name+".png"), shot, 0o644)
		}
	}
}

// Accessibility of a long thread page: a skip link first, every nav
// labelled, a heading per post, and few tab stops before the first post.
func TestBrowserAccessibility(t *testing.T) {
	ctx := browser(t)
	s := startSite(t)
	longThread(t, s.news, 109)
	do(t, ctx, "phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.url+"/groups/misc.test/threads/L0@t"),
		chromedp.WaitVisible(chromedp.CSS("section.conversation")))
	got := run(t, ctx, "audit", chromedp.Evaluate[map[string]any](`(() => {
		const first = document.querySelector('article.post');
		const focusable = Array.from(document.querySelectorAll('a[href], button, input, select, textarea, summary'))
			.filter(e => (e.getClientRects().length > 0 || e.matches('a.skip')) &&
				(e.matches('details > summary') || !e.closest('details:not([open])')));
		const before = focusable.filter(e => e.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING);
		const posts = Array.from(document.querySelectorAll('article.post'));
		return {
			tabStopsBefore: before.length,
			firstFocusable: focusable[0].getAttribute('href'),
			unlabelledNavs: Array.from(document.querySelectorAll('nav')).filter(n => !n.getAttribute('aria-label')).length,
			postsWithoutHeading: posts.filter(p => !p.querySelector('h2')).length,
			posts: posts.length,
			mainTarget: document.getElementById('main') ? document.getElementById('main').tagName : '',
		};
	})()`))
	if n := got["tabStopsBefore"].(float64); n > 15 {
		t.Errorf("%v tab stops before the first post, want at most 15", n)
	}
	if got["firstFocusable"] != "#main" || got["mainTarget"] != "MAIN" {
		t.Errorf("the first tab stop is %v (target %v), want the skip link to <main id=main>", got["firstFocusable"], got["mainTarget"])
	}
	if got["unlabelledNavs"].(float64) != 0 || got["postsWithoutHeading"].(float64) != 0 || got["posts"].(float64) != 20 {
		t.Errorf("audit %v: want every nav labelled and a heading in each of the 20 posts", got)
	}
}
