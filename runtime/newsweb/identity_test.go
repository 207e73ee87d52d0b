package newsweb

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/proto"
)

// allowedHeaders are the header fields a posted article may carry: the
// ones compose writes, none of them the reader's to set.
var allowedHeaders = []string{"From", "Newsgroups", "Subject", "Date", "Message-ID", "References", "In-Reply-To",
	"MIME-Version", "Content-Type", "Content-Transfer-Encoding", "User-Agent", traceHeader}

// posted is the header of the article the server took as id, with the
// names of its fields.
func posted(t *testing.T, s *site, id string) (proto.Header, []string) {
	t.Helper()
	for _, x := range s.news.Transfers() {
		if x.Cmd == "POST" && x.MessageID == id && x.Code == proto.CodePosted {
			h, _, err := proto.ParseHeaders(x.Article)
			if err != nil {
				t.Fatalf("the posted article %s: %v", id, err)
			}
			var names []string
			for _, f := range h.Fields {
				names = append(names, string(f.Name))
			}
			return h, names
		}
	}
	t.Fatalf("the server got no article %s", id)
	return proto.Header{}, nil
}

// checkHeaders fails when the posted article carries a field a reader
// must not set.
func checkHeaders(t *testing.T, what string, names []string) {
	t.Helper()
	for _, n := range names {
		if !slices.ContainsFunc(allowedHeaders, func(a string) bool { return strings.EqualFold(a, n) }) {
			t.Errorf("%s: the posted article carries %s", what, n)
		}
	}
}

// A reader cannot post as someone else: From's address is the account's,
// the display name may not hold an address, no header field is the
// reader's to set (unknown JSON fields are refused), control messages and
// control groups are refused, and CR/LF in any field adds no header. The
// article carries the trace of its account and client.
func TestNoForgedIdentity(t *testing.T) {
	s := postingSite(t, 0, nil)
	postAs := func(user, body string) (*http.Response, map[string]any) {
		return postJSON(t, http.DefaultClient, s.url, user, body)
	}
	resp, out := postAs("bob", `{"newsgroups":["misc.test"],"subject":"s","body":"b","name":"Alice Liddell"}`)
	id, _ := out["message_id"].(string)
	if resp.StatusCode != 201 {
		t.Fatalf("post with a display name: %d %v", resp.StatusCode, out)
	}
	h, names := posted(t, s, id)
	if got := h.Get("From"); got != `"Alice Liddell" <bob@readers.example>` {
		t.Errorf("From %q, want the name given and bob's address", got)
	}
	checkHeaders(t, "plain post", names)
	trace := h.Get(traceHeader)
	if !regexp.MustCompile(`^readers\.example; posting-host="127\.0\.0\.1"; posting-account="[a-z2-7]{16}"$`).MatchString(trace) || strings.Contains(trace, "bob") {
		t.Errorf("%s %q: want the site, the client and a hashed account", traceHeader, trace)
	}
	_, out = postAs("bob", `{"newsgroups":["misc.test"],"subject":"t","body":"b"}`)
	if h2, _ := posted(t, s, out["message_id"].(string)); h2.Get(traceHeader) != trace {
		t.Errorf("two posts of one account trace differently: %q, %q", trace, h2.Get(traceHeader))
	}
	_, out = postAs("carol", `{"newsgroups":["misc.test"],"subject":"t","body":"b"}`)
	if h3, _ := posted(t, s, out["message_id"].(string)); h3.Get(traceHeader) == trace {
		t.Errorf("two accounts trace alike: %q", trace)
	}

	before := len(s.news.Transfers())
	for _, body := range []string{
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","from":"\"Alice Liddell\" <alice@wonder.land>"}`,
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","name":"Alice <alice@wonder.land>"}`,
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","name":"alice@wonder.land"}`,
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","sender":"alice@wonder.land"}`,
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","approved":"mod@example"}`,
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","control":"cancel <m1@t>"}`,
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","path":"evil!not-for-mail"}`,
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","message_id":"<forged@wonder.land>"}`,
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","supersedes":"<m1@t>"}`,
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","injection_info":"x"}`,
		`{"newsgroups":["misc.test"],"subject":"s","body":"b","headers":{"Approved":"x"}}`,
		`{"newsgroups":["control.cancel"],"subject":"cancel <m1@t>","body":"b"}`,
		`{"newsgroups":["control"],"subject":"s","body":"b"}`,
		`{"newsgroups":["misc.test","junk"],"subject":"s","body":"b"}`,
		`{"newsgroups":["misc.test"],"subject":"cmsg cancel <m1@t>","body":"b"}`,
	} {
		if resp, out := postAs("bob", body); resp.StatusCode != 400 {
			t.Errorf("%s: %d %v, want 400", body, resp.StatusCode, out)
		}
	}
	if n := len(s.news.Transfers()); n != before {
		t.Errorf("refused drafts reached the server: %d transfers", n-before)
	}

	// CR, LF and CRLF with a header after them, in every JSON field:
	// refused, or kept out of the header.
	for _, nl := range []string{"\r\n", "\n", "\r"} {
		inj := nl + "Approved: mod@example" + nl + "Sender: alice@wonder.land"
		for _, field := range []string{"newsgroups", "subject", "body", "references", "name"} {
			d := map[string]any{"newsgroups": []string{"misc.test"}, "subject": "s", "body": "b", "references": "<m4@t>", "name": "Bob"}
			if field == "newsgroups" {
				d[field] = []string{"misc.test" + inj}
			} else {
				d[field] = d[field].(string) + inj
			}
			b, _ := json.Marshal(d)
			what := "JSON " + field + " with " + strings.ReplaceAll(strings.ReplaceAll(nl, "\r", `\r`), "\n", `\n`)
			resp, out := postAs("bob", string(b))
			if resp.StatusCode == 201 {
				_, names := posted(t, s, out["message_id"].(string))
				checkHeaders(t, what, names)
			} else if resp.StatusCode != 400 {
				t.Errorf("%s: %d %v", what, resp.StatusCode, out)
			}
		}
	}
}

// The form has the same rules as the API: every field with CR/LF, and
// fields the form does not have (approved, sender, from), add no header.
func TestNoForgedIdentityForm(t *testing.T) {
	s := postingSite(t, 0, map[string]string{"dora": "secret"})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	if r, err := c.PostForm(s.url+"/login", url.Values{"user": {"dora"}, "password": {"secret"}}); err != nil || r.StatusCode != 200 {
		t.Fatalf("login: %v %v", r, err)
	}
	_, page := getWith(t, c, s.url+"/post?group=misc.test")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the form")
	}
	if !strings.Contains(page, `name="name" value="dora"`) || !strings.Contains(page, "dora@readers.example") {
		t.Errorf("the form does not offer the display name and show the address")
	}
	send := func(v url.Values) (*http.Response, string) {
		v.Set("csrf", m[1])
		resp, err := c.PostForm(s.url+"/post", v)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		id := ""
		if i := strings.LastIndex(resp.Request.URL.Path, "/"); resp.StatusCode == 200 && strings.HasPrefix(resp.Request.URL.Path, "/groups/") {
			id = "<" + resp.Request.URL.Path[i+1:] + ">"
		}
		return resp, id
	}
	resp, id := send(url.Values{"newsgroups": {"misc.test"}, "subject": {"s"}, "body": {"b"}, "name": {"Dora Explorer"},
		"from": {"Alice <alice@wonder.land>"}, "approved": {"x"}, "sender": {"alice@wonder.land"}, "message-id": {"<f@w>"}})
	if id == "" {
		t.Fatalf("form post: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	h, names := posted(t, s, id)
	if got := h.Get("From"); got != `"Dora Explorer" <dora@readers.example>` {
		t.Errorf("From %q", got)
	}
	checkHeaders(t, "form with extra fields", names)
	for _, nl := range []string{"\r\n", "\n", "\r"} {
		inj := nl + "Approved: mod@example"
		for _, field := range []string{"newsgroups", "subject", "body", "references", "name"} {
			v := url.Values{"newsgroups": {"misc.test"}, "subject": {"s"}, "body": {"b"}, "references": {"<m4@t>"}, "name": {"Dora"}}
			v.Set(field, v.Get(field)+inj)
			resp, id := send(v)
			switch {
			case id != "":
				_, names := posted(t, s, id)
				checkHeaders(t, "form "+field, names)
			case resp.StatusCode != 400:
				t.Errorf("form %s with a newline: %d", field, resp.StatusCode)
			}
		}
	}
}

// getWith is get through client c.
func getWith(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
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

// The public pages and API name servers by their configured names, or a
// hash of the address when none is configured: never by the address.
func TestServerNamesHideAddresses(t *testing.T) {
	s := startSite(t)
	host, port, _ := strings.Cut(s.news.HostPort(), ":")
	for _, path := range []string{"/api/groups", "/api/groups/misc.test/threads", "/api/threads/m1@t?group=misc.test",
		"/api/articles/m1@t", "/groups/misc.test", "/groups/misc.test/threads/m1@t", "/articles/m1@t"} {
		resp, body := get(t, s.url+path)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
		if strings.Contains(body, host+":"+port) || strings.Contains(body, ":"+port) {
			t.Errorf("%s shows the server's address %s", path, s.news.HostPort())
		}
	}
	_, body := get(t, s.url+"/api/articles/m1@t")
	var a struct{ Server string }
	json.Unmarshal([]byte(body), &a)
	if !regexp.MustCompile(`^server-[0-9a-f]{8}$`).MatchString(a.Server) {
		t.Errorf("an unnamed server is called %q, want server- and a hash", a.Server)
	}
}

// Preview shows the text as it will be shown (signature set off) and
// posts nothing.
func TestPreview(t *testing.T) {
	s := postingSite(t, 0, map[string]string{"dora": "secret"})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	if r, err := c.PostForm(s.url+"/login", url.Values{"user": {"dora"}, "password": {"secret"}}); err != nil || r.StatusCode != 200 {
		t.Fatalf("login: %v %v", r, err)
	}
	_, page := getWith(t, c, s.url+"/post?group=misc.test")
	m := csrfField.FindStringSubmatch(page)
	before := len(s.news.Transfers())
	resp, err := c.PostForm(s.url+"/post", url.Values{"csrf": {m[1]}, "newsgroups": {"misc.test"}, "subject": {"s"},
		"body": {"Hello there.\n-- \nDora"}, "preview": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	b := new(strings.Builder)
	io.Copy(b, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(b.String(), "<h2>Preview</h2>") || !strings.Contains(b.String(), `class="blk sig"`) ||
		!strings.Contains(b.String(), "Hello there.") {
		t.Errorf("preview: %d\n%s", resp.StatusCode, b.String())
	}
	if n := len(s.news.Transfers()); n != before {
		t.Errorf("the preview posted: %d transfers", n-before)
	}
}
