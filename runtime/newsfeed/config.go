package newsfeed

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// DefaultConfigText is the embedded configuration newsfeed runs when it is
// given no -config: an ingest listener on loopback, the spool under the
// user's state directory, and no peers.
//
//go:embed default.toml
var DefaultConfigText []byte

// Config is newsfeed's configuration: the relay's own settings and its
// peers. Load and Parse fill it from TOML and apply the defaults.
type Config struct {
	// Source names where the configuration came from: a file name, or
	// "(embedded default)".
	Source string `toml:"-"`

	Listen   string `toml:"listen"`   // ingest listener, host:port
	Spool    string `toml:"spool"`    // spool directory (articles, history, backlogs)
	PathHost string `toml:"pathhost"` // our Path identity
	Admin    string `toml:"admin"`    // optional metrics and status listener

	// Allow lists the addresses ("192.0.2.7", "::1") and prefixes
	// ("127.0.0.0/8") the ingest listener takes connections from, as INN's
	// incoming.conf does; absent, loopback only (DefaultAllow).
	Allow []string `toml:"allow"`

	// Runtime selects the connection runtime: "goroutine" (the default,
	// a goroutine per connection) or "epoll" (Linux: the ingest listener's
	// connections and the peers' run on one epoll loop). Peers with tls or
	// starttls stay on the goroutine runtime either way: crypto/tls needs a
	// net.Conn.
	Runtime string `toml:"runtime"`
	// StatsInterval is how often a stats line per peer is logged.
	StatsInterval tomlconf.Duration `toml:"stats_interval"`
	// MaxArticleSize is the largest article ingest accepts, in octets.
	MaxArticleSize tomlconf.Size `toml:"max_article_size"`
	// HistoryRetention is how long stored message-ids are remembered (and
	// refused when offered again).
	HistoryRetention tomlconf.Duration `toml:"history_retention"`
	// HistorySize is how many message-ids the history's index is sized for
	// at start (0: for what it holds); it grows past that with a pause.
	HistorySize int `toml:"history_size"`
	// SpoolMaxAge and SpoolMaxBytes bound the spool (0: no limit).
	SpoolMaxAge   tomlconf.Duration `toml:"spool_max_age"`
	SpoolMaxBytes tomlconf.Size     `toml:"spool_max_bytes"`
	// CommitDelay is how long the group commit waits to gather more
	// articles before one fsync (0: commit as soon as the previous one ends).
	CommitDelay tomlconf.Duration `toml:"commit_delay"`
	// Ingest limits: what upstream connections may make the relay spend.
	// MaxConnections bounds the open upstream connections and
	// MaxConnectionsPerHost those from one address (0: no per-address
	// limit); beyond them a connection is greeted with 400 and closed.
	MaxConnections        int `toml:"max_connections"`
	MaxConnectionsPerHost int `toml:"max_connections_per_host"`
	// MaxBufferedBytes bounds the article bytes all upstream connections
	// hold in memory together; a connection that would grow past it stops
	// being read until others finish their articles.
	MaxBufferedBytes tomlconf.Size `toml:"max_buffered_bytes"`
	// TransferTimeout closes a connection stalled in the middle of a
	// command line or an article. ArticleTimeout and MinTransferRate bound
	// a whole article: it must arrive within ArticleTimeout plus one second
	// per MinTransferRate octets from its first octet.
	TransferTimeout tomlconf.Duration `toml:"transfer_timeout"`
	ArticleTimeout  tomlconf.Duration `toml:"article_timeout"`
	MinTransferRate tomlconf.Size     `toml:"min_transfer_rate"`
	// WriteTimeout closes a connection whose answers are not written within
	// it (the feeder stopped reading), releasing the ids it reserved.
	WriteTimeout tomlconf.Duration `toml:"write_timeout"`

	// LogFile, when set, is the file the log is appended to instead of
	// standard error; SIGUSR1 and `newsfeed ctl reopen` reopen it by name
	// (logrotate). It must be an absolute path.
	LogFile string `toml:"log_file"`

	// Pprof serves Go's profiler (net/http/pprof) under /debug/pprof/ on
	// the admin listener; off by default (profiles expose internals).
	Pprof bool `toml:"pprof"`

	// ArticleLog, when set, names the article log (artlog.go); a relative
	// name is in the spool directory. It is rotated past ArticleLogMax,
	// keeping ArticleLogKeep old files.
	ArticleLog     string        `toml:"article_log"`
	ArticleLogMax  tomlconf.Size `toml:"article_log_max"`
	ArticleLogKeep int           `toml:"article_log_keep"`

	Peers []PeerConfig `toml:"peer"`

	// Ingest authentication, TLS, Date cutoff and per-feeder rules
	// (incoming.go).
	IngestUsers string            `toml:"ingest_users"` // htpasswd file (user:bcrypt); AUTHINFO required when set
	TLSCert     string            `toml:"tls_cert"`     // PEM certificate chain: STARTTLS offered on listen
	TLSKey      string            `toml:"tls_key"`      // its PEM private key
	ListenTLS   string            `toml:"listen_tls"`   // optional implicit-TLS ingest listener, host:port
	TLSRequired bool              `toml:"tls_required"` // AUTHINFO only on encrypted connections
	ArtCutoff   tomlconf.Duration `toml:"artcutoff"`    // refuse articles dated earlier than now minus this (0: off)
	Incoming    []IncomingConfig  `toml:"incoming"`
	// Cluster, when set, makes this process one node of a newsfeed
	// cluster on NATS JetStream (package runtime/newsfeed/cluster): the
	// articles, history and peer queues live there, not in spool.
	Cluster *ClusterConfig `toml:"cluster"`

	// allowed is Allow parsed (check fills it).
	allowed []netip.Prefix

	// keys maps each key path present in the file ("listen",
	// "peer[1].window") to its line, for error messages.
	keys tomlconf.Keys
}

// PeerConfig is one outgoing peer ([[peer]] table).
type PeerConfig struct {
	Name        string        `toml:"name"`        // names the peer in logs, stats and backlog files
	Host        string        `toml:"host"`        // host name or address
	Port        int           `toml:"port"`        // default 119, 563 with tls
	Connections int           `toml:"connections"` // connections to open (default 2)
	Groups      []string      `toml:"groups"`      // newsfeeds patterns (default ["*"])
	PathName    string        `toml:"pathname"`    // skip articles whose Path holds this, or "site/excl1,excl2" any of these (default: name)
	MaxSize     tomlconf.Size `toml:"max_size"`    // skip larger articles (0: no limit)
	HashFeed    string        `toml:"hashfeed"`    // feed only the MD5(Message-ID) slices "1-2/4" (INN's Q flag; "": all)
	Hashes      hashFeed      `toml:"-" json:"-"`  // HashFeed parsed, by the configuration check
	// MaxAge: an article that arrived longer ago than this when its turn
	// comes is not offered to the peer (counted as too old; 0: no limit).
	MaxAge tomlconf.Duration `toml:"max_age"`

	TLS       bool   `toml:"tls"`        // TLS from the first byte (NNTPS)
	StartTLS  bool   `toml:"starttls"`   // STARTTLS (RFC 4642) before feeding
	TLSVerify *bool  `toml:"tls_verify"` // verify the peer's certificate (default true)
	CAFile    string `toml:"ca_file"`    // PEM roots to verify with instead of the system's
	// ServerName is the name checked in the certificate (default: host).
	ServerName string `toml:"tls_server_name"`

	Username string `toml:"username"` // AUTHINFO USER/PASS credentials
	Password string `toml:"password"`

	// Streaming is "auto" (MODE STREAM, IHAVE when refused), "on"
	// (streaming required) or "off" (IHAVE only).
	Streaming string `toml:"streaming"`
	// Window bounds the commands awaiting an answer per connection.
	Window int `toml:"window"`
	// QueueSize is the memory queue's capacity in articles before it
	// spills to backlog files.
	QueueSize int `toml:"queue_size"`

	BacklogMaxBytes tomlconf.Size     `toml:"backlog_max_bytes"` // drop oldest backlog beyond this (0: no limit)
	BacklogMaxAge   tomlconf.Duration `toml:"backlog_max_age"`   // drop backlog older than this (0: no limit)
	DeferDelay      tomlconf.Duration `toml:"defer_delay"`       // first retry of a deferred article
	DeferMaxDelay   tomlconf.Duration `toml:"defer_max_delay"`   // the doubling delay stops here
	MaxDefers       int               `toml:"max_defers"`        // deferrals before an article is dropped

	ConnectTimeout  tomlconf.Duration `toml:"connect_timeout"`  // dial and handshake
	ResponseTimeout tomlconf.Duration `toml:"response_timeout"` // silence before a connection is dropped
	ReconnectMax    tomlconf.Duration `toml:"reconnect_max"`    // cap of the reconnect backoff

	// BindAddress is the source address of the connections to the peer
	// (innfeed's bindaddress, bindaddress6); "" lets the system pick.
	BindAddress string `toml:"bind_address"`
	// NoCheck lets a connection switch to TAKETHIS without CHECK while the
	// peer wants nearly everything offered (innfeed's no-CHECK mode): above
	// NoCheckHigh percent wanted, back to CHECK below NoCheckLow, the share
	// filtered over about NoCheckFilter articles.
	NoCheck       bool    `toml:"no_check"`
	NoCheckHigh   float64 `toml:"no_check_high"`
	NoCheckLow    float64 `toml:"no_check_low"`
	NoCheckFilter float64 `toml:"no_check_filter"`
	// MaxConnections is the most connections to the peer: beyond
	// Connections, another opens while the peer's backlog keeps growing,
	// and one opened so is closed after ExtraIdle with nothing to send
	// (innfeed's max-connections, dynamic-method).
	MaxConnections int               `toml:"max_connections"`
	ExtraIdle      tomlconf.Duration `toml:"extra_idle"`
}

// ConfigError is a configuration mistake, located in its file
// (FILE:LINE: KEY: MESSAGE).
type ConfigError = tomlconf.Error

// EmbeddedSource is Config.Source for the embedded default.
const EmbeddedSource = "(embedded default)"

// LoadConfig reads and checks the configuration file; an empty name means
// the embedded default.
func LoadConfig(file string) (*Config, error) {
	if file == "" {
		return ParseConfig(EmbeddedSource, DefaultConfigText)
	}
	return tomlconf.Load(file, ParseConfig)
}

// ParseConfig parses TOML text, applies the defaults and checks every
// value. Errors are *ConfigError values naming name, the line and the key,
// one for every mistake in the text (joined): a value of the wrong type is
// reported and left out, and the rest is still decoded and checked. Only a
// syntax error stops at the first.
func ParseConfig(name string, text []byte) (*Config, error) {
	c := &Config{}
	keys, err := tomlconf.DecodeAll(name, text, c)
	if keys == nil {
		return nil, err // a syntax error
	}
	c.Source = name
	var errs []error
	reported := map[string]bool{}
	for _, e := range tomlconf.Errors(err) {
		errs = append(errs, e)
		reported[e.Key] = true
	}
	c.keys = keys
	if err := c.applyDefaults(); err != nil {
		errs = append(errs, err)
		reported["spool"] = true
	}
	for _, e := range tomlconf.Errors(c.check()) {
		if !reported[e.Key] {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		sortByLine(errs)
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// sortByLine orders mistakes as they appear in the file.
func sortByLine(errs []error) {
	slices.SortStableFunc(errs, func(a, b error) int {
		var ea, eb *ConfigError
		errors.As(a, &ea)
		errors.As(b, &eb)
		if ea == nil || eb == nil {
			return 0
		}
		return ea.Line - eb.Line
	})
}

// errAt returns a ConfigError for key, at its line when the file has it.
// An absent key is reported at the line of its table.
func (c *Config) errAt(key, format string, args ...any) error {
	return &ConfigError{File: c.Source, Line: c.keys.Line(key), Key: key, Msg: fmt.Sprintf(format, args...)}
}

// checkLogDir reports a log_file whose directory is missing or is not a
// directory: the start would fail opening it.
func (c *Config) checkLogDir() error {
	dir := filepath.Dir(c.LogFile)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c.errAt("log_file", "directory %s does not exist: create it, writable by the user newsfeed runs as (the packaged unit's LogsDirectory=newsflow makes /var/log/newsflow when it starts)", dir)
	case err != nil:
		return c.errAt("log_file", "%v", err)
	case !fi.IsDir():
		return c.errAt("log_file", "%s is not a directory", dir)
	}
	return nil
}

// CheckSpoolDir reports what the start would refuse about spool on this
// host (newsfeed config -check): a spool that is not a directory, or one
// whose parent directory does not exist (the start creates only the last
// component). The embedded default picks and makes its own place.
func (c *Config) CheckSpoolDir() error {
	if c.Spool == "" || c.Source == EmbeddedSource {
		return nil
	}
	fi, err := os.Stat(c.Spool)
	if err == nil {
		if !fi.IsDir() {
			return c.errAt("spool", "%s is not a directory", c.Spool)
		}
		return nil
	}
	parent := filepath.Dir(filepath.Clean(c.Spool))
	if pfi, err := os.Stat(parent); err != nil || !pfi.IsDir() {
		return c.errAt("spool", "its parent directory %s does not exist: create it (the start creates only the spool's last component), or correct spool", parent)
	}
	return nil
}

// OpenLogFile opens log_file; an error names the key's FILE:LINE.
func (c *Config) OpenLogFile() (*LogFile, error) {
	lf, err := OpenLogFile(c.LogFile)
	if err != nil {
		return nil, c.errAt("log_file", "%v: check that its directory exists and is writable by the user newsfeed runs as", errors.Unwrap(err))
	}
	return lf, nil
}

// Has reports whether the configuration text set key ("peer[1].port").
func (c *Config) Has(key string) bool { return c.keys.Has(key) }

// StateDir is where the embedded default keeps its spool:
// $XDG_STATE_HOME/newsflow, or ~/.local/state/newsflow.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "newsflow"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("config: no state directory: %w (set spool in a config file)", err)
	}
	return filepath.Join(home, ".local", "state", "newsflow"), nil
}

// DefaultAllow is the ingest listener's allow list when the file sets none:
// loopback only.
var DefaultAllow = []string{"127.0.0.0/8", "::1"}

// Defaults of the relay (PeerConfig.applyDefaults holds the peers').
const (
	DefaultListen         = "127.0.0.1:1119"
	DefaultStatsInterval  = 60 * time.Second
	DefaultMaxArticleSize = 16 << 20
	DefaultHistory        = 10 * 24 * time.Hour
	DefaultSpoolMaxAge    = 7 * 24 * time.Hour
	DefaultWindow         = 100
	DefaultConnections    = 2

	DefaultMaxConnections   = 1000
	DefaultMaxBufferedBytes = 256 << 20
	DefaultTransferTimeout  = 2 * time.Minute
	DefaultArticleTimeout   = 10 * time.Minute
	DefaultMinTransferRate  = 1 << 10
	DefaultWriteTimeout     = 2 * time.Minute
)

// applyDefaults fills in every key the text leaves out. It returns the
// mistake of a missing spool after filling in the rest.
func (c *Config) applyDefaults() (spoolErr error) {
	if c.Listen == "" && !c.Has("listen") {
		c.Listen = DefaultListen
	}
	if !c.Has("allow") {
		c.Allow = slices.Clone(DefaultAllow)
	}
	if c.Spool == "" && !c.Has("spool") {
		// Only the embedded default picks a place; a file names its
		// spool, so that a mistyped or forgotten key never starts a relay
		// on an empty spool elsewhere.
		if c.Source != EmbeddedSource {
			spoolErr = &ConfigError{File: c.Source, Line: 1, Key: "spool",
				Msg: `missing: set spool to the spool directory (e.g. spool = "/var/spool/newsflow"; its parent must exist)`}
		} else if d, err := StateDir(); err != nil {
			spoolErr = err
		} else {
			c.Spool = d
		}
	}
	if c.PathHost == "" && !c.Has("pathhost") {
		c.PathHost = defaultPathHost()
	}
	if c.Runtime == "" && !c.Has("runtime") {
		c.Runtime = "goroutine"
	}
	if !c.Has("stats_interval") {
		c.StatsInterval = tomlconf.Duration(DefaultStatsInterval)
	}
	if !c.Has("max_article_size") {
		c.MaxArticleSize = DefaultMaxArticleSize
	}
	if !c.Has("history_retention") {
		c.HistoryRetention = tomlconf.Duration(DefaultHistory)
	}
	if !c.Has("spool_max_age") {
		c.SpoolMaxAge = tomlconf.Duration(DefaultSpoolMaxAge)
	}
	if !c.Has("commit_delay") {
		c.CommitDelay = 0
	}
	if !c.Has("max_connections") {
		c.MaxConnections = DefaultMaxConnections
	}
	if !c.Has("max_buffered_bytes") {
		c.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if !c.Has("transfer_timeout") {
		c.TransferTimeout = tomlconf.Duration(DefaultTransferTimeout)
	}
	if !c.Has("article_timeout") {
		c.ArticleTimeout = tomlconf.Duration(DefaultArticleTimeout)
	}
	if !c.Has("min_transfer_rate") {
		c.MinTransferRate = DefaultMinTransferRate
	}
	if !c.Has("write_timeout") {
		c.WriteTimeout = tomlconf.Duration(DefaultWriteTimeout)
	}
	c.articleLogDefaults()
	for i := range c.Peers {
		c.Peers[i].applyDefaults(c, "peer["+strconv.Itoa(i+1)+"].")
	}
	if c.Cluster != nil {
		c.Cluster.applyDefaults(c)
	}
	return spoolErr
}

// defaultPathHost is the host name when it is a valid path identity.
func defaultPathHost() string {
	h, err := os.Hostname()
	if err == nil {
		h = strings.ToLower(h)
		if validPathIdentity(h) {
			return h
		}
	}
	return "newsflow.invalid"
}

func (p *PeerConfig) applyDefaults(c *Config, pre string) {
	has := func(k string) bool { return c.Has(pre + k) }
	if !has("port") {
		p.Port = 119
		if p.TLS {
			p.Port = 563
		}
	}
	if !has("connections") {
		p.Connections = DefaultConnections
	}
	if !has("groups") {
		p.Groups = []string{"*"}
	}
	if !has("pathname") {
		p.PathName = p.Name
	}
	if p.TLSVerify == nil {
		t := true
		p.TLSVerify = &t
	}
	if !has("streaming") {
		p.Streaming = "auto"
	}
	if !has("window") {
		p.Window = DefaultWindow
	}
	if !has("queue_size") {
		p.QueueSize = 4096
	}
	if !has("defer_delay") {
		p.DeferDelay = tomlconf.Duration(time.Minute)
	}
	if !has("defer_max_delay") {
		p.DeferMaxDelay = tomlconf.Duration(time.Hour)
	}
	if !has("max_defers") {
		p.MaxDefers = 10
	}
	if !has("connect_timeout") {
		p.ConnectTimeout = tomlconf.Duration(30 * time.Second)
	}
	if !has("response_timeout") {
		p.ResponseTimeout = tomlconf.Duration(5 * time.Minute)
	}
	if !has("reconnect_max") {
		p.ReconnectMax = tomlconf.Duration(5 * time.Minute)
	}
	if !has("no_check") {
		p.NoCheck = true
	}
	if !has("no_check_high") {
		p.NoCheckHigh = 95
	}
	if !has("no_check_low") {
		p.NoCheckLow = 90
	}
	if !has("no_check_filter") {
		p.NoCheckFilter = 50
	}
	if !has("max_connections") {
		p.MaxConnections = p.Connections
	}
	if !has("extra_idle") {
		p.ExtraIdle = tomlconf.Duration(time.Minute)
	}
}

// check verifies every value, reporting the first mistake per key (all of
// them, joined).
func (c *Config) check() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.Listen != "" {
		add(c.checkHostPort("listen", c.Listen))
	} else {
		add(c.errAt("listen", "must not be empty"))
	}
	if c.Admin != "" {
		add(c.checkHostPort("admin", c.Admin))
	}
	errs = append(errs, c.checkAllow()...)
	add(c.checkArticleLog())
	if c.LogFile != "" && !filepath.IsAbs(c.LogFile) {
		add(c.errAt("log_file", "%q: give an absolute path (e.g. \"/var/log/newsflow/newsfeed.log\")", c.LogFile))
	} else if c.LogFile != "" {
		add(c.checkLogDir())
	}
	if c.Spool == "" {
		add(c.errAt("spool", "must not be empty"))
	}
	if !validPathIdentity(c.PathHost) {
		add(c.errAt("pathhost", "%q is not a valid path identity (RFC 5536 §3.1.5: letters, digits, '.', '-', '_')", c.PathHost))
	}
	switch c.Runtime {
	case "goroutine":
	case "epoll":
		if !epollAvailable {
			add(c.errAt("runtime", `"epoll" needs Linux; use "goroutine"`))
		}
	default:
		add(c.errAt("runtime", `%q is not a runtime; want "goroutine" or "epoll"`, c.Runtime))
	}
	if c.StatsInterval.D() < time.Second {
		add(c.errAt("stats_interval", "must be at least 1s (got %s)", c.StatsInterval.D()))
	}
	if c.MaxArticleSize < 1024 || c.MaxArticleSize > 1<<30 {
		add(c.errAt("max_article_size", "must be between 1K and 1G (got %d)", c.MaxArticleSize))
	}
	if c.HistorySize < 0 || c.HistorySize > 1<<30 {
		add(c.errAt("history_size", "must be between 0 and %d message-ids (got %d)", 1<<30, c.HistorySize))
	}
	if c.HistoryRetention != 0 && c.SpoolMaxAge != 0 && c.HistoryRetention < c.SpoolMaxAge {
		add(c.errAt("history_retention", "must be at least spool_max_age (%s), or expired articles could be stored again", c.SpoolMaxAge.D()))
	}
	if c.CommitDelay.D() > time.Second {
		add(c.errAt("commit_delay", "must be at most 1s (got %s)", c.CommitDelay.D()))
	}
	if c.MaxConnections < 1 {
		add(c.errAt("max_connections", "must be at least 1 (got %d)", c.MaxConnections))
	}
	if c.MaxConnectionsPerHost < 0 {
		add(c.errAt("max_connections_per_host", "must be 0 (no limit) or more (got %d)", c.MaxConnectionsPerHost))
	}
	if c.MaxBufferedBytes < c.MaxArticleSize {
		add(c.errAt("max_buffered_bytes", "must be at least max_article_size (%d), or the largest article could never be taken (got %d)", c.MaxArticleSize, c.MaxBufferedBytes))
	}
	for _, d := range []struct {
		key string
		v   tomlconf.Duration
	}{{"transfer_timeout", c.TransferTimeout}, {"article_timeout", c.ArticleTimeout}, {"write_timeout", c.WriteTimeout}} {
		if d.v.D() < time.Second {
			add(c.errAt(d.key, "must be at least 1s (got %s)", d.v.D()))
		}
	}
	if c.MinTransferRate < 1 {
		add(c.errAt("min_transfer_rate", "must be at least 1 octet per second (got %d)", c.MinTransferRate))
	}
	errs = append(errs, c.checkIncoming()...)
	seen := map[string]int{}
	for i := range c.Peers {
		pre := "peer[" + strconv.Itoa(i+1) + "]."
		p := &c.Peers[i]
		if j, dup := seen[p.Name]; dup && p.Name != "" {
			add(c.errAt(pre+"name", "duplicate peer name %q (also peer[%d])", p.Name, j))
		}
		seen[p.Name] = i + 1
		errs = append(errs, p.check(c, pre)...)
	}
	if c.Cluster != nil {
		errs = append(errs, c.Cluster.check(c)...)
	}
	sortByLine(errs)
	return errors.Join(errs...)
}

func (c *Config) checkHostPort(key, v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return c.errAt(key, "%q is not host:port", v)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return c.errAt(key, "bad port %q", port)
	}
	_ = host
	return nil
}

// checkAllow parses Allow into c.allowed. An entry's mistake is reported
// as allow[N] (numbered from 1, like peer[N]) at the line of allow.
func (c *Config) checkAllow() []error {
	var errs []error
	c.allowed = c.allowed[:0]
	for i, v := range c.Allow {
		p, err := parseAllow(v)
		if err != nil {
			errs = append(errs, &ConfigError{File: c.Source, Line: c.keys.Line("allow"),
				Key: "allow[" + strconv.Itoa(i+1) + "]", Msg: err.Error()})
			continue
		}
		c.allowed = append(c.allowed, p)
	}
	return errs
}

// parseAllow reads one allow entry: an IPv4 or IPv6 address (a host
// prefix) or a CIDR prefix, whose host bits must be zero.
func parseAllow(v string) (netip.Prefix, error) {
	s := strings.TrimSpace(v)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an address or prefix (want e.g. \"192.0.2.7\", \"127.0.0.0/8\", \"::1\")", v)
		}
		if p.Addr().Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q: zones are not allowed", v)
		}
		if p != p.Masked() {
			return netip.Prefix{}, fmt.Errorf("%q has host bits set (did you mean %q?)", v, p.Masked().String())
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or prefix (want e.g. \"192.0.2.7\", \"127.0.0.0/8\", \"::1\")", v)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Allowed reports whether the ingest listener takes a connection from
// addr. An IPv4-mapped IPv6 address (::ffff:192.0.2.7) counts as its IPv4
// address.
func (c *Config) Allowed(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	for _, p := range c.allowed {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func (p *PeerConfig) check(c *Config, pre string) []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, c.errAt(pre+key, format, args...))
	}
	if p.Name == "" {
		errs = append(errs, c.errAt(strings.TrimSuffix(pre, "."), "peer without a name"))
	} else if !validPeerName(p.Name) {
		bad("name", "%q: use letters, digits, '.', '-', '_' (it names backlog files)", p.Name)
	}
	if p.Host == "" {
		bad("host", "missing: every peer needs a host")
	}
	if p.Port < 1 || p.Port > 65535 {
		bad("port", "must be 1..65535 (got %d)", p.Port)
	}
	if p.Connections < 1 || p.Connections > 64 {
		bad("connections", "must be 1..64 (got %d)", p.Connections)
	}
	if _, err := proto.ParseGroupPatterns(p.Groups); err != nil {
		bad("groups", "%v", err)
	}
	for name := range pathNames(p.PathName) {
		if !validPathIdentity(name) && c.Has(pre+"pathname") {
			bad("pathname", "%q is not a valid path identity (pathname is \"site\" or \"site/exclusion1,exclusion2\")", name)
		}
	}
	p.Hashes = nil
	if p.HashFeed != "" {
		hf, err := parseHashFeed(p.HashFeed)
		if err != nil {
			bad("hashfeed", "%v", err)
		}
		p.Hashes = hf
	}
	if p.MaxSize < 0 {
		bad("max_size", "must not be negative")
	}
	if p.MaxAge > 0 && c.Cluster != nil {
		bad("max_age", "is not available in cluster mode; remove it or run without [cluster]")
	}
	if p.TLS && p.StartTLS {
		bad("starttls", "choose one of tls (TLS from the start) and starttls")
	}
	if p.CAFile != "" {
		if _, err := os.Stat(p.CAFile); err != nil {
			bad("ca_file", "%v", err)
		}
	}
	if (p.Username == "") != (p.Password == "") {
		bad("username", "username and password go together")
	}
	if strings.ContainsAny(p.Username, " \t\r\n") {
		bad("username", "must not contain spaces (RFC 4643 §2.3.2)")
	}
	switch p.Streaming {
	case "auto", "on", "off":
	default:
		bad("streaming", `%q: want "auto", "on" or "off"`, p.Streaming)
	}
	if p.Window < 1 || p.Window > 10000 {
		bad("window", "must be 1..10000 (got %d)", p.Window)
	}
	if p.QueueSize < 16 || p.QueueSize > 1<<20 {
		bad("queue_size", "must be 16..1048576 (got %d)", p.QueueSize)
	}
	if p.DeferDelay.D() <= 0 {
		bad("defer_delay", "must be positive")
	}
	if p.DeferMaxDelay < p.DeferDelay {
		bad("defer_max_delay", "must be at least defer_delay (%s)", p.DeferDelay.D())
	}
	if p.MaxDefers < 0 {
		bad("max_defers", "must not be negative")
	}
	if p.ConnectTimeout.D() <= 0 {
		bad("connect_timeout", "must be positive")
	}
	if p.ResponseTimeout.D() <= 0 {
		bad("response_timeout", "must be positive")
	}
	if p.ReconnectMax.D() < 100*time.Millisecond {
		bad("reconnect_max", "must be at least 100ms")
	}
	if p.BindAddress != "" {
		if _, err := netip.ParseAddr(p.BindAddress); err != nil {
			bad("bind_address", "%q is not an IP address (\"192.0.2.7\", \"2001:db8::7\")", p.BindAddress)
		}
	}
	if p.NoCheckHigh <= 0 || p.NoCheckHigh > 100 {
		bad("no_check_high", "must be a percentage above 0, at most 100 (got %g)", p.NoCheckHigh)
	}
	if p.NoCheckLow <= 0 || p.NoCheckLow > p.NoCheckHigh {
		bad("no_check_low", "must be above 0, at most no_check_high (%g) (got %g)", p.NoCheckHigh, p.NoCheckLow)
	}
	if p.NoCheckFilter < 1 || p.NoCheckFilter > 100000 {
		bad("no_check_filter", "must be 1..100000 articles (got %g)", p.NoCheckFilter)
	}
	if p.MaxConnections < p.Connections || p.MaxConnections > 64 {
		bad("max_connections", "must be connections (%d)..64 (got %d)", p.Connections, p.MaxConnections)
	}
	if p.ExtraIdle.D() < time.Second {
		bad("extra_idle", "must be at least 1s")
	}
	return errs
}

// validPeerName: the name goes into file names (<peer>.B.<ts>).
func validPeerName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '-' || b == '_') {
			return false
		}
	}
	return true
}

// validPathIdentity follows RFC 5536 §3.1.5's path-identity: a host name
// made of letters, digits, '.', '-' and '_' (INN also takes '_').
func validPathIdentity(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '-' || b == '_') {
			return false
		}
	}
	return true
}
