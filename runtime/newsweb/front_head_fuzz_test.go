package newsweb

import (
	"bufio"
	"bytes"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseHead: every head the front serves, net/http reads the same
// way (method, target, URL, Host, header, Connection: close), with
// nothing left over and no body; and net/http's server would take it
// (valid field names and values, one Host). Read in two pieces, going on
// from the first's headScan, a head gets the same answer as read whole;
// parsed into the requestHead of an earlier head (as a connection reuses
// it), the same as parsed into a new one: nothing of the earlier is left.
func FuzzParseHead(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /articles/m1@t?group=misc.test HTTP/1.1\r\nHost: newsweb.test:8080\r\nAccept-Encoding: gzip, br\r\nIf-None-Match: \"x\", W/\"y\"\r\n\r\n",
		"HEAD /x HTTP/1.1\r\nhost: [::1]:80\r\nconnection: keep-alive, Close\r\naccept: */*\r\naccept: text/html\r\n\r\n",
		"GET /a%20b HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nX-Y:\t v \t\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"GET / HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\nHost: a\n\n",
		"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: \x01\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\nGET / HTTP/1.1\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n",
		"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	earlier := []byte("GET /old?q=1 HTTP/1.1\r\nHost: old\r\nConnection: close\r\nAccept-Encoding: gzip\r\nIf-None-Match: \"e\"\r\nX-A: 1\r\nX-A: 2\r\n\r\n")
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, verdict := parsed(b, 1<<12, new(headScan))
		var reused requestHead
		if _, v := parseHead(&reused, earlier, 1<<12, new(headScan)); v != headOK {
			t.Fatalf("the earlier head: verdict %d", v)
		}
		if n2, v2 := parseHead(&reused, b, 1<<12, new(headScan)); v2 != verdict || n2 != n ||
			verdict == headOK && !cmp.Equal([]any{reused.method, reused.target, reused.url, reused.host, reused.close, reused.header},
				[]any{h.method, h.target, h.url, h.host, h.close, h.header}) {
			t.Fatalf("%q after another head: verdict %d length %d %+v, alone: verdict %d length %d %+v", b, v2, n2, reused, verdict, n, h)
		}
		var sc headScan
		if _, _, v := parsed(b[:len(b)/2], 1<<12, &sc); v == headIncomplete {
			h2, n2, v2 := parsed(b, 1<<12, &sc)
			if v2 != verdict || n2 != n || !cmp.Equal(h2, h, cmp.AllowUnexported(requestHead{})) {
				t.Fatalf("%q in two pieces: verdict %d length %d, whole: verdict %d length %d", b, v2, n2, verdict, n)
			}
		}
		if verdict != headOK {
			if n != 0 {
				t.Fatalf("verdict %d with length %d", verdict, n)
			}
			return
		}
		br := bufio.NewReader(bytes.NewReader(b[:n]))
		req, err := http.ReadRequest(br)
		if err != nil {
			t.Fatalf("the front serves %q; net/http refuses it: %v", b[:n], err)
		}
		if br.Buffered() != 0 || req.ContentLength != 0 {
			t.Fatalf("%q: net/http left %d bytes, Content-Length %d", b[:n], br.Buffered(), req.ContentLength)
		}
		got := []any{h.method, h.target, h.url, h.host, h.close, h.header}
		want := []any{req.Method, req.RequestURI, *req.URL, req.Host, req.Close, req.Header}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%q: net/http (-) and parseHead (+) differ:\n%s", b[:n], d)
		}
	})
}

// FuzzParseTarget: parseTarget makes of every origin-form target
// (plainTarget) the URL url.ParseRequestURI makes, and fails where it
// fails; also into a URL that held another.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"/", "/articles/m1@t", "/articles/m1@t?group=misc.test", "/a?", "/a??b", "/a%20b", "/0%", "/a b",
		"//host/path", "/a:b/c", "/a!b*c(d)'", "/%2F", "/a?b#c", "/a\"{}|^`", "/a+b;c=d&e,f$g~h",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if !plainTarget(target) {
			return
		}
		want, wantErr := url.ParseRequestURI(target)
		for _, u := range []*url.URL{{}, {Scheme: "http", Host: "old", Path: "/old", RawPath: "/o%6Cd", RawQuery: "x", ForceQuery: true, Fragment: "f"}} {
			err := parseTarget(u, target)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("%q: error %v, url.ParseRequestURI's %v", target, err, wantErr)
			}
			if err == nil && *u != *want {
				t.Fatalf("%q: %#v, url.ParseRequestURI: %#v", target, *u, *want)
			}
		}
	})
}
