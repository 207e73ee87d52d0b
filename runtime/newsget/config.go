package newsget

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// Config is newsget's configuration: the servers and what to do with
// downloads. A TOML file holds it (ParseConfig); -server URLs add servers
// (ParseServerURL).
//
//	download_dir    = "."        where files go
//	queue_dir       = ""         job queue and quota state; download_dir/.newsget when empty
//	rate            = "20M"      bytes per second over all connections; 0 = unlimited
//	daily_quota     = "50G"      bytes per day; 0 = unlimited
//	monthly_quota   = "1T"       bytes per monthly period; 0 = unlimited
//	quota_day       = 1          the day of the month a period starts
//	article_retries = 3          connection-error retries on one server
//	article_timeout = "60s"      silence allowed while an answer is due
//	connect_timeout = "30s"      TCP connect and each handshake step
//	idle_timeout    = "30s"      an idle connection is closed after this
//	unpack          = true       unpack RAR/7z/zip archives after a complete download
//	cleanup         = true       then remove the archives and PAR2 files
//	unpack_max_ratio = 20        an archive may unpack to this many times its volumes (at least 64 MiB)
//	direct_unpack   = true       newsget serve: extract a RAR set while its later volumes download
//	direct_unpack_max = 2        direct unpacks at once
//
//	[[server]]
//	name = "primary"  host = "news.example"  port = 563  encryption = "tls"
//	username = "u"  password = "p"  connections = 8  pipeline = 2
//	level = 0  group = 0  optional = false  retention = 3000  join_group = false
//	cert_verification = true  ca_file = ""  ip_version = "auto"  active = true
type Config struct {
	Source         string            `toml:"-"` // the file it came from, for messages
	DownloadDir    string            `toml:"download_dir"`
	QueueDir       string            `toml:"queue_dir"`
	Rate           tomlconf.Size     `toml:"rate"`
	DailyQuota     tomlconf.Size     `toml:"daily_quota"`
	MonthlyQuota   tomlconf.Size     `toml:"monthly_quota"`
	QuotaDay       int               `toml:"quota_day"`
	ArticleRetries int               `toml:"article_retries"`
	ArticleTimeout tomlconf.Duration `toml:"article_timeout"`
	ConnectTimeout tomlconf.Duration `toml:"connect_timeout"`
	IdleTimeout    tomlconf.Duration `toml:"idle_timeout"`
	Unpack         *bool             `toml:"unpack"`  // true when absent
	Cleanup        *bool             `toml:"cleanup"` // true when absent
	UnpackMaxRatio int               `toml:"unpack_max_ratio"`
	DirectUnpack   *bool             `toml:"direct_unpack"` // true when absent
	DirectMax      int               `toml:"direct_unpack_max"`
	Servers        []ServerConfig    `toml:"server"`
	Serve          ServeConfig       `toml:"serve"`    // newsget serve (serve_config.go)
	Categories     []Category        `toml:"category"` // newsget serve's categories

	keys tomlconf.Keys // "server[1].port" -> line
}

// ServerConfig is one [[server]]: a news server and how to use it.
type ServerConfig struct {
	Name             string    `toml:"name"`
	Host             string    `toml:"host"`
	Port             int       `toml:"port"` // 119, or 563 with encryption = "tls", when 0
	Username         string    `toml:"username"`
	Password         string    `toml:"password"`
	Encryption       string    `toml:"encryption"`        // "none" (default), "tls" or "starttls"
	CertVerification *bool     `toml:"cert_verification"` // true when absent
	CAFile           string    `toml:"ca_file"`           // PEM certificates to trust besides the system's
	Connections      int       `toml:"connections"`       // 4 when 0
	Pipeline         int       `toml:"pipeline"`          // BODY requests in flight per connection; 2 when 0
	Level            int       `toml:"level"`
	Group            int       `toml:"group"`
	Optional         bool      `toml:"optional"`
	Retention        int       `toml:"retention"` // days; 0 = unlimited
	JoinGroup        bool      `toml:"join_group"`
	IPVersion        IPVersion `toml:"ip_version"`
	Active           *bool     `toml:"active"` // true when absent
}

// Defaults of the configuration.
const (
	DefaultConnections    = 4
	DefaultArticleTimeout = 60 * time.Second
	DefaultConnectTimeout = 30 * time.Second
	DefaultIdleTimeout    = 30 * time.Second
	DefaultUnpackMaxRatio = 20 // unpack.DefaultMaxRatio
	DefaultDirectMax      = 2
)

// Encryption values.
const (
	EncryptNone     = "none"
	EncryptTLS      = "tls"
	EncryptStartTLS = "starttls"
)

// Verify reports whether the server's certificate is checked.
func (s ServerConfig) Verify() bool { return s.CertVerification == nil || *s.CertVerification }

// IsActive reports whether the server is used.
func (s ServerConfig) IsActive() bool { return s.Active == nil || *s.Active }

// Addr is host:port.
func (s ServerConfig) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Label names the server in messages: its name, or host:port.
func (s ServerConfig) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Addr()
}

// IPVersion says which address family to dial: "auto", "ipv4" or "ipv6".
type IPVersion string

// UnmarshalText accepts auto, ipv4/4, ipv6/6.
func (v *IPVersion) UnmarshalText(b []byte) error {
	switch strings.ToLower(string(b)) {
	case "", "auto", "any":
		*v = "auto"
	case "4", "ipv4", "v4":
		*v = "ipv4"
	case "6", "ipv6", "v6":
		*v = "ipv6"
	default:
		return fmt.Errorf("ip_version %q: want auto, ipv4 or ipv6", string(b))
	}
	return nil
}

// Network is the net.Dial network for the version.
func (v IPVersion) Network() string {
	switch v {
	case "ipv4":
		return "tcp4"
	case "ipv6":
		return "tcp6"
	}
	return "tcp"
}

// ConfigError is a configuration mistake, located in its file
// (FILE:LINE: KEY: MESSAGE).
type ConfigError = tomlconf.Error

// LoadConfig reads and checks a configuration file.
func LoadConfig(file string) (*Config, error) {
	return tomlconf.Load(file, ParseConfig)
}

// ParseConfig parses TOML text and checks every value. Errors are
// *ConfigError values naming the file, line and key, one for every
// mistake of the text (joined, in the order of their lines): a value of
// the wrong type is reported and left out, and the rest is still decoded
// and checked. Only a syntax error stops at the first.
func ParseConfig(name string, text []byte) (*Config, error) {
	c, err := parseChecked(name, text, false)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// parseChecked decodes text with tomlconf.DecodeAll and checks the values
// (and [serve] with serve), joining every mistake; a key whose value was
// refused by decoding is not reported again by the checks.
func parseChecked(name string, text []byte, serve bool) (*Config, error) {
	c := &Config{}
	keys, err := tomlconf.DecodeAll(name, text, c)
	c.Source = name
	if keys == nil {
		return c, err
	}
	c.keys = keys
	var errs []error
	reported := map[string]bool{}
	for _, e := range tomlconf.Errors(err) {
		errs = append(errs, e)
		reported[e.Key] = true
	}
	checks := []func() error{c.Check}
	if serve {
		checks = append(checks, c.CheckServe)
	}
	for _, check := range checks {
		for _, e := range tomlconf.Errors(check()) {
			if !reported[e.Key] {
				errs = append(errs, e)
			}
		}
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		return a.(*ConfigError).Line - b.(*ConfigError).Line
	})
	return c, errors.Join(errs...)
}

// Line is the line of the file that sets key ("serve.listen"); 0 when
// the file does not.
func (c *Config) Line(key string) int { return c.keys[key] }

// errAt returns a ConfigError for key, at its line (or its table's).
func (c *Config) errAt(key, format string, args ...any) error {
	line := c.keys.Line(key)
	src := c.Source
	if src == "" {
		src = "(command line)"
	}
	return &ConfigError{File: src, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Check applies defaults and checks every value; servers added after
// parsing (from URLs) are checked too.
func (c *Config) Check() error {
	var errs []error
	// A value the file sets is checked as it is; only an absent key takes
	// the default (0 is no stand-in for it).
	set := c.keys.Has
	if c.QuotaDay < 0 || c.QuotaDay > 31 || (c.QuotaDay == 0 && set("quota_day")) {
		errs = append(errs, c.errAt("quota_day", "%d is not a day of the month (1-31)", c.QuotaDay))
	}
	if c.ArticleRetries < 0 || c.ArticleRetries > 100 {
		errs = append(errs, c.errAt("article_retries", "%d not in 0..100", c.ArticleRetries))
	}
	if c.UnpackMaxRatio == 0 && !set("unpack_max_ratio") {
		c.UnpackMaxRatio = DefaultUnpackMaxRatio
	}
	if c.UnpackMaxRatio < 1 {
		errs = append(errs, c.errAt("unpack_max_ratio", "%d: want at least 1", c.UnpackMaxRatio))
	}
	if c.DirectMax == 0 && !set("direct_unpack_max") {
		c.DirectMax = DefaultDirectMax
	}
	if c.DirectMax < 1 || c.DirectMax > 64 {
		errs = append(errs, c.errAt("direct_unpack_max", "%d: want 1 to 64 (direct_unpack = false turns direct unpack off)", c.DirectMax))
	}
	for _, q := range []struct {
		key string
		v   tomlconf.Size
	}{{"rate", c.Rate}, {"daily_quota", c.DailyQuota}, {"monthly_quota", c.MonthlyQuota}} {
		if q.v < 0 {
			errs = append(errs, c.errAt(q.key, "negative; 0 means unlimited"))
		}
	}
	for _, d := range []struct {
		key string
		v   tomlconf.Duration
	}{{"article_timeout", c.ArticleTimeout}, {"connect_timeout", c.ConnectTimeout}, {"idle_timeout", c.IdleTimeout}} {
		if d.v < 0 || (d.v == 0 && set(d.key)) {
			errs = append(errs, c.errAt(d.key, "%v: want a positive duration (\"30s\"), or leave the key out for the default", time.Duration(d.v)))
		}
	}
	names := map[string]bool{}
	for i := range c.Servers {
		s := &c.Servers[i]
		key := func(k string) string { return "server[" + strconv.Itoa(i+1) + "]." + k }
		if s.Encryption == "" {
			s.Encryption = EncryptNone
		}
		s.Encryption = strings.ToLower(s.Encryption)
		portSet := s.Port != 0 || set(key("port"))
		switch s.Encryption {
		case EncryptNone, EncryptStartTLS:
			if !portSet {
				s.Port = 119
			}
		case EncryptTLS:
			if !portSet {
				s.Port = 563
			}
		default:
			errs = append(errs, c.errAt(key("encryption"), "%q: want none, tls or starttls", s.Encryption))
		}
		if err := s.IPVersion.UnmarshalText([]byte(s.IPVersion)); err != nil {
			errs = append(errs, c.errAt(key("ip_version"), "%v", err))
		}
		if s.Connections == 0 && !set(key("connections")) {
			s.Connections = DefaultConnections
		}
		if s.Name == "" {
			s.Name = fmt.Sprintf("server%d", i+1)
		}
		switch {
		case s.Host == "":
			errs = append(errs, c.errAt(key("host"), "missing"))
		case strings.ContainsAny(s.Host, " /\t"):
			errs = append(errs, c.errAt(key("host"), "%q is not a host name or address", s.Host))
		}
		if (s.Port < 1 || s.Port > 65535) && (portSet || s.Encryption == EncryptNone || s.Encryption == EncryptTLS || s.Encryption == EncryptStartTLS) {
			errs = append(errs, c.errAt(key("port"), "%d not in 1..65535", s.Port))
		}
		if s.Connections < 1 || s.Connections > 500 {
			errs = append(errs, c.errAt(key("connections"), "%d not in 1..500", s.Connections))
		}
		if s.Pipeline < 0 || s.Pipeline > 100 || (s.Pipeline == 0 && set(key("pipeline"))) {
			errs = append(errs, c.errAt(key("pipeline"), "%d not in 1..100", s.Pipeline))
		}
		if s.Level < 0 || s.Level > 99 {
			errs = append(errs, c.errAt(key("level"), "%d not in 0..99", s.Level))
		}
		if s.Group < 0 {
			errs = append(errs, c.errAt(key("group"), "negative"))
		}
		if s.Retention < 0 {
			errs = append(errs, c.errAt(key("retention"), "negative"))
		}
		if strings.ContainsAny(s.Username, " \r\n\x00") || strings.ContainsAny(s.Password, "\r\n\x00") {
			errs = append(errs, c.errAt(key("username"), "user names have no spaces or line breaks; passwords no line breaks"))
		}
		if s.Password != "" && s.Username == "" {
			errs = append(errs, c.errAt(key("username"), "a password without a user name"))
		}
		if names[s.Name] {
			errs = append(errs, c.errAt(key("name"), "%q used twice", s.Name))
		}
		names[s.Name] = true
	}
	if len(c.Servers) > MaxServersConfigured {
		errs = append(errs, c.errAt("server", "%d servers; at most %d", len(c.Servers), MaxServersConfigured))
	}
	return errors.Join(errs...)
}

// MaxServersConfigured is how many servers newsget handles.
const MaxServersConfigured = 64

// ResolveDirs fills DownloadDir (".") and QueueDir (DownloadDir/.newsget)
// and makes them absolute.
func (c *Config) ResolveDirs() error {
	if c.DownloadDir == "" {
		c.DownloadDir = "."
	}
	d, err := filepath.Abs(c.DownloadDir)
	if err != nil {
		return fmt.Errorf("config: download_dir: %w", err)
	}
	c.DownloadDir = d
	if c.QueueDir == "" {
		c.QueueDir = filepath.Join(d, ".newsget")
	}
	q, err := filepath.Abs(c.QueueDir)
	if err != nil {
		return fmt.Errorf("config: queue_dir: %w", err)
	}
	c.QueueDir = q
	return nil
}

// ParseServerURL reads a -server URL:
//
//	nntp://[user:pass@]host[:port][?connections=N&level=N&group=N&optional=1
//	        &retention=DAYS&join_group=1&pipeline=N&starttls=1&verify=0&ca=FILE&ip=4|6&name=N]
//	nntps://... (TLS from the first byte, port 563 by default)
func ParseServerURL(raw string) (ServerConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return ServerConfig{}, fmt.Errorf("server URL: %w", err)
	}
	var s ServerConfig
	switch u.Scheme {
	case "nntp", "news":
		s.Encryption = EncryptNone
	case "nntps", "snews":
		s.Encryption = EncryptTLS
	default:
		return ServerConfig{}, fmt.Errorf("server URL %q: scheme %q, want nntp:// or nntps://", redact(u), u.Scheme)
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return ServerConfig{}, fmt.Errorf("server URL %q: no host", redact(u))
	}
	if (u.Path != "" && u.Path != "/") || u.Fragment != "" {
		return ServerConfig{}, fmt.Errorf("server URL %q: a path or fragment means nothing here", redact(u))
	}
	s.Host = u.Hostname()
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return ServerConfig{}, fmt.Errorf("server URL %q: port %q", redact(u), p)
		}
		s.Port = n
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		num := func() (int, error) {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("server URL %q: %s=%q is not a number", redact(u), k, v)
			}
			return n, nil
		}
		flag := func() (bool, error) {
			switch strings.ToLower(v) {
			case "1", "true", "yes", "on":
				return true, nil
			case "0", "false", "no", "off":
				return false, nil
			}
			return false, fmt.Errorf("server URL %q: %s=%q is not 0 or 1", redact(u), k, v)
		}
		var err error
		switch k {
		case "connections":
			if s.Connections, err = num(); err == nil && s.Connections < 1 {
				err = fmt.Errorf("server URL %q: connections=%d: want 1 to 500, or leave it out for %d", redact(u), s.Connections, DefaultConnections)
			}
		case "pipeline":
			if s.Pipeline, err = num(); err == nil && s.Pipeline < 1 {
				err = fmt.Errorf("server URL %q: pipeline=%d: want 1 to 100, or leave it out for 2", redact(u), s.Pipeline)
			}
		case "level":
			s.Level, err = num()
		case "group":
			s.Group, err = num()
		case "retention":
			s.Retention, err = num()
		case "optional":
			s.Optional, err = flag()
		case "join_group":
			s.JoinGroup, err = flag()
		case "starttls":
			var on bool
			if on, err = flag(); on {
				if s.Encryption == EncryptTLS {
					err = fmt.Errorf("server URL %q: starttls=1 with nntps://", redact(u))
				}
				s.Encryption = EncryptStartTLS
			}
		case "verify":
			var on bool
			on, err = flag()
			s.CertVerification = &on
		case "ca":
			s.CAFile = v
		case "ip":
			err = s.IPVersion.UnmarshalText([]byte(v))
		case "name":
			s.Name = v
		default:
			err = fmt.Errorf("server URL %q: unknown parameter %q", redact(u), k)
		}
		if err != nil {
			return ServerConfig{}, err
		}
	}
	return s, nil
}

// redact hides a URL's password.
func redact(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	c := *u
	if _, ok := u.User.Password(); ok {
		c.User = url.UserPassword(u.User.Username(), "xxx")
	}
	return c.String()
}
