package newsweb

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// Two servers carrying one group: the group's list is the union of their
// articles by message-id (each once), the counts say how many come from
// the other server, and those articles read like the others.
func TestFederationUnion(t *testing.T) {
	first := startSite(t).news
	second := nntptest.Start(t, nntptest.Options{})
	second.AddGroup(nntptest.Group{Name: "misc.test"})
	extra := []testArticle{
		{id: "<m6@other>", subject: "Re: Root", refs: "<m1@t> <m4@t>", body: "a reply only the second server has\n", date: "Mon, 01 Jan 2024 14:00:00 +0000"},
		{id: "<n1@other>", subject: "Elsewhere", body: "a thread only the second server has\n", date: "Wed, 03 Jan 2024 09:00:00 +0000"},
	}
	for _, a := range append(append([]testArticle{}, threadArticles[:3]...), extra...) { // some shared, two its own
		if err := second.AddArticle(nntptest.Article{Raw: rawArticle("misc.test", a)}); err != nil {
			t.Fatal(err)
		}
	}
	s := startSiteWith(t, first, Options{PerPage: 50}, first.HostPort(), second.HostPort())

	_, body := get(t, s.url+"/api/groups/misc.test/threads")
	var list struct {
		Articles     int `json:"articles"`
		FromOthers   int `json:"from_other_servers"`
		TotalThreads int `json:"total_threads"`
		Threads      []struct {
			ID string `json:"message_id"`
		} `json:"threads"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if want := len(threadArticles) + len(extra); list.Articles != want || list.FromOthers != len(extra) || list.TotalThreads != 4 {
		t.Errorf("union: %d articles (%d from the other server) in %d threads; want %d (%d) in 4\n%s",
			list.Articles, list.FromOthers, list.TotalThreads, want, len(extra), body)
	}
	_, page := get(t, s.url+"/groups/misc.test")
	if !strings.Contains(page, "(2 of them from other servers)") || !strings.Contains(page, "Elsewhere") {
		t.Errorf("the group page does not show the union and its count")
	}
	_, thread := get(t, s.url+"/groups/misc.test/threads/m1@t")
	if !strings.Contains(thread, "a reply only the second server has") {
		t.Errorf("the thread lacks the second server's reply")
	}
	_, art := get(t, s.url+"/articles/n1@other")
	if !strings.Contains(art, "a thread only the second server has") {
		t.Errorf("the second server's article does not read")
	}
}
