package newsweb

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// The group list counts a group carried by two servers as its page does:
// the first server's articles and those only the other carries, once the
// group's list is known.
func TestFederationUnionGroupCount(t *testing.T) {
	first := startSite(t).news
	second := nntptest.Start(t, nntptest.Options{})
	second.AddGroup(nntptest.Group{Name: "misc.test"})
	extra := []testArticle{
		{id: "<m6@other>", subject: "Re: Root", refs: "<m1@t> <m4@t>", body: "only here\n", date: "Mon, 01 Jan 2024 14:00:00 +0000"},
		{id: "<n1@other>", subject: "Elsewhere", body: "only here too\n", date: "Wed, 03 Jan 2024 09:00:00 +0000"},
	}
	for _, a := range append(append([]testArticle{}, threadArticles[:3]...), extra...) {
		if err := second.AddArticle(nntptest.Article{Raw: rawArticle("misc.test", a)}); err != nil {
			t.Fatal(err)
		}
	}
	s := startSiteWith(t, first, Options{PerPage: 50}, first.HostPort(), second.HostPort())
	get(t, s.url+"/groups/misc.test")
	_, page := get(t, s.url+"/")
	m := regexp.MustCompile(`href="/groups/misc.test">misc.test</a></td><td class="desc">[^<]*</td><td class="num">(\d+)<span class="unit"> articles?</span></td>`).FindStringSubmatch(page)
	if want := fmt.Sprint(len(threadArticles) + len(extra)); m == nil || m[1] != want {
		t.Errorf("the group list counts misc.test as %v, want %s (the union):\n%s", m, want, clip(page))
	}
}
