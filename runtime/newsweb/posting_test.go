package newsweb

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"

	"github.com/newsflow/newsflow/proto"
)

// postingSite is startSite with posting on, identity from X-Forwarded-User
// and, when users is not empty, an htpasswd file of them.
func postingSite(t *testing.T, rate int, users map[string]string) *site {
	t.Helper()
	s := startSite(t)
	o := PostingOptions{TrustedHeader: "X-Forwarded-User", FromDomain: "readers.example", RateLimit: rate}
	if len(users) > 0 {
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
	}
	p, err := NewPosting(o)
	if err != nil {
		t.Fatal(err)
	}
	return startSiteWith(t, s.news, Options{Posting: p}, s.news.HostPort())
}

// postJSON sends POST /api/articles as user (none when "").
func postJSON(t *testing.T, c *http.Client, base, user, body string, hdr ...string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/articles", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("X-Forwarded-User", user)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

// The API posts a reply through NNTP POST with References, In-Reply-To and
// From built right, and the reply is in its thread at once.
func TestPostReply(t *testing.T) {
	s := postingSite(t, 0, nil)
	get(t, s.url+"/groups/misc.test") // the thread list and pages are cached before the post
	get(t, s.url+"/groups/misc.test/threads/m1@t")
	if resp, out := postJSON(t, http.DefaultClient, s.url, "", `{"newsgroups":["misc.test"],"subject":"x","body":"y"}`); resp.StatusCode != 401 {
		t.Errorf("anonymous post: %d %v", resp.StatusCode, out)
	}
	resp, out := postJSON(t, http.DefaultClient, s.url, "alice", `{"newsgroups":["misc.test"],"subject":"Re: Root","body":"I agree, see https://example.org.","references":"<m4@t>"}`)
	id, _ := out["message_id"].(string)
	if resp.StatusCode != 201 || !strings.HasSuffix(id, "@readers.example>") {
		t.Fatalf("post: %d %v", resp.StatusCode, out)
	}
	var posted []byte
	for _, x := range s.news.Transfers() {
		if x.Cmd == "POST" && x.MessageID == id && x.Code == proto.CodePosted {
			posted = x.Article
		}
	}
	h, _, err := proto.ParseHeaders(posted)
	if err != nil {
		t.Fatalf("the server got no article %s: %v", id, err)
	}
	got := map[string]string{}
	for _, k := range []string{"From", "Newsgroups", "Subject", "References", "In-Reply-To", "Content-Type"} {
		got[k] = h.Get(k)
	}
	want := map[string]string{"From": `"alice" <alice@readers.example>`, "Newsgroups": "misc.test", "Subject": "Re: Root",
		"References": "<m1@t> <m4@t>", "In-Reply-To": "<m4@t>", "Content-Type": "text/plain; charset=utf-8; format=flowed"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("posted header (-want +got):\n%s", d)
	}
	// At once, without waiting for a refresh: the reply is in the
	// thread, under <m4@t>.
	_, page := get(t, s.url+"/groups/misc.test/threads/m1@t")
	if !strings.Contains(page, "I agree, see ") || !strings.Contains(treeShapeLine(page), "2 "+id) {
		t.Errorf("the reply is not in its thread: %v", treeShape(page))
	}
	if !strings.Contains(page, `<a class="reply" href="/post?group=misc.test&amp;re=m4%40t">Reply</a>`) {
		t.Errorf("no reply link on the thread page")
	}
}

func treeShapeLine(page string) string { return strings.Join(treeShape(page), "|") }

// 441 from the server is shown with its reason; bad drafts are 400;
// the rate limit answers 429 with Retry-After; a foreign Origin is 403.
func TestPostRefused(t *testing.T) {
	s := postingSite(t, 2, nil)
	resp, out := postJSON(t, http.DefaultClient, s.url, "bob", `{"newsgroups":["no.such.group"],"subject":"s","body":"b"}`)
	if resp.StatusCode != 422 || !strings.Contains(out["error"].(string), "The news server refused the article: ") {
		t.Errorf("441: %d %v", resp.StatusCode, out)
	}
	for body, want := range map[string]string{
		`{"newsgroups":[],"subject":"s","body":"b"}`:                                                        "newsgroups",
		`{"newsgroups":["misc.test"],"subject":"","body":"b"}`:                                              "the subject is empty: write one",
		`{"newsgroups":["misc.test"],"subject":"` + strings.Repeat("s", maxPostSubject+1) + `","body":"b"}`: "shorten it to 300",
		`{"newsgroups":["misc.test"],"subject":"s\u0007","body":"b"}`:                                       "the subject holds control characters",
		`{"newsgroups":["misc.test"],"subject":"s","body":"  "}`:                                            "empty",
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","x":1}`:                                       "unknown field",
		`{"newsgroups":["misc.test"],"subject":"s","body":"b\u0007"}`:                                       "control",
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","references":"no pe"}`:                        "message-id",
	} {
		resp, out := postJSON(t, http.DefaultClient, s.url, "bob", body)
		if resp.StatusCode != 400 || !strings.Contains(out["error"].(string), want) {
			t.Errorf("%s: %d %v, want 400 about %q", body, resp.StatusCode, out, want)
		}
	}
	if resp, _ := postJSON(t, http.DefaultClient, s.url, "bob", `{"newsgroups":["misc.test"],"subject":"s","body":"b"}`, "Origin", "https://evil.example"); resp.StatusCode != 403 {
		t.Errorf("cross-origin post: %d", resp.StatusCode)
	}
	// bob has used one of two (the 441); carol's count is her own.
	if resp, _ := postJSON(t, http.DefaultClient, s.url, "bob", `{"newsgroups":["misc.test"],"subject":"s","body":"b"}`); resp.StatusCode != 201 {
		t.Errorf("second post: %d", resp.StatusCode)
	}
	resp, out = postJSON(t, http.DefaultClient, s.url, "bob", `{"newsgroups":["misc.test"],"subject":"s","body":"b"}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third post: %d %v Retry-After %q", resp.StatusCode, out, resp.Header.Get("Retry-After"))
	}
	if resp, _ := postJSON(t, http.DefaultClient, s.url, "carol", `{"newsgroups":["misc.test"],"subject":"s","body":"b"}`); resp.StatusCode != 201 {
		t.Errorf("another user: %d", resp.StatusCode)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// The HTML forms: login with an htpasswd user, the reply form quoting its
// parent, CSRF checked, then the new article in its thread.
func TestPostForms(t *testing.T) {
	s := postingSite(t, 0, map[string]string{"dora": "secret"})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	form := func(path string, v url.Values) *http.Response {
		resp, err := c.PostForm(s.url+path, v)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp, err := c.Get(s.url + "/post?group=misc.test&re=m4@t")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/login" {
		t.Fatalf("anonymous form: ended at %s, want the login page", resp.Request.URL)
	}
	if r := form("/login", url.Values{"user": {"dora"}, "password": {"wrong"}}); r.StatusCode != 401 {
		t.Errorf("wrong password: %d", r.StatusCode)
	}
	if r := form("/login", url.Values{"user": {"dora"}, "password": {"secret"}, "next": {"/post?group=misc.test&re=m4@t"}}); r.StatusCode != 200 || r.Request.URL.Path != "/post" {
		t.Fatalf("login: %d at %s", r.StatusCode, r.Request.URL)
	}
	resp, err = c.Get(s.url + "/post?group=misc.test&re=m4@t")
	if err != nil {
		t.Fatal(err)
	}
	b := new(strings.Builder)
	_, _ = io.Copy(b, resp.Body)
	resp.Body.Close()
	page := b.String()
	for _, want := range []string{`value="Re: Root"`, "Tester wrote:\n&gt;&gt; the root article\n&gt; first reply\n", `name="references" value="&lt;m4@t&gt;"`} {
		if !strings.Contains(page, want) {
			t.Errorf("reply form lacks %q", want)
		}
	}
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the form")
	}
	v := url.Values{"newsgroups": {"misc.test"}, "subject": {"Re: Root"}, "body": {"From the form."}, "references": {"<m4@t>"}}
	if r := form("/post", v); r.StatusCode != 403 {
		t.Errorf("post without the CSRF token: %d", r.StatusCode)
	}
	v.Set("csrf", m[1])
	r := form("/post", v)
	if r.StatusCode != 200 || !strings.HasPrefix(r.Request.URL.Path, "/groups/misc.test/threads/") || !strings.HasSuffix(r.Request.URL.Path, "@readers.example") {
		t.Fatalf("post: %d at %s", r.StatusCode, r.Request.URL)
	}
	_, thread := get(t, s.url+r.Request.URL.Path)
	if !strings.Contains(thread, "From the form.") || !strings.Contains(thread, `<span class="from">dora</span>`) {
		t.Errorf("the post is not on its thread page")
	}
}

func TestCompose(t *testing.T) {
	now := time.Date(2026, 11, 24, 1, 2, 3, 0, time.UTC)
	var refs []string
	for i := range 30 {
		refs = append(refs, "<r"+string(rune('a'+i%26))+string(rune('0'+i/26))+"@x>")
	}
	c, err := compose(draft{Newsgroups: []string{"misc.test", "alt.test"}, Subject: "  Grüße   aus\tBerlin ", Body: "line\r\n.dot\n\n", Name: "Ève"},
		"ève", "readers.example", "<id@readers.example>", now, &parent{ID: "<p@x>", References: refs}, "")
	if err != nil {
		t.Fatal(err)
	}
	h, off, err := proto.ParseHeaders(c.Raw)
	if err != nil {
		t.Fatal(err)
	}
	gotRefs := strings.Fields(h.Get("References"))
	if len(gotRefs) != maxRefs || gotRefs[0] != refs[0] || gotRefs[maxRefs-1] != "<p@x>" || gotRefs[maxRefs-2] != refs[29] {
		t.Errorf("References %v", gotRefs)
	}
	if got := decodeHeader(h.Get("Subject")); got != "Grüße aus Berlin" {
		t.Errorf("Subject %q (raw %q)", got, h.Get("Subject"))
	}
	if got := decodeHeader(h.Get("From")); got != `Ève <__ve@readers.example>` {
		t.Errorf("From %q", got)
	}
	if got := string(c.Raw[off:]); got != "line\r\n.dot\r\n" {
		t.Errorf("body %q", got)
	}
	if h.Get("Date") != "Tue, 24 Nov 2026 01:02:03 +0000" && h.Get("Date") != proto.FormatArticleDate(now) {
		t.Errorf("Date %q", h.Get("Date"))
	}
	long := strings.Repeat("x", maxPostLine+1)
	if _, err := compose(draft{Newsgroups: []string{"misc.test"}, Subject: "s", Body: long}, "u", "d.example", "<i@d>", now, nil, ""); err == nil {
		t.Errorf("a %d-byte line was taken", len(long))
	}
}

// TestRateLimit: n per window per user, sliding.
func TestRateLimit(t *testing.T) {
	l := rateLimit{n: 2, window: time.Minute, posts: map[string][]time.Time{}}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		user string
		at   time.Duration
		ok   bool
	}{{"a", 0, true}, {"a", 10 * time.Second, true}, {"a", 20 * time.Second, false}, {"b", 20 * time.Second, true},
		{"a", 60 * time.Second, true}, {"a", 65 * time.Second, false}, {"a", 71 * time.Second, true}}
	for i, st := range steps {
		if ok, _ := l.allow(st.user, t0.Add(st.at)); ok != st.ok {
			t.Errorf("step %d (%s at %v): allowed %v", i, st.user, st.at, ok)
		}
	}
}

// The body goes out in format=flowed: a long paragraph is wrapped at
// spaces into soft lines (ending in a space) instead of being refused,
// quote marks are repeated on its pieces, hard lines lose trailing spaces,
// the signature separator keeps its space, and lines starting with a
// space or "From " are stuffed.
func TestFlowed(t *testing.T) {
	para := strings.Repeat("lorem ipsum dolor sit amet ", 60) // 1,620 bytes, one line
	got, err := bodyText(para + "\n> " + strings.Repeat("quoted words here ", 10) + "\n>\nhard line   \n From the start\n-- \nSig")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\r\n"), "\r\n")
	var joined strings.Builder
	i := 0
	for ; i < len(lines) && !strings.HasPrefix(lines[i], ">"); i++ {
		if n := len([]rune(lines[i])); n > 78 {
			t.Errorf("line %d is %d characters", i+1, n)
		}
		joined.WriteString(lines[i])
		if i < 21 && !strings.HasSuffix(lines[i], " ") {
			t.Errorf("line %d of the paragraph is not soft: %q", i+1, lines[i])
		}
	}
	if joined.String() != strings.TrimRight(para, " ") {
		t.Errorf("the paragraph does not re-flow to itself:\n%q", joined.String())
	}
	rest := lines[i:]
	want := []string{"> quoted words here quoted words here quoted words here quoted words here ",
		"> quoted words here quoted words here quoted words here quoted words here ",
		"> quoted words here quoted words here", ">", "hard line", "  From the start", "-- ", "Sig"}
	if strings.Join(rest, "|") != strings.Join(want, "|") {
		t.Errorf("after the paragraph:\n%q\nwant\n%q", rest, want)
	}
	if _, err := bodyText(strings.Repeat("x", maxPostLine+1)); err == nil || !strings.Contains(err.Error(), "word over") {
		t.Errorf("a word over %d bytes: %v", maxPostLine, err)
	}
}

// FuzzBodyText: an accepted body is CRLF lines of at most maxPostLine
// bytes with no bare CR or LF and no control character but tab.
func FuzzBodyText(f *testing.F) {
	f.Add(strings.Repeat("lorem ipsum ", 200) + "\n> quoted\n-- \nsig")
	f.Add(" From x\n>>\n\r\nend")
	f.Fuzz(func(t *testing.T, body string) {
		out, err := bodyText(body)
		if err != nil {
			return
		}
		if !strings.HasSuffix(out, "\r\n") {
			t.Fatalf("body %q does not end in CRLF", out)
		}
		for _, l := range strings.Split(strings.TrimSuffix(out, "\r\n"), "\r\n") {
			if len(l) > maxPostLine || strings.ContainsAny(l, "\r\n") {
				t.Fatalf("line %q of body %q", l, body)
			}
			for _, r := range l {
				if r != '\t' && unicode.IsControl(r) {
					t.Fatalf("line %q holds a control character", l)
				}
			}
		}
	})
}
