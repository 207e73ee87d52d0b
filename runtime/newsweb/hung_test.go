package newsweb

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// hungServer accepts connections and never answers (greet: after its
// greeting), as a wedged news server does.
func hungServer(t *testing.T, greet bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if greet {
				io.WriteString(c, "200 hung.example ready\r\n")
			}
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// hungSite serves the servers at addrs by priority, with a server timeout
// of 1 s (a good server's greeting comes well within it on a loaded
// machine) and a page timeout of 30 s, far past it.
func hungSite(t *testing.T, addrs ...string) string {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var svcs []*Service
	for i, a := range addrs {
		svcs = append(svcs, NewService(ServerConfig{Addr: a, Priority: i, Connections: 2}, ServiceOptions{Logger: log}))
	}
	fed := NewFederated(svcs, FederatedOptions{Logger: log, NoBackground: true, ServerTimeout: time.Second, FetchTimeout: 30 * time.Second})
	srv := newFrontServer(t, New(fed, Options{Logger: log, Timeout: 30 * time.Second}))
	t.Cleanup(func() { srv.Close(); fed.Close() })
	return srv.URL
}

// A server that accepts and never answers (before or after its greeting)
// holds a page for the server timeout, not the page's: the page comes
// from the next server, or is a 502 when there is none (a 504 would mean
// the page's timeout ran out first).
func TestHungServer(t *testing.T) {
	for _, greet := range []bool{false, true} {
		name := "silent"
		if greet {
			name = "greets then silent"
		}
		t.Run(name, func(t *testing.T) {
			good := startSite(t)
			base := hungSite(t, hungServer(t, greet), good.news.HostPort())
			for _, path := range []string{"/groups/misc.test", "/articles/m1@t", "/groups/misc.test/threads/m1@t", "/"} {
				resp, body := get(t, base+path)
				if resp.StatusCode != 200 {
					t.Errorf("%s with the first server hung: %d", path, resp.StatusCode)
				}
				if path == "/articles/m1@t" && !strings.Contains(body, "the root article") {
					t.Errorf("%s: the article is not from the second server", path)
				}
			}
			alone := hungSite(t, hungServer(t, greet))
			if resp, _ := get(t, alone+"/articles/m2@t"); resp.StatusCode != http.StatusBadGateway {
				t.Errorf("the only server hung: %d, want 502 (given up after the server timeout)", resp.StatusCode)
			}
		})
	}
}

// When no server answers and a group's list has expired, the group page
// and its threads are shown from the expired list with a note (not
// cached), not as a 502; once a server answers again the note goes.
func TestStaleListWhileServersDown(t *testing.T) {
	news := startSite(t).news
	clock := newFakeClock()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := NewService(ServerConfig{Addr: news.HostPort(), Connections: 1}, ServiceOptions{Logger: log, Now: clock.Now})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: log, NoBackground: true, Now: clock.Now})
	srv := newFrontServer(t, New(fed, Options{Logger: log}))
	t.Cleanup(func() { srv.Close(); fed.Close() })

	if resp, page := get(t, srv.URL+"/groups/misc.test"); resp.StatusCode != 200 || strings.Contains(page, `class="note stale"`) {
		t.Fatalf("group page with the server up: %d", resp.StatusCode)
	}
	news.Close()
	clock.Advance(6 * time.Minute) // past the threads TTL
	resp, page := get(t, srv.URL+"/groups/misc.test")
	if resp.StatusCode != 200 || !strings.Contains(page, `class="note stale"`) || !strings.Contains(page, "Root") ||
		resp.Header.Get("Cache-Control") != cacheError {
		t.Errorf("group page with the server down: %d, Cache-Control %q, note %v", resp.StatusCode, resp.Header.Get("Cache-Control"), strings.Contains(page, "stale"))
	}
	resp, page = get(t, srv.URL+"/groups/misc.test/threads/m1@t")
	if resp.StatusCode != 200 || !strings.Contains(page, `class="note stale"`) {
		t.Errorf("thread page with the server down: %d, note %v", resp.StatusCode, strings.Contains(page, "stale"))
	}
	if resp, _ := get(t, srv.URL+"/groups/empty.test"); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("a group never listed, server down: %d, want 502", resp.StatusCode)
	}
}
