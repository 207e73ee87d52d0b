package newsget

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

const goodConfig = `download_dir = "/tmp/dl"
rate = "20M"
daily_quota = "10G"
monthly_quota = 1099511627776
quota_day = 15
article_retries = 2
article_timeout = "45s"

[[server]]
name = "primary"
host = "news.example"
encryption = "tls"
username = "u"
password = "p w"
connections = 8
pipeline = 3
retention = 3000

[[server]]
name = "fill"
host = "fill.example"
port = 1119
encryption = "starttls"
cert_verification = false
level = 1
group = 2
optional = true
join_group = true
ip_version = "ipv6"
`

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig("newsget.toml", []byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	f := false
	want := []ServerConfig{
		{Name: "primary", Host: "news.example", Port: 563, Username: "u", Password: "p w", Encryption: "tls",
			Connections: 8, Pipeline: 3, Retention: 3000, IPVersion: "auto"},
		{Name: "fill", Host: "fill.example", Port: 1119, Encryption: "starttls", CertVerification: &f,
			Connections: DefaultConnections, Level: 1, Group: 2, Optional: true, JoinGroup: true, IPVersion: "ipv6"},
	}
	if diff := cmp.Diff(want, c.Servers); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if c.Rate != 20<<20 || c.DailyQuota != 10<<30 || c.MonthlyQuota != 1<<40 || c.QuotaDay != 15 || c.ArticleRetries != 2 {
		t.Errorf("top level: %+v", c)
	}
	if !c.Servers[0].Verify() || c.Servers[1].Verify() {
		t.Errorf("cert_verification defaults wrong")
	}
}

// TestConfigErrors: every mistake names file, line and key.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"[[server]]\nhost = \"a\"\nport = 70000\n", "f.toml:3: server[1].port: 70000 not in 1..65535"},
		{"[[server]]\nhost = \"a\"\n[[server]]\nhost = \"b\"\nencryption = \"ssl\"\n", `f.toml:5: server[2].encryption: "ssl": want none, tls or starttls`},
		{"[[server]]\nport = 119\n", "f.toml:1: server[1].host: missing"},
		{"rate = \"fast\"\n", `f.toml:1: rate: bad size "fast"`},
		{"[[server]]\nhost = \"a\"\nconections = 3\n", "f.toml:3: server[1].conections: unknown key"},
		{"[[server]]\nhost = \"a\"\nip_version = \"ipx\"\n", `f.toml:3: server[1].ip_version: ip_version "ipx": want auto, ipv4 or ipv6`},
		{"quota_day = 40\n", "f.toml:1: quota_day: 40 is not a day of the month (1-31)"},
		{"[[server]]\nhost = \"a\"\nconnections = \"many\"\n", "f.toml:3: server[1].connections: wrong type of value"},
		{"article_timeout = \"soon\"\n", `f.toml:1: article_timeout: bad duration "soon"`},
		{"a = [\n", "f.toml:1: array is incomplete"},
		{"[[server]]\nname = \"x\"\nhost = \"a\"\n[[server]]\nname = \"x\"\nhost = \"b\"\n", `f.toml:5: server[2].name: "x" used twice`},
		{"[[server]]\nhost = \"a\"\nconnections = 0\n", "f.toml:3: server[1].connections: 0 not in 1..500"},
		{"[[server]]\nhost = \"a\"\npipeline = 0\n", "f.toml:3: server[1].pipeline: 0 not in 1..100"},
		{"[[server]]\nhost = \"a\"\nport = 0\n", "f.toml:3: server[1].port: 0 not in 1..65535"},
		{"[[server]]\nhost = \"a\"\nencryption = \"ssl\"\n", `f.toml:3: server[1].encryption: "ssl": want none, tls or starttls`},
		{"quota_day = 0\n", "f.toml:1: quota_day: 0 is not a day of the month (1-31)"},
		{"unpack_max_ratio = 0\n", "f.toml:1: unpack_max_ratio: 0: want at least 1"},
		{"idle_timeout = \"0s\"\n", "f.toml:1: idle_timeout: 0s: want a positive duration"},
		{"daily_quota = -1\n", "f.toml:1: daily_quota: negative"},
	} {
		_, err := ParseConfig("f.toml", []byte(tc.text))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s...", tc.text, err, tc.want)
		}
	}
}

func TestParseServerURL(t *testing.T) {
	off := false
	for _, tc := range []struct {
		url  string
		want ServerConfig
		err  string
	}{
		{url: "nntp://news.example", want: ServerConfig{Host: "news.example", Encryption: "none"}},
		{url: "nntps://u:p%40ss@news.example:443?connections=20&level=1&group=2&optional=1&retention=30&join_group=1&pipeline=4&verify=0&ip=6&name=x",
			want: ServerConfig{Name: "x", Host: "news.example", Port: 443, Username: "u", Password: "p@ss", Encryption: "tls",
				Connections: 20, Level: 1, Group: 2, Optional: true, Retention: 30, JoinGroup: true, Pipeline: 4,
				CertVerification: &off, IPVersion: "ipv6"}},
		{url: "nntp://127.0.0.1:1119?starttls=1", want: ServerConfig{Host: "127.0.0.1", Port: 1119, Encryption: "starttls"}},
		{url: "nntp://[::1]:119", want: ServerConfig{Host: "::1", Port: 119, Encryption: "none"}},
		{url: "http://news.example", err: `scheme "http"`},
		{url: "nntp://news.example?conections=3", err: `unknown parameter "conections"`},
		{url: "nntp://news.example?level=x", err: `level="x" is not a number`},
		{url: "nntp://u:secret@h?optional=maybe", err: `optional="maybe" is not 0 or 1`},
		{url: "nntp://", err: "no host"},
		{url: "nntp://h/path", err: "path"},
		{url: "nntp://h?connections=0", err: "connections=0: want 1 to 500"},
		{url: "nntp://h?pipeline=0", err: "pipeline=0: want 1 to 100"},
	} {
		got, err := ParseServerURL(tc.url)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.url, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: the error shows the password: %v", tc.url, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.url, diff)
		}
	}
}

// FuzzParseConfig: any text either parses into a configuration that
// passes Check again, or fails with a located *ConfigError.
func FuzzParseConfig(f *testing.F) {
	f.Add(goodConfig)
	f.Add("[[server]]\nhost = \"a\"\nport = 70000\n")
	f.Add("rate = \"1.5G\"\n[[server]]\nhost=\"h\"\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseConfig("f.toml", []byte(text))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.toml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if err := c.Check(); err != nil {
			t.Fatalf("parsed, then Check failed: %v", err)
		}
		for _, s := range c.Servers {
			if s.Port < 1 || s.Port > 65535 || s.Host == "" || s.Connections < 0 {
				t.Fatalf("accepted bad server %+v", s)
			}
		}
	})
}

// FuzzParseServerURL: a URL either parses into a server that passes
// Check, or fails without echoing its password.
func FuzzParseServerURL(f *testing.F) {
	f.Add("nntps://u:secret@news.example:563?connections=8&level=1")
	f.Add("nntp://127.0.0.1:1119?starttls=1&verify=0")
	f.Add("nntp://[::1]?ip=6")
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := ParseServerURL(raw)
		if err != nil {
			return
		}
		c := Config{Servers: []ServerConfig{s}}
		if c.Check() == nil && (c.Servers[0].Port < 1 || c.Servers[0].Host == "") {
			t.Fatalf("accepted %+v", c.Servers[0])
		}
	})
}

// TestConfigAbsentKeys: an absent key takes its default (the port that of
// the encryption), and a file with several mistakes reports each once,
// in the order of its lines; a bad encryption does not make the absent
// port a second mistake.
func TestConfigAbsentKeys(t *testing.T) {
	c, err := ParseConfig("f.toml", []byte("[[server]]\nhost = \"a\"\nencryption = \"tls\"\n[[server]]\nhost = \"b\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Servers; s[0].Port != 563 || s[1].Port != 119 || s[0].Connections != DefaultConnections {
		t.Errorf("defaults not applied: %+v", s)
	}
	_, err = CheckConfig("f.toml", []byte("rate = \"20Q\"\n[[server]]\nhost = \"a\"\nencryption = \"ssl\"\nconnections = \"x\"\nbogus = 1\n[serve]\nlisten = \"127.0.0.1:notaport\"\n"))
	var got []string
	for _, e := range tomlconf.Errors(err) {
		got = append(got, e.Error())
	}
	want := []string{
		`f.toml:1: rate: bad size "20Q" (want a number of bytes, or e.g. "512K", "10MB", "1.5G")`,
		`f.toml:4: server[1].encryption: "ssl": want none, tls or starttls`,
		"f.toml:5: server[1].connections: wrong type of value: want an integer, found a string",
		"f.toml:6: server[1].bogus: unknown key",
		`f.toml:8: serve.listen: "127.0.0.1:notaport": port "notaport" is not a number 0-65535`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("mistakes (-want +got):\n%s", d)
	}
}
