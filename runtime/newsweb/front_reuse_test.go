package newsweb

import (
	"context"
	"fmt"
	"net"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := NewHTTPServer("", leakyHandler())
	go plain.Serve(ln)
	t.Cleanup(func() { plain.Close() })

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
		ref := dialRaw(t, "http://"+ln.Addr().String())
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

// TestFrontReuseDeadline: a request's bound is reused by the next request
// on the connection only while nothing made its real context. The first
// group page waits for the group's stats on a goroutine of its own
// (groupPage), which derives a context from the bound and cancels it
// after the answer; the next request, an article not cached, must wait
// for its fetch on a bound of its own, not on the first's, cancelled.
func TestFrontReuseDeadline(t *testing.T) {
	s := startSite(t)
	rc := dialRaw(t, s.url)
	for i, target := range []string{"/articles/m1@t", "/groups/misc.test", "/articles/m4@t", "/groups/misc.test", "/articles/m5@t", "/articles/s1@t"} {
		rc.send("GET " + target + " HTTP/1.1\r\nHost: newsweb.test\r\n\r\n")
		if resp, body := rc.wantResponse("GET"); resp.StatusCode != http.StatusOK {
			t.Errorf("request %d, %s: %d\n%s", i+1, target, resp.StatusCode, clip(string(body)))
		}
	}
}
