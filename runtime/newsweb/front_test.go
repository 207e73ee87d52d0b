package newsweb

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rawConn is a client connection that writes requests as bytes and reads
// the responses with net/http's reader.
type rawConn struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, url string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A guard against a hang, not a timed assertion: every read below
	// expects an answer or a close long before.
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (rc *rawConn) send(req string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, req); err != nil {
		rc.t.Fatal(err)
	}
}

// wantResponse reads one response to a request of method.
func (rc *rawConn) wantResponse(method string) (*http.Response, []byte) {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		rc.t.Fatalf("reading the response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatal(err)
	}
	return resp, body
}

// wantClosed expects the server to close the connection (EOF or reset),
// not the guard's deadline.
func (rc *rawConn) wantClosed(why string) {
	rc.t.Helper()
	_, err := rc.br.ReadByte()
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		rc.t.Fatalf("%s: the connection is still open (read: %v)", why, err)
	}
}

// answer is a response as compared between net/http and the front: its
// headers but Date, and its body.
type answer struct {
	Status int
	Header http.Header
	Body   string
}

// plainServer serves h with NewHTTPServer's http.Server alone (no front)
// on loopback and returns its address.
func plainServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := NewHTTPServer("", h)
	go plain.Serve(ln)
	t.Cleanup(func() { plain.Close() })
	return ln.Addr().String()
}

func answerOf(resp *http.Response, body []byte) answer {
	h := resp.Header.Clone()
	h.Del("Date")
	return answer{Status: resp.StatusCode, Header: h, Body: string(body)}
}

// The front answers what it serves byte for byte as net/http does (but
// Date): the same handler behind a plain http.Server and behind the
// front, cached pages gzipped or not, HEAD, 304, error pages, a ServeMux
// redirect, Connection: close.
func TestFrontMatchesNetHTTP(t *testing.T) {
	s := startSite(t)
	plainURL := "http://" + plainServer(t, s.h)

	const gz = "Accept-Encoding: gzip\r\n"
	reqs := []struct{ method, target, extra string }{
		{"GET", "/articles/m1@t", gz},
		{"GET", "/articles/m1@t", ""},
		{"HEAD", "/articles/m1@t", gz},
		{"GET", "/articles/m4@t?group=misc.test", gz},
		{"GET", "/groups/misc.test", gz},
		{"GET", "/groups/misc.test?page=2", ""},
		{"GET", "/groups/misc.test/threads/m1@t", gz},
		{"GET", "/groups/misc.test/feed.atom", ""},
		{"GET", "/api/groups/misc.test/threads", gz},
		{"GET", "/api/articles/m1@t", ""},
		{"GET", "/api/threads/m1@t", ""},
		{"GET", "/api/groups", ""},
		{"GET", "/", gz + "Connection: close\r\n"},
		{"GET", "/?q=misc", ""},
		{"GET", "/nowhere", gz},                        // the catch-all's 404 page
		{"GET", "/articles/nosuch@t", ""},              // 404 from the news server
		{"GET", "/api/articles/no%20id", ""},           // 400, JSON
		{"GET", "/groups/misc.test/../x", ""},          // ServeMux's redirect: through the header map
		{"HEAD", "/groups/misc.test/threads/m1@t", ""}, //
	}
	fetch := func(url, method, target, extra string) answer {
		rc := dialRaw(t, url)
		rc.send(method + " " + target + " HTTP/1.1\r\nHost: newsweb.test\r\nUser-Agent: test\r\n" + extra + "\r\n")
		return answerOf(rc.wantResponse(method))
	}
	for _, r := range reqs { // warm every cache, twice (a group page is cached once its stats are)
		fetch(plainURL, r.method, r.target, r.extra)
		fetch(plainURL, r.method, r.target, r.extra)
	}
	served := s.front.served.Load()
	for _, r := range reqs {
		want := fetch(plainURL, r.method, r.target, r.extra)
		got := fetch(s.url, r.method, r.target, r.extra)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s %s %q: net/http (-) and the front (+) differ:\n%s", r.method, r.target, r.extra, d)
		}
		// A validator sent back: 304 from both, with the same headers.
		if etag := want.Header.Get("Etag"); etag != "" && r.method == "GET" {
			extra := r.extra + "If-None-Match: W/" + etag + "\r\n"
			want, got := fetch(plainURL, r.method, r.target, extra), fetch(s.url, r.method, r.target, extra)
			if want.Status != http.StatusNotModified {
				t.Errorf("%s with If-None-Match %s: %d from net/http", r.target, etag, want.Status)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s %s If-None-Match: net/http (-) and the front (+) differ:\n%s", r.method, r.target, d)
			}
		}
	}
	if n := s.front.served.Load() - served; n < int64(len(reqs)) || s.front.handedOff.Load() != 0 {
		t.Errorf("the front answered %d requests and handed %d connections to net/http; want every one (%d) answered and none handed off",
			n, s.front.handedOff.Load(), len(reqs))
	}
}

// What the front does not serve goes to net/http on the same connection,
// the bytes already read included: a POST between two pipelined GETs,
// HTTP/1.0, bare LF line ends, a head too long, no Host.
func TestFrontHandsOff(t *testing.T) {
	s := startSite(t)
	const get = "GET /articles/m1@t HTTP/1.1\r\nHost: newsweb.test\r\n\r\n"
	rc := dialRaw(t, s.url)
	rc.send(get + "POST / HTTP/1.1\r\nHost: newsweb.test\r\nContent-Length: 3\r\n\r\nabc" + get)
	for i, want := range []int{200, 405, 200} {
		if resp, body := rc.wantResponse("GET"); resp.StatusCode != want {
			t.Errorf("pipelined answer %d: %d, want %d\n%s", i, resp.StatusCode, want, body)
		}
	}
	if s.front.served.Load() != 1 || s.front.handedOff.Load() != 1 {
		t.Errorf("front answered %d, handed off %d; want 1 and 1 (the GET before the POST, then the connection)",
			s.front.served.Load(), s.front.handedOff.Load())
	}

	for _, c := range []struct {
		name, req string
		want      int
	}{
		{"HTTP/1.0", "GET /articles/m1@t HTTP/1.0\r\n\r\n", 200},
		{"bare LF", "GET /articles/m1@t HTTP/1.1\nHost: newsweb.test\n\n", 200},
		{"no Host", "GET /articles/m1@t HTTP/1.1\r\n\r\n", 400},
		{"two Hosts", "GET /articles/m1@t HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"head too long", "GET /articles/m1@t HTTP/1.1\r\nHost: newsweb.test\r\nX-Big: " + strings.Repeat("x", 40<<10) + "\r\n\r\n", 431},
		{"chunked GET", "GET /articles/m1@t HTTP/1.1\r\nHost: newsweb.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 200},
	} {
		before := s.front.handedOff.Load()
		rc := dialRaw(t, s.url)
		rc.send(c.req)
		if resp, body := rc.wantResponse("GET"); resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d from net/http\n%s", c.name, resp.StatusCode, c.want, body)
		}
		if s.front.handedOff.Load() != before+1 {
			t.Errorf("%s: not handed to net/http", c.name)
		}
	}
}

// A connection that sends no head, or not all of one, within
// ReadHeaderTimeout is closed (IdleTimeout notwithstanding), and so is one
// idle for IdleTimeout after an answer.
func TestFrontLimits(t *testing.T) {
	s := startSite(t)
	front := func(header, idle time.Duration) (*Front, string) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hs := NewHTTPServer("", s.h)
		hs.ReadHeaderTimeout, hs.IdleTimeout = header, idle
		f := NewFront(hs, ln)
		go f.Serve()
		t.Cleanup(func() { f.Close() })
		return f, "http://" + ln.Addr().String()
	}
	headBound, url := front(50*time.Millisecond, time.Hour)
	dialRaw(t, url).wantClosed("a connection that sends nothing")
	slow := dialRaw(t, url)
	slow.send("GET /articles/m1@t HTTP/1.1\r\nHost: newsweb.test\r\n") // and nothing more
	slow.wantClosed("a head left unfinished")

	idleBound, url := front(time.Hour, 50*time.Millisecond)
	idle := dialRaw(t, url)
	idle.send("GET /articles/m1@t HTTP/1.1\r\nHost: newsweb.test\r\n\r\n")
	if resp, _ := idle.wantResponse("GET"); resp.StatusCode != 200 {
		t.Fatalf("article: %d", resp.StatusCode)
	}
	idle.wantClosed("an idle connection")
	if n := headBound.handedOff.Load() + idleBound.handedOff.Load(); n != 0 {
		t.Errorf("%d connections handed off; the front's own limits should have closed them", n)
	}
}

// Shutdown closes idle connections at once, lets a busy one finish its
// answer (with Connection: close) and returns when it has.
func TestFrontShutdown(t *testing.T) {
	news := newsServer(t, 5)
	release := make(chan struct{})
	blockArticles(news, release)
	f := federated(t, nil, nil, ServerConfig{Addr: news.HostPort(), Connections: 1})
	srv := newFrontServer(t, New(f, Options{Logger: testLogger(t)}))

	idle := dialRaw(t, srv.URL)
	idle.send("GET /nowhere HTTP/1.1\r\nHost: newsweb.test\r\n\r\n")
	if resp, _ := idle.wantResponse("GET"); resp.StatusCode != 404 {
		t.Fatalf("/nowhere: %d", resp.StatusCode)
	}
	busy := dialRaw(t, srv.URL)
	busy.send("GET /articles/1@t HTTP/1.1\r\nHost: newsweb.test\r\n\r\n")
	for !strings.Contains(strings.Join(commandLines(news, 0), "\n"), "ARTICLE <1@t>") {
		time.Sleep(time.Millisecond) // until the request waits on the news server
	}
	done := make(chan error, 1)
	go func() { done <- srv.front.Shutdown(context.Background()) }()
	idle.wantClosed("an idle connection at shutdown")
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) while a request was being answered", err)
	default:
	}
	close(release)
	resp, body := busy.wantResponse("GET")
	if resp.StatusCode != 200 || !resp.Close || !strings.Contains(string(body), "body 1") {
		t.Errorf("the busy request: %d, Connection: close %v\n%s", resp.StatusCode, resp.Close, clip(string(body)))
	}
	busy.wantClosed("the busy connection after its answer")
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// A page served gzipped from the page cache changes with what it shows:
// after a reply comes in, the thread page's gzipped body holds it and has
// a new ETag (the old one no longer matches), while the unchanged article
// page still answers 304.
func TestFrontGzipFollowsThread(t *testing.T) {
	news := newsServer(t, 5)
	clock := newFakeClock()
	f := federated(t, clock, nil, ServerConfig{Addr: news.HostPort(), Connections: 1})
	srv := newFrontServer(t, New(f, Options{Logger: testLogger(t)}))
	rc := dialRaw(t, srv.URL)
	view := func(target, extra string) (*http.Response, string) {
		t.Helper()
		rc.send("GET " + target + " HTTP/1.1\r\nHost: newsweb.test\r\nAccept-Encoding: gzip\r\n" + extra + "\r\n")
		resp, body := rc.wantResponse("GET")
		if resp.StatusCode != 200 {
			return resp, ""
		}
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s: Content-Encoding %q", target, resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(plain)
	}
	const thread, art = "/groups/misc.test/threads/5@t", "/articles/5@t"
	view(thread, "")
	first, page := view(thread, "") // from the page cache
	if strings.Contains(page, "subject 6") {
		t.Fatalf("the thread shows <6@t> before it exists")
	}
	artResp, _ := view(art, "")

	addArticles(t, news, 6, 6) // <6@t> replies to <5@t>
	clock.Advance(2 * time.Second)
	second, page := view(thread, "If-None-Match: "+first.Header.Get("Etag")+"\r\n")
	if second.StatusCode != 200 || !strings.Contains(page, "subject 6") {
		t.Errorf("after the reply: %d, the reply on the page %v", second.StatusCode, strings.Contains(page, "subject 6"))
	}
	if second.Header.Get("Etag") == first.Header.Get("Etag") {
		t.Errorf("the thread's ETag %s did not change with it", first.Header.Get("Etag"))
	}
	if resp, _ := view(art, "If-None-Match: "+artResp.Header.Get("Etag")+"\r\n"); resp.StatusCode != http.StatusNotModified {
		t.Errorf("the unchanged article: %d, want 304", resp.StatusCode)
	}
}

// Heads parseHead leaves to net/http (headHandoff), each with why; the
// first was found by FuzzParseHead (the front closed the connection where
// net/http answers 400).
func TestParseHeadHandsOff(t *testing.T) {
	for _, c := range []struct{ why, head string }{
		{"a bad escape in the target (FuzzParseHead)", "GET /0% HTTP/1.1\r\nHost:0\r\n\r\n"},
		{"POST", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"},
		{"HTTP/1.0", "GET / HTTP/1.0\r\n\r\n"},
		{"bare LF", "GET / HTTP/1.1\nHost: a\n\n"},
		{"a folded line", "GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n"},
		{"a control byte in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: \x01\r\n\r\n"},
		{"a space before the colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n"},
		{"no Host", "GET / HTTP/1.1\r\nX: a\r\n\r\n"},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"},
		{"a Host net/http checks", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n"},
		{"a body", "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx"},
		{"chunked", "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{"Expect", "GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n"},
		{"Upgrade", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"},
		{"absolute form", "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{"a blank line first", "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"},
		{"too long", "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("x", 100) + "\r\n\r\n"},
	} {
		if _, _, v := parsed([]byte(c.head), 64, new(headScan)); v != headHandoff {
			t.Errorf("%s: verdict %d, want headHandoff", c.why, v)
		}
	}
	if _, _, v := parsed([]byte("GET / HTTP/1.1\r\nHost: a\r\n"), 64, new(headScan)); v != headIncomplete {
		t.Errorf("a head without its blank line: verdict %d, want headIncomplete", v)
	}
	h, n, v := parsed([]byte("GET /a?b HTTP/1.1\r\nHost: a\r\n\r\nGET"), 64, new(headScan))
	if v != headOK || n != len("GET /a?b HTTP/1.1\r\nHost: a\r\n\r\n") || h.url.Path != "/a" || h.url.RawQuery != "b" {
		t.Errorf("a plain head: verdict %d, length %d, URL %v", v, n, h.url)
	}
}

// TestParseHeadGoesOn: an incomplete head's scan stops after its last
// complete line, so the next read's parse starts there and not at the
// first byte again (a head sent a byte at a time cost time quadratic in
// its length: BenchmarkParseHeadTrickle, 1.5 s before, 4 ms after); and
// the head read in pieces is the head read whole.
func TestParseHeadGoesOn(t *testing.T) {
	full := "GET /a HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n\r\n"
	var sc headScan
	if _, _, v := parsed([]byte(full[:len(full)-5]), 64, &sc); v != headIncomplete {
		t.Fatalf("a partial head: verdict %d", v)
	}
	if want := (headScan{next: len("GET /a HTTP/1.1\r\nHost: a\r\n"), lines: 2}); sc != want {
		t.Fatalf("scan after a partial head: %+v, want %+v", sc, want)
	}
	h, n, v := parsed([]byte(full), 64, &sc)
	if v != headOK || n != len(full) || h.host != "a" || h.header.Get("X-A") != "1" || len(h.header) != 1 {
		t.Fatalf("the head in pieces: verdict %d, length %d, host %q, header %v", v, n, h.host, h.header)
	}
	if sc != (headScan{}) {
		t.Fatalf("scan after a whole head: %+v, want it reset", sc)
	}
}

// parsed is parseHead into a requestHead of its own.
func parsed(b []byte, max int, sc *headScan) (requestHead, int, headVerdict) {
	var h requestHead
	n, v := parseHead(&h, b, max, sc)
	return h, n, v
}
