package serve

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestServerUnreachable: a job whose only server refuses connections
// shows why it gets nothing: mode=warnings names the server and its
// error, the queue counts the warnings, and the page's Servers table
// shows the server failed with its error before anything was downloaded.
func TestServerUnreachable(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	dead := nntptest.RefusedPort(t)
	td := startDaemon(t, t.TempDir(), s, func(c *newsget.Config) { c.Servers[0].Port = dead })
	defer td.stop()
	p := newPosting("Lost.mkv", 41, 50_000, 10_000)
	td.addFile(t, poster.NZB(p), "Lost.nzb", "tv", "")

	var warn, have, page string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		warn = fmt.Sprint(td.api(t, "mode", "warnings")["warnings"])
		have = fmt.Sprint(td.api(t, "mode", "queue")["queue"].(map[string]any)["have_warnings"])
		page = td.pageHTML(t)
		if i := strings.Index(page, `<table id="servers">`); i >= 0 {
			page = page[i:]
			page = page[:strings.Index(page, "</table>")]
		}
		if strings.Contains(warn, "Server main: cannot connect") && strings.Contains(warn, "connection refused") &&
			have != "0" && have != "<nil>" && strings.Contains(page, "connection refused") &&
			(strings.Contains(page, ">failed<") || strings.Contains(page, ">given up<")) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if time.Now().After(deadline) {
		t.Fatalf("the unreachable server is not shown:\nwarnings: %s\nhave_warnings: %s\nservers table: %s", warn, have, page)
	}
	// A note per change of the server's state (failing, given up), not
	// one per failed try.
	if n := strings.Count(warn, "Server main:"); n > 2 || strings.Contains(warn, "connection failed") {
		t.Errorf("warnings repeat the server's tries: %s", warn)
	}
}

// TestNoteServers: the daemon notes a server's change of state once (a
// failed retry with the same error is no change), and a running job is
// stalled while no server is connected and one fails.
func TestNoteServers(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	refused := "connect 127.0.0.1:1: connection refused"
	steps := []struct {
		states  []newsget.ServerState
		notes   []string
		stalled string
	}{
		{[]newsget.ServerState{{Name: "a", Connecting: 1}, {Name: "b", Connecting: 1}}, nil, ""},
		{[]newsget.ServerState{{Name: "a", LastErr: refused, BlockedUntil: t0.Add(30 * time.Second)}, {Name: "b", Connecting: 1}},
			[]string{"WARN Server a: cannot connect: " + refused + " (retrying in 30s)"},
			"Server a: cannot connect: " + refused + " (retrying in 30s)"},
		// The same failure again: no new note.
		{[]newsget.ServerState{{Name: "a", LastErr: refused, Connecting: 1}, {Name: "b", Connecting: 1}}, nil,
			"Server a: cannot connect: " + refused + " (retrying)"},
		{[]newsget.ServerState{{Name: "a", LastErr: refused}, {Name: "b", Connections: 2, WasUp: true}}, nil, ""},
		{[]newsget.ServerState{{Name: "a", LastErr: "4 failures", GaveUp: true}, {Name: "b", Connections: 2, WasUp: true}},
			[]string{"ERROR Server a: cannot connect, given up: 4 failures"}, ""},
		{[]newsget.ServerState{{Name: "a", LastErr: "4 failures", GaveUp: true}, {Name: "b", LastErr: "BODY answered 400", WasUp: true}},
			[]string{"WARN Server b: failed: BODY answered 400 (retrying)"},
			"Server a: cannot connect, given up: 4 failures; Server b: failed: BODY answered 400 (retrying)"},
		{[]newsget.ServerState{{Name: "a", LastErr: "4 failures", GaveUp: true}, {Name: "b", Connections: 1, WasUp: true}},
			[]string{"INFO Server b: connected"}, ""},
	}
	d := &Daemon{}
	for i, st := range steps {
		var got []string
		for _, n := range d.noteServersLocked(t0, st.states) {
			got = append(got, n.level.String()+" "+n.text)
		}
		if diff := cmp.Diff(st.notes, got); diff != "" {
			t.Errorf("step %d: notes (-want +got):\n%s", i, diff)
		}
		if d.stalled != st.stalled {
			t.Errorf("step %d: stalled = %q, want %q", i, d.stalled, st.stalled)
		}
	}
}

// TestStatusServers: status and fullstatus list every configured server
// in SABnzbd's fields (what nzb360 and the client libraries read), before
// any download too.
func TestStatusServers(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	for _, mode := range []string{"status", "fullstatus"} {
		srv := td.api(t, "mode", mode)["status"].(map[string]any)["servers"].([]any)
		if len(srv) != 1 {
			t.Fatalf("%s: servers %v, want the one configured", mode, srv)
		}
		got := map[string]any{}
		for _, k := range []string{"servername", "serveractive", "servertotalconn", "serverssl", "serveractiveconn",
			"serveroptional", "servererror", "serverpriority", "serverbps", "serverconnections"} {
			got[k] = srv[0].(map[string]any)[k]
		}
		want := map[string]any{"servername": "main", "serveractive": true, "servertotalconn": 2.0, "serverssl": 0.0,
			"serveractiveconn": 0.0, "serveroptional": 0.0, "servererror": "", "serverpriority": 0.0, "serverbps": "0 ",
			"serverconnections": []any{}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: server fields (-want +got):\n%s", mode, d)
		}
	}
}

// TestServerSpeedIdle: a server's speed is its bytes of the last seconds
// while a download runs, and 0 once none runs (as the daemon's speed),
// not the remains of its average.
func TestServerSpeedIdle(t *testing.T) {
	s := newServerStats()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var got []float64
	for _, running := range []bool{true, true, false, false} {
		if running {
			s.done("main", 1000, now)
		}
		s.sample(running)
		got = append(got, s.by["main"].Speed)
	}
	if d := cmp.Diff([]float64{500, 750, 0, 0}, got); d != "" {
		t.Errorf("speeds (-want +got):\n%s", d)
	}
}

// TestConfigServers: get_config lists the configured servers in SABnzbd's
// fields and types (switches 0 or 1), with the password masked as
// SABnzbd masks it; the password itself is nowhere in the answer.
func TestConfigServers(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	off, noVerify := false, false
	td := startDaemon(t, t.TempDir(), s, func(c *newsget.Config) {
		c.Servers = append(c.Servers, newsget.ServerConfig{Name: "backup", Host: "news.example.net", Encryption: newsget.EncryptTLS,
			Username: "joe", Password: "s3cret-pw", Connections: 8, Pipeline: 4, Level: 1, Optional: true, Retention: 3000,
			Active: &off, CertVerification: &noVerify})
	})
	defer td.stop()
	resp, err := http.Get(td.url + "/api?mode=get_config&output=json&apikey=" + testKey)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(raw), "s3cret-pw") {
		t.Fatalf("get_config shows a server's password: %s", raw)
	}
	got := td.api(t, "mode", "get_config")["config"].(map[string]any)["servers"]
	want := []any{
		map[string]any{"name": "main", "displayname": "main", "host": "127.0.0.1", "port": float64(s.Port()), "timeout": 5.0,
			"username": "", "password": "", "connections": 2.0, "ssl": 0.0, "ssl_verify": 3.0, "ssl_ciphers": "", "enable": 1.0,
			"required": 0.0, "optional": 0.0, "pipelining_requests": 2.0, "retention": 0.0, "expire_date": "", "quota": "",
			"usage_at_start": 0.0, "priority": 0.0, "notes": ""},
		map[string]any{"name": "backup", "displayname": "backup", "host": "news.example.net", "port": 563.0, "timeout": 5.0,
			"username": "joe", "password": "**********", "connections": 8.0, "ssl": 1.0, "ssl_verify": 0.0, "ssl_ciphers": "", "enable": 0.0,
			"required": 0.0, "optional": 1.0, "pipelining_requests": 4.0, "retention": 3000.0, "expire_date": "", "quota": "",
			"usage_at_start": 0.0, "priority": 1.0, "notes": ""},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("get_config servers (-want +got):\n%s", d)
	}
}
