package newsweb

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// The very first search of a never-indexed group answers from the newest
// range: the request waits for that range instead of saying "no article
// yet" with nothing found; right after a restart, an index that reaches
// down to article 1 never says older articles are still to come.
func TestSearchFirstAnswerFinds(t *testing.T) {
	const n = 50
	news := newsServer(t, n)
	log := testLogger(t)
	dir := t.TempDir()
	start := func() (*Search, *frontServer) {
		svc := NewService(ServerConfig{Addr: news.HostPort(), Name: "loop", Connections: 1}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
		fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
		search, err := NewSearch(fed, SearchOptions{Dir: dir, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		srv := newFrontServer(t, New(fed, Options{Logger: log, Search: search}))
		t.Cleanup(func() { srv.Close(); search.Close(); fed.Close() })
		return search, srv
	}
	search, srv := start()
	a := askSearch(t, srv.URL, "group=misc.test&q=subject")
	if a.Total != n || len(a.Hits) == 0 || a.Hits[0].ID != fmt.Sprintf("<%d@t>", n) {
		t.Fatalf("first search: total %d, hits %+v", a.Total, a.Hits[:min(1, len(a.Hits))])
	}
	search.Wait()
	search.Close()

	search, srv = start()
	defer search.Wait()
	_, page := get(t, srv.URL+"/search?group=misc.test&q=subject")
	if strings.Contains(page, "older ones are still being indexed") {
		t.Errorf("after a restart, a whole index says older articles are to come:\n%s", clip(page))
	}
}

// A search of all groups indexes the groups read here that have nothing
// indexed yet, and its first answer finds their newest articles; a group
// nobody has read is not indexed by it.
func TestSearchWideIndexesVisited(t *testing.T) {
	const n = 50
	news := newsServer(t, n)
	news.AddGroup(nntptest.Group{Name: "other.test"})
	if err := news.AddArticle(nntptest.Article{Raw: rawArticle("other.test", testArticle{id: "<o1@t>", subject: "subject elsewhere", body: "x\n"})}); err != nil {
		t.Fatal(err)
	}
	srv, search := searchFront(t, news, 1)
	defer search.Wait()

	if a := askSearch(t, srv.URL, "q=subject"); a.Total != 0 {
		t.Fatalf("a search of all groups before any was read found %d", a.Total)
	}
	if resp, _ := get(t, srv.URL+"/groups/misc.test"); resp.StatusCode != 200 {
		t.Fatalf("group page: %d", resp.StatusCode)
	}
	a := askSearch(t, srv.URL, "q=subject")
	if a.Total != n || len(a.Hits) == 0 || a.Hits[0].ID != fmt.Sprintf("<%d@t>", n) {
		t.Fatalf("first search of all groups after reading misc.test: total %d, hits %+v; want %d, the newest first", a.Total, a.Hits[:min(1, len(a.Hits))], n)
	}
	search.Wait()
	for _, h := range askSearch(t, srv.URL, "q=subject").Hits {
		if h.Group == "other.test" {
			t.Errorf("a group nobody read was indexed: %+v", h)
		}
	}
}

// The groups read are remembered most recent first, a group read again
// moving to the front, and at most maxVisitedGroups of them.
func TestSearchVisited(t *testing.T) {
	s := &Search{}
	for i := range maxVisitedGroups + 8 {
		s.Visited(fmt.Sprintf("g%d", i))
	}
	s.Visited("g20")
	s.Visited("g20")
	if len(s.visited) != maxVisitedGroups || s.visited[0] != "g20" || s.visited[1] != fmt.Sprintf("g%d", maxVisitedGroups+7) ||
		s.visited[len(s.visited)-1] != "g8" {
		t.Errorf("visited: %v", s.visited)
	}
}
