package newsweb

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A logged-in reader's group page marks the threads with posts newer than
// the last visit, the thread page links to the first of them, and "Mark
// group read" (CSRF and Origin checked) records the group as seen. The
// pages of anonymous readers stay the shared ones.
func TestVisitsNew(t *testing.T) {
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{})
	c := loginCookie(t, s)
	group, thread := s.url+"/groups/misc.test", s.url+"/groups/misc.test/threads/m1@t"
	lastVisit := time.Date(2024, 1, 1, 12, 30, 0, 0, time.UTC) // after m3, before m5

	// Anonymous views are cached and carry nothing of a reader's.
	for _, u := range []string{group, thread} {
		_, page := getCookie(t, u, nil)
		if strings.Contains(page, "Mark group read") || strings.Contains(page, " new</") {
			t.Errorf("%s anonymous: shows a reader's marks", u)
		}
	}
	// A first visit: nothing unread, then the thread is seen.
	if _, page := getCookie(t, thread, c); strings.Contains(page, `class="unread"`) {
		t.Errorf("first visit shows a first unread link")
	}
	if _, page := getCookie(t, group, c); strings.Contains(page, `class="new"`+">") || !strings.Contains(page, "Mark group read") {
		t.Errorf("group page after a full visit: marks or no mark-read form:\n%s", page)
	}
	s.h.visits.setSeen(t, "dora", "<m1@t>", lastVisit)

	resp, page := getCookie(t, group, c)
	if !strings.Contains(page, `<span class="new">1 new</span>`) || resp.Header.Get("Cache-Control") != cacheError {
		t.Errorf("group page after a post since the visit: no \"1 new\" or cached (%s):\n%s", resp.Header.Get("Cache-Control"), page)
	}
	if _, page := getCookie(t, group, nil); strings.Contains(page, "1 new") {
		t.Errorf("the anonymous group page shows the reader's marks")
	}
	_, page = getCookie(t, thread, c)
	if want := fmt.Sprintf(`<a class="unread" href="#%s">First unread (1 new)</a>`, postAnchor("<m5@t>")); !strings.Contains(page, want) {
		t.Errorf("thread page: no %s:\n%s", want, page)
	}
	if _, page := getCookie(t, group, c); strings.Contains(page, "1 new") {
		t.Errorf("the thread is still new after the visit")
	}

	// Mark group read: refused without the token or from another site.
	s.h.visits.setSeen(t, "dora", "<m1@t>", lastVisit)
	_, page = getCookie(t, group, c)
	m := regexp.MustCompile(`<form class="markread" method="post" action="([^"]+)"><input type="hidden" name="csrf" value="([^"]+)">`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no mark-read form:\n%s", page)
	}
	action, token := m[1], m[2]
	mark := func(v url.Values, hdr ...string) *http.Response {
		t.Helper()
		return postForm(t, s.url, action, v, append([]string{"Cookie", c.String()}, hdr...)...)
	}
	for name, tc := range map[string]struct {
		v   url.Values
		hdr []string
	}{
		"no token":     {url.Values{}, nil},
		"wrong token":  {url.Values{"csrf": {"x" + token}}, nil},
		"other origin": {url.Values{"csrf": {token}}, []string{"Origin", "http://evil.example"}},
		"origin null":  {url.Values{"csrf": {token}}, []string{"Origin", "null"}},
	} {
		if resp := mark(tc.v, tc.hdr...); resp.StatusCode != http.StatusForbidden {
			t.Errorf("mark read, %s: %d, want 403", name, resp.StatusCode)
		}
	}
	if _, page := getCookie(t, group, c); !strings.Contains(page, "1 new") {
		t.Errorf("a refused mark-read marked the group read")
	}
	if resp := postForm(t, s.url, action, url.Values{"csrf": {token}}); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("mark read without a session: %d %s, want the login page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := mark(url.Values{"csrf": {token}}, "Origin", s.url); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/groups/misc.test" {
		t.Errorf("mark read: %d %s, want 303 to the group", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, page := getCookie(t, group, c); strings.Contains(page, "1 new") {
		t.Errorf("the thread is still new after mark group read")
	}
	_, page = getCookie(t, thread, c)
	if strings.Contains(page, `class="unread"`) {
		t.Errorf("thread page after mark group read has a first unread link")
	}
}

// setSeen sets user's record of root back to at.
func (v *visits) setSeen(t *testing.T, user, root string, at time.Time) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.readers[user].Value.(*readerVisits).threads[root]
	if !ok {
		t.Fatalf("%s has no record of %s", user, root)
	}
	e.Value.(*threadVisit).seen = at
}

// The record keeps a later date than one recorded, and forgets the least
// recently seen threads past maxVisitThreads and readers past
// maxVisitReaders.
func TestVisitsBounds(t *testing.T) {
	v := newVisits()
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	v.see("a", []string{"r"}, []time.Time{t0.Add(time.Hour)})
	v.see("a", []string{"r"}, []time.Time{t0})
	if got, ok := v.seen("a", "r"); !ok || !got.Equal(t0.Add(time.Hour)) {
		t.Errorf("seen after an older date: %v %v, want the later one", got, ok)
	}
	var roots []string
	var dates []time.Time
	for i := range maxVisitThreads + 10 {
		roots = append(roots, fmt.Sprint("t", i))
		dates = append(dates, t0)
	}
	v.see("a", roots, dates) // roots[0] is the most recent
	if _, ok := v.seen("a", "r"); ok {
		t.Errorf("the least recently seen thread is kept past the bound")
	}
	if _, ok := v.seen("a", roots[maxVisitThreads]); ok {
		t.Errorf("thread %d of a mark-read is kept past the bound", maxVisitThreads)
	}
	if _, ok := v.seen("a", roots[0]); !ok {
		t.Errorf("the newest thread is forgotten")
	}
	for i := range maxVisitReaders {
		v.see(fmt.Sprint("u", i), []string{"x"}, []time.Time{t0})
	}
	if _, ok := v.seen("a", roots[0]); ok || len(v.readers) != maxVisitReaders {
		t.Errorf("readers past the bound: %d kept, the least recent still there: %v", len(v.readers), ok)
	}
}

// A reader's own post is not new to them: after replying in a thread
// they had seen, the group page marks nothing new and the thread page
// has no first unread link.
func TestVisitsOwnPostNotNew(t *testing.T) {
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{})
	c := loginCookie(t, s)
	group, thread := s.url+"/groups/misc.test", s.url+"/groups/misc.test/threads/m1@t"
	getCookie(t, thread, c) // seen, up to its newest post
	_, page := getCookie(t, s.url+"/post?group=misc.test&re=m5@t", c)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no compose form:\n%s", page)
	}
	v := url.Values{"csrf": {m[1]}, "newsgroups": {"misc.test"}, "subject": {"Re: Root"}, "body": {"My own reply.\n"}, "references": {"<m5@t>"}}
	if resp := postForm(t, s.url, "/post", v, "Cookie", c.String()); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("post: %d", resp.StatusCode)
	}
	if _, page := getCookie(t, group, c); strings.Contains(page, `<span class="new">`) {
		t.Errorf("group page after the reader's own reply marks it new")
	}
	if _, page := getCookie(t, thread, c); strings.Contains(page, `class="unread"`) || !strings.Contains(page, "My own reply.") {
		t.Errorf("thread page after the reader's own reply: a first unread link, or the reply missing")
	}
}
