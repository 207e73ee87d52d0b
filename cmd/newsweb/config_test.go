package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/runtime/newsweb"
)

const sampleConfig = `
listen = "127.0.0.1:8119"
admin = "127.0.0.1:8081"
log_level = "debug"
request_timeout = "20s"
thread_limit = 500

[[server]]
url = "nntps://news.example"
user = "alice"
pass = "secret"
connections = 8

[[server]]
url = "nntp://backup.example:1119?priority=5"
name = "backup"

[cache]
article = "12h"
article_not_found = "30s"

[queue]
priority_aging = "5s"
`

func TestParseConfig(t *testing.T) {
	c, err := parseConfig([]byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	var got []newsweb.ServerConfig
	for _, e := range c.Servers {
		sc, err := e.serverConfig()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, sc)
	}
	want := []newsweb.ServerConfig{
		{Addr: "news.example:563", TLS: newsweb.TLSImplicit, User: "alice", Pass: "secret", Connections: 8},
		{Addr: "backup.example:1119", Name: "backup", Priority: 5},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("servers (-want +got):\n%s", d)
	}
	wantCache := mreader.DefaultCacheConfig()
	wantCache.Article, wantCache.ArticleNotFound = 12*time.Hour, 30*time.Second
	if d := cmp.Diff(wantCache, c.cacheConfig()); d != "" {
		t.Errorf("cache (-want +got):\n%s", d)
	}
	if c.Listen != "127.0.0.1:8119" || c.Admin != "127.0.0.1:8081" || time.Duration(c.Queue.PriorityAging) != 5*time.Second || c.ThreadLimit != 500 {
		t.Errorf("config %+v", c)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown key", "listen = \"x\"\nlistne = \"y\"\n", "unknown key"},
		{"bad duration", "[cache]\narticle = \"forever\"\n", "forever"},
		{"negative", "thread_limit = -1\n", "negative"},
		{"not toml", "[[server]\n", ""},
	} {
		_, err := parseConfig([]byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := (serverEntry{}).serverConfig(); err == nil {
		t.Errorf("a [[server]] without url was accepted")
	}
}

// FuzzParseConfig: no input panics, and every configuration accepted gives
// server entries that either convert or say why not.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(sampleConfig))
	f.Add([]byte("[[server]]\nurl = \"nntp://h\"\npriority = -3\n"))
	f.Add([]byte("[cache]\nthreads = \"0s\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConfig(b)
		if err != nil {
			return
		}
		for _, e := range c.Servers {
			if sc, err := e.serverConfig(); err == nil && sc.Addr == "" {
				t.Fatalf("server %+v converted without an address", e)
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
