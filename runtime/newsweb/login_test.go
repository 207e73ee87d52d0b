package newsweb

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// loginSite is startSite with posting on, the htpasswd users and o's
// other fields (FromDomain, Users and the clock filled in).
func loginSite(t *testing.T, users map[string]string, o PostingOptions) *site {
	t.Helper()
	s := startSite(t)
	var b strings.Builder
	for u, pw := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(u + ":" + string(h) + "\n")
	}
	o.Users = filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(o.Users, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if o.FromDomain == "" {
		o.FromDomain = "readers.example"
	}
	p, err := NewPosting(o)
	if err != nil {
		t.Fatal(err)
	}
	return startSiteWith(t, s.news, Options{Posting: p}, s.news.HostPort())
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// postForm posts v to base+path with the headers hdr (name, value, ...).
func postForm(t *testing.T, base, path string, v url.Values, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// After a login, next is followed only to a path on this site, read as a
// browser reads a Location (tabs and newlines dropped, backslashes as
// slashes).
func TestLocalPath(t *testing.T) {
	for _, tc := range []struct{ next, want string }{
		{"/groups/misc.test", "/groups/misc.test"},
		{"/post?group=misc.test&re=m4%40t", "/post?group=misc.test&re=m4%40t"},
		{"/groups/misc.test/threads/m1@t#p-1", "/groups/misc.test/threads/m1@t#p-1"},
		{"/%2F/evil.example/x", "/%2F/evil.example/x"}, // a path: browsers do not decode it
		{"/%09/evil.example/x", "/%09/evil.example/x"},
		{"  /groups/misc.test\n", "/groups/misc.test"},
		{"", "/"},
		{"/", "/"},
		{"/\t/evil.example/x", "/"},
		{"/\n/evil.example/x", "/"},
		{"/\r\n/evil.example/x", "/"},
		{"\t//evil.example/x", "/"},
		{"//evil.example/x", "/"},
		{"///evil.example/x", "/"},
		{"/\\evil.example/x", "/"},
		{"/\t\\evil.example/x", "/"},
		{"\\\\evil.example/x", "/"},
		{"\\/evil.example/x", "/"},
		{"/x\\..\\..\\evil", "/"},
		{"https://evil.example/x", "/"},
		{"http:/evil.example/x", "/"},
		{"javascript:alert(1)", "/"},
		{"JaVaScRiPt:alert(1)", "/"},
		{"data:text/html,<script>alert(1)</script>", "/"},
		{"evil.example/x", "/"},
		{"\x00//evil.example/x", "/"},
		{"/\x00/evil.example", "/"},
		{"/\x0b/evil.example", "/"},
		{"/\x7f/evil.example", "/"},
		{"/ /evil.example", "/"},
		{"/\u3000/evil.example", "/"},
		{"/\uff0f/evil.example", "/"},
		{"/" + strings.Repeat("a", maxURL), "/"},
	} {
		if got := localPath(tc.next); got != tc.want {
			t.Errorf("localPath(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}
}

// POST /login with a hostile next sends the reader to "/" on this site.
func TestLoginRedirectStaysOnSite(t *testing.T) {
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{})
	for _, next := range []string{"/\t/evil.example/x", "/\\evil.example", "//evil.example", "https://evil.example/"} {
		resp := postForm(t, s.url, "/login", url.Values{"user": {"dora"}, "password": {"secret"}, "next": {next}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Errorf("login with next=%q: %d Location %q, want 303 to /", next, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp := postForm(t, s.url, "/login", url.Values{"user": {"dora"}, "password": {"secret"}, "next": {"/groups/misc.test"}})
	if got := resp.Header.Get("Location"); got != "/groups/misc.test" {
		t.Errorf("login with a path on the site: Location %q", got)
	}
}

// Failed logins are limited per address: after the burst, even the right
// password is answered 429 with Retry-After and no password check, until
// the bucket refills.
func TestLoginThrottle(t *testing.T) {
	clock := newFakeClock()
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{Now: clock.Now})
	try := func(pass string) *http.Response {
		return postForm(t, s.url, "/login", url.Values{"user": {"dora"}, "password": {pass}})
	}
	for i := range loginAddrBurst {
		if r := try("wrong"); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d, want 401", i+1, r.StatusCode)
		}
	}
	for _, pass := range []string{"wrong", "secret"} {
		r := try(pass)
		if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
			t.Errorf("password %q after %d failures: %d Retry-After %q, want 429 with Retry-After", pass, loginAddrBurst, r.StatusCode, r.Header.Get("Retry-After"))
		}
	}
	// Unknown users count against the address too.
	if r := postForm(t, s.url, "/login", url.Values{"user": {"nobody"}, "password": {"x"}}); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("unknown user from a blocked address: %d, want 429", r.StatusCode)
	}
	clock.Advance(loginAddrRefill)
	if r := try("secret"); r.StatusCode != http.StatusSeeOther {
		t.Errorf("right password after the refill: %d, want 303", r.StatusCode)
	}
}

// An account is limited whatever the addresses the failures come from;
// unknown names are limited per address only, and the account buckets
// stay bounded by the users file.
func TestLoginGuardAccounts(t *testing.T) {
	g := newLoginGuard(nil)
	now := time.Unix(1e9, 0)
	for i := range loginUserBurst {
		addr := "192.0.2." + string(rune('a'+i))
		if w := g.blocked(addr, "dora", true, now); w != 0 {
			t.Fatalf("failure %d from a new address: blocked for %v", i+1, w)
		}
		g.fail(addr, "dora", true, now)
	}
	if w := g.blocked("198.51.100.1", "dora", true, now); w <= 0 {
		t.Errorf("account after %d failures from as many addresses: not blocked", loginUserBurst)
	}
	if w := g.blocked("198.51.100.1", "eve", true, now); w != 0 {
		t.Errorf("another account from a fresh address: blocked for %v", w)
	}
	if w := g.blocked("198.51.100.1", "dora", true, now.Add(loginUserRefill)); w != 0 {
		t.Errorf("account after a refill: blocked for %v", w)
	}
	for i := range 3 * loginAddrs {
		g.fail("203.0.113.1", "nobody"+string(rune(i)), false, now)
	}
	if len(g.users) > 1 || len(g.addrs) > loginAddrs {
		t.Errorf("after failures of unknown names: %d account buckets, %d address buckets", len(g.users), len(g.addrs))
	}
}

// Password checks run loginWorkers at a time with loginQueue waiting;
// beyond that a login is answered 503 at once, without a bcrypt.
func TestLoginBusy(t *testing.T) {
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{})
	g := s.h.posting.guard
	for range cap(g.slots) {
		g.slots <- struct{}{}
	}
	r := postForm(t, s.url, "/login", url.Values{"user": {"nobody"}, "password": {"x"}})
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Errorf("login with every check slot taken: %d, want 503 with Retry-After", r.StatusCode)
	}
	for range cap(g.slots) {
		<-g.slots
	}
	if r := postForm(t, s.url, "/login", url.Values{"user": {"dora"}, "password": {"secret"}}); r.StatusCode != http.StatusSeeOther {
		t.Errorf("login with the slots free: %d", r.StatusCode)
	}
}

// The dummy hash checked for unknown users costs what the users file's
// hashes cost.
func TestLoginDummyCost(t *testing.T) {
	h, _ := bcrypt.GenerateFromPassword([]byte("x"), bcrypt.MinCost+1)
	g := newLoginGuard(map[string][]byte{"a": h, "b": h})
	if c, _ := bcrypt.Cost(g.dummy); c != bcrypt.MinCost+1 {
		t.Errorf("dummy hash cost %d, want the file's %d", c, bcrypt.MinCost+1)
	}
}

// "Origin: null" (a page with no-referrer, a sandboxed frame) is refused
// on /login and /logout; the site's own pages ask browsers for their
// origin (Referrer-Policy same-origin).
func TestLoginOriginNull(t *testing.T) {
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{})
	login := url.Values{"user": {"dora"}, "password": {"secret"}}
	if r := postForm(t, s.url, "/login", login, "Origin", "null"); r.StatusCode != http.StatusForbidden || len(r.Cookies()) > 0 {
		t.Errorf("login with Origin null: %d, cookies %v; want 403 and none", r.StatusCode, r.Cookies())
	}
	if r := postForm(t, s.url, "/logout", nil, "Origin", "null"); r.StatusCode != http.StatusForbidden || len(r.Cookies()) > 0 {
		t.Errorf("logout with Origin null: %d, cookies %v; want 403 and none", r.StatusCode, r.Cookies())
	}
	if r := postForm(t, s.url, "/login", login, "Origin", "http://evil.example"); r.StatusCode != http.StatusForbidden {
		t.Errorf("login from another site: %d, want 403", r.StatusCode)
	}
	if r := postForm(t, s.url, "/login", login, "Origin", s.url); r.StatusCode != http.StatusSeeOther {
		t.Errorf("login from this site: %d, want 303", r.StatusCode)
	}
	resp, _ := get(t, s.url+"/login")
	if got := resp.Header.Get("Referrer-Policy"); got != "same-origin" {
		t.Errorf("Referrer-Policy %q, want same-origin", got)
	}
}

// FuzzLocalPath: whatever next is, the redirect stays on this site: "/"
// or a path with one leading slash, no scheme or host, nothing a browser
// would drop or read as a slash.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/groups/x", "/\t/evil.example/x", "//evil", "/\\evil", "https://evil", " /a\n", "/%2F/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := localPath(next)
		if got == "/" {
			return
		}
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\\\t\r\n ") {
			t.Fatalf("localPath(%q) = %q", next, got)
		}
		for i := 0; i < len(got); i++ {
			if got[i] < 0x20 || got[i] >= 0x7f {
				t.Fatalf("localPath(%q) = %q holds byte %#x", next, got, got[i])
			}
		}
		if u, err := url.Parse(got); err == nil && (u.Scheme != "" || u.Host != "" || u.User != nil) {
			t.Fatalf("localPath(%q) = %q names %q", next, got, u.Host)
		}
	})
}

// A reader sent to the login page by a Reply or New thread link is told
// why; one who opened it is not.
func TestLoginSaysWhy(t *testing.T) {
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{})
	resp, err := noRedirect.Get(s.url + "/post?group=misc.test&re=m4%40t")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, page := get(t, s.url+resp.Header.Get("Location")); !strings.Contains(page, `<p class="lead">Log in to post; the form opens after.</p>`) {
		t.Errorf("the login page after Reply (%s) does not say why:\n%s", resp.Header.Get("Location"), page)
	}
	if _, page := get(t, s.url+"/login"); strings.Contains(page, "Log in to post") {
		t.Errorf("the login page opened by itself says it is for posting")
	}
}
