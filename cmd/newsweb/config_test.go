package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/runtime/newsweb"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

const sampleConfig = `
listen = "127.0.0.1:8119"
admin = "127.0.0.1:8081"
log_level = "debug"
request_timeout = "20s"
thread_limit = 500
search_dir = "/var/lib/newsweb/search"
search_bodies = "comp.*,!*.binaries.*"

[[server]]
url = "nntps://news.example"
user = "alice"
pass = "secret"
connections = 8

[[server]]
url = "nntp://backup.example:1119?priority=5"
name = "backup"
inject = "nntp://feed:secret@backup.example:119"

[cache]
article = "12h"
article_not_found = "30s"

[queue]
priority_aging = "5s"

[posting]
enabled = true
trusted_header = "X-Forwarded-User"
from_domain = "readers.example"
rate_limit = 5
`

func TestParseConfig(t *testing.T) {
	c, err := parseConfig("f.toml", []byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	var got []newsweb.ServerConfig
	for i := range c.Servers {
		sc, err := c.serverConfig(i)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, sc)
	}
	want := []newsweb.ServerConfig{
		{Addr: "news.example:563", TLS: newsweb.TLSImplicit, User: "alice", Pass: "secret", Connections: 8},
		{Addr: "backup.example:1119", Name: "backup", Priority: 5,
			Inject: newsweb.InjectTarget{Addr: "backup.example:119", User: "feed", Pass: "secret"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("servers (-want +got):\n%s", d)
	}
	wantCache := mreader.DefaultCacheConfig()
	wantCache.Article, wantCache.ArticleNotFound = 12*time.Hour, 30*time.Second
	if d := cmp.Diff(wantCache, c.cacheConfig()); d != "" {
		t.Errorf("cache (-want +got):\n%s", d)
	}
	if p, err := c.posting(); err != nil || p == nil {
		t.Errorf("posting: %v %v", p, err)
	}
	if c.SearchBodies != "comp.*,!*.binaries.*" {
		t.Errorf("search_bodies %q", c.SearchBodies)
	}
	if c.Listen != "127.0.0.1:8119" || c.Admin != "127.0.0.1:8081" || time.Duration(c.Queue.PriorityAging) != 5*time.Second || c.ThreadLimit != 500 {
		t.Errorf("config %+v", c)
	}
}

// TestParseConfigErrors: every mistake is located at FILE:LINE and its
// key, as newsfeed and newsget locate theirs.
func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown key", "listen = \"x\"\nlistne = \"y\"\n", "f.toml:2: listne: unknown key; did you mean listen?"},
		{"unknown key in a server", "[[server]]\nurl = \"nntp://a\"\n[[server]]\nurl = \"nntp://b\"\nprot = 3\n",
			"f.toml:5: server[2].prot: unknown key"},
		{"bad duration", "[cache]\narticle = \"forever\"\n",
			`f.toml:2: cache.article: bad duration "forever" (want e.g. "90s", "2h", "7d")`},
		{"bad size", "[cache]\n\narticle_bytes = \"lots\"\n",
			`f.toml:3: cache.article_bytes: bad size "lots" (want a number of bytes, or e.g. "512K", "10MB", "1.5G")`},
		{"negative", "listen = \"127.0.0.1:80\"\nthread_limit = -1\n", "f.toml:2: thread_limit: must be at least 1 (got -1)"},
		{"negative in a table", "[queue]\ncapacity = -5\n", "f.toml:2: queue.capacity: must be at least 1 (got -5)"},
		{"zero", "\nper_page = 0\n", "f.toml:2: per_page: must be at least 1 (got 0); leave the key out for the default"},
		{"zero connections", "[[server]]\nurl = \"nntp://a\"\nconnections = 0\n", "f.toml:3: server[1].connections: must be at least 1 (got 0)"},
		{"zero size", "[cache]\narticle_bytes = 0\n", "f.toml:2: cache.article_bytes: must be at least 1 (got 0)"},
		{"zero duration", "[posting]\nrate_window = \"0s\"\n", "f.toml:2: posting.rate_window: must be more than 0"},
		{"listen port not a number", "listen = \"127.0.0.1:notaport\"\n", `f.toml:1: listen: "127.0.0.1:notaport": want HOST:PORT with a numeric port 0-65535`},
		{"listen port too big", "listen = \"[::1]:65536\"\n", `f.toml:1: listen: "[::1]:65536": want HOST:PORT`},
		{"listen without port", "listen = \"localhost\"\n", `f.toml:1: listen: "localhost": want HOST:PORT`},
		{"listen empty", "listen = \"\"\n", `f.toml:1: listen: "": want HOST:PORT`},
		{"admin port", "\nadmin = \"127.0.0.1:http\"\n", `f.toml:2: admin: "127.0.0.1:http": want HOST:PORT`},
		{"log level", "log_level = \"loud\"\n", `f.toml:1: log_level: "loud": want debug, info, warn or error`},
		{"server without url", "[[server]]\nname = \"a\"\n",
			`f.toml:1: server[1].url: missing: want "nntp://host" or "nntps://host"`},
		{"bad server url", "[[server]]\nurl = \"nntp://a\"\n[[server]]\nurl = \"http://b\"\n",
			`f.toml:4: server[2].url: `}, // then newsweb.ParseServerURL's words
		{"not toml", "listen = \"x\"\n[[server]\n", "f.toml:2: "},
		{"posting without domain", "[posting]\nenabled = true\ntrusted_header = \"X-User\"\n", "f.toml:2: posting.from_domain: missing"},
		{"posting without identity", "[posting]\nenabled = true\nfrom_domain = \"r.example\"\n", "f.toml:2: posting.enabled: set trusted_header or users"},
		{"bad search_bodies", "search_dir = \"/s\"\nsearch_bodies = \"comp.*,,x\"\n", `f.toml:2: search_bodies: newsgroup patterns "comp.*,,x": empty pattern`},
		{"search_bodies without search", "search = false\nsearch_bodies = \"comp.*\"\n", "f.toml:2: search_bodies: needs search = true"},
		{"bad inject url", "[[server]]\nurl = \"nntp://a\"\ninject = \"http://a\"\n", "f.toml:3: server[1].inject: "},
		{"bad path identity", "[posting]\nenabled = true\ntrusted_header = \"X\"\nfrom_domain = \"r.example\"\npath_identity = \"a b\"\n",
			`f.toml:5: posting.path_identity: path identity "a b": letters, digits`},
		{"bad complaints address", "[posting]\nenabled = true\ntrusted_header = \"X\"\nfrom_domain = \"r.example\"\ncomplaints_to = \"Abuse <a@b>\"\n",
			`f.toml:5: posting.complaints_to: complaints address "Abuse <a@b>": want a plain address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig("f.toml", []byte(tc.text))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := (serverEntry{}).serverConfig(); err == nil {
		t.Errorf("a [[server]] without url was accepted")
	}
}

// TestConfigCAFile: a ca_file that cannot be read is located at its key.
func TestConfigCAFile(t *testing.T) {
	c, err := parseConfig("f.toml", []byte("[[server]]\nurl = \"nntps://a\"\nca_file = \"/nonexistent/ca.pem\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.serverConfig(0)
	want := "f.toml:3: server[1].ca_file: open /nonexistent/ca.pem: no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestConfigUnits: the durations and sizes of all three programs' grammar.
func TestConfigUnits(t *testing.T) {
	c, err := parseConfig("f.toml", []byte("request_timeout = \"1m30s\"\n[cache]\narticle = \"7d\"\narticle_bytes = \"1.5G\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := []int64{int64(c.RequestTimeout), int64(c.Cache.Article), int64(c.Cache.ArticleBytes)}
	want := []int64{int64(90 * time.Second), int64(7 * 24 * time.Hour), 3 << 29}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// FuzzParseConfig: no input panics, and every configuration accepted gives
// server entries that either convert or say why not.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(sampleConfig))
	f.Add([]byte("[[server]]\nurl = \"nntp://h\"\npriority = -3\n"))
	f.Add([]byte("[cache]\nthreads = \"0s\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConfig("f.toml", b)
		if err != nil {
			if len(tomlconf.Errors(err)) == 0 {
				t.Fatalf("error %v is not located", err)
			}
			return
		}
		for i, e := range c.Servers {
			if e.CAFile != "" {
				continue // not a file to read while fuzzing
			}
			if sc, err := c.serverConfig(i); err != nil || sc.Addr == "" {
				t.Fatalf("server %+v accepted but converts to %+v, %v", e, sc, err)
			}
		}
		if err := c.cacheConfig().Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

// With no server newsweb says what to pass and exits 2.
func TestRunWithoutServer(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-listen", "127.0.0.1:0"}, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "-server nntp://") {
		t.Errorf("message does not say what to pass:\n%s", stderr.String())
	}
}

// A listen address whose port is not a number stops newsweb at start with
// the key's FILE:LINE (or the flag), before anything is served.
func TestRunBadListen(t *testing.T) {
	f := filepath.Join(t.TempDir(), "w.toml")
	os.WriteFile(f, []byte("\nlisten = \"127.0.0.1:notaport\"\n[[server]]\nurl = \"nntp://127.0.0.1:1\"\n"), 0o644)
	for _, args := range [][]string{{"-config", f}, {"-server", "nntp://127.0.0.1:1", "-listen", "127.0.0.1:notaport"}} {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if !strings.Contains(stderr.String(), `"127.0.0.1:notaport": want HOST:PORT`) {
			t.Errorf("%q: stderr does not name the mistake:\n%s", args, stderr.String())
		}
		if args[0] == "-config" && !strings.Contains(stderr.String(), f+":2: listen: ") {
			t.Errorf("the mistake is not at %s:2:\n%s", f, stderr.String())
		}
	}
}

// A listen address another program holds stops newsweb with what to do.
func TestRunListenInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	f := filepath.Join(t.TempDir(), "w.toml")
	os.WriteFile(f, []byte("search = false\nlisten = \""+taken+"\"\n[[server]]\nurl = \"nntp://127.0.0.1:1\"\n"), 0o644)
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-config", f}, &stderr); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if want := "another program listens on " + taken + ": stop it, or choose another address with -listen or listen in the configuration"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
	}
}
