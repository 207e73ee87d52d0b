package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/newsflow/newsflow/runtime/newsget"
)

// TestConfigRoundTrip: what `newsget config` prints reads back to the
// same configuration, for the defaults and for a file with servers,
// categories and every kind of value.
func TestConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "newsget.toml")
	os.WriteFile(file, []byte(`download_dir = "`+dir+`/dl"
rate = "20M"
daily_quota = "50G"
article_timeout = "90s"
unpack = false

[[server]]
name = "main"
host = "news.example"
encryption = "tls"
username = "u"
password = "p \"q\" \\ r"
connections = 8
ip_version = "ipv6"

[[server]]
host = "backup.example"
level = 1
optional = true
cert_verification = false

[serve]
hostnames = ["nas.example", "nas"]
max_nzb_size = "10M"
read_timeout = "1h"

[[category]]
name = "tv"
priority = "high"
`), 0o644)
	for _, f := range []string{"", file} {
		var out, errOut bytes.Buffer
		if code := Main([]string{"config", "-config", f}, &out, &errOut); f == "" {
			out.Reset()
			errOut.Reset()
			code = Main([]string{"config"}, &out, &errOut)
			if code != 0 {
				t.Fatalf("config: exit %d: %s", code, errOut.String())
			}
		} else if code != 0 {
			t.Fatalf("config -config %s: exit %d: %s", f, code, errOut.String())
		}
		want, err := effectiveConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		printed := filepath.Join(dir, "printed.toml")
		os.WriteFile(printed, out.Bytes(), 0o644)
		got, err := effectiveConfig(printed)
		if err != nil {
			t.Fatalf("the printed configuration does not read back: %v\n%s", err, out.String())
		}
		if d := cmp.Diff(want, got, cmpopts.IgnoreUnexported(newsget.Config{}), cmpopts.IgnoreFields(newsget.Config{}, "Source")); d != "" {
			t.Errorf("%q: printed and read back (-want +got):\n%s\n%s", f, d, out.String())
		}
		if f == file && !strings.Contains(out.String(), `password = "p \"q\" \\ r"`) {
			t.Errorf("the password is not printed as TOML:\n%s", out.String())
		}
	}
}

// TestConfigCheck: `newsget config -check` reports every mistake of the
// file, each as FILE:LINE: KEY: what is wrong, and exits 2; a good file
// exits 0.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte(`quota_day = 40
rate = "20Q"
colour = "blue"
article_retries = "three"
connect_timeout = "0s"

[[server]]
host = "news.example"
port = 70000
connections = 0
pipeline = 0

[[server]]
host = "backup.example"
encryption = "tls"
conections = 2

[serve]
listen = "127.0.0.1:notaport"
addurl_fetches = -1
hostnames = ["http://nas"]
history_size = "many"
`), 0o644)
	var out, errOut bytes.Buffer
	if code := Main([]string{"config", "-check", bad}, &out, &errOut); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	want := []string{
		bad + ":1: quota_day: 40 is not a day of the month (1-31)",
		bad + `:2: rate: bad size "20Q" (want a number of bytes, or e.g. "512K", "10MB", "1.5G")`,
		bad + ":3: colour: unknown key",
		bad + ":4: article_retries: wrong type of value: want an integer, found a string",
		bad + `:5: connect_timeout: 0s: want a positive duration ("30s"), or leave the key out for the default`,
		bad + ":9: server[1].port: 70000 not in 1..65535",
		bad + ":10: server[1].connections: 0 not in 1..500",
		bad + ":11: server[1].pipeline: 0 not in 1..100",
		bad + ":16: server[2].conections: unknown key; did you mean connections?",
		bad + `:19: serve.listen: "127.0.0.1:notaport": port "notaport" is not a number 0-65535`,
		bad + ":20: serve.addurl_fetches: -1 not in 1..64",
		bad + `:21: serve.hostnames: entry 1, "http://nas": a host name without port or scheme (nas.example)`,
		bad + ":22: serve.history_size: wrong type of value: want an integer, found a string",
	}
	got := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if last := got[len(got)-1]; last != fmt.Sprintf("newsget config: %d mistake(s); newsget does not start with this file", len(want)) {
		t.Errorf("last line %q: want the count of mistakes", last)
	}
	got = got[:len(got)-1]
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("config -check (-want +got):\n%s", d)
	}
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte("[[server]]\nhost = \"news.example\"\n"), 0o644)
	out.Reset()
	errOut.Reset()
	if code := Main([]string{"config", "-check", good}, &out, &errOut); code != 0 || errOut.Len() != 0 {
		t.Errorf("a good file: exit %d: %s", code, errOut.String())
	}
	noServer := filepath.Join(dir, "noserver.toml")
	os.WriteFile(noServer, []byte("rate = \"2M\"\n"), 0o644)
	out.Reset()
	errOut.Reset()
	code := Main([]string{"config", "-check", noServer}, &out, &errOut)
	if want := "newsget config: " + noServer + " has no [[server]]: newsget serve does not start with it, and a download needs -server URLs\n"; code != 0 || errOut.String() != want {
		t.Errorf("a file without a server: exit %d: %q, want 0 and %q", code, errOut.String(), want)
	}
}

// TestWalkthroughConfigs: every ```toml block of the walkthrough
// (README.md) is a configuration `newsget config -check` accepts.
func TestWalkthroughConfigs(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllSubmatch(text, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```toml block")
	}
	for i, b := range blocks {
		if _, err := newsget.CheckConfig("README.md block "+string(rune('1'+i)), b[1]); err != nil {
			t.Errorf("%v\n%s", err, b[1])
		}
	}
}
