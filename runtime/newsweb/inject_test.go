package newsweb

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// Posting through a server with inject set: the article goes with IHAVE
// and carries newsweb's injection fields and no trace; a rejection (437)
// is the reader's 422 with the server's reason; a server that defers
// (436) or cannot be reached is passed over for the next, which gets the
// article by POST with the trace.
func TestInjectOutcomes(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	first := nntptest.Start(t, nntptest.Options{KeepReceived: true})
	second := nntptest.Start(t, nntptest.Options{})
	for _, s := range []*nntptest.Server{first, second} {
		s.AddGroup(nntptest.Group{Name: "misc.test"})
	}
	p, err := NewPosting(PostingOptions{TrustedHeader: "X-Forwarded-User", FromDomain: "readers.example"})
	if err != nil {
		t.Fatal(err)
	}
	start := func(inject string) string {
		svcs := []*Service{
			NewService(ServerConfig{Addr: first.HostPort(), Name: "first", Priority: 1, Inject: InjectTarget{Addr: inject}},
				ServiceOptions{Logger: log, DialTimeout: 5 * time.Second}),
			NewService(ServerConfig{Addr: second.HostPort(), Name: "second", Priority: 2}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second}),
		}
		fed := NewFederated(svcs, FederatedOptions{Logger: log, NoBackground: true})
		srv := newFrontServer(t, New(fed, Options{Logger: log, Posting: p}))
		t.Cleanup(func() { srv.Close(); fed.Close() })
		return srv.URL
	}
	transfer := func(s *nntptest.Server, cmd, id string) (nntptest.Transfer, bool) {
		for _, x := range s.Transfers() {
			if x.Cmd == cmd && x.MessageID == id {
				return x, true
			}
		}
		return nntptest.Transfer{}, false
	}
	const draft = `{"newsgroups":["misc.test"],"subject":"s","body":"b"}`

	url := start(first.HostPort())
	resp, out := postJSON(t, http.DefaultClient, url, "bob", draft)
	id, _ := out["message_id"].(string)
	x, ok := transfer(first, "IHAVE", id)
	if resp.StatusCode != 201 || !ok || x.Code != proto.CodeTransferOK {
		t.Fatalf("injected post: %d %v, IHAVE %v %+v", resp.StatusCode, out, ok, x)
	}
	h, _, err := proto.ParseHeaders(x.Article)
	if err != nil {
		t.Fatal(err)
	}
	want := `readers.example; posting-host="127.0.0.1"; posting-account="` + p.accountHash("bob") + `"`
	if h.Get("Injection-Info") != want || h.Get("Path") != "readers.example!.POSTED!not-for-mail" || h.Get("Injection-Date") == "" || h.Get(traceHeader) != "" {
		t.Errorf("the injected article's header:\n%s", x.Article)
	}
	if _, ok := transfer(first, "POST", id); ok {
		t.Errorf("the injected article was POSTed too")
	}

	first.SetRule(func(cmd, id string) nntptest.Verdict { return nntptest.Reject })
	resp, out = postJSON(t, http.DefaultClient, url, "bob", draft)
	if msg, _ := out["error"].(string); resp.StatusCode != 422 || msg != "The news server refused the article: Article rejected" {
		t.Errorf("a rejected post: %d %q", resp.StatusCode, msg)
	}

	first.SetRule(func(cmd, id string) nntptest.Verdict { return nntptest.Defer })
	for name, u := range map[string]string{"deferred": url, "unreachable": start(deadAddr(t))} {
		resp, out = postJSON(t, http.DefaultClient, u, "bob", draft)
		id, _ = out["message_id"].(string)
		x, ok = transfer(second, "POST", id)
		h, _, _ := proto.ParseHeaders(x.Article)
		if resp.StatusCode != 201 || !ok || h.Get(traceHeader) == "" || h.Get("Injection-Info") != "" || strings.Contains(string(x.Article), "!.POSTED") {
			t.Errorf("%s: %d %v; the next server's POST %v:\n%s", name, resp.StatusCode, out, ok, x.Article)
		}
	}
}

// FuzzInjectionFields: whatever address a client or proxy header gives,
// the injection fields are three header lines, Injection-Info's
// posting-host one quoted token.
func FuzzInjectionFields(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::1", "a\r\nApproved: x", `"; posting-account="forged`, "host.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, client string) {
		out := injectionFields("web.example", postingHost(client), "acct", "abuse@web.example", time.Unix(0, 0))
		lines := strings.Split(strings.TrimSuffix(out, "\r\n"), "\r\n")
		if len(lines) != 3 || strings.ContainsAny(strings.Join(lines, ""), "\r\n") {
			t.Fatalf("%q gives %q", client, out)
		}
		info := strings.TrimPrefix(lines[2], "Injection-Info: ")
		if strings.Count(info, `"`) != 6 || strings.Count(info, ";") != 3 {
			t.Fatalf("%q gives Injection-Info %q", client, info)
		}
	})
}
