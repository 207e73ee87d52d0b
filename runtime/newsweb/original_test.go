package newsweb

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The original message: the raw article (every header, text/plain), the
// article page's full headers and its link to the original, and the
// thread as a gzipped mbox.
func TestOriginalMessage(t *testing.T) {
	s := startSite(t)
	resp, raw := get(t, s.url+"/articles/m4@t/raw")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
		!strings.Contains(raw, "Path: test!not-for-mail\n") || !strings.Contains(raw, "\n\n> the root article\nfirst reply\n") {
		t.Errorf("raw article: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	_, page := get(t, s.url+"/articles/m4@t")
	if !strings.Contains(page, `<summary>All headers</summary>`) || !strings.Contains(page, "<dt>Path</dt><dd>test!not-for-mail</dd>") ||
		!strings.Contains(page, `<a class="raw" href="/articles/m4@t/raw">Original</a>`) {
		t.Errorf("the article page lacks the full headers or the original's link")
	}
	_, thread := get(t, s.url+"/groups/misc.test/threads/m1@t")
	if !strings.Contains(thread, `<a class="mbox" href="/groups/misc.test/threads/m1@t/mbox.gz">mbox</a>`) {
		t.Errorf("the thread page does not link its mbox")
	}
	req, _ := http.NewRequest("GET", s.url+"/groups/misc.test/threads/m1@t/mbox.gz", nil)
	req.Header.Set("Accept-Encoding", "identity")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		t.Fatalf("mbox.gz is not gzip (%s, %s): %v", r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding"), err)
	}
	mbox, _ := io.ReadAll(zr)
	if !strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment; filename=thread-") ||
		bytes.Count(mbox, []byte("\nFrom newsweb@localhost ")) != 3 || !bytes.HasPrefix(mbox, []byte("From newsweb@localhost ")) ||
		!bytes.Contains(mbox, []byte("Message-ID: <m5@t>\n")) {
		t.Errorf("mbox (%s): want 4 articles\n%s", r.Header.Get("Content-Disposition"), mbox)
	}
}

// mboxrd: body lines starting with ">*From " get one more ">".
func TestMboxEntry(t *testing.T) {
	got := string(mboxEntry([]byte("Date: Mon, 01 Jan 2024 10:00:00 +0000\r\nSubject: s\r\n\r\nFrom here on\r\n>From quoted\r\nplain\r\n")))
	want := "From newsweb@localhost Mon Jan  1 10:00:00 2024\nDate: Mon, 01 Jan 2024 10:00:00 +0000\nSubject: s\n\n>From here on\n>>From quoted\nplain\n\n"
	if got != want {
		t.Errorf("mboxEntry:\n%q\nwant\n%q", got, want)
	}
}
