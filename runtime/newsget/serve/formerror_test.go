package serve

import (
	"bytes"
	"html/template"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// postForm posts a page form (multipart when file is set) and returns
// the status, the Content-Type and the body.
func (td *testDaemon) postForm(t *testing.T, what string, form url.Values, file, content string) (int, string, string) {
	t.Helper()
	var body bytes.Buffer
	ctype := "application/x-www-form-urlencoded"
	if what == "upload" {
		mw := multipart.NewWriter(&body)
		for k, vs := range form {
			for _, v := range vs {
				mw.WriteField(k, v)
			}
		}
		if file != "" {
			fw, _ := mw.CreateFormFile("nzb", file)
			fw.Write([]byte(content))
		}
		mw.Close()
		ctype = mw.FormDataContentType()
	} else {
		body.WriteString(form.Encode())
	}
	resp, err := http.Post(td.url+"/action/"+what, ctype, &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestFormErrorPage: a form that does nothing answers with a page in the
// page's own style (its stylesheet), saying what went wrong and what to
// do, with a link back to the page; the status code stays the error's.
// The API's errors stay SABnzbd's JSON.
func TestFormErrorPage(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	csrf := td.d.csrf
	for _, tc := range []struct {
		what      string
		form      url.Values
		file      string
		status    int
		msg, hint string
	}{
		{"pause-job", url.Values{"csrf": {csrf}, "id": {"SABnzbd_nzo_gone"}}, "", http.StatusBadRequest,
			"no such job", "The job is no longer there"},
		{"move", url.Values{"csrf": {csrf}, "id": {"x"}, "to": {"sideways"}}, "", http.StatusBadRequest,
			"no such job", "The job is no longer there"},
		{"speedlimit", url.Values{"csrf": {csrf}, "limit": {"fast"}}, "", http.StatusBadRequest,
			"fast", "correct the form"},
		{"pause", url.Values{"csrf": {"stale"}}, "", http.StatusForbidden,
			"stale", "Reload the page"},
		{"nonsense", url.Values{"csrf": {csrf}}, "", http.StatusNotFound,
			"nonsense", "Use the forms of the page"},
		{"upload", url.Values{"csrf": {csrf}}, "", http.StatusBadRequest,
			"", "Choose an .nzb file"},
	} {
		status, ctype, body := td.postForm(t, tc.what, tc.form, tc.file, "")
		if status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.what, status, tc.status)
		}
		if !strings.HasPrefix(ctype, "text/html") {
			t.Errorf("%s: Content-Type %q, want the HTML page", tc.what, ctype)
		}
		for _, want := range []string{`<link rel="stylesheet" href="/style.css">`, `<a id="back" href="/">`, tc.msg, tc.hint} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: page lacks %q:\n%s", tc.what, want, body)
			}
		}
	}
	if got := td.api(t, "mode", "addfile"); got["status"] != false || got["error"] == "" {
		t.Errorf("API error: %v, want SABnzbd's JSON error", got)
	}
}

// TestNotNZB: a file that is no NZB is refused with what it is and what
// to do, the same on the page, in the API's error and in the log.
func TestNotNZB(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	for _, tc := range []struct{ file, content, want string }{
		{"x", "hello", "x is not an NZB file (no <nzb> element); upload the .nzb file your indexer gave"},
		{"page.html", "<html><body>login</body></html>", "page.html is not an NZB file (root element is <html>, not <nzb>); upload the .nzb file your indexer gave"},
	} {
		status, _, body := td.postForm(t, "upload", url.Values{"csrf": {td.d.csrf}}, tc.file, tc.content)
		if want := template.HTMLEscapeString(tc.want); status != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("page upload of %s: %d, want 400 and %q:\n%s", tc.file, status, want, body)
		}
		if got := td.addFile(t, []byte(tc.content), tc.file, "", ""); got["status"] != false || got["error"] != tc.want {
			t.Errorf("addfile of %s: %v, want the error %q", tc.file, got, tc.want)
		}
	}
	td.stop()
	if log := td.log.String(); strings.Count(log, "x is not an NZB file (no <nzb> element); upload the .nzb file your indexer gave") != 2 {
		t.Errorf("the log does not have both refusals of x:\n%s", log)
	}
}
