package newsweb

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// With inject set, newsweb is the injecting agent: a post goes to INN's
// feed port with IHAVE, from a host incoming.conf lets feed, and arrives
// with newsweb's Path, Injection-Date and Injection-Info intact (the
// posting host, the account's keyed hash, the complaints address), and
// no trace header. CR/LF in any field of the JSON API still adds no
// header.
func TestINNInject(t *testing.T) {
	const group = "test.inject"
	inn := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: group}}})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := NewService(ServerConfig{Addr: inn.ReaderAddr(), Name: "inn", Connections: 2, Inject: InjectTarget{Addr: inn.Addr()}},
		ServiceOptions{Logger: log})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	p, err := NewPosting(PostingOptions{TrustedHeader: "X-Forwarded-User", FromDomain: "readers.example",
		PathIdentity: "web.readers.example", ComplaintsTo: "abuse@readers.example"})
	if err != nil {
		t.Fatal(err)
	}
	srv := newFrontServer(t, New(fed, Options{Logger: log, Posting: p}))
	t.Cleanup(func() { srv.Close(); fed.Close() })

	start := time.Now().Add(-time.Second)
	resp, out := postJSON(t, http.DefaultClient, srv.URL, "erin", fmt.Sprintf(`{"newsgroups":[%q],"subject":"injected","body":"Through IHAVE."}`, group))
	id, _ := out["message_id"].(string)
	if resp.StatusCode != 201 || id == "" {
		t.Fatalf("post: %d %v", resp.StatusCode, out)
	}
	raw, err := inn.Article(id)
	if err != nil {
		t.Fatalf("INN has no %s: %v\n%s", id, err, inn.LogTail())
	}
	h, _, err := proto.ParseHeaders(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`web.readers.example; posting-host="127.0.0.1"; posting-account=%q; mail-complaints-to="abuse@readers.example"`, p.accountHash("erin"))
	if got := h.Get("Injection-Info"); got != want {
		t.Errorf("Injection-Info on INN:\n got %s\nwant %s", got, want)
	}
	if path := h.Get("Path"); !strings.HasPrefix(path, inn.PathHost()+"!") || !strings.HasSuffix(path, "web.readers.example!.POSTED!not-for-mail") {
		t.Errorf("Path on INN: %s", path)
	}
	if d, err := proto.ParseArticleDate(h.Get("Injection-Date")); err != nil || d.Before(start) {
		t.Errorf("Injection-Date on INN: %q %v", h.Get("Injection-Date"), err)
	}
	if h.Get(traceHeader) != "" || len(h.Values("Injection-Info")) != 1 {
		t.Errorf("the injected article carries the trace, or two Injection-Info:\n%s", raw)
	}
	head, _, _ := strings.Cut(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n\n")
	t.Logf("INN's copy:\n%s", head)

	// CR, LF and CRLF with a header after them, in every JSON field:
	// refused, or kept out of the header INN stores.
	for _, nl := range []string{"\r\n", "\n", "\r"} {
		inj := nl + "Approved: mod@example" + nl + "Injection-Info: forged"
		for _, field := range []string{"newsgroups", "subject", "body", "references", "name"} {
			d := map[string]any{"newsgroups": []string{group}, "subject": "s", "body": "b", "references": id, "name": "Erin"}
			if field == "newsgroups" {
				d[field] = []string{group + inj}
			} else {
				d[field] = d[field].(string) + inj
			}
			b, _ := json.Marshal(d)
			what := "JSON " + field + " with " + strings.ReplaceAll(strings.ReplaceAll(nl, "\r", `\r`), "\n", `\n`)
			resp, out := postJSON(t, http.DefaultClient, srv.URL, "erin", string(b))
			switch resp.StatusCode {
			case 201:
				raw, err := inn.Article(out["message_id"].(string))
				if err != nil {
					t.Fatalf("%s: INN lacks it: %v", what, err)
				}
				h, _, _ := proto.ParseHeaders(raw)
				if h.Get("Approved") != "" || len(h.Values("Injection-Info")) != 1 || h.Get("Injection-Info") == "forged" {
					t.Errorf("%s: INN's copy carries a reader's header:\n%s", what, raw)
				}
				for _, f := range h.Fields {
					if n := string(f.Name); !slices.ContainsFunc(append(allowedHeaders, "Path", "Injection-Date", "Injection-Info", "Xref", "Lines"),
						func(a string) bool { return strings.EqualFold(a, n) }) {
						t.Errorf("%s: INN's copy carries %s", what, n)
					}
				}
			case 400:
			default:
				t.Errorf("%s: %d %v", what, resp.StatusCode, out)
			}
		}
	}
}
