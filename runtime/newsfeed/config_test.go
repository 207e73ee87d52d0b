package newsfeed

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

func TestParseConfigIssueExample(t *testing.T) {
	text := `
listen   = "127.0.0.1:1119"   # ingest listener
spool    = "/var/spool/newsflow"
pathhost = "relay.example"    # our Path identity
admin    = "127.0.0.1:1190"   # optional: metrics and status

[[peer]]
name        = "inn1"
host        = "127.0.0.1"
port        = 119
connections = 2
groups      = ["*", "!control.*"]
pathname    = "inn1.example"  # skip articles whose Path holds this
max_size    = 1048576
`
	c, err := ParseConfig("newsfeed.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	want := PeerConfig{
		Name: "inn1", Host: "127.0.0.1", Port: 119, Connections: 2,
		Groups: []string{"*", "!control.*"}, PathName: "inn1.example", MaxSize: 1048576,
		TLSVerify: &yes, Streaming: "auto", Window: 100, QueueSize: 4096,
		DeferDelay: tomlconf.Duration(time.Minute), DeferMaxDelay: tomlconf.Duration(time.Hour), MaxDefers: 10,
		ConnectTimeout: tomlconf.Duration(30 * time.Second), ResponseTimeout: tomlconf.Duration(5 * time.Minute),
		ReconnectMax: tomlconf.Duration(5 * time.Minute),
		NoCheck:      true, NoCheckHigh: 95, NoCheckLow: 90, NoCheckFilter: 50,
		MaxConnections: 2, ExtraIdle: tomlconf.Duration(time.Minute),
	}
	if diff := cmp.Diff([]PeerConfig{want}, c.Peers); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
	got := []any{c.Listen, c.Spool, c.PathHost, c.Admin, c.Runtime, c.StatsInterval.D(), int64(c.MaxArticleSize)}
	wantTop := []any{"127.0.0.1:1119", "/var/spool/newsflow", "relay.example", "127.0.0.1:1190", "goroutine", 60 * time.Second, int64(16 << 20)}
	if diff := cmp.Diff(wantTop, got); diff != "" {
		t.Errorf("top-level (-want +got):\n%s", diff)
	}
}

func TestParseConfigValues(t *testing.T) {
	tests := []struct {
		name string
		text string
		get  func(c *Config) any
		want any
	}{
		{"size units", "spool=\"/s\"\nmax_article_size = \"2MB\"", func(c *Config) any { return int64(c.MaxArticleSize) }, int64(2 << 20)},
		{"size integer", "spool=\"/s\"\nmax_article_size = 4096", func(c *Config) any { return int64(c.MaxArticleSize) }, int64(4096)},
		{"days", "spool=\"/s\"\nspool_max_age = \"2d\"\nhistory_retention=\"3d\"", func(c *Config) any { return c.SpoolMaxAge.D() }, 48 * time.Hour},
		{"ingest limit defaults", "spool=\"/s\"", func(c *Config) any {
			return []any{c.MaxConnections, c.MaxConnectionsPerHost, int64(c.MaxBufferedBytes), c.TransferTimeout.D(), c.ArticleTimeout.D(), int64(c.MinTransferRate), c.WriteTimeout.D()}
		}, []any{1000, 0, int64(256 << 20), 2 * time.Minute, 10 * time.Minute, int64(1024), 2 * time.Minute}},
		{"ingest limits", "spool=\"/s\"\nmax_connections = 50\nmax_connections_per_host = 5\nmax_buffered_bytes = \"1G\"\nwrite_timeout = \"30s\"\nmin_transfer_rate = \"10K\"", func(c *Config) any {
			return []any{c.MaxConnections, c.MaxConnectionsPerHost, int64(c.MaxBufferedBytes), c.WriteTimeout.D(), int64(c.MinTransferRate)}
		}, []any{50, 5, int64(1 << 30), 30 * time.Second, int64(10 << 10)}},
		{"tls port", "spool=\"/s\"\n[[peer]]\nname=\"a\"\nhost=\"h\"\ntls=true", func(c *Config) any { return c.Peers[0].Port }, 563},
		{"tls_verify off", "spool=\"/s\"\n[[peer]]\nname=\"a\"\nhost=\"h\"\ntls=true\ntls_verify=false", func(c *Config) any { return *c.Peers[0].TLSVerify }, false},
		{"pathname defaults to name", "spool=\"/s\"\n[[peer]]\nname=\"a.b\"\nhost=\"h\"", func(c *Config) any { return c.Peers[0].PathName }, "a.b"},
		{"stats interval", "spool=\"/s\"\nstats_interval=\"5s\"", func(c *Config) any { return c.StatsInterval.D() }, 5 * time.Second},
		{"allow default", "spool=\"/s\"", func(c *Config) any { return c.Allow }, []string{"127.0.0.0/8", "::1"}},
		{"allow list", "spool=\"/s\"\nallow = [\"127.0.0.0/8\", \"::1\", \"192.0.2.7\", \"2001:db8::/32\"]", func(c *Config) any { return fmt.Sprint(c.allowed) }, "[127.0.0.0/8 ::1/128 192.0.2.7/32 2001:db8::/32]"},
		{"allow empty", "spool=\"/s\"\nallow = []", func(c *Config) any { return len(c.allowed) }, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig("x.toml", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.get(c)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseConfigErrors checks that every mistake names the file, the line
// and the key.
func TestParseConfigErrors(t *testing.T) {
	peer := "spool = \"/s\"\n[[peer]]\nname = \"a\"\nhost = \"h\"\n"
	tests := []struct {
		name string
		text string
		want string
	}{
		{"unknown top key", "spool = \"/s\"\nlisten = \"127.0.0.1:1\"\nlisenn = 3\n", "f.toml:3: lisenn: unknown key"},
		{"unknown peer key", peer + "windw = 5\n", "f.toml:5: peer[1].windw: unknown key; did you mean window?"},
		{"wrong type", peer + "port = \"x\"\n", "f.toml:5: peer[1].port: wrong type of value: want an integer, found a string"},
		{"bad duration", "stats_interval = \"soon\"\n", "f.toml:1: stats_interval: bad duration \"soon\""},
		{"short stats interval", "spool=\"/s\"\nstats_interval = \"10ms\"\n", "f.toml:2: stats_interval: must be at least 1s"},
		{"bad size", "max_article_size = \"lots\"\n", "f.toml:1: max_article_size: bad size"},
		{"no connections", "spool=\"/s\"\nmax_connections = 0\n", "f.toml:2: max_connections: must be at least 1"},
		{"negative per host", "spool=\"/s\"\nmax_connections_per_host = -1\n", "f.toml:2: max_connections_per_host: must be 0 (no limit) or more"},
		{"budget under an article", "spool=\"/s\"\nmax_buffered_bytes = \"1M\"\n", "f.toml:2: max_buffered_bytes: must be at least max_article_size"},
		{"short write timeout", "spool=\"/s\"\nwrite_timeout = \"10ms\"\n", "f.toml:2: write_timeout: must be at least 1s"},
		{"bad runtime", "spool=\"/s\"\nruntime = \"threads\"\n", "f.toml:2: runtime: \"threads\" is not a runtime"},
		{"bad listen", "spool=\"/s\"\nlisten = \"nowhere\"\n", "f.toml:2: listen: \"nowhere\" is not host:port"},
		{"bad pathhost", "spool=\"/s\"\npathhost = \"a b\"\n", "f.toml:2: pathhost: \"a b\" is not a valid path identity"},
		{"window zero", peer + "window = 0\n", "f.toml:5: peer[1].window: must be 1..10000 (got 0)"},
		{"bad streaming", peer + "streaming = \"maybe\"\n", "f.toml:5: peer[1].streaming: \"maybe\": want"},
		{"bad pattern", peer + "groups = [\"*\", \"\"]\n", "f.toml:5: peer[1].groups:"},
		{"port range", peer + "port = 70000\n", "f.toml:5: peer[1].port: must be 1..65535"},
		{"missing host", "spool=\"/s\"\n[[peer]]\nname = \"a\"\n", "f.toml:2: peer[1].host: missing"},
		{"no name", "spool=\"/s\"\n[[peer]]\nhost = \"h\"\n", "f.toml:2: peer[1]: peer without a name"},
		{"duplicate name", peer + "[[peer]]\nname = \"a\"\nhost = \"h\"\n", "f.toml:6: peer[2].name: duplicate peer name \"a\""},
		{"bad name", "spool=\"/s\"\n[[peer]]\nname = \"../x\"\nhost = \"h\"\n", "f.toml:3: peer[1].name: \"../x\": use letters"},
		{"tls and starttls", peer + "tls = true\nstarttls = true\n", "f.toml:6: peer[1].starttls: choose one"},
		{"user without password", peer + "username = \"u\"\n", "f.toml:5: peer[1].username: username and password go together"},
		{"log file directory missing", "spool=\"/s\"\nlog_file = \"/nonexistent/newsfeed.log\"\n", "f.toml:2: log_file: directory /nonexistent does not exist"},
		{"log file relative", "spool=\"/s\"\nlog_file = \"newsfeed.log\"\n", "f.toml:2: log_file: \"newsfeed.log\": give an absolute path"},
		{"missing ca file", peer + "ca_file = \"/nonexistent/ca.pem\"\n", "f.toml:5: peer[1].ca_file:"},
		{"history shorter than spool", "spool=\"/s\"\nspool_max_age = \"7d\"\nhistory_retention = \"1d\"\n", "f.toml:3: history_retention: must be at least spool_max_age"},
		{"negative history size", "spool=\"/s\"\nhistory_size = -1\n", "f.toml:2: history_size: must be between 0 and"},
		{"allow bad entry", "spool=\"/s\"\nallow = [\"::1\", \"192.0.2.300\"]\n", "f.toml:2: allow[2]: \"192.0.2.300\" is not an address or prefix"},
		{"allow bad prefix", "spool=\"/s\"\n\nallow = [\"10.0.0.0/33\"]\n", "f.toml:3: allow[1]: \"10.0.0.0/33\" is not an address or prefix"},
		{"allow host bits", "spool=\"/s\"\nallow = [\"192.0.2.1/24\"]\n", "f.toml:2: allow[1]: \"192.0.2.1/24\" has host bits set (did you mean \"192.0.2.0/24\"?)"},
		{"allow name", "spool=\"/s\"\nallow = [\"localhost\"]\n", "f.toml:2: allow[1]: \"localhost\" is not an address"},
		{"allow not a list", "spool=\"/s\"\nallow = \"::1\"\n", "f.toml:2: allow: wrong type of value"},
		{"syntax", "spool = \"/s\"\nlisten = \n", "f.toml:2: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("f.toml", []byte(tc.text))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error:\n%s\nwant prefix:\n%s", err, tc.want)
			}
		})
	}
}

func TestEmbeddedDefault(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	c, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	got := []any{c.Source, c.Listen, c.Spool, len(c.Peers), c.Admin}
	want := []any{EmbeddedSource, "127.0.0.1:1119", "/state/newsflow", 0, ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestConfigAllowed checks which addresses an allow list takes.
func TestConfigAllowed(t *testing.T) {
	tests := []struct {
		allow string // TOML value; "" for the default
		addr  string
		want  bool
	}{
		{"", "127.0.0.1", true},
		{"", "127.5.6.7", true},
		{"", "::1", true},
		{"", "::ffff:127.0.0.1", true},
		{"", "192.0.2.7", false},
		{"", "::2", false},
		{`["192.0.2.0/24"]`, "127.0.0.1", false},
		{`["192.0.2.0/24"]`, "192.0.2.200", true},
		{`["192.0.2.0/24"]`, "::ffff:192.0.2.9", true},
		{`["192.0.2.0/24"]`, "192.0.3.1", false},
		{`["127.0.0.1"]`, "127.0.0.1", true},
		{`["127.0.0.1"]`, "127.0.0.2", false},
		{`["2001:db8::/32"]`, "2001:db8:1::5", true},
		{`["2001:db8::/32"]`, "2001:db9::5", false},
		{`["0.0.0.0/0", "::/0"]`, "198.51.100.1", true},
		{`[]`, "127.0.0.1", false},
	}
	for _, tc := range tests {
		t.Run(tc.allow+" "+tc.addr, func(t *testing.T) {
			text := "spool=\"/s\"\n"
			if tc.allow != "" {
				text += "allow = " + tc.allow + "\n"
			}
			c, err := ParseConfig("f.toml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Allowed(netip.MustParseAddr(tc.addr)); got != tc.want {
				t.Errorf("Allowed(%s) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
}

// TestOpenLogFileNamesLine: a log_file that cannot be opened at the start
// (its directory went away after the check) names the key's FILE:LINE.
func TestOpenLogFileNamesLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig("f.toml", []byte(fmt.Sprintf("spool = \"/s\"\nlog_file = %q\n", filepath.Join(dir, "newsfeed.log"))))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	_, err = c.OpenLogFile()
	if want := "f.toml:2: log_file: open "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("OpenLogFile: %v, want prefix %q", err, want)
	}
}
