package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLogFileReopen: with log_file set the log goes to the file; after
// logrotate's rename, SIGUSR1 and then `newsfeed ctl reopen` each make the
// relay go on in a new file of the configured name.
func TestLogFileReopen(t *testing.T) {
	dir := t.TempDir()
	logName := filepath.Join(dir, "newsfeed.log")
	conf := filepath.Join(dir, "newsfeed.toml")
	text := fmt.Sprintf("listen = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\nspool = %q\npathhost = \"relay.test\"\nlog_file = %q\n",
		filepath.Join(dir, "spool"), logName)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, io.Discard, "-config", conf)
	defer func() {
		c.cmd.Process.Signal(syscall.SIGTERM)
		c.cmd.Wait()
	}()
	var out, errb bytes.Buffer
	if rc := Main([]string{"status", "-config", conf, "-wait", "60s"}, &out, &errb); rc != 0 {
		t.Fatalf("the relay never answered: %s\n%s", errb.String(), c.log.String())
	}
	waitFile := func(name, want string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			b, _ := os.ReadFile(name)
			if strings.Contains(string(b), want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never held %q; it holds:\n%s", name, want, b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFile(logName, "newsfeed running")
	if c.log.Len() != 0 {
		t.Errorf("with log_file set, standard error got:\n%s", c.log.String())
	}

	if err := os.Rename(logName, logName+".1"); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitFile(logName, "log file reopened")

	if err := os.Rename(logName, logName+".2"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if rc := Main([]string{"ctl", "-config", conf, "reopen"}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "log file reopened") {
		t.Fatalf("ctl reopen: exit %d, %q %q", rc, out.String(), errb.String())
	}
	waitFile(logName, "log file reopened")
	old, _ := os.ReadFile(logName + ".1")
	if !strings.Contains(string(old), "newsfeed running") {
		t.Errorf("the rotated file lost the start lines:\n%s", old)
	}
}

// TestStatusWithoutAdmin: status on a configuration without admin says
// that admin is not set in that file, at once even with -wait.
func TestStatusWithoutAdmin(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "nf.toml")
	text := fmt.Sprintf("listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"relay.test\"\n", filepath.Join(dir, "spool"))
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if rc := Main([]string{"status", "-config", file, "-wait", "1h"}, &stdout, &stderr); rc != 1 {
		t.Errorf("status: exit %d, want 1", rc)
	}
	want := "newsfeed status: admin is not set in " + file + ": status, ctl and trace need an admin listener"
	if !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("status said:\n%s\nwant prefix:\n%s", stderr.String(), want)
	}
}
