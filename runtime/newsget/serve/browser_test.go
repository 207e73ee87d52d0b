package serve

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/newsflow/newsflow/runtime/testpeer/chrome"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// headless starts a headless chromium (chrome.Start).
func headless(t *testing.T) context.Context {
	return chrome.Start(t, 1280, 900)
}

// browse runs chromedp steps and waits until the page they leave is
// parsed whole (chrome.Do).
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	chrome.Do(t, ctx, what, steps...)
}

// submit clicks the button of a form, waits until the page that answers
// the post (after its redirect) has loaded, and then runs the steps on
// it. A wait on the steps alone could be met by the page the click
// leaves, and a read of the page during the navigation would find no
// document to read.
func submit(t *testing.T, ctx context.Context, what string, button string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(button)))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if resp == nil || resp.Status != http.StatusOK {
		t.Fatalf("%s: the answer to the post is not a page: %+v", what, resp)
	}
	browse(t, ctx, what, steps...)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, what, js string) T {
	t.Helper()
	return chrome.Run(t, ctx, what, chromedp.Evaluate[T](js))
}

// rowStatus is the status cell of a queue (tr.job) or history (tr.done)
// row, "" when the row is absent.
func rowStatus(t *testing.T, ctx context.Context, class, id string) string {
	t.Helper()
	return eval[string](t, ctx, "row status", fmt.Sprintf(
		`(r => (r?.querySelector('.status')?.textContent ?? '').trim())(document.querySelector('tr.%s[data-id=%q]'))`, class, id))
}

// noOverflow checks that nothing is wider than the viewport.
func noOverflow(t *testing.T, ctx context.Context, url string, width int64) {
	t.Helper()
	browse(t, ctx, "viewport", chromedp.EmulateViewport(width, 900), chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#queue")))
	got := eval[string](t, ctx, "widths", `document.documentElement.scrollWidth + ' ' + window.innerWidth`)
	var sw, vw int64
	fmt.Sscan(got, &sw, &vw)
	if vw != width || sw > vw {
		wide := eval[string](t, ctx, "wide", `Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > window.innerWidth).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).slice(0, 8).join(', ')`)
		t.Errorf("at %d px: scrollWidth %d, viewport %d: the page overflows (%s)", width, sw, vw, wide)
	}
}

// TestBrowserPage drives the page in headless chromium: pause everything,
// upload two NZBs with the form, pause one job and delete the other,
// resume, check the layout at 1280 and 390 px, resume the job and watch
// it reach the history as Completed. A form post without the page's CSRF
// token, or with a foreign Origin, is refused and changes nothing.
func TestBrowserPage(t *testing.T) {
	ctx := headless(t)
	s := nntptest.Start(t, nntptest.Options{})
	a := newPosting("Alpha.mkv", 21, 120_000, 10_000)
	b := newPosting("Beta.mkv", 22, 30_000, 10_000)
	serveArticles(t, s, nil, a, b)
	dir := t.TempDir()
	td := startDaemon(t, dir, s, nil)
	defer td.stop()
	for _, p := range []struct {
		name string
		data []byte
	}{{"Alpha.nzb", poster.NZB(a)}, {"Beta.nzb", poster.NZB(b)}} {
		os.WriteFile(filepath.Join(dir, p.name), p.data, 0o644)
	}

	browse(t, ctx, "open the page", chromedp.Navigate(td.url+"/"), chromedp.WaitVisible(chromedp.CSS("#queue")))
	// A refused post (a 403 page) fails the step that sent it.
	submit(t, ctx, "pause all", "#pause", chromedp.WaitVisible(chromedp.CSS("#resume")))
	for _, n := range []string{"Alpha.nzb", "Beta.nzb"} {
		browse(t, ctx, "choose "+n,
			chromedp.SetUploadFiles(chromedp.CSS(`#upload input[name=nzb]`), []string{filepath.Join(dir, n)}),
			chromedp.SetValue(chromedp.CSS(`#upload select[name=cat]`), "tv"))
		submit(t, ctx, "upload "+n, `#upload button`,
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr.job[data-id="SABnzbd_nzo_%04d"]`, map[string]int{"Alpha.nzb": 1, "Beta.nzb": 2}[n]))))
	}
	alpha, beta := "SABnzbd_nzo_0001", "SABnzbd_nzo_0002"
	queueRows := func() string {
		return eval[string](t, ctx, "queue", `Array.from(document.querySelectorAll('tr.job')).map(r =>
		(r.cells[0]?.firstChild?.textContent ?? '').trim() + ' ' + (r.cells[1]?.querySelector('select')?.value ?? '') + ' ' +
		(r.querySelector('.status')?.textContent ?? '').trim() + ' progress=' + (r.querySelector('progress')?.value ?? '')).join('|')`)
	}
	// page.js swaps the queue's parts in place every few seconds, and a
	// form's answer loads the page anew (a row may be read half parsed):
	// read it until it settles, every cell optional.
	for deadline := time.Now().Add(10 * time.Second); queueRows() != "Alpha tv Paused progress=0|Beta tv Paused progress=0"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("queue rows = %q", queueRows())
			break
		}
	}
	// Sizes in people's units, each file listed.
	if got := eval[string](t, ctx, "sizes", `(document.querySelector('tr.job td[data-label=Size]')?.textContent ?? '') + ' | ' +
		(document.querySelector('tr.job .files li')?.textContent ?? '')`); got != "122.6 KiB (122.6 KiB left) | Alpha.mkv: 0% of 122.6 KiB" {
		t.Errorf("size and files = %q", got)
	}
	submit(t, ctx, "Beta to the top", `tr.job[data-id="SABnzbd_nzo_0002"] button[value=top]`)
	for deadline := time.Now().Add(10 * time.Second); queueRows() != "Beta tv Paused progress=0|Alpha tv Paused progress=0"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("queue rows after moving Beta to the top = %q", queueRows())
		}
	}
	browse(t, ctx, "type the speed limit", chromedp.SendKeys(chromedp.CSS(`#limit input[name=limit]`), "2M"))
	submit(t, ctx, "set the speed limit", `#limit button`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := eval[string](t, ctx, "limit", `(e => e ? e.textContent : '')(document.getElementById('limit-now'))`)
		if got == "2.0 MiB/s" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("speed limit shown %q, want 2.0 MiB/s", got)
		}
	}
	if q := td.api(t, "mode", "queue")["queue"].(map[string]any); q["speedlimit_abs"] != "2097152" {
		t.Errorf("speed limit in the API: %v", q["speedlimit_abs"])
	}

	// Forms without the token, or from elsewhere, change nothing.
	for _, tc := range []struct {
		form   url.Values
		origin string
	}{
		{url.Values{}, ""},
		{url.Values{"csrf": {"guess"}}, ""},
		{url.Values{"csrf": {td.d.csrf}}, "http://evil.example"},
	} {
		req, _ := http.NewRequest("POST", td.url+"/action/resume", strings.NewReader(tc.form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("resume with %v origin %q: %s, want 403", tc.form, tc.origin, resp.Status)
		}
	}
	if q := td.api(t, "mode", "queue")["queue"].(map[string]any); q["paused"] != true {
		t.Errorf("a refused form resumed the queue")
	}

	row := func(id string) string { return fmt.Sprintf(`tr.job[data-id=%q]`, id) }
	submit(t, ctx, "pause Alpha", row(alpha)+` form[action="/action/pause-job"] button`,
		chromedp.WaitVisible(chromedp.CSS(row(alpha)+` form[action="/action/resume-job"]`)))
	submit(t, ctx, "delete Beta", row(beta)+` form[action="/action/delete-job"] button`,
		chromedp.WaitNotPresent(chromedp.CSS(row(beta))))
	submit(t, ctx, "resume all", "#resume", chromedp.WaitVisible(chromedp.CSS("#pause")))
	if st := rowStatus(t, ctx, "job", alpha); st != "Paused" {
		t.Errorf("Alpha after resuming the queue: %q, want Paused (its own pause)", st)
	}

	noOverflow(t, ctx, td.url+"/", 1280)
	screenshot(t, ctx, "queue-1280")
	noOverflow(t, ctx, td.url+"/", 390)
	screenshot(t, ctx, "queue-390")
	if n := eval[int](t, ctx, "unlabelled", `Array.from(document.querySelectorAll('tr.job td')).filter(td =>
		!td.dataset.label && !td.classList.contains('actions') && td.textContent.trim() !== '').length`); n != 0 {
		t.Errorf("%d queue cells without a label at 390 px", n)
	}
	browse(t, ctx, "back to 1280", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(td.url+"/"), chromedp.WaitVisible(chromedp.CSS("#queue")))

	// Wait for the page after the post: Alpha's Resume button gone (it
	// shows Pause, or the job already left the queue).
	submit(t, ctx, "resume Alpha", row(alpha)+` form[action="/action/resume-job"] button`,
		chromedp.WaitNotPresent(chromedp.CSS(row(alpha)+` form[action="/action/resume-job"]`)))
	// The page follows without a reload (page.js).
	for deadline := time.Now().Add(30 * time.Second); rowStatus(t, ctx, "done", alpha) != "Completed"; {
		if time.Now().After(deadline) {
			t.Fatalf("Alpha never showed Completed in the history; queue %q", rowStatus(t, ctx, "job", alpha))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if eval[string](t, ctx, "live", `document.documentElement.dataset.live || ''`) == "" {
		t.Errorf("the history row came without the live update")
	}
	if n := eval[int](t, ctx, "queue rows", `document.querySelectorAll('tr.job').length`); n != 0 {
		t.Errorf("%d rows left in the queue", n)
	}
	if got, err := os.ReadFile(filepath.Join(td.cfg.DownloadDir, "complete", "tv", "Alpha", "Alpha.mkv")); err != nil || string(got) != string(a.Data) {
		t.Errorf("Alpha.mkv: %v, %d bytes", err, len(got))
	}
	if _, err := os.Stat(td.d.jobDir(beta)); !os.IsNotExist(err) {
		t.Errorf("deleted Beta left its folder: %v", err)
	}
	noOverflow(t, ctx, td.url+"/", 390) // with a history row

	// A failed job: its reason shown, then Retry once the server has the
	// article.
	browse(t, ctx, "back to 1280", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(td.url+"/"), chromedp.WaitVisible(chromedp.CSS("#queue")))
	g := newPosting("Gamma.mkv", 23, 20_000, 10_000)
	serveArticles(t, s, func(p poster.Posting, n int) bool { return n == 2 }, g)
	gamma := td.addFile(t, poster.NZB(g), "Gamma.nzb", "tv", "")["nzo_ids"].([]any)[0].(string)
	for deadline := time.Now().Add(30 * time.Second); rowStatus(t, ctx, "done", gamma) != "Failed"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Gamma never showed Failed")
		}
	}
	if r := eval[string](t, ctx, "reason", fmt.Sprintf(`document.querySelector('tr.done[data-id=%q] .reason')?.textContent ?? ''`, gamma)); !strings.Contains(r, "articles missing") {
		t.Errorf("failure reason %q", r)
	}
	screenshot(t, ctx, "history-1280")
	browse(t, ctx, "viewport 390", chromedp.EmulateViewport(390, 900), chromedp.Navigate(td.url+"/"), chromedp.WaitVisible(chromedp.CSS("#history")))
	screenshot(t, ctx, "history-390")
	s.AddArticle(nntptest.Article{MessageID: g.MessageID(2), Raw: g.Article(2)})
	submit(t, ctx, "retry Gamma", fmt.Sprintf(`tr.done[data-id=%q] button.retry`, gamma))
	for deadline := time.Now().Add(30 * time.Second); rowStatus(t, ctx, "done", gamma) != "Completed"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Gamma never showed Completed after Retry: %q", rowStatus(t, ctx, "done", gamma))
		}
	}
	noOverflow(t, ctx, td.url+"/", 390)
}

// screenshot saves the page as NAME.png in $NEWSGET_SCREENSHOTS, when
// set, for people to look at.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("NEWSGET_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
}
