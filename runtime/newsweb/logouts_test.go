package newsweb

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// logoutWith posts the logout form of the reader with cookie c to s.
func logoutWith(t *testing.T, s *site, c *http.Cookie) *http.Response {
	t.Helper()
	user, ok := s.h.posting.sessionUser(c.Value)
	if !ok {
		t.Fatalf("logout: the cookie is not a session")
	}
	v := url.Values{"csrf": {s.h.posting.csrf(user)}}
	req, _ := http.NewRequest("POST", s.url+"/logout", strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.url)
	req.AddCookie(c)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// Logging out ends the session on the server: a copy of the cookie taken
// before is refused, after a restart too, while another session of the
// same reader goes on. The record forgets a session once it has expired.
func TestLogoutEndsSession(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	o := PostingOptions{SessionLife: time.Hour, Now: clock.Now, Key: []byte("0123456789abcdef0123456789abcdef"),
		LogoutsFile: filepath.Join(dir, "state", "logouts")}
	s := loginSite(t, map[string]string{"dora": "secret"}, o)
	copied := loginCookie(t, s)
	clock.Advance(time.Second)
	other := loginCookie(t, s) // her phone, say
	composing := func(s *site, c *http.Cookie) bool {
		t.Helper()
		resp, _ := getCookie(t, s.url+"/post?group=misc.test", c)
		return resp.StatusCode == http.StatusOK
	}
	if !composing(s, copied) || !composing(s, other) {
		t.Fatal("the sessions do not open the compose form before the logout")
	}
	if resp := logoutWith(t, s, copied); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if composing(s, copied) {
		t.Errorf("a copy of the cookie still opens the compose form after the logout")
	}
	if _, page := getCookie(t, s.url+"/", copied); strings.Contains(page, "Log out") {
		t.Errorf("a copy of the cookie still names the reader after the logout")
	}
	if !composing(s, other) {
		t.Errorf("the logout ended the reader's other session")
	}

	// A restart: the same key and users file, the logouts file read back.
	o.Users, o.FromDomain = s.h.posting.opts.Users, "readers.example"
	p, err := NewPosting(o)
	if err != nil {
		t.Fatal(err)
	}
	s2 := startSiteWith(t, s.news, Options{Posting: p}, s.news.HostPort())
	if composing(s2, copied) {
		t.Errorf("after a restart a copy of the logged-out cookie opens the compose form again")
	}
	if !composing(s2, other) {
		t.Errorf("after a restart the reader's other session is refused")
	}

	// Past the session's expiry the record drops it at the next logout.
	clock.Advance(time.Hour + time.Minute)
	fresh := loginCookie(t, s2)
	logoutWith(t, s2, fresh)
	if n := len(p.ended.ended); n != 1 {
		t.Errorf("the record holds %d sessions after the first expired, want 1", n)
	}
	b, err := os.ReadFile(o.LogoutsFile)
	if err != nil || strings.Count(string(b), "\n") != 1 || strings.Contains(string(b), fresh.Value) {
		t.Errorf("logouts file: %q %v; want one line, without the cookie", b, err)
	}
}

// A damaged logouts file stops the start with its name and line: it could
// name a session that must stay ended.
func TestLogoutsFileDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logouts")
	now := time.Unix(1_800_000_000, 0)
	good := appendLogoutLine(nil, sessionKey("a.1.b"), now.Unix()+60)
	for _, tc := range []struct{ what, text string }{
		{"a bad checksum", string(good) + strings.Replace(string(good), "\t", "\tx", 1)},
		{"a cut line", string(good) + string(good[:20])},
		{"a long line", string(good) + strings.Repeat("a", 4096) + "\n"},
	} {
		os.WriteFile(path, []byte(tc.text), 0o600)
		if _, err := loadLogouts(path, now); err == nil || !strings.Contains(err.Error(), path+" line 2") {
			t.Errorf("%s: %v, want an error naming %s line 2", tc.what, err, path)
		}
	}
	os.WriteFile(path, good, 0o600)
	l, err := loadLogouts(path, now)
	if err != nil || !l.has("a.1.b") {
		t.Errorf("a good file: %v, has %v", err, err == nil && l.has("a.1.b"))
	}
	if l, err := loadLogouts(path, now.Add(time.Hour)); err != nil || l.has("a.1.b") {
		t.Errorf("a good file past the session's expiry still holds it (err %v)", err)
	}
}

// FuzzLogoutLine: a line that parses is written back the same.
func FuzzLogoutLine(f *testing.F) {
	f.Add(appendLogoutLine(nil, sessionKey("x"), 1_800_000_000))
	f.Add([]byte("zz\t1\t00000000"))
	f.Fuzz(func(t *testing.T, line []byte) {
		key, exp, ok := parseLogoutLine(line)
		if !ok {
			return
		}
		if got := appendLogoutLine(nil, key, exp); string(got[:len(got)-1]) != string(line) {
			t.Errorf("%q read as %q %d, written back as %q", line, key, exp, got)
		}
	})
}
