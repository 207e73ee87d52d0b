package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// TestHostGate is DNS rebinding: a page on evil.example whose name now
// resolves to 127.0.0.1 sends its own name in Host and Origin. The page,
// its forms and the API refuse it (421) before doing anything; the
// daemon's own names (IP addresses, localhost, [serve] hostnames) pass;
// a form whose Origin is another site, or "null", is refused even with
// the right Host and CSRF token.
func TestHostGate(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, func(c *newsget.Config) { c.Serve.Hostnames = []string{"NAS.example"} })
	defer td.stop()
	port := td.url[strings.LastIndexByte(td.url, ':')+1:]
	do := func(method, path, host, origin string, form url.Values) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequest(method, td.url+path, body)
		req.Host = host
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 100))
		return resp.StatusCode, string(b)
	}
	csrf := url.Values{"csrf": {td.d.csrf}}
	api := "/api?mode=queue&output=json&apikey=" + testKey
	for _, tc := range []struct {
		method, path, host, origin string
		form                       url.Values
		want                       int
	}{
		{"GET", "/", "evil.example:" + port, "", nil, http.StatusMisdirectedRequest},
		{"GET", "/", "evil.example", "", nil, http.StatusMisdirectedRequest},
		{"GET", "/metrics", "evil.example:" + port, "", nil, http.StatusMisdirectedRequest},
		{"GET", api, "evil.example:" + port, "", nil, http.StatusMisdirectedRequest},
		{"GET", "/sabnzbd" + api, "evil.example:" + port, "", nil, http.StatusMisdirectedRequest},
		{"POST", "/action/pause", "evil.example:" + port, "http://evil.example:" + port, csrf, http.StatusMisdirectedRequest},
		{"POST", "/action/pause", "127.0.0.1:" + port, "http://evil.example:" + port, csrf, http.StatusForbidden},
		{"POST", "/action/pause", "127.0.0.1:" + port, "null", csrf, http.StatusForbidden},
		{"POST", "/action/pause", "nas.example:" + port, "http://evil.example", csrf, http.StatusForbidden},
		{"GET", "/", "127.0.0.1:" + port, "", nil, http.StatusOK},
		{"GET", "/", "[::1]:" + port, "", nil, http.StatusOK},
		{"GET", "/", "localhost:" + port, "", nil, http.StatusOK},
		{"GET", "/", "nas.example.:" + port, "", nil, http.StatusOK},
		{"GET", api, "nas.example", "", nil, http.StatusOK},
	} {
		if got, body := do(tc.method, tc.path, tc.host, tc.origin, tc.form); got != tc.want {
			t.Errorf("%s %s Host %s Origin %q: %d, want %d (%s)", tc.method, tc.path, tc.host, tc.origin, got, tc.want, body)
		}
	}
	if q := td.api(t, "mode", "queue")["queue"].(map[string]any); q["paused"] != false {
		t.Fatalf("a refused form paused the queue")
	}
	if got, body := do("POST", "/action/pause", "nas.example:"+port, "http://nas.example:"+port, csrf); got != http.StatusOK {
		t.Errorf("pause from the configured name: %d (%s)", got, body)
	}
	if q := td.api(t, "mode", "queue")["queue"].(map[string]any); q["paused"] != true {
		t.Errorf("a form from the configured name did not pause the queue")
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestAPIKeyBeforeBody: an upload with a wrong key in the query string is
// answered before a byte of its body is read; one with the key in its
// body after the file (SABnzbd's client libraries put it there) is read
// and admitted, one without a key anywhere is refused before its NZB is
// parsed, and while one keyless-query upload is read a second one is
// refused unread; an admitted upload leaves no temp file behind.
func TestAPIKeyBeforeBody(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	upload := func(query, bodyKey string) (map[string]any, int64) {
		t.Helper()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, _ := mw.CreateFormFile("name", "big.nzb")
		fw.Write(bytes.Repeat([]byte("x"), 3<<20))
		mw.WriteField("mode", "addfile")
		mw.WriteField("output", "json")
		if bodyKey != "" {
			mw.WriteField("apikey", bodyKey)
		}
		mw.Close()
		cr := &countingReader{r: &body}
		req := httptest.NewRequest("POST", "http://127.0.0.1/api?"+query, cr)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		rec := httptest.NewRecorder()
		td.d.Handler().ServeHTTP(rec, req)
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatalf("%s: not JSON: %q", query, rec.Body.Bytes())
		}
		return m, cr.n
	}
	if got, read := upload("apikey=wrongwrong", testKey); got["error"] != "API Key Incorrect" || read != 0 {
		t.Errorf("wrong key in the query: %v after reading %d body bytes; want API Key Incorrect before reading any", got, read)
	}
	if got, _ := upload("", ""); got["error"] != "API Key Required" {
		t.Errorf("no key anywhere: %v; want API Key Required", got)
	}
	if got, _ := upload("", "wrongwrong"); got["error"] != "API Key Incorrect" {
		t.Errorf("wrong key in the body: %v; want API Key Incorrect", got)
	}
	for _, tc := range []struct{ query, bodyKey string }{{"apikey=" + testKey, ""}, {"", testKey}} {
		got, read := upload(tc.query, tc.bodyKey)
		if got["status"] != false || !strings.HasPrefix(got["error"].(string), "refused NZB big.nzb") || read == 0 {
			t.Errorf("keyed upload (query %q, body key %q) of a non-NZB: %v (%d bytes read)", tc.query, tc.bodyKey, got, read)
		}
	}
	td.d.bodyKeySlot <- struct{}{}
	got, read := upload("", testKey)
	<-td.d.bodyKeySlot
	if !strings.HasPrefix(fmt.Sprint(got["error"]), "API Key Required") || read != 0 {
		t.Errorf("second keyless-query upload: %v after %d bytes; want API Key Required before reading any", got, read)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temp files left after the request: %v", left)
	}
	// A small urlencoded POST may carry the key in its body.
	req := httptest.NewRequest("POST", "http://127.0.0.1/api", strings.NewReader(url.Values{"mode": {"queue"}, "apikey": {testKey}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	td.d.Handler().ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), `"queue"`) {
		t.Errorf("urlencoded POST with the key in the body: %s", rec.Body.String())
	}
}

// TestServerTimeouts: a client that stops sending in the middle of its
// headers or of its body is cut off after read_header_timeout and
// read_timeout, and an idle kept-alive connection after idle_timeout.
func TestServerTimeouts(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, func(c *newsget.Config) {
		c.Serve.ReadHeaderTimeout = tomlconf.Duration(100 * time.Millisecond)
		c.Serve.ReadTimeout = tomlconf.Duration(200 * time.Millisecond)
		c.Serve.IdleTimeout = tomlconf.Duration(100 * time.Millisecond)
	})
	defer td.stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := td.d.Server()
	go hs.Serve(ln)
	defer hs.Close()
	for _, tc := range []struct{ name, send string }{
		{"stalled headers", "POST /api?mode=addfile HTTP/1.1\r\nHost: 127.0.0.1\r\n"},
		{"stalled body", "POST /api?mode=addfile&apikey=" + testKey + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
			"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 60000000\r\n\r\n--b\r\n"},
		{"idle keep-alive", "GET /api?mode=version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"},
	} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, tc.send)
		// The deadline only turns a hang into a failure.
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = io.Copy(io.Discard, c)
		c.Close()
		if err != nil {
			t.Errorf("%s: the server never closed the connection: %v", tc.name, err)
		}
	}
}
