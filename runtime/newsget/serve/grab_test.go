package serve

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// bannerService is a local service that is not HTTP: it answers every
// connection with a line of its own, whatever it is sent.
func bannerService(t *testing.T, banner string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte(banner + "\r\n"))
				bufio.NewReader(c).ReadString('\n')
			}()
		}
	}()
	return ln.Addr().String()
}

// TestAddURLPrivate: addurl to a loopback address, given as an address or
// as a name that resolves to one, is refused without a connection; when
// the configuration allows private addresses, a service that is not HTTP
// fails the job with a message that quotes nothing of what it sent.
func TestAddURLPrivate(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	banner := "SSH-2.0-OpenSSH_secret-banner"
	addr := bannerService(t, banner)
	_, port, _ := net.SplitHostPort(addr)
	var hits atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "admin secret-banner", http.StatusUnauthorized)
	}))
	defer web.Close()
	check := func(td *testDaemon, raw, want string) {
		t.Helper()
		got := td.api(t, "mode", "addurl", "name", raw)
		if got["status"] != true {
			t.Fatalf("addurl %s: %v", raw, got)
		}
		h := td.waitHistory(t, got["nzo_ids"].([]any)[0].(string))
		msg, _ := h["fail_message"].(string)
		if h["status"] != "Failed" || msg != want {
			t.Errorf("addurl %s: %s %q, want Failed %q", raw, h["status"], msg, want)
		}
	}
	td := startDaemon(t, t.TempDir(), s, nil)
	check(td, "http://"+addr+"/x.nzb",
		"addurl: refused to fetch from "+addr+": 127.0.0.1 is a loopback, private or link-local address ([serve] addurl_allow_private = true allows it)")
	check(td, "http://localhost:"+port+"/x.nzb",
		"addurl: refused to fetch from localhost:"+port+": 127.0.0.1 is a loopback, private or link-local address ([serve] addurl_allow_private = true allows it)")
	check(td, web.URL+"/x.nzb",
		"addurl: refused to fetch from "+strings.TrimPrefix(web.URL, "http://")+": 127.0.0.1 is a loopback, private or link-local address ([serve] addurl_allow_private = true allows it)")
	td.stop()
	if hits.Load() != 0 {
		t.Errorf("the local web server was reached %d times", hits.Load())
	}

	td = startDaemon(t, t.TempDir(), s, func(c *newsget.Config) { c.Serve.AddURLAllowPrivate = true })
	defer td.stop()
	check(td, "http://"+addr+"/x.nzb", "addurl: "+addr+" did not give a usable HTTP answer")
	check(td, web.URL+"/x.nzb", "addurl: "+strings.TrimPrefix(web.URL, "http://")+" answered 401 Unauthorized")
}

// TestAddURLFetches: at most addurl_fetches NZBs are fetched at once;
// the others wait their turn and are fetched after.
func TestAddURLFetches(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	var mu sync.Mutex
	inflight, most, entered := 0, 0, 0
	release := make(chan struct{})
	indexer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inflight++
		entered++
		most = max(most, inflight)
		mu.Unlock()
		<-release
		w.Write(poster.NZB(newPosting(strings.TrimPrefix(r.URL.Path, "/")+".bin", 3, 1000, 1000)))
		mu.Lock()
		inflight--
		mu.Unlock()
	}))
	defer indexer.Close()
	td := startDaemon(t, t.TempDir(), s, func(c *newsget.Config) {
		c.Serve.AddURLAllowPrivate, c.Serve.AddURLFetches = true, 2
		c.Serve.MaxNZBSize = 1 << 20
	})
	defer td.stop()
	td.api(t, "mode", "pause")
	const n = 6
	for i := range n {
		if got := td.api(t, "mode", "addurl", "name", indexer.URL+"/"+string(rune('a'+i))); got["status"] != true {
			t.Fatalf("addurl: %v", got)
		}
	}
	// Let one fetch finish each time two are under way (or all that are
	// left have begun).
	for released := 0; released < n; released++ {
		for deadline := time.Now().Add(30 * time.Second); ; {
			mu.Lock()
			e := entered
			mu.Unlock()
			if e >= min(released+2, n) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d fetches begun after %d finished", e, released)
			}
			time.Sleep(5 * time.Millisecond)
		}
		release <- struct{}{}
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		grabbing := 0
		for _, sl := range td.api(t, "mode", "queue")["queue"].(map[string]any)["slots"].([]any) {
			if sl.(map[string]any)["status"] == "Grabbing" {
				grabbing++
			}
		}
		if grabbing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still grabbing", grabbing)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if most > 2 {
		t.Errorf("%d fetches at once; addurl_fetches = 2", most)
	}
}
