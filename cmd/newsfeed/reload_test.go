package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestSIGHUPReload: SIGHUP makes the running program re-read its file: a
// peer added there is connected to, the running peer's connection stays.
func TestSIGHUPReload(t *testing.T) {
	dir := t.TempDir()
	a := nntptest.Start(t, nntptest.Options{Hostname: "a"})
	b := nntptest.Start(t, nntptest.Options{Hostname: "b"})
	conf := filepath.Join(dir, "newsfeed.toml")
	head := fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"relay.test\"\n", filepath.Join(dir, "spool"))
	peer := func(name string, s *nntptest.Server) string {
		return fmt.Sprintf("[[peer]]\nname = %q\nhost = \"127.0.0.1\"\nport = %d\nconnections = 1\n", name, s.Port())
	}
	if err := os.WriteFile(conf, []byte(head+peer("a", a)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, io.Discard, "-config", conf)
	defer c.cmd.Process.Kill()
	waitConns := func(s *nntptest.Server, n int, what string) {
		deadline := time.Now().Add(30 * time.Second) // bounds a hung test only
		for s.Conns() < n {
			if time.Now().After(deadline) {
				t.Fatalf("gave up waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitConns(a, 1, "a's connection")
	if err := os.WriteFile(conf, []byte(head+peer("a", a)+peer("b", b)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitConns(b, 1, "b's connection after SIGHUP")
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("newsfeed exited: %v\n%s", err, c.log)
	}
	if n := a.Conns(); n != 1 {
		t.Errorf("a saw %d connections, want 1 (the reload must not drop it)", n)
	}
	if !strings.Contains(c.log.String(), "reloaded "+conf+": added b; unchanged a") {
		t.Errorf("no reload line in the log:\n%s", c.log)
	}
}
