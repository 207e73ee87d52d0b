package serve

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
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
