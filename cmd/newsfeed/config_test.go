package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/newsflow/newsflow/runtime/newsfeed"
)

// fullConfig sets a key of every kind and every table.
const fullConfig = `listen = "127.0.0.1:1119"
spool = "/var/spool/newsflow"
pathhost = "relay.example"
admin = "127.0.0.1:1190"
allow = ["127.0.0.0/8", "192.0.2.0/24"]
max_article_size = "1000000"
spool_max_bytes = "20G"
article_log = "news"

[[incoming]]
name = "up"
hosts = ["192.0.2.7"]

[[peer]]
name = "inn1"
host = "inn1.example"
groups = ["*", "!control.*"]
max_size = 1048577
tls = true
tls_verify = false
password = "a \"quoted\" \\ secret"
username = "me"

[[peer]]
name = "sink"
host = "127.0.0.1"
port = 1120

[cluster]
nats = ["nats://10.0.0.1:4222"]
node = "n1"
`

// TestConfigRoundTrip: what `newsfeed config` prints reads back to the
// same configuration, for the embedded default and for a file that sets
// every kind of key.
func TestConfigRoundTrip(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	file := filepath.Join(dir, "newsfeed.toml")
	if err := os.WriteFile(file, []byte(fullConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"config"}, {"config", "-config", file}} {
		var out, errb bytes.Buffer
		if rc := Main(args, &out, &errb); rc != 0 {
			t.Fatalf("%v: exit %d: %s", args, rc, errb.String())
		}
		name := ""
		if len(args) > 1 {
			name = args[2]
		}
		want, err := newsfeed.LoadConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := newsfeed.ParseConfig("printed", out.Bytes())
		if err != nil {
			t.Fatalf("%v: the printed configuration does not read back: %v\n%s", args, err, out.String())
		}
		opts := cmp.Options{cmpopts.IgnoreUnexported(newsfeed.Config{}, newsfeed.IncomingConfig{}), cmpopts.IgnoreFields(newsfeed.Config{}, "Source")}
		if d := cmp.Diff(want, got, opts); d != "" {
			t.Errorf("%v: printed and read back differs (-file +printed):\n%s", args, d)
		}
	}
}

// TestConfigCheck: -check reports every mistake of a file, each at its
// FILE:LINE and key, and exits 2; a good file exits 0.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("listen = 3\nspool = \"/s\"\nwindw = 3\n[[peer]]\nname = \"a\"\nhost = \"h\"\nwindow = \"x\"\nqueue_size = 1\nconnections = 0\n[[peer]]\nname = \"b\"\n"), 0o644)
	var out, errb bytes.Buffer
	if rc := Main([]string{"config", "-check", bad}, &out, &errb); rc != 2 {
		t.Errorf("exit %d, want 2", rc)
	}
	want := []string{
		bad + ":1: listen: wrong type of value",
		bad + ":3: windw: unknown key",
		bad + ":7: peer[1].window: wrong type of value",
		bad + ":8: peer[1].queue_size: must be 16..1048576 (got 1)",
		bad + ":9: peer[1].connections: must be 1..64 (got 0)",
		bad + ":10: peer[2].host: missing: every peer needs a host",
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) != len(want)+1 {
		t.Fatalf("got %d lines, want %d mistakes and a summary:\n%s", len(lines), len(want), errb.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want it to start %q", i+1, lines[i], w)
		}
	}

	nospool := filepath.Join(dir, "nospool.toml")
	os.WriteFile(nospool, []byte("listen = \"127.0.0.1:1119\"\n"), 0o644)
	errb.Reset()
	if rc := Main([]string{"config", "-check", nospool}, &out, &errb); rc != 2 || !strings.HasPrefix(errb.String(), nospool+":1: spool: missing") {
		t.Errorf("a file without spool: exit %d, %q", rc, errb.String())
	}

	nodir := filepath.Join(dir, "nodir.toml")
	os.WriteFile(nodir, []byte("listen = \"127.0.0.1:1119\"\nspool = \"/nonexistent/dir/spool\"\n"), 0o644)
	errb.Reset()
	if rc := Main([]string{"config", "-check", nodir}, &out, &errb); rc != 2 || !strings.HasPrefix(errb.String(), nodir+":2: spool: its parent directory /nonexistent/dir does not exist") {
		t.Errorf("a spool whose parent does not exist: exit %d, %q", rc, errb.String())
	}

	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte(strings.Replace(fullConfig, `spool = "/var/spool/newsflow"`, fmt.Sprintf("spool = %q", filepath.Join(dir, "spool")), 1)), 0o644)
	out.Reset()
	errb.Reset()
	if rc := Main([]string{"config", "-check", good}, &out, &errb); rc != 0 || errb.Len() != 0 {
		t.Errorf("a good file: exit %d, stderr %q", rc, errb.String())
	}
}

// TestWalkthroughConfigs: every ```toml block of the walkthrough
// (README.md) passes `newsfeed config -check`.
func TestWalkthroughConfigs(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	rest := string(text)
	for {
		_, after, ok := strings.Cut(rest, "\n```toml\n")
		if !ok {
			break
		}
		block, tail, ok := strings.Cut(after, "\n```\n")
		if !ok {
			t.Fatal("README.md: a ```toml block is not closed")
		}
		rest = tail
		blocks++
		tmp := t.TempDir()
		file := filepath.Join(tmp, "walkthrough.toml")
		// The spool's parent is checked on this host: the blocks' spools
		// (under /var/spool) move to a directory that exists here.
		lines := strings.Split(block, "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "spool ") {
				lines[i] = fmt.Sprintf("spool = %q", filepath.Join(tmp, "spool"))
			}
		}
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if rc := Main([]string{"config", "-check", file}, &out, &errb); rc != 0 {
			t.Errorf("README.md toml block %d: exit %d:\n%s\n%s", blocks, rc, errb.String(), block)
		}
	}
	if blocks < 3 {
		t.Errorf("README.md has %d ```toml blocks; the walkthrough has at least 3", blocks)
	}
}

// TestStatusNoRelay: status against an address nobody listens on says so
// in words and exits 1.
func TestStatusNoRelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var out, errb bytes.Buffer
	if rc := Main([]string{"status", "-admin", addr}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "no relay answering at "+addr) {
		t.Errorf("status -admin %s: exit %d, stderr %q; want 1 and \"no relay answering at %s\"", addr, rc, errb.String(), addr)
	}
}

// TestPrintStatusErrors: a connection down because of an error shows it
// beside its state, once for the connections down for the same error; an
// error it recovered from is listed as the last error, with its time, not
// as current.
func TestPrintStatusErrors(t *testing.T) {
	at := time.Now().Add(-5 * time.Minute).UTC().Format(time.RFC3339)
	st := newsfeed.Status{Peers: []newsfeed.PeerStats{
		{Name: "down", Connections: []newsfeed.ConnStatus{{ID: 1, State: "waiting", Error: "connection refused", LastErr: "connection refused", LastErrAt: at}}},
		{Name: "back", Connections: []newsfeed.ConnStatus{{ID: 1, State: "feeding", LastErr: "connection reset", LastErrAt: at}}},
		{Name: "both", Connections: []newsfeed.ConnStatus{{ID: 1, State: "waiting", Error: "refused"}, {ID: 2, State: "waiting", Error: "refused"},
			{ID: 3, State: "waiting", Error: "timeout"}, {ID: 4, State: "feeding"}, {ID: 5, State: "feeding"}}},
	}}
	var out bytes.Buffer
	printStatus(&out, st, time.Now())
	text := out.String()
	for _, want := range []string{"#1 waiting (connection refused)", "last error: back #1 at " + at + " (", " ago): connection reset",
		"#1, #2 waiting (refused), #3 waiting (timeout), #4 feeding, #5 feeding\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "#1 feeding (") || strings.Contains(text, "last error: down") {
		t.Errorf("status shows a past error as current, or a current one as past:\n%s", text)
	}
}

// TestPrintStatusRetry: a waiting connection shows when it retries, from
// its retry time; connections down for the same error show theirs in
// their order.
func TestPrintStatusRetry(t *testing.T) {
	now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(d).Format("2006-01-02T15:04:05.000Z07:00") }
	st := newsfeed.Status{Peers: []newsfeed.PeerStats{
		{Name: "down", Connections: []newsfeed.ConnStatus{{ID: 1, State: "feeding"},
			{ID: 2, State: "waiting", Error: "connection refused", RetryAt: at(72*time.Second + 300*time.Millisecond)}}},
		{Name: "both", Connections: []newsfeed.ConnStatus{{ID: 1, State: "waiting", Error: "refused", RetryAt: at(3 * time.Second)},
			{ID: 2, State: "waiting", Error: "refused", RetryAt: at(5 * time.Minute)}, {ID: 3, State: "waiting", Error: "reset", RetryAt: at(-time.Second)}}},
	}}
	var out bytes.Buffer
	printStatus(&out, st, now)
	text := out.String()
	for _, want := range []string{"#1 feeding, #2 waiting, retry in 1m12s (connection refused)\n",
		"#1, #2 waiting, retry in 3s/5m0s (refused), #3 waiting, retry in <1s (reset)\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}
}

// TestPrintStatusAddsUp: the status table has every column of the sum
// the man page gives, so that offered = accepted + refused + rejected +
// dropped + missing + too old + lost + queued can be checked from it.
func TestPrintStatusAddsUp(t *testing.T) {
	st := newsfeed.Status{Peers: []newsfeed.PeerStats{{Name: "p", Offered: 100, Accepted: 50, Refused: 10, Rejected: 5,
		Deferred: 3, Dropped: 4, Missing: 6, TooOld: 7, Lost: 8, Queued: 10, BacklogArticle: 9, BacklogBytes: 900}}}
	var out bytes.Buffer
	printStatus(&out, st, time.Now())
	lines := strings.Split(out.String(), "\n")
	var head, row []string
	for i, l := range lines {
		if strings.HasPrefix(l, "PEER ") && i+1 < len(lines) {
			head = strings.Split(strings.Join(strings.Fields(strings.ReplaceAll(l, "TOO OLD", "TOO_OLD")), " "), " ")
			row = strings.Fields(lines[i+1])
		}
	}
	col := map[string]int64{}
	for i, h := range head {
		if i < len(row) {
			n, _ := strconv.ParseInt(row[i], 10, 64)
			col[h] = n
		}
	}
	sum := col["ACCEPTED"] + col["REFUSED"] + col["REJECTED"] + col["DROPPED"] + col["MISSING"] + col["TOO_OLD"] + col["LOST"] + col["QUEUED"]
	if col["OFFERED"] != 100 || sum != 100 {
		t.Errorf("status columns %v: offered %d, the columns add up to %d, want 100:\n%s", col, col["OFFERED"], sum, out.String())
	}
}

// TestPrintStatusRemoved: a peer a reload removed shows as such, with its
// queue, and does not keep status -drained waiting (its queue waits for
// the stop).
func TestPrintStatusRemoved(t *testing.T) {
	st := newsfeed.Status{Peers: []newsfeed.PeerStats{{Name: "a"}, {Name: "gone", Offered: 5, Queued: 5, Removed: true}}}
	var out bytes.Buffer
	printStatus(&out, st, time.Now())
	if !regexp.MustCompile(`(?m)^gone \(removed\) +5 `).MatchString(out.String()) {
		t.Errorf("status lacks the removed peer:\n%s", out.String())
	}
	if !isDrained(st) {
		t.Error("a removed peer's queue keeps status from being drained")
	}
}

// TestStatusBadConfig: status with a configuration file that does not
// load says where the mistake is and how to ask the relay all the same.
func TestStatusBadConfig(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "newsfeed.toml")
	os.WriteFile(conf, []byte(fmt.Sprintf("spool = %q\nadmin = \"127.0.0.1:1\"\nbogus_key = 1\n", dir)), 0o644)
	var out, errb bytes.Buffer
	rc := Main([]string{"status", "-config", conf}, &out, &errb)
	want := "newsfeed status: " + conf + ":3: bogus_key: unknown key\n(a running relay keeps the configuration it loaded; to ask it before the file is fixed, pass -admin HOST:PORT)\n"
	if rc != 1 || errb.String() != want {
		t.Errorf("status with a bad file: exit %d, stderr %q; want 1, %q", rc, errb.String(), want)
	}
}
