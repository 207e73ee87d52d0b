package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// `newsweb config` prints TOML that parseConfig reads back to the same
// configuration, every default filled in.
func TestConfigRoundTrip(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("STATE_DIRECTORY", "")
	t.Setenv("XDG_STATE_HOME", "")
	for name, text := range map[string]string{"empty": "", "sample": sampleConfig, "search off": "search = false\n"} {
		t.Run(name, func(t *testing.T) {
			c, err := parseConfig("f.toml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			want := c.withDefaults()
			printed, err := want.format()
			if err != nil {
				t.Fatal(err)
			}
			back, err := parseConfig("printed.toml", printed)
			if err != nil {
				t.Fatalf("the printed configuration does not parse: %v\n%s", err, printed)
			}
			if d := cmp.Diff(want, back.withDefaults(), cmpopts.IgnoreUnexported(config{})); d != "" {
				t.Errorf("printed and read back (-want +got):\n%s\n%s", d, printed)
			}
			if d := cmp.Diff(back, back.withDefaults(), cmpopts.IgnoreUnexported(config{})); d != "" {
				t.Errorf("the printed configuration leaves defaults out (-printed +filled):\n%s", d)
			}
		})
	}
}

// `newsweb config -check FILE` reports every mistake of the file, each at
// FILE:LINE, in line order, and exits 2; a good file passes with 0.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte(`listen = "x"
thread_limit = "many"
per_pag = 3
request_timeout = "forever"
[cache]
article_bytes = "lots"
[[server]]
url = "http://x"
[[server]]
url = "nntps://ok.example"
ca_file = "/nonexistent/ca.pem"
[posting]
enabled = true
users = "/nonexistent/users"
`), 0o644)
	var stdout, stderr bytes.Buffer
	if code := configCommand([]string{"-check", bad}, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(bad)+`(:\d+)?: (\S+):`).FindAllStringSubmatch(stderr.String(), -1) {
		got = append(got, m[1]+" "+m[2])
	}
	want := []string{":1 listen", ":2 thread_limit", ":3 per_pag", ":4 request_timeout", ":6 cache.article_bytes", ":8 server[1].url",
		":11 server[2].ca_file", ":13 posting.from_domain", ":14 posting.users"}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("no mistake %q reported; got:\n%s", w, stderr.String())
		}
	}
	if want := ":14: posting.users: users file /nonexistent/users: no such file or directory; make it with htpasswd -B -c /nonexistent/users NAME (Debian: apt-get install apache2-utils)\n"; !strings.Contains(stderr.String(), want) {
		t.Errorf("the users file's mistake is not %q once:\n%s", want, stderr.String())
	}
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte(sampleConfig), 0o644)
	stdout.Reset()
	stderr.Reset()
	if code := configCommand([]string{"-check", good}, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
		t.Errorf("a good file: exit %d, %s", code, stderr.String())
	}
	if code := configCommand([]string{"-config", good}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "[[server]]") {
		t.Errorf("config -config: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// The walkthrough's TOML snippets are configurations newsweb accepts.
func TestWalkthroughSnippets(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllSubmatch(text, -1)
	if len(blocks) < 3 {
		t.Fatalf("README.md has %d toml blocks, want the walkthrough's", len(blocks))
	}
	for i, b := range blocks {
		if _, err := parseConfig("README.md block "+string(rune('1'+i)), b[1]); err != nil {
			t.Errorf("block %d does not parse: %v\n%s", i+1, err, b[1])
		}
	}
}

// A file without a [[server]] does not start newsweb, so -check says so.
func TestConfigCheckNoServer(t *testing.T) {
	f := filepath.Join(t.TempDir(), "noserver.toml")
	os.WriteFile(f, []byte("listen = \"127.0.0.1:8080\"\n"), 0o644)
	var stdout, stderr bytes.Buffer
	if code := configCommand([]string{"-check", f}, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if want := f + ":1: server: no [[server]]: newsweb needs at least one NNTP server"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
	}
}

// `newsweb config` prints strings in double quotes, as newsfeed and newsget
// do and the manual writes the defaults, with '"' and '\' escaped.
func TestConfigPrintsBasicStrings(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	c, err := parseConfig("f.toml", []byte("site = 'say \"hi\" \\o/'\n[cluster]\nnats = ['nats://a:4222', 'nats://b']\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.withDefaults().format()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`listen = "127.0.0.1:8080"`, `site = "say \"hi\" \\o/"`, `nats = ["nats://a:4222", "nats://b"]`} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("printed configuration lacks %s:\n%s", want, b)
		}
	}
	if bytes.ContainsRune(b, '\'') {
		t.Errorf("printed configuration has a single quote:\n%s", b)
	}
}
