package newsweb

import (
	"strings"
	"testing"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// A group's feed entries carry the first lines of their text; the group
// and thread pages advertise their feeds.
func TestFeedText(t *testing.T) {
	s := startSite(t)
	_, feed := get(t, s.url+"/groups/misc.test/feed.atom")
	if !strings.Contains(feed, `<content type="text">&gt; the root article&#xA;first reply`) && !strings.Contains(feed, "first reply") {
		t.Errorf("the group feed's entries lack their text:\n%s", feed)
	}
	if n := strings.Count(feed, "<content "); n != len(threadArticles) {
		t.Errorf("%d of %d entries carry text", n, len(threadArticles))
	}
	for path, want := range map[string]string{
		"/groups/misc.test":              `<link rel="alternate" type="application/atom+xml" title="Atom feed" href="/groups/misc.test/feed.atom">`,
		"/groups/misc.test/threads/m1@t": `<link rel="alternate" type="application/atom+xml" title="Atom feed" href="/groups/misc.test/threads/m1@t/feed.atom">`,
	} {
		if _, page := get(t, s.url+path); !strings.Contains(page, want) {
			t.Errorf("%s does not advertise its feed", path)
		}
	}
	if got := firstLines("a\nb\nc\n", 2); got != "a\nb\n[...]\n" {
		t.Errorf("firstLines: %q", got)
	}
}

// The control, junk and to.* groups are left out of the group list and
// its API unless configured otherwise.
func TestHiddenGroups(t *testing.T) {
	news := nntptest.Start(t, nntptest.Options{})
	for _, g := range []string{"misc.test", "control", "control.cancel", "junk", "to.example", "tomato.recipes"} {
		news.AddGroup(nntptest.Group{Name: g})
	}
	s := startSiteOver(t, news, news.HostPort())
	for _, path := range []string{"/", "/api/groups"} {
		_, body := get(t, s.url+path)
		for _, g := range []string{"control.cancel", `"control"`, "junk", "to.example"} {
			if strings.Contains(body, g) {
				t.Errorf("%s shows %s", path, g)
			}
		}
		if !strings.Contains(body, "tomato.recipes") || !strings.Contains(body, "misc.test") {
			t.Errorf("%s lacks the groups a reader reads", path)
		}
	}
	none, _ := proto.ParseGroupPatterns(nil)
	all := startSiteWith(t, news, Options{HiddenGroups: &none}, news.HostPort())
	if _, body := get(t, all.url+"/api/groups"); !strings.Contains(body, "control.cancel") {
		t.Errorf("with nothing hidden the API lacks control.cancel")
	}
}

// With search on, the group list and every group page carry a search
// box; a search of every group says how many groups are indexed, the
// group read meanwhile among them.
func TestSearchBoxes(t *testing.T) {
	s := startSite(t)
	search, err := NewSearch(s.fed, SearchOptions{Dir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(search.Close)
	site := startSiteWith(t, s.news, Options{Search: search}, s.news.HostPort())
	if _, page := get(t, site.url+"/"); !strings.Contains(page, `<form class="filter searchbox" method="get" action="/search" role="search">`) {
		t.Errorf("the group list has no search box")
	}
	if _, page := get(t, site.url+"/search?q=root"); !strings.Contains(page, "No group is indexed yet.") {
		t.Errorf("a search of every group with none indexed does not say so")
	}
	if _, page := get(t, site.url+"/groups/misc.test"); !strings.Contains(page, `<input type="hidden" name="group" value="misc.test"><input type="search" name="q"`) {
		t.Errorf("the group page has no search box for the group")
	}
	if _, page := get(t, site.url+"/search?q=root"); !strings.Contains(page, "This searched the 1 group indexed so far.") {
		t.Errorf("a search of every group after misc.test was read does not say it searched that one")
	}
	search.Wait()
}

// Search pages are asked by number, from 1 to 100.
func TestSearchPageParam(t *testing.T) {
	s := startSite(t)
	search, err := NewSearch(s.fed, SearchOptions{Dir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(search.Close)
	site := startSiteWith(t, s.news, Options{Search: search}, s.news.HostPort())
	for page, want := range map[string]int{"1": 200, "100": 200, "0": 400, "101": 400, "x": 400} {
		if resp, _ := get(t, site.url+"/search?q=root&page="+page); resp.StatusCode != want {
			t.Errorf("page=%s: %d, want %d", page, resp.StatusCode, want)
		}
	}
}
