package newsweb

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// Right after a post, the original message (the raw view and the
// article page's full header) is the server's copy, with the Path, Xref
// and Injection-Info that INN added, not the copy newsweb sent: that is
// what an abuse report quotes. Neither is kept by browsers while it is
// newsweb's own copy.
func TestINNOriginalAfterPost(t *testing.T) {
	const group = "test.original"
	inn := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: group}}})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := NewService(ServerConfig{Addr: inn.ReaderAddr(), Name: "inn", Connections: 2}, ServiceOptions{Logger: log})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	p, err := NewPosting(PostingOptions{TrustedHeader: "X-Forwarded-User", FromDomain: "readers.example"})
	if err != nil {
		t.Fatal(err)
	}
	srv := newFrontServer(t, New(fed, Options{Logger: log, Posting: p}))
	t.Cleanup(func() { srv.Close(); fed.Close() })

	resp, out := postJSON(t, http.DefaultClient, srv.URL, "erin", fmt.Sprintf(`{"newsgroups":[%q],"subject":"posted","body":"By POST."}`, group))
	id, _ := out["message_id"].(string)
	if resp.StatusCode != 201 || id == "" {
		t.Fatalf("post: %d %v", resp.StatusCode, out)
	}
	bare := strings.Trim(id, "<>")
	_, raw := get(t, srv.URL+"/articles/"+bare+"/raw")
	if !strings.Contains(raw, "Path: "+inn.PathHost()+"!") || !strings.Contains(raw, "\nXref: ") || !strings.Contains(raw, "\nInjection-Info: ") {
		t.Errorf("the raw view is not INN's copy:\n%s", raw)
	}
	_, page := get(t, srv.URL+"/articles/"+bare)
	if !strings.Contains(page, "Xref") {
		t.Errorf("the article page's headers are not INN's copy:\n%s", clip(page))
	}
}
