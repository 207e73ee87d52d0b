package newsweb

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// threadHits puts the hits of one thread together, threads in the order
// of their newest hit, each keeping its hits' order.
func TestThreadHits(t *testing.T) {
	hit := func(group, id, subject string) searchHit {
		return searchHit{Group: group, ID: id, Subject: subject, Thread: baseSubject(subject)}
	}
	type thread struct {
		Subject, Group string
		IDs            []string
	}
	for _, tc := range []struct {
		name string
		hits []searchHit
		want []thread
	}{
		{"none", nil, nil},
		{"one", []searchHit{hit("g", "1", "a")}, []thread{{"a", "g", []string{"1"}}}},
		{"replies join their thread", []searchHit{hit("g", "3", "Re: a"), hit("g", "2", "b"), hit("g", "1", "a")},
			[]thread{{"a", "g", []string{"3", "1"}}, {"b", "g", []string{"2"}}}},
		{"case and nested Re:", []searchHit{hit("g", "3", "Re: RE: Tea"), hit("g", "2", "re: tea"), hit("g", "1", "Tea")},
			[]thread{{"Tea", "g", []string{"3", "2", "1"}}}},
		{"groups apart", []searchHit{hit("g", "2", "Re: a"), hit("h", "1", "a")},
			[]thread{{"a", "g", []string{"2"}}, {"a", "h", []string{"1"}}}},
		{"interleaved", []searchHit{hit("g", "4", "Re: b"), hit("g", "3", "Re: a"), hit("g", "2", "b"), hit("g", "1", "a")},
			[]thread{{"b", "g", []string{"4", "2"}}, {"a", "g", []string{"3", "1"}}}},
	} {
		var got []thread
		for _, th := range threadHits(tc.hits) {
			g := thread{Subject: th.Subject, Group: th.Group}
			for _, h := range th.Hits {
				g.IDs = append(g.IDs, h.ID)
			}
			got = append(got, g)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// The search page lists hits under their thread's subject, newest thread

// searchFront serves the site with search over news (conns connections),
// closed when the test ends.
func searchFront(t *testing.T, news *nntptest.Server, conns int) (*frontServer, *Search) {
	t.Helper()
	log := testLogger(t)
	svc := NewService(ServerConfig{Addr: news.HostPort(), Name: "loop", Connections: conns}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	search, err := NewSearch(fed, SearchOptions{Dir: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := newFrontServer(t, New(fed, Options{Logger: log, Search: search}))
	t.Cleanup(func() { srv.Close(); search.Close(); fed.Close() })
	return srv, search
}

// first; the API names each hit's thread.
func TestSearchPageThreads(t *testing.T) {
	news := nntptest.Start(t, nntptest.Options{})
	news.AddGroup(nntptest.Group{Name: "comp.test"})
	for i, subject := range []string{"kettle descaling", "teapot sizes", "Re: kettle descaling", "Re: teapot sizes", "Re: Re: kettle descaling"} {
		if err := news.AddArticle(bodyArticle(i+1, "comp.test", subject, "", "text\n")); err != nil {
			t.Fatal(err)
		}
	}
	srv, search := searchFront(t, news, 2)
	site := struct{ url string }{srv.URL}
	askSearch(t, site.url, "group=comp.test&q=x")
	search.Wait()

	a := askSearch(t, site.url, "group=comp.test&q=tester")
	var threads []string
	for _, h := range a.Hits {
		threads = append(threads, h.ID+" "+h.Thread)
	}
	want := []string{"<b5@t> kettle descaling", "<b4@t> teapot sizes", "<b3@t> kettle descaling", "<b2@t> teapot sizes", "<b1@t> kettle descaling"}
	if d := cmp.Diff(want, threads); d != "" {
		t.Errorf("API hits' threads (-want +got):\n%s", d)
	}

	_, page := get(t, site.url+"/search?group=comp.test&q=tester")
	var got []string
	for _, li := range regexp.MustCompile(`(?s)<h2 class="thread">(.*?)</h2>(.*?)</ul>`).FindAllStringSubmatch(page, -1) {
		g := li[1] + ":"
		for _, m := range regexp.MustCompile(`class="hit" href="/articles/(b\d)@t`).FindAllStringSubmatch(li[2], -1) {
			g += " " + m[1]
		}
		got = append(got, g)
	}
	if d := cmp.Diff([]string{"kettle descaling: b5 b3 b1", "teapot sizes: b4 b2"}, got); d != "" {
		t.Errorf("search page threads (-want +got):\n%s", d)
	}
	if !strings.Contains(page, "5 articles found") {
		t.Errorf("search page does not count the articles:\n%s", page)
	}
}
