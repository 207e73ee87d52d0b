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

var logoutLink = regexp.MustCompile(`<a class="logout" href="([^"]+)">`)

// Every page links to the login page, which shows who is logged in and a
// log-out link; the link (GET, with the reader's token) and the POST form
// log out, a GET without the token only asks.
func TestLoginLogoutVisible(t *testing.T) {
	s := loginSite(t, map[string]string{"dora": "secret"}, PostingOptions{})
	for _, path := range []string{"/", "/groups/misc.test", "/groups/misc.test/threads/m1@t", "/articles/m1@t"} {
		if _, page := get(t, s.url+path); !strings.Contains(page, `<a class="account" href="/login">Log in / out</a>`) {
			t.Errorf("%s has no log in / out link", path)
		}
	}
	c := loginCookie(t, s)
	_, page := getCookie(t, s.url+"/login", c)
	m := logoutLink.FindStringSubmatch(page)
	if !strings.Contains(page, `logged in as <b class="user">dora</b>`) || m == nil {
		t.Fatalf("the login page of a logged-in reader does not say who or how to log out:\n%s", page)
	}
	deleted := func(resp *http.Response) bool {
		for _, k := range resp.Cookies() {
			if k.Name == sessionCookie && k.MaxAge < 0 {
				return true
			}
		}
		return false
	}
	if resp, page := getCookie(t, s.url+"/logout?t=forged", c); resp.StatusCode != 200 || deleted(resp) || !strings.Contains(page, `action="/logout"`) {
		t.Errorf("GET /logout with a bad token: %d, deleted %v; want the page with the button", resp.StatusCode, deleted(resp))
	}
	if resp, _ := getCookie(t, s.url+html.UnescapeString(m[1]), c); resp.StatusCode != http.StatusSeeOther || !deleted(resp) {
		t.Errorf("GET of the log-out link: %d, deleted %v", resp.StatusCode, deleted(resp))
	}
	req, _ := http.NewRequest("POST", s.url+"/logout", nil)
	req.Header.Set("Origin", s.url)
	req.AddCookie(c)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !deleted(resp) {
		t.Errorf("POST /logout: %d, deleted %v", resp.StatusCode, deleted(resp))
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
