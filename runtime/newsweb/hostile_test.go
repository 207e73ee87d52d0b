package newsweb

import (
	"bufio"
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/logbuf"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// logSite is startSiteOver with the log kept (debug level) for the test to
// read.
func logSite(t *testing.T, news *nntptest.Server) (*site, *logbuf.Buffer) {
	t.Helper()
	buf := &logbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc := NewService(ServerConfig{Addr: news.HostPort(), Connections: 2}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	srv := newFrontServer(t, New(fed, Options{Logger: log}))
	t.Cleanup(func() { srv.Close(); fed.Close() })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", clip(buf.String()))
		}
	})
	return &site{url: srv.URL, news: news, fed: fed}, buf
}

// TestLongHeaders: an article with a 100 KB Subject and one with a
// 200 KB References (nntptest stores headers up to 256 KiB) in a group.
// The over-long overview lines are skipped (an OVER line over 64 KiB must
// not fail the group), the rest of the group is shown, the long articles
// are readable, and the connections stay up.
func TestLongHeaders(t *testing.T) {
	news := nntptest.Start(t, nntptest.Options{})
	news.AddGroup(nntptest.Group{Name: "misc.test"})
	longRefs := strings.Repeat("<ref@t> ", 200<<10/8) // nntptest holds headers of at most 256 KiB
	for _, a := range []testArticle{
		{id: "<root@t>", subject: "Root", body: "root\n"},
		{id: "<long@t>", subject: strings.Repeat("S", 100<<10), body: "long subject\n"},
		{id: "<refs@t>", subject: "Re: Root", refs: longRefs + "<root@t>", body: "long references\n"},
		{id: "<reply@t>", subject: "Re: Root", refs: "<root@t>", body: "a reply\n"},
	} {
		if err := news.AddArticle(nntptest.Article{Raw: rawArticle("misc.test", a)}); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := logSite(t, news)
	for _, path := range []string{
		"/groups/misc.test",
		"/groups/misc.test/threads/root@t",
		"/api/groups/misc.test/threads",
		"/api/threads/root@t?group=misc.test",
		"/articles/long@t",
		"/articles/refs@t",
		"/groups/misc.test",
	} {
		resp, body := get(t, s.url+path)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %q", path, resp.StatusCode, clip(body))
		}
	}
	resp, body := get(t, s.url+"/groups/misc.test/threads/root@t")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "reply@t") {
		t.Errorf("thread page without the ordinary reply: %d %q", resp.StatusCode, clip(body))
	}
	if n := news.Conns(); n > 2 {
		t.Errorf("%d connections to the server for one service of 2: requests reconnected", n)
	}
}

// TestArticle501: a message-id the server rejects with 501 is a 404 with
// one debug line, not a 502 with a WARN line.
func TestArticle501(t *testing.T) {
	news := nntptest.Start(t, nntptest.Options{})
	news.SetHandler("ARTICLE", func(int, proto.Command) []byte { return []byte("501 Bad message-id\r\n") })
	s, log := logSite(t, news)
	resp, body := get(t, s.url+"/articles/odd$id@t")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("501 to ARTICLE: %d %q, want 404", resp.StatusCode, clip(body))
	}
	if strings.Contains(log.String(), "level=WARN") {
		t.Errorf("a WARN line for a message-id the server rejects:\n%s", log.String())
	}
	resp, _ = get(t, s.url+"/api/articles/odd$id@t")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("API: %d, want 404", resp.StatusCode)
	}
}

// endlessServer is a news server that answers every ARTICLE with an
// answer that never ends (header lines for ever, until the reader hangs
// up); it reuses one buffer, so it allocates nothing per line.
func endlessServer(t *testing.T, articles *atomic.Int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	line := []byte("X-Endless: " + strings.Repeat("x", 1000) + "\r\n")
	chunk := bytes.Repeat(line, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				c.Write([]byte("200 endless news\r\n"))
				for {
					l, err := br.ReadString('\n')
					if err != nil {
						return
					}
					switch verb := strings.ToUpper(strings.Fields(l + " x")[0]); verb {
					case "CAPABILITIES":
						c.Write([]byte("101 caps\r\nVERSION 2\r\nREADER\r\n.\r\n"))
					case "ARTICLE":
						articles.Add(1)
						c.Write([]byte("220 0 <e@t>\r\n"))
						for {
							if _, err := c.Write(chunk); err != nil {
								return
							}
						}
					case "QUIT":
						c.Write([]byte("205 bye\r\n"))
						return
					default:
						c.Write([]byte("500 what?\r\n"))
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestEndlessAnswer: an answer from a backend that never ends is cut at
// the reader's limit (16 MiB). The bound checked here is generous: what
// the request allocated in all.
func TestEndlessAnswer(t *testing.T) {
	var articles atomic.Int64
	addr := endlessServer(t, &articles)
	log := slog.New(slog.DiscardHandler)
	svc := NewService(ServerConfig{Addr: addr, Connections: 2}, ServiceOptions{Logger: log, DialTimeout: 5 * time.Second})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true})
	srv := newFrontServer(t, New(fed, Options{Logger: log}))
	t.Cleanup(func() { srv.Close(); fed.Close() })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, body := get(t, srv.URL+"/articles/e@t")
	runtime.ReadMemStats(&after)
	if resp.StatusCode < 500 {
		t.Errorf("an endless answer: %d %q, want a 5xx", resp.StatusCode, clip(body))
	}
	t.Logf("allocated %d MB", (after.TotalAlloc-before.TotalAlloc)>>20)
	if got := (after.TotalAlloc - before.TotalAlloc) >> 20; got > 160 {
		t.Errorf("one request for an endless article allocated %d MB", got)
	}
	// The failure is cached: the same page again within
	// the not-found TTL asks no server.
	asked := articles.Load()
	if resp, body := get(t, srv.URL+"/articles/e@t"); resp.StatusCode < 500 {
		t.Errorf("again: %d %q, want a 5xx", resp.StatusCode, clip(body))
	}
	if again := articles.Load() - asked; again != 0 {
		t.Errorf("the same endless article was asked %d more times within the TTL", again)
	}
}
