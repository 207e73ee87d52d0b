package newsweb

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseHead: every head the front serves, net/http reads the same
// way (method, target, Host, header, Connection: close), with nothing
// left over and no body; and net/http's server would take it (valid
// field names and values, one Host). Read in two pieces, going on from
// the first's headScan, a head gets the same answer as read whole.
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
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, verdict := parseHead(b, 1<<12, new(headScan))
		var sc headScan
		if _, _, v := parseHead(b[:len(b)/2], 1<<12, &sc); v == headIncomplete {
			h2, n2, v2 := parseHead(b, 1<<12, &sc)
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
		got := []any{h.method, h.target, h.host, h.close, h.header}
		want := []any{req.Method, req.RequestURI, req.Host, req.Close, req.Header}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%q: net/http (-) and parseHead (+) differ:\n%s", b[:n], d)
		}
	})
}
