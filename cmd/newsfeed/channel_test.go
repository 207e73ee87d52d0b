package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestInndChannel runs newsfeed as a real innd's channel feed, in
// innfeed's place: articles posted to INN reach a sink and a second INN
// through newsfeed, and innd re-executed in the middle of the feed
// ("ctlinnd xexec innd": the channel closes, a new newsfeed starts while
// the old one writes its backlog) loses nothing.
func TestInndChannel(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	news, err := user.Lookup("news")
	if err != nil {
		t.Skip("no user news:", err)
	}
	// innd runs the channel as news: everything it touches lives in a
	// directory news can reach.
	dir, err := os.MkdirTemp("", "newsflow-channel-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "newsfeed")
	copyFile(t, os.Args[0], bin)
	script := filepath.Join(dir, "channel.sh")
	logFile := filepath.Join(dir, "channel.log")
	os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\nNEWSFEED_CHILD=1 exec %s innd-channel -config %s/newsfeed.toml -log %s\n", bin, dir, logFile)), 0o755)

	sink := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	inn2 := inntest.Start(t, inntest.Options{PathHost: "inn2.invalid"})
	_, port2, _ := net.SplitHostPort(inn2.Addr())
	cfg := fmt.Sprintf(`listen = "127.0.0.1:0"
spool = %q
pathhost = "inn1.invalid"
stats_interval = "1h"
[[peer]]
name = "sink"
host = "127.0.0.1"
port = %d
reconnect_max = "200ms"
[[peer]]
name = "inn2"
host = "127.0.0.1"
port = %s
reconnect_max = "200ms"
`, filepath.Join(dir, "spool"), sink.Port(), port2)
	os.WriteFile(filepath.Join(dir, "newsfeed.toml"), []byte(cfg), 0o644)
	chownTree(t, dir, news)
	t.Cleanup(func() {
		if t.Failed() || testing.Verbose() {
			b, _ := os.ReadFile(logFile)
			t.Logf("channel log:\n%s", b)
		}
	})

	inn1 := inntest.Start(t, inntest.Options{
		PathHost:       "inn1.invalid",
		Feeds:          []inntest.Feed{{Name: "sink", Kind: inntest.FeedChannel}, {Name: "inn2", Kind: inntest.FeedChannel}},
		ChannelProgram: script,
	})
	var ids []string
	post := func(from, to int) {
		c := dialINN(t, inn1.Addr())
		for i := from; i < to; i++ {
			id := fmt.Sprintf("<chan%d@newsflow.test>", i)
			ids = append(ids, id)
			art := fmt.Sprintf("Path: up.example!not-for-mail\nFrom: T <t@example.invalid>\nNewsgroups: local.test\n"+
				"Subject: channel %d\nDate: %s\nMessage-ID: %s\n\nbody %d\n", i, time.Now().UTC().Format(time.RFC1123Z), id, i)
			if r := c.cmd("IHAVE " + id); !strings.HasPrefix(r, "335") {
				t.Fatalf("innd: IHAVE %s: %q", id, r)
			}
			if r := c.cmd(strings.TrimSuffix(string(proto.ToWire([]byte(art))), "\r\n")); !strings.HasPrefix(r, "235") {
				t.Fatalf("innd: article %s: %q", id, r)
			}
		}
		c.c.Close()
	}
	post(0, 100)
	// innd re-executes itself: the channel closes under newsfeed and a
	// new one starts.
	if out, err := inn1.Ctlinnd("xexec", "innd"); err != nil {
		t.Fatalf("ctlinnd xexec: %v: %s", err, out)
	}
	waitINN(t, inn1)
	post(100, 200)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var missing []string
		for _, id := range ids {
			if !sink.Has(id) || !inn2.HasArticle(id) {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d articles did not reach both peers, e.g. %s", len(missing), len(ids), missing[0])
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A log line names each key once (a peer connection's mode is not
	// the process's role).
	b, _ := os.ReadFile(logFile)
	if !strings.Contains(string(b), " role=innd-channel") {
		t.Errorf("no log line says role=innd-channel")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Count(l, " mode=") > 1 {
			t.Errorf("log line with mode= twice: %s", l)
		}
	}
}

// dialINN connects to innd's feed port.
func dialINN(t *testing.T, addr string) *nntpClient {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			cl := &nntpClient{c: c, br: bufio.NewReader(c)}
			if g := cl.line(); strings.HasPrefix(g, "200") {
				return cl
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("innd at %s does not greet: %v", addr, err)
		}
	}
}

// waitINN waits until innd takes connections again.
func waitINN(t *testing.T, s *inntest.Server) { dialINN(t, s.Addr()).c.Close() }

type nntpClient struct {
	c  net.Conn
	br *bufio.Reader
}

func (c *nntpClient) line() string {
	c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	l, _ := c.br.ReadString('\n')
	return strings.TrimRight(l, "\r\n")
}

func (c *nntpClient) cmd(line string) string {
	io.WriteString(c.c, line+"\r\n")
	return c.line()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// chownTree gives dir and everything in it to u.
func chownTree(t *testing.T, dir string, u *user.User) {
	t.Helper()
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if os.Geteuid() != 0 && os.Geteuid() != uid {
		t.Skip("the channel runs as news: this test needs root or news")
	}
	filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(p, uid, gid)
		}
		return nil
	})
}
