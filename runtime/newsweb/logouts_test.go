package newsweb

import (
	"bytes"
	"encoding/base64"
	"log/slog"
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

// A damaged logouts file does not stop the start: it could name a session
// that must stay ended, so every session issued before then is ended, and
// the file is written again with that cutoff and without the damage.
func TestLogoutsFileDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logouts")
	now := time.Unix(1_800_000_000, 0)
	good := appendLogoutLine(nil, sessionKey("a.1.b"), now.Unix()+60)
	before, after := now.Add(-time.Second).UnixNano(), now.UnixNano()
	for _, tc := range []struct{ what, text string }{
		{"a bad checksum", string(good) + strings.Replace(string(good), "\t", "\tx", 1)},
		{"a cut line", string(good) + string(good[:20])},
		{"a long line", string(good) + strings.Repeat("a", 4096) + "\n"},
	} {
		os.WriteFile(path, []byte(tc.text), 0o600)
		l, err := loadLogouts(path, now)
		if err != nil || l.damage == "" || l.damagedLine != 2 {
			t.Errorf("%s: %v, damage %q at line %d; want it found at line 2", tc.what, err, l.damage, l.damagedLine)
			continue
		}
		if !l.has("c.2.d", before) || l.has("c.2.d", after) || !l.has("a.1.b", after) {
			t.Errorf("%s: the sessions issued before the start are not all ended, or later ones are", tc.what)
		}
		l2, err := loadLogouts(path, now.Add(time.Minute))
		if err != nil || l2.damage != "" || !l2.has("c.2.d", before) || l2.has("c.2.d", after) {
			t.Errorf("%s: read again: %v, damage %q, cutoff %d; want no damage and the cutoff kept", tc.what, err, l2.damage, l2.cutoff)
		}
	}
	os.WriteFile(path, good, 0o600)
	l, err := loadLogouts(path, now)
	if err != nil || l.damage != "" || !l.has("a.1.b", after) || l.has("c.2.d", 0) {
		t.Errorf("a good file: %v, damage %q, cutoff %d", err, l.damage, l.cutoff)
	}
	if l, err := loadLogouts(path, now.Add(time.Hour)); err != nil || l.has("a.1.b", after) {
		t.Errorf("a good file past the session's expiry still holds it (err %v)", err)
	}
}

// A damaged logouts file: newsweb serves, says which file and line and
// what it did, refuses the sessions issued before the start and takes new
// logins; after the next restart the old session is still refused and
// nothing is logged again.
func TestLogoutsFileDamagedServes(t *testing.T) {
	clock := newFakeClock()
	o := PostingOptions{SessionLife: time.Hour, Now: clock.Now, Key: []byte("0123456789abcdef0123456789abcdef"),
		LogoutsFile: filepath.Join(t.TempDir(), "logouts")}
	s := loginSite(t, map[string]string{"dora": "secret"}, o)
	old := loginCookie(t, s)
	clock.Advance(time.Second)
	logoutWith(t, s, loginCookie(t, s))
	o.Users, o.FromDomain = s.h.posting.opts.Users, "readers.example"
	composing := func(s *site, c *http.Cookie) bool {
		t.Helper()
		resp, _ := getCookie(t, s.url+"/post?group=misc.test", c)
		return resp.StatusCode == http.StatusOK
	}
	if !composing(s, old) {
		t.Fatal("the session does not open the compose form before the restart")
	}
	b, _ := os.ReadFile(o.LogoutsFile)
	os.WriteFile(o.LogoutsFile, append(b, "0123\tdamaged\n"...), 0o600)

	restart := func() (*site, string) {
		t.Helper()
		clock.Advance(time.Second)
		p, err := NewPosting(o)
		if err != nil {
			t.Fatalf("the start with a damaged logouts file: %v", err)
		}
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		return startSiteWith(t, s.news, Options{Posting: p, Logger: log}, s.news.HostPort()), logs.String()
	}
	s2, logs := restart()
	if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "file="+o.LogoutsFile) || !strings.Contains(logs, "line=2") {
		t.Errorf("the log does not name the damaged file and line:\n%s", logs)
	}
	if resp, _ := getCookie(t, s2.url+"/", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the front page: %d", resp.StatusCode)
	}
	if composing(s2, old) {
		t.Errorf("a session issued before the start opens the compose form")
	}
	if fresh := loginCookie(t, s2); !composing(s2, fresh) {
		t.Errorf("a new login does not open the compose form")
	}

	s3, logs := restart()
	if strings.Contains(logs, "logouts") {
		t.Errorf("the next start logs about the logouts file again:\n%s", logs)
	}
	if composing(s3, old) {
		t.Errorf("after the next restart a session issued before the damaged start opens the compose form")
	}
}

// FuzzLogoutLine: a line that parses is written back the same.
func FuzzLogoutLine(f *testing.F) {
	f.Add(appendLogoutLine(nil, sessionKey("x"), 1_800_000_000))
	f.Add([]byte("zz\t1\t00000000"))
	f.Add(appendLogoutLine(nil, cutoffKey, 1_800_000_000_000_000_000))
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

// The session cookie signs its issue time, and a cookie without one (three
// parts) is taken as issued before any cutoff.
func TestSessionIssueTime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p := &Posting{opts: PostingOptions{Key: []byte("k"), Now: func() time.Time { return now }},
		users: map[string][]byte{"dora": nil}, ended: &logouts{ended: map[string]int64{}}}
	v := p.session("dora", now, now.Add(time.Hour))
	parts := strings.Split(v, ".")
	e := parts[1]
	legacy := parts[0] + "." + e + "." + base64.RawURLEncoding.EncodeToString(p.mac("session", "dora", e))
	forged := parts[0] + "." + e + ".0." + parts[3]
	if _, ok := p.sessionUser(v); !ok {
		t.Errorf("a fresh session is refused")
	}
	if _, ok := p.sessionUser(legacy); !ok {
		t.Errorf("a session without an issue time is refused without a cutoff")
	}
	if _, ok := p.sessionUser(forged); ok {
		t.Errorf("a session with a changed issue time is taken")
	}
	p.ended.cutoff = now.UnixNano()
	if _, ok := p.sessionUser(v); !ok {
		t.Errorf("a session issued at the cutoff is refused")
	}
	if _, ok := p.sessionUser(legacy); ok {
		t.Errorf("a session without an issue time is taken despite a cutoff")
	}
}
