package newsweb

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// groupsOn lists the group names of a group-list page.
func groupsOn(page string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<a class="group" href="/groups/([^"]+)"`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// A server of 250 groups: the list opens on its hierarchies, pages by 100,
// filters by name or description, and narrows to a hierarchy.
func TestGroupList(t *testing.T) {
	news := nntptest.Start(t, nntptest.Options{})
	for i := range 200 {
		news.AddGroup(nntptest.Group{Name: fmt.Sprintf("comp.lang.g%03d", i), Description: "Group " + fmt.Sprint(i)})
	}
	for i := range 49 {
		news.AddGroup(nntptest.Group{Name: fmt.Sprintf("sci.s%02d", i)})
	}
	news.AddGroup(nntptest.Group{Name: "alt.unique", Description: "The Needle"})
	s := startSiteWith(t, news, Options{}, news.HostPort())

	_, p1 := get(t, s.url+"/")
	if got := groupsOn(p1); len(got) != groupsPerPage || got[0] != "alt.unique" {
		t.Errorf("page 1: %d groups from %v", len(got), got[:min(3, len(got))])
	}
	for _, want := range []string{`<a href="/?h=comp">comp.*</a> <span class="muted">200</span>`, `<a href="/?h=sci">sci.*</a>`, `<a rel="next" href="/?page=2">Next →</a>`, "250 groups"} {
		if !strings.Contains(p1, want) {
			t.Errorf("page 1 lacks %s", want)
		}
	}
	if strings.Contains(p1, `href="/?h=alt"`) {
		t.Errorf("a hierarchy of one group is listed")
	}
	_, p3 := get(t, s.url+"/?page=3")
	if got := groupsOn(p3); len(got) != 50 || got[49] != "sci.s48" {
		t.Errorf("page 3: %d groups", len(got))
	}
	_, needle := get(t, s.url+"/?q=needle")
	if d := cmp.Diff([]string{"alt.unique"}, groupsOn(needle)); d != "" || !strings.Contains(needle, "1 of 250 groups") {
		t.Errorf("filter by description (-want +got):\n%s", d)
	}
	_, comp := get(t, s.url+"/?h=comp&q=g19")
	if got := groupsOn(comp); len(got) != 10 || !strings.Contains(comp, `<input type="hidden" name="h" value="comp">`) {
		t.Errorf("comp.* filtered by g19: %v", got)
	}
	_, sub := get(t, s.url+"/?h=comp")
	if !strings.Contains(sub, `<a href="/?h=comp.lang">comp.lang.*</a>`) || !strings.Contains(sub, `<a rel="next" href="/?h=comp&amp;page=2">`) {
		t.Errorf("comp.* page lacks its sub-hierarchy or paging")
	}
	if resp, _ := get(t, s.url+"/?h=bad..name"); resp.StatusCode != 400 {
		t.Errorf("bad hierarchy: %d", resp.StatusCode)
	}
}

// The group list counts the servers whose lists it holds and names those
// that did not answer (silent, or not listening), and is not kept while
// one is missing; with every server answering it says so no more.
func TestGroupListMissingServers(t *testing.T) {
	news := newsServer(t, 1)
	news.AddGroup(nntptest.Group{Name: "misc.other"})
	log := testLogger(t)
	var svcs []*Service
	for i, a := range []struct{ name, addr string }{{"news1", news.HostPort()}, {"news2", hungServer(t, true)}, {"news3", deadAddr(t)}} {
		svcs = append(svcs, NewService(ServerConfig{Name: a.name, Addr: a.addr, Priority: i, Connections: 1}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second}))
	}
	fed := NewFederated(svcs, FederatedOptions{Logger: log, NoBackground: true, ServerTimeout: time.Second})
	srv := newFrontServer(t, New(fed, Options{Logger: log}))
	t.Cleanup(func() { srv.Close(); fed.Close() })
	for range 2 {
		resp, page := get(t, srv.URL+"/")
		if want := "2 groups from 1 server; news2 and news3 did not answer."; !strings.Contains(page, want) {
			t.Errorf("group list with two servers down does not say %q:\n%s", want, clip(page))
		}
		if cc := resp.Header.Get("Cache-Control"); cc != cacheError {
			t.Errorf("an incomplete group list: Cache-Control %q, want %q", cc, cacheError)
		}
	}

	one := startSiteWith(t, news, Options{}, news.HostPort())
	if resp, page := get(t, one.url+"/"); !strings.Contains(page, "2 groups from 1 server.") || resp.Header.Get("Cache-Control") != cacheGroups {
		t.Errorf("the list of the one server: Cache-Control %q\n%s", resp.Header.Get("Cache-Control"), clip(page))
	}
}

func TestAndList(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a and b"}, {[]string{"a", "b", "c"}, "a, b and c"}} {
		if got := andList(tc.names); got != tc.want {
			t.Errorf("andList(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}
