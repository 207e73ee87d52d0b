package newsweb

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// requestDump is what a handler sees of its request, but the client's
// address: a request's own, whatever came before on the connection.
func requestDump(r *http.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s host=%s close=%v proto=%s pattern=%q x=%q\n", r.Method, r.RequestURI, r.Host, r.Close, r.Proto, r.Pattern, r.PathValue("x"))
	fmt.Fprintf(&b, "url=%#v\n", *r.URL)
	fmt.Fprintf(&b, "form=%v postform=%v ctx-value=%v trailer=%v te=%v cl=%d\n", r.Form, r.PostForm, r.Context().Value(leakKey{}), r.Trailer, r.TransferEncoding, r.ContentLength)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.Header {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "%s=%q\n", k, r.Header[k])
	}
	return b.String()
}

type leakKey struct{}

// leakyHandler answers with requestDump, then changes everything of the
// request a handler can reach, as a careless handler might: none of it
// may show in the next request on the connection.
func leakyHandler() http.Handler {
	mux := http.NewServeMux()
	h := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Dump", "1")
		fmt.Fprint(w, requestDump(r))
		r.Header.Set("X-Set-By-Handler", "1")
		r.Header["Accept-Encoding"] = append(r.Header["Accept-Encoding"], "changed")
		for _, v := range r.Header {
			if len(v) > 0 {
				v[0] = "overwritten"
			}
		}
		r.URL.Path, r.URL.RawQuery, r.URL.Fragment = "/changed", "changed=1", "frag"
		r.Form = url.Values{"changed": {"1"}}
		r.Host, r.RequestURI, r.Close = "changed.test", "/changed", true
		*r = *r.WithContext(context.WithValue(r.Context(), leakKey{}, "leaked"))
		r.SetPathValue("x", "changed")
	}
	mux.HandleFunc("GET /p/{x}", h)
	mux.HandleFunc("GET /", h)
	return mux
}

// TestFrontReuseLeaksNothing: the front reuses a connection's request,
// URL, header map and values from one request to the next; each request
// is still seen exactly as net/http shows it on a connection of its own,
// though the handler of the one before changed all it could reach. The
// requests go one after another on a single connection (under -race, a
// handler's use of its request after it returns would be a race).
func TestFrontReuseLeaksNothing(t *testing.T) {
	front := newFrontServer(t, leakyHandler())
	plainAddr := plainServer(t, leakyHandler())

	heads := []string{
		"GET /p/one?a=1&b=2 HTTP/1.1\r\nHost: first.test\r\nAccept-Encoding: gzip\r\nIf-None-Match: \"e1\"\r\nX-A: 1\r\nX-A: 2\r\nCookie: c=1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: second.test\r\n\r\n",
		"HEAD /p/two HTTP/1.1\r\nHost: third.test\r\nX-Forwarded-Proto: https\r\n\r\n",
		"GET /p/th%20ree?q HTTP/1.1\r\nHost: fourth.test\r\nAccept: text/html\r\n\r\n",
		"GET /p/four? HTTP/1.1\r\nHost: fifth.test\r\nX-A: only\r\n\r\n",
		"GET /p/five HTTP/1.1\r\nHost: sixth.test\r\n" + strings.Repeat("X-Many-", 1) + "A: 1\r\n" + manyHeaders(40) + "\r\n",
		"GET /p/six HTTP/1.1\r\nHost: seventh.test\r\nContent-Length: 0\r\n\r\n",
		"GET /p/seven HTTP/1.1\r\nHost: last.test\r\nConnection: close\r\n\r\n",
	}
	rc := dialRaw(t, front.URL)
	for i, head := range heads {
		method, _, _ := strings.Cut(head, " ")
		rc.send(head)
		got := answerOf(rc.wantResponse(method))
		ref := dialRaw(t, "http://"+plainAddr)
		ref.send(head)
		want := answerOf(ref.wantResponse(method))
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("request %d on the front's connection: net/http alone (-) and the front (+) differ:\n%s", i+1, d)
		}
	}
	rc.wantClosed("after Connection: close")
	if n := front.front.handedOff.Load(); n != 0 {
		t.Errorf("%d connections handed to net/http; want every request on the front", n)
	}
}

// manyHeaders is n header lines X-H<i>: <i>, more than a connection keeps
// its header map and values for.
func manyHeaders(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "X-H%d: %d\r\n", i, i)
	}
	return b.String()
}

// TestFrontReuseNewsweb: newsweb's own handlers, every route, one request
// after another on a single connection, so that each runs on the request,
// URL, header map and bound the one before used: each answer is net/http's
// to the same request on a connection of its own (but Date). Run under
// -race, a handler that used its request after returning would show.
// The first group page waits for the group's stats on a goroutine of its
// own (groupPage), which derives a context from the request's bound and
// cancels it after the answer; the article pages after it, not cached,
// wait for their fetch on a bound of their own, not on that one,
// cancelled (reusing an armed bound failed them with 500).
func TestFrontReuseNewsweb(t *testing.T) {
	s := startSite(t)
	plainAddr := plainServer(t, s.h)

	const gz = "Accept-Encoding: gzip\r\n"
	reqs := []struct{ method, target, extra string }{
		{"GET", "/articles/m1@t", gz + "If-None-Match: \"nothing\"\r\nX-Forwarded-Proto: https\r\n"},
		{"GET", "/groups/misc.test", gz},
		{"GET", "/articles/m4@t?group=misc.test", ""},
		{"GET", "/articles/m5@t", gz},
		{"HEAD", "/articles/s1@t", ""},
		{"GET", "/groups/misc.test?page=2", gz},
		{"GET", "/groups/misc.test/threads/m1@t", ""},
		{"GET", "/groups/misc.test/feed.atom", "X-Forwarded-Proto: https\r\n"},
		{"GET", "/groups/misc.test/feed.atom", ""},
		{"GET", "/api/groups/misc.test/threads", gz},
		{"GET", "/api/articles/m1@t", ""},
		{"GET", "/api/threads/m1@t", gz},
		{"GET", "/api/groups", ""},
		{"GET", "/?q=misc", gz},
		{"GET", "/", ""},
		{"GET", "/nowhere", gz},
		{"GET", "/articles/nosuch@t", ""},
		{"GET", "/api/articles/no%20id", ""},
		{"GET", "/groups/misc.test/../x", ""},
		{"GET", "/articles/m1@t", ""},
	}
	send := func(rc *rawConn, method, target, extra string) answer {
		rc.send(method + " " + target + " HTTP/1.1\r\nHost: newsweb.test\r\n" + extra + "\r\n")
		return answerOf(rc.wantResponse(method))
	}
	// Cold caches first, on the front: requests fetch, wait and arm.
	cold := make([]answer, len(reqs))
	rc := dialRaw(t, s.url)
	for i, r := range reqs {
		cold[i] = send(rc, r.method, r.target, r.extra)
	}
	// Then each through net/http on a connection of its own, and again
	// all on one connection through the front, the caches warm.
	want := make([]answer, len(reqs))
	for i, r := range reqs {
		ref := dialRaw(t, "http://"+plainAddr)
		send(ref, r.method, r.target, r.extra) // a group page is cached once its stats are
		want[i] = send(ref, r.method, r.target, r.extra)
		if cold[i].Status != want[i].Status {
			t.Errorf("cold, request %d, %s %s: %d, net/http warm %d\n%s", i+1, r.method, r.target, cold[i].Status, want[i].Status, clip(cold[i].Body))
		}
	}
	rc = dialRaw(t, s.url)
	for i, r := range reqs {
		if d := cmp.Diff(want[i], send(rc, r.method, r.target, r.extra)); d != "" {
			t.Errorf("warm, request %d, %s %s %q: net/http (-) and the front (+) differ:\n%s", i+1, r.method, r.target, r.extra, d)
		}
	}
	if n := s.front.handedOff.Load(); n != 0 {
		t.Errorf("%d connections handed to net/http; want every request on the front", n)
	}
}
