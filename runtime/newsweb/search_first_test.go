package newsweb

import (
	"fmt"
	"strings"
	"testing"
	"time"
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
