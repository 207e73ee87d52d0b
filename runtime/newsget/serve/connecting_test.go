package serve

import (
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// silentServer accepts connections and says nothing until release is
// called; then it refuses each of them (502) and closes it.
func silentServer(t *testing.T) (port int, release func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	released := false
	refuse := func(c net.Conn) {
		io.WriteString(c, "502 service unavailable for the test\r\n")
		c.Close()
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if released {
				refuse(c)
			} else {
				conns = append(conns, c)
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().(*net.TCPAddr).Port, func() {
		mu.Lock()
		defer mu.Unlock()
		released = true
		for _, c := range conns {
			refuse(c)
		}
		conns = nil
	}
}

var (
	srvStateRE = regexp.MustCompile(`<td class="srvstate" data-label="State"><span class="state[^"]*">([^<]*)</span>(?:[^<]|<small>[^<]*</small>)*(?:<div class="reason">([^<]*)</div>)?`)
	jobStateRE = regexp.MustCompile(`<td class="status" data-label="Status">([^<]*)</td>`)
)

// pageStates reads the page: the first job's status ("" with none), the
// first server's state and its error.
func (td *testDaemon) pageStates(t *testing.T) (job, srv, reason string) {
	t.Helper()
	b := []byte(td.pageHTML(t))
	if m := jobStateRE.FindSubmatch(b); m != nil {
		job = string(m[1])
	}
	m := srvStateRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no server state on the page:\n%s", b)
	}
	return job, string(m[1]), string(m[2])
}

// TestServerConnecting: from the moment a job downloads until its
// server's first connection is up or fails, the page shows the server
// connecting, not "not connected"; a failure shows with its reason.
func TestServerConnecting(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	port, release := silentServer(t)
	// The connection stays unanswered until release, past the page
	// reads however slow they are: no connect timeout cuts it first.
	td := startDaemon(t, t.TempDir(), s, func(c *newsget.Config) {
		c.Servers[0].Port, c.ConnectTimeout = port, tomlconf.Duration(time.Minute)
	})
	defer td.stop()
	if _, srv, _ := td.pageStates(t); srv != srvIdle {
		t.Errorf("before any job the server is %q, want %q", srv, srvIdle)
	}
	td.addFile(t, poster.NZB(newPosting("Wait.mkv", 51, 30_000, 10_000)), "Wait.nzb", "tv", "")
	seen := 0
	for deadline := time.Now().Add(30 * time.Second); seen < 20; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the job never showed Downloading")
		}
		job, srv, _ := td.pageStates(t)
		if job != "Downloading" {
			continue
		}
		seen++
		if srv != srvConnecting {
			t.Fatalf("page %d of the download: the server is %q, want %q", seen, srv, srvConnecting)
		}
	}
	release()
	var srv, reason string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the refusal the server is %q (%q), want %q with the server's answer", srv, reason, srvFailed)
		}
		if _, srv, reason = td.pageStates(t); (srv == srvFailed || srv == srvGivenUp) && strings.Contains(reason, "502") {
			break
		}
	}
}

// TestStartServers: a starting download marks the active servers of the
// lowest level connecting (not the backups, not the inactive); they stay
// so while the engine has not dialled, and follow the engine from its
// first dial on.
func TestStartServers(t *testing.T) {
	off := false
	d := &Daemon{cfg: &newsget.Config{Servers: []newsget.ServerConfig{
		{Name: "a", Level: 1}, {Name: "b", Level: 1}, {Name: "backup", Level: 2}, {Name: "off", Active: &off}}}}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	states := func() []string {
		var out []string
		for _, v := range d.serverViewsLocked() {
			out = append(out, v.Name+" "+v.State)
		}
		return out
	}
	d.startServersLocked(t0)
	want := []string{"a connecting", "b connecting", "backup not connected", "off not connected"}
	if diff := cmp.Diff(want, states()); diff != "" {
		t.Errorf("at the start (-want +got):\n%s", diff)
	}
	d.noteServersLocked(t0, []newsget.ServerState{{Name: "a"}, {Name: "b"}, {Name: "backup"}, {Name: "off"}})
	if diff := cmp.Diff(want, states()); diff != "" {
		t.Errorf("before the engine dials (-want +got):\n%s", diff)
	}
	d.noteServersLocked(t0, []newsget.ServerState{{Name: "a", Connecting: 2}, {Name: "b"}, {Name: "backup"}, {Name: "off"}})
	if diff := cmp.Diff([]string{"a connecting", "b not connected", "backup not connected", "off not connected"}, states()); diff != "" {
		t.Errorf("once the engine dials a (-want +got):\n%s", diff)
	}
}
