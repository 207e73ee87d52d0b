package newsweb

import (
	"html"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// loginCookie logs dora in and returns the session cookie, with the
// headers hdr on the login request.
func loginCookie(t *testing.T, s *site, hdr ...string) *http.Cookie {
	t.Helper()
	resp := postForm(t, s.url, "/login", url.Values{"user": {"dora"}, "password": {"secret"}}, hdr...)
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	t.Fatalf("login: %d, no session cookie", resp.StatusCode)
	return nil
}

// getCookie is GET u with cookie c, not following redirects.
func getCookie(t *testing.T, u string, c *http.Cookie) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if c != nil {
		req.AddCookie(c)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

// The session cookie is HttpOnly and SameSite=Lax, lasts the configured
// lifetime, and is Secure when the site is reached over TLS (here: a proxy
// that says so with X-Forwarded-Proto).
func TestSessionCookie(t *testing.T) {
	clock := newFakeClock()
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{SessionLife: time.Hour, Now: clock.Now})
	c := loginCookie(t, s)
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure || c.MaxAge != 3600 {
		t.Errorf("cookie over http: HttpOnly %v SameSite %v Secure %v Max-Age %d; want true, Lax, false, 3600", c.HttpOnly, c.SameSite, c.Secure, c.MaxAge)
	}
	if tls := loginCookie(t, s, "X-Forwarded-Proto", "https"); !tls.Secure {
		t.Errorf("cookie behind a TLS proxy is not Secure")
	}
	if resp, _ := getCookie(t, s.url+"/post?group=misc.test", c); resp.StatusCode != 200 {
		t.Errorf("compose form with the session: %d", resp.StatusCode)
	}
	clock.Advance(time.Hour + time.Second)
	if resp, _ := getCookie(t, s.url+"/post?group=misc.test", c); resp.StatusCode != http.StatusSeeOther ||
		!strings.HasPrefix(resp.Header.Get("Location"), "/login?next=") {
		t.Errorf("compose form past the session's life: %d %s, want the login page", resp.StatusCode, resp.Header.Get("Location"))
	}
}

var accountFormRE = regexp.MustCompile(`<form class="account" method="post" action="/logout"><input type="hidden" name="csrf" value="([^"]+)"><span class="user">dora</span> · <button type="submit">Log out</button></form>`)

// The header says "Log in" to an anonymous reader and names a logged-in
// one with a "Log out" button; the named page is never kept for anybody
// else, and pages vary by Cookie so that a browser does not show one kept
// from before a login. Logging out is a POST from this site with the
// reader's token; GET /logout only shows the button.
func TestLoginLogoutVisible(t *testing.T) {
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{})
	pages := []string{"/", "/groups/misc.test", "/groups/misc.test/threads/m1@t", "/articles/m1@t", "/login", "/no/such/page"}
	anonymous := func() {
		t.Helper()
		for _, path := range pages {
			resp, page := get(t, s.url+path)
			if !strings.Contains(page, `<a class="account" href="/login">Log in</a>`) || strings.Contains(page, "Log out") || strings.Contains(page, "dora") {
				t.Errorf("%s for an anonymous reader: no Log in link, or a Log out", path)
			}
			if v := resp.Header.Get("Vary"); !strings.Contains(v, "Cookie") {
				t.Errorf("%s: Vary %q, want Cookie in it", path, v)
			}
		}
	}
	anonymous()
	c := loginCookie(t, s)
	var token string
	for _, path := range pages {
		resp, page := getCookie(t, s.url+path, c)
		m := accountFormRE.FindStringSubmatch(page)
		if m == nil || strings.Contains(page, ">Log in</a>") {
			t.Errorf("%s for dora: the header does not name her with a Log out button", path)
			continue
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s for dora: Cache-Control %q, want no-store", path, cc)
		}
		token = html.UnescapeString(m[1])
	}
	anonymous() // the pages named for dora were kept for nobody
	_, page := getCookie(t, s.url+"/login", c)
	if !strings.Contains(page, `logged in as <b class="user">dora</b>`) {
		t.Errorf("the login page of a logged-in reader does not say who:\n%s", page)
	}
	deleted := func(resp *http.Response) bool {
		for _, k := range resp.Cookies() {
			if k.Name == sessionCookie && k.MaxAge < 0 {
				return true
			}
		}
		return false
	}
	if resp, page := getCookie(t, s.url+"/logout", c); resp.StatusCode != 200 || deleted(resp) || !strings.Contains(page, `action="/logout"`) {
		t.Errorf("GET /logout: %d, deleted %v; want the page with the button and the session kept", resp.StatusCode, deleted(resp))
	}
	logout := func(v url.Values, origin string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", s.url+"/logout", strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		req.AddCookie(c)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		what   string
		v      url.Values
		origin string
	}{
		{"without the token", nil, s.url},
		{"with another's token", url.Values{"csrf": {s.h.posting.csrf("erin")}}, s.url},
		{"from another site", url.Values{"csrf": {token}}, "http://evil.example"},
	} {
		if resp := logout(tc.v, tc.origin); resp.StatusCode != http.StatusForbidden || deleted(resp) {
			t.Errorf("POST /logout %s: %d, deleted %v; want 403 and the session kept", tc.what, resp.StatusCode, deleted(resp))
		}
	}
	if resp := logout(url.Values{"csrf": {token}}, s.url); resp.StatusCode != http.StatusSeeOther || !deleted(resp) {
		t.Errorf("POST /logout from the header's form: %d, deleted %v", resp.StatusCode, deleted(resp))
	}
}

// Reload reads the users file again: a user added can log in, one removed
// is logged out; a file with a mistake keeps the users in use.
func TestUsersReload(t *testing.T) {
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{})
	p := s.h.posting
	c := loginCookie(t, s)
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	os.WriteFile(p.opts.Users, []byte("erin:"+string(h)+"\n"), 0o600)
	if n, err := p.Reload(); n != 1 || err != nil {
		t.Fatalf("Reload: %d %v", n, err)
	}
	if resp, _ := getCookie(t, s.url+"/post?group=misc.test", c); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a removed user's session still works: %d", resp.StatusCode)
	}
	if r := postForm(t, s.url, "/login", url.Values{"user": {"erin"}, "password": {"pw"}}); r.StatusCode != http.StatusSeeOther {
		t.Errorf("an added user cannot log in: %d", r.StatusCode)
	}
	os.WriteFile(p.opts.Users, []byte("erin:"+string(h)+"\nbroken line\n"), 0o600)
	if _, err := p.Reload(); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Reload of a bad file: %v, want its line", err)
	}
	if r := postForm(t, s.url, "/login", url.Values{"user": {"erin"}, "password": {"pw"}}); r.StatusCode != http.StatusSeeOther {
		t.Errorf("after a refused reload the users in use changed: %d", r.StatusCode)
	}
}
