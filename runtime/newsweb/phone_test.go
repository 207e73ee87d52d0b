package newsweb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// hostileLayout adds what breaks narrow layouts: a subject of long words,
// a body line of one long URL and one long word, and a 52-deep thread.
func hostileLayout(t *testing.T, s *site) {
	t.Helper()
	long := testArticle{id: "<long@t>", subject: "Internationalisation considerations for extraordinarily-long-hyphenated-subject-words in newsreaders",
		body: "See https://example.org/" + strings.Repeat("very-long-path-segment/", 12) + " for details.\n" +
			strings.Repeat("unbreakable", 20) + "\n> " + strings.Repeat("quoted words go on and on ", 20) + "\n",
		date: "Wed, 03 Jan 2024 09:00:00 +0000"}
	if err := s.news.AddArticle(nntptest.Article{Raw: rawArticle("misc.test", long)}); err != nil {
		t.Fatal(err)
	}
	addChain(t, s, 52)
}

// At phone width (390 px) and desktop width (1280 px) no page scrolls
// sideways: the document is no wider than the viewport. Screenshots go to
// $NEWSWEB_SHOTS when set, to look at by eye.
func TestBrowserWidths(t *testing.T) {
	ctx := browser(t)
	s := startSite(t)
	hostileLayout(t, s)
	pages := []string{"/", "/groups/misc.test", "/groups/misc.test?page=2", "/groups/misc.test/threads/c1@t",
		"/groups/misc.test/threads/c52@t", "/groups/misc.test/threads/long@t", "/articles/long@t", "/articles/c52@t"}
	for _, width := range []int64{390, 1280} {
		do(t, ctx, "viewport", chromedp.EmulateViewport(width, 844))
		for _, p := range pages {
			do(t, ctx, p, chromedp.Navigate(s.url+p), chromedp.WaitVisible(chromedp.CSS("main")))
			got := run(t, ctx, "widths", chromedp.Evaluate[[]float64](`[document.documentElement.scrollWidth, window.innerWidth,
				Math.max(...Array.from(document.querySelectorAll('main *')).map(e => e.getBoundingClientRect().right))]`))
			if got[0] > got[1] || got[2] > got[1]+0.5 {
				t.Errorf("%d px %s: scrollWidth %.0f, viewport %.0f, rightmost element edge %.1f", width, p, got[0], got[1], got[2])
			}
			if dir := os.Getenv("NEWSWEB_SHOTS"); dir != "" {
				shot := run(t, ctx, "screenshot", chromedp.FullScreenshot(100))
				name := fmt.Sprintf("%d%s.png", width, strings.NewReplacer("/", "_", "?", "_", "=", "_", "@", "_").Replace(p))
				os.WriteFile(filepath.Join(dir, name), shot, 0o644)
			}
		}
	}
	// On a phone the thread list is stacked: the subject cell is as wide
	// as its row and no subject word is broken.
	do(t, ctx, "phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.url+"/groups/misc.test"), chromedp.WaitVisible(chromedp.CSS("table.threads")))
	stacked := run(t, ctx, "stacked", chromedp.Evaluate[bool](`Array.from(document.querySelectorAll('td.subject')).every(td =>
		td.getBoundingClientRect().width >= td.parentElement.getBoundingClientRect().width - 1)`))
	if !stacked {
		t.Errorf("thread list at 390 px: the subject cells are not stacked full width")
	}
}

// A reader on a phone logs in, opens a thread, replies through the form
// and lands on the thread with the reply in it; the page still fits.
// The site's pages ask for Referrer-Policy same-origin, so chromium sends
// the site's Origin with its forms (never "null", which is refused).
func TestBrowserReply(t *testing.T) {
	ctx := browser(t)
	s := postingSite(t, 0, map[string]string{"dora": "secret"})
	do(t, ctx, "phone", chromedp.EmulateViewport(390, 844))
	do(t, ctx, "log in",
		chromedp.Navigate(s.url+"/login?next=/groups/misc.test/threads/m1@t"),
		chromedp.SetValue(chromedp.CSS(`input[name=user]`), "dora"),
		chromedp.SetValue(chromedp.CSS(`input[name=password]`), "secret"),
		chromedp.Click(chromedp.CSS(`form.compose button`)),
		chromedp.WaitVisible(chromedp.CSS("section.conversation")))
	do(t, ctx, "reply form",
		chromedp.Click(chromedp.CSS(`article[data-post="<m4@t>"] a.reply`)),
		chromedp.WaitVisible(chromedp.CSS(`textarea[name=body]`)))
	quoted := run(t, ctx, "quoted", chromedp.Evaluate[string](`document.querySelector('textarea[name=body]').value`))
	if !strings.Contains(quoted, "> first reply") {
		t.Errorf("the reply form does not quote its parent: %q", quoted)
	}
	do(t, ctx, "post",
		chromedp.SetValue(chromedp.CSS(`textarea[name=body]`), quoted+"Replying from a phone."),
		chromedp.Click(chromedp.CSS(`form.compose button`)),
		chromedp.WaitVisible(chromedp.CSS("section.conversation")))
	text := run(t, ctx, "conversation", chromedp.Text(chromedp.CSS("section.conversation")))
	if !strings.Contains(text, "Replying from a phone.") {
		t.Errorf("the reply is not on the thread page: %q", text)
	}
	w := run(t, ctx, "widths", chromedp.Evaluate[[]float64](`[document.documentElement.scrollWidth, window.innerWidth]`))
	if w[0] > w[1] {
		t.Errorf("thread page after the reply: scrollWidth %.0f > viewport %.0f", w[0], w[1])
	}
	// The header names her; its button logs her out (a POST that
	// chromium sends with the site's Origin).
	account := chromedp.Evaluate[string](`document.querySelector('header.top .account').textContent.replace(/\s+/g, ' ').trim()`)
	if who := run(t, ctx, "header", account); who != "dora · Log out" {
		t.Errorf("header of a logged-in reader: %q, want %q", who, "dora · Log out")
	}
	do(t, ctx, "log out",
		chromedp.Click(chromedp.CSS(`form.account button`)),
		chromedp.WaitVisible(chromedp.CSS("table.groups")))
	if who := run(t, ctx, "header", account); who != "Log in" {
		t.Errorf("header after logging out: %q, want %q", who, "Log in")
	}
}

// On a phone the one-box forms (the group filter, the search box) keep
// their button beside the box; the search page's date boxes are wide
// enough for a whole date; the stacked lists say what their numbers
// count, which their hidden column heads say on a desktop.
func TestBrowserPhoneForms(t *testing.T) {
	ctx := browser(t)
	news := startSite(t)
	search, err := NewSearch(news.fed, SearchOptions{Dir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(search.Close)
	s := startSiteWith(t, news.news, Options{Search: search}, news.news.HostPort())
	do(t, ctx, "phone", chromedp.EmulateViewport(390, 844))
	for _, p := range []string{"/", "/groups/misc.test"} {
		do(t, ctx, p, chromedp.Navigate(s.url+p), chromedp.WaitVisible(chromedp.CSS("main")))
		beside := run(t, ctx, "forms", chromedp.Evaluate[bool](`document.querySelectorAll('form.filter').length > 0 && Array.from(document.querySelectorAll('form.filter')).every(f => {
			const i = f.querySelector('input[type=search]').getBoundingClientRect(), b = f.querySelector('button').getBoundingClientRect();
			return b.top < i.bottom && b.left >= i.right; })`))
		if !beside {
			t.Errorf("%s at 390 px: a form's button is not beside its box", p)
		}
	}
	do(t, ctx, "search", chromedp.Navigate(s.url+"/search?group=misc.test&q=root&since=2023-12-31&until=2024-12-31"), chromedp.WaitVisible(chromedp.CSS("main")))
	widths := run(t, ctx, "dates", chromedp.Evaluate[[]float64](`Array.from(document.querySelectorAll('input[type=date]')).map(e => e.getBoundingClientRect().width)`))
	if len(widths) != 2 {
		t.Errorf("search page: %d date boxes, want 2", len(widths))
	}
	for _, w := range widths {
		if w < 130 {
			t.Errorf("search page at 390 px: date boxes %v px wide, want room for a date (130 px)", widths)
			break
		}
	}
	for _, tc := range []struct {
		path, row, want string
	}{
		{"/", "table.groups tbody tr", " articles"},
		{"/groups/misc.test", "table.threads tbody tr", " article"},
	} {
		do(t, ctx, tc.path, chromedp.Navigate(s.url+tc.path), chromedp.WaitVisible(chromedp.CSS("main")))
		if text := run(t, ctx, "row", chromedp.Evaluate[string](`document.querySelector('`+tc.row+`').innerText`)); !strings.Contains(text, tc.want) {
			t.Errorf("%s at 390 px: the first row %q does not say %q", tc.path, text, tc.want)
		}
	}
	do(t, ctx, "desktop", chromedp.EmulateViewport(1280, 844), chromedp.Navigate(s.url+"/groups/misc.test"), chromedp.WaitVisible(chromedp.CSS("main")))
	if text := run(t, ctx, "row", chromedp.Evaluate[string](`document.querySelector('table.threads tbody tr').innerText`)); strings.Contains(text, "article") {
		t.Errorf("at 1280 px the thread row %q repeats the column head", text)
	}
}

// On a phone the header of a reader with a long name keeps the group's
// name whole: the account control goes to a line of its own rather than
// squeezing the group's link into broken pieces, and nothing passes the
// viewport.
func TestBrowserPhoneHeader(t *testing.T) {
	ctx := browser(t)
	s := loginSite(t, map[string]string{"alexandra.longname": "secret"}, PostingOptions{})
	do(t, ctx, "log in",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(s.url+"/login?next=/groups/misc.test"),
		chromedp.SetValue(chromedp.CSS(`input[name=user]`), "alexandra.longname"),
		chromedp.SetValue(chromedp.CSS(`input[name=password]`), "secret"),
		chromedp.Click(chromedp.CSS(`form.compose button`)),
		chromedp.WaitVisible(chromedp.CSS("table.threads")))
	got := run(t, ctx, "header", chromedp.Evaluate[[]float64](`[document.querySelector('header.top .crumbs a').getClientRects().length,
		document.querySelector('header.top .account').getBoundingClientRect().right, window.innerWidth, document.documentElement.scrollWidth]`))
	if got[0] != 1 || got[1] > got[2] || got[3] > got[2] {
		t.Errorf("header at 390 px: the group's link in %.0f pieces, the account's right edge at %.0f, page %.0f wide, viewport %.0f",
			got[0], got[1], got[3], got[2])
	}
}
