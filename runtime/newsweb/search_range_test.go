package newsweb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// The first search of a never-indexed group finds its newest article as
// soon as the first range is in: the index asks the newest range first;
// the page says which articles it searched while older ones are still to
// come; a restart goes on downward from where the range stopped, and the
// finished index covers the whole group once.
func TestSearchNewestFirst(t *testing.T) {
	const n, chunk = 1000, 100
	news := newsServer(t, n)
	log := testLogger(t)
	dir := t.TempDir()
	start := func() (*Search, *frontServer) {
		svc := NewService(ServerConfig{Addr: news.HostPort(), Name: "loop", Connections: 1}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
		fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
		search, err := NewSearch(fed, SearchOptions{Dir: dir, Chunk: chunk, Bodies: "misc.*", Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		srv := newFrontServer(t, New(fed, Options{Logger: log, Search: search}))
		t.Cleanup(func() { srv.Close(); search.Close(); fed.Close() })
		return search, srv
	}
	ranges := func(skip int) []string {
		var out []string
		for _, l := range commandLines(news, skip) {
			if r, ok := strings.CutPrefix(l, "HDR Message-ID "); ok {
				out = append(out, r)
			}
		}
		return out
	}

	// The second range asked fails (HDR: one for the stats, five for the
	// first range, then the second's first; the reader falls back to OVER
	// and HEAD, which fail too): the job stops after the first range.
	news.AddFault(nntptest.Fault{Cmd: "HDR", Nth: 7, Code: 503, Text: "busy"})
	for _, cmd := range []string{"OVER", "XOVER", "HEAD"} {
		news.AddFault(nntptest.Fault{Cmd: cmd, Code: 503, Text: "busy"})
	}
	search, srv := start()
	askSearch(t, srv.URL, "group=misc.test&q=subject")
	search.Wait()
	if d := cmp.Diff([]string{"901-1000", "801-900"}, ranges(0)); d != "" {
		t.Errorf("ranges asked (-want +got):\n%s", d)
	}
	a := askSearch(t, srv.URL, "group=misc.test&q=subject")
	if len(a.Hits) == 0 || a.Hits[0].ID != fmt.Sprintf("<%d@t>", n) || a.Total != chunk || a.Complete {
		t.Fatalf("after the first range: total %d, complete %v, first hit %+v", a.Total, a.Complete, a.Hits[:min(1, len(a.Hits))])
	}
	// The bodies too are indexed newest first, from the first range on.
	if a := askSearch(t, srv.URL, "group=misc.test&q=%22body+1000%22"); len(a.Hits) != 1 || a.Hits[0].ID != fmt.Sprintf("<%d@t>", n) {
		t.Errorf("the newest body after the first range: %+v", a.Hits)
	}
	_, page := get(t, srv.URL+"/search?group=misc.test&q=subject")
	if !strings.Contains(page, "Searched articles 901–1000 of misc.test (100 articles); older ones are still being indexed.") {
		t.Errorf("the page does not say what it searched:\n%s", clip(page))
	}
	search.Close()

	// Restarted, the index goes on below 901.
	news.ClearFaults()
	skip := len(news.Commands())
	search, srv = start()
	askSearch(t, srv.URL, "group=misc.test&q=subject")
	search.Wait()
	var want []string
	for hi := 900; hi > 0; hi -= chunk {
		want = append(want, fmt.Sprintf("%d-%d", hi-chunk+1, hi))
	}
	if d := cmp.Diff(want, ranges(skip)); d != "" {
		t.Errorf("ranges asked after the restart (-want +got):\n%s", d)
	}
	a = askSearch(t, srv.URL, "group=misc.test&q=subject")
	if a.Total != n || !a.Complete || a.Indexed != n {
		t.Errorf("after the restart: total %d, complete %v, indexed %d; want %d, true, %d", a.Total, a.Complete, a.Indexed, n, n)
	}
	if lo, hi := search.ix.Range("misc.test"); lo != 1 || hi != n {
		t.Errorf("range %d-%d, want 1-%d", lo, hi, n)
	}
	if _, page := get(t, srv.URL+"/search?group=misc.test&q=subject"); strings.Contains(page, "Searched articles") {
		t.Errorf("the page of a whole index says it is partial:\n%s", clip(page))
	}
}

// In a browser at 390 and 1280 px, a search of a group still being
// indexed says which articles it searched, and the page fits.
// Screenshots go to $NEWSWEB_SHOTS when set.
func TestBrowserSearchPartial(t *testing.T) {
	ctx := browser(t)
	news := newsServer(t, 300)
	news.AddFault(nntptest.Fault{Cmd: "HDR", Nth: 7, Code: 503, Text: "busy"})
	for _, cmd := range []string{"OVER", "XOVER", "HEAD"} {
		news.AddFault(nntptest.Fault{Cmd: cmd, Code: 503, Text: "busy"})
	}
	log := testLogger(t)
	svc := NewService(ServerConfig{Addr: news.HostPort(), Name: "loop", Connections: 1}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	search, err := NewSearch(fed, SearchOptions{Dir: t.TempDir(), Chunk: 100, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := newFrontServer(t, New(fed, Options{Logger: log, Search: search}))
	t.Cleanup(func() { srv.Close(); search.Close(); fed.Close() })
	askSearch(t, srv.URL, "group=misc.test&q=subject")
	search.Wait()
	for _, width := range []int64{390, 1280} {
		do(t, ctx, "page", chromedp.EmulateViewport(width, 844), chromedp.Navigate(srv.URL+"/search?group=misc.test&q=subject"),
			chromedp.WaitVisible(chromedp.CSS("main")))
		note := run(t, ctx, "note", chromedp.Text(chromedp.CSS("p.note")))
		if !strings.Contains(note, "Searched articles 201–300 of misc.test (100 articles); older ones are still being indexed.") {
			t.Errorf("%d px: the note says %q", width, note)
		}
		w := run(t, ctx, "widths", chromedp.Evaluate[[]float64](`[document.documentElement.scrollWidth, window.innerWidth]`))
		if w[0] > w[1] {
			t.Errorf("%d px: scrollWidth %.0f > viewport %.0f", width, w[0], w[1])
		}
		if dir := os.Getenv("NEWSWEB_SHOTS"); dir != "" {
			shot := run(t, ctx, "screenshot", chromedp.FullScreenshot(100))
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("search-partial-%d.png", width)), shot, 0o644)
		}
	}
}
