package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/newsweb"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// config is the TOML configuration file. Every key is optional;
// withDefaults fills in what the file leaves out, and `newsweb config`
// prints the result.
type config struct {
	Listen         string            `toml:"listen"`          // HTTP address
	Admin          string            `toml:"admin"`           // admin HTTP address (/metrics); none when empty
	Site           string            `toml:"site"`            // name shown in page titles
	LogLevel       string            `toml:"log_level"`       // debug, info, warn, error
	RequestTimeout tomlconf.Duration `toml:"request_timeout"` // per page and per NNTP request
	ServerTimeout  tomlconf.Duration `toml:"server_timeout"`  // a silent server's hold on a request
	ThreadLimit    int               `toml:"thread_limit"`    // newest articles a thread list covers
	PerPage        int               `toml:"per_page"`        // threads per group page
	Search         *bool             `toml:"search"`          // search on; true when unset
	SearchDir      string            `toml:"search_dir"`      // search index directory; under the state directory when empty
	SearchBytes    size              `toml:"search_bytes"`    // bound on the search index
	SearchBodies   string            `toml:"search_bodies"`   // wildmats of the groups whose bodies are indexed; none when empty
	ProxyHeaders   bool              `toml:"proxy_headers"`   // trust X-Forwarded-For for the client's address
	HiddenGroups   *string           `toml:"hidden_groups"`   // wildmats of the groups left out of the group list

	Servers []serverEntry  `toml:"server,omitempty"`
	Cache   cacheSection   `toml:"cache"`
	Queue   queueSection   `toml:"queue"`
	Posting postingSection `toml:"posting"`
	Cluster clusterSection `toml:"cluster"`

	source string        // the file's name, for errors
	keys   tomlconf.Keys // "server[1].url" -> line
}

// size is a tomlconf.Size that prints in its unit form ("256M").
type size tomlconf.Size

// UnmarshalText parses a size in the configuration grammar.
func (s *size) UnmarshalText(b []byte) error { return (*tomlconf.Size)(s).UnmarshalText(b) }

// MarshalText prints the size as tomlconf.Size.String does.
func (s size) MarshalText() ([]byte, error) { return []byte(tomlconf.Size(s).String()), nil }

// serverEntry is one [[server]]: a URL, with the fields below overriding
// what it says.
type serverEntry struct {
	URL         string `toml:"url"` // nntp://host[:port] or nntps://...
	Name        string `toml:"name"`
	Priority    *int   `toml:"priority"`
	Connections int    `toml:"connections"`
	User        string `toml:"user"`
	Pass        string `toml:"pass"`
	CAFile      string `toml:"ca_file"` // PEM certificates to trust instead of the system's
	Inject      string `toml:"inject"`  // URL where newsweb offers its posts with IHAVE, injecting them itself; POST when empty
}

// cacheSection is [cache]: the TTL of each cache and the article cache's
// bound.
type cacheSection struct {
	Article         tomlconf.Duration `toml:"article"`
	ArticleNotFound tomlconf.Duration `toml:"article_not_found"`
	Threads         tomlconf.Duration `toml:"threads"`
	Thread          tomlconf.Duration `toml:"thread"`
	Groups          tomlconf.Duration `toml:"groups"`
	GroupStats      tomlconf.Duration `toml:"group_stats"`
	ArticleBytes    size              `toml:"article_bytes"` // size bound of the article cache
}

// clusterSection makes replicas share their caches through NATS JetStream.
type clusterSection struct {
	NATS []string `toml:"nats"` // NATS server URLs; no sharing when empty
}

// queueSection tunes each server's queues.
type queueSection struct {
	PriorityAging tomlconf.Duration `toml:"priority_aging"`
	Capacity      int               `toml:"capacity"` // per priority
}

// postingSection is [posting]: posting from the web (off unless enabled).
type postingSection struct {
	Enabled       bool              `toml:"enabled"`
	TrustedHeader string            `toml:"trusted_header"` // identity from a reverse proxy, e.g. X-Forwarded-User
	Users         string            `toml:"users"`          // htpasswd file of bcrypt hashes, with a login page
	FromDomain    string            `toml:"from_domain"`    // domain of From addresses and Message-IDs
	RateLimit     int               `toml:"rate_limit"`     // posts per rate_window per user
	RateWindow    tomlconf.Duration `toml:"rate_window"`
	KeyFile       string            `toml:"key_file"` // secret for sessions and CSRF (shared by replicas); random when unset
	SessionLife   tomlconf.Duration `toml:"session_lifetime"`
	VisitsFile    string            `toml:"visits_file"`   // logged-in readers' visits; under the state directory when empty
	LogoutsFile   string            `toml:"logouts_file"`  // sessions logged out and not expired; under the state directory when empty
	PathIdentity  string            `toml:"path_identity"` // newsweb's name in the Path and Injection-Info it writes; from_domain when empty
	ComplaintsTo  string            `toml:"complaints_to"` // Injection-Info's mail-complaints-to; none when empty
}

// Defaults of the keys with a fixed default.
const (
	defaultListen      = "127.0.0.1:8080"
	defaultLogLevel    = "info"
	defaultSearchBytes = newsweb.DefaultSearchBytes
)

// withDefaults fills in every key the file leaves out. A [[server]]'s
// name, priority and connections come from its URL when it says, else
// "server" and its position, its position, and newsweb's default.
func (c config) withDefaults() config {
	setStr := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	setInt := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setDur := func(p *tomlconf.Duration, v time.Duration) {
		if *p == 0 {
			*p = tomlconf.Duration(v)
		}
	}
	setStr(&c.Listen, defaultListen)
	setStr(&c.Site, newsweb.DefaultSite)
	setStr(&c.LogLevel, defaultLogLevel)
	setDur(&c.RequestTimeout, newsweb.DefaultRequestTimeout)
	setDur(&c.ServerTimeout, newsweb.DefaultServerTimeout)
	setInt(&c.ThreadLimit, mreader.DefaultThreadLimit)
	setInt(&c.PerPage, newsweb.DefaultPerPage)
	if c.Search == nil {
		on := true
		c.Search = &on
	}
	if *c.Search && c.SearchDir == "" {
		c.SearchDir = defaultSearchDir()
	}
	if c.Posting.Enabled && c.Posting.VisitsFile == "" {
		c.Posting.VisitsFile = defaultStateFile("visits")
	}
	if c.Posting.Enabled && c.Posting.LogoutsFile == "" {
		c.Posting.LogoutsFile = defaultStateFile("logouts")
	}
	setStr(&c.Posting.PathIdentity, c.Posting.FromDomain)
	if c.HiddenGroups == nil {
		h := newsweb.DefaultHiddenGroups
		c.HiddenGroups = &h
	}
	if c.SearchBytes == 0 {
		c.SearchBytes = defaultSearchBytes
	}
	cc := mreader.CacheConfig{Article: c.Cache.Article.D(), ArticleNotFound: c.Cache.ArticleNotFound.D(),
		Threads: c.Cache.Threads.D(), Thread: c.Cache.Thread.D(), Groups: c.Cache.Groups.D(), GroupStats: c.Cache.GroupStats.D()}.WithDefaults()
	c.Cache.Article, c.Cache.ArticleNotFound = tomlconf.Duration(cc.Article), tomlconf.Duration(cc.ArticleNotFound)
	c.Cache.Threads, c.Cache.Thread = tomlconf.Duration(cc.Threads), tomlconf.Duration(cc.Thread)
	c.Cache.Groups, c.Cache.GroupStats = tomlconf.Duration(cc.Groups), tomlconf.Duration(cc.GroupStats)
	if c.Cache.ArticleBytes == 0 {
		c.Cache.ArticleBytes = newsweb.DefaultArticleCacheBytes
	}
	setDur(&c.Queue.PriorityAging, mreader.DefaultPriorityAging)
	setInt(&c.Queue.Capacity, mreader.DefaultQueueCapacity)
	setInt(&c.Posting.RateLimit, newsweb.DefaultPostRate)
	setDur(&c.Posting.RateWindow, newsweb.DefaultPostWindow)
	setDur(&c.Posting.SessionLife, newsweb.DefaultSessionLife)
	if c.Cluster.NATS == nil {
		c.Cluster.NATS = []string{}
	}
	c.Servers = slices.Clone(c.Servers)
	for i := range c.Servers {
		e := &c.Servers[i]
		sc, err := newsweb.ParseServerURL(e.URL)
		if err != nil {
			continue // check reports it
		}
		setStr(&e.Name, sc.Name)
		setStr(&e.Name, fmt.Sprintf("server%d", i+1))
		if e.Priority == nil {
			p := sc.Priority
			e.Priority = &p
		}
		setInt(&e.Connections, sc.Connections)
		setInt(&e.Connections, newsweb.DefaultConnections)
	}
	return c
}

// defaultSearchDir is where the search index is kept when search_dir is
// not set: "search" in the state directory (defaultStateFile).
func defaultSearchDir() string { return defaultStateFile("search") }

// defaultStateFile is name in the state directory systemd gives the
// service ($STATE_DIRECTORY, StateDirectory= in the unit), else in
// $XDG_STATE_HOME/newsflow/newsweb (~/.local/state/newsflow/newsweb);
// "" when none of them is known.
func defaultStateFile(name string) string {
	if d, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); d != "" {
		return filepath.Join(d, name)
	}
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "newsflow", "newsweb", name)
}

// format prints c as TOML that parseConfig reads back to c.
func (c config) format() ([]byte, error) {
	head := "# newsweb configuration, every default filled in\n"
	if c.source != "" {
		head = "# newsweb configuration from " + c.source + ", every default filled in\n"
	}
	return tomlconf.AppendTOML([]byte(head), &c), nil
}

// posting returns the posting state, or nil when posting is off.
func (c config) posting() (*newsweb.Posting, error) {
	p := c.Posting
	if !p.Enabled {
		return nil, nil
	}
	o := newsweb.PostingOptions{TrustedHeader: p.TrustedHeader, Users: p.Users, FromDomain: p.FromDomain,
		RateLimit: p.RateLimit, RateWindow: time.Duration(p.RateWindow), SessionLife: time.Duration(p.SessionLife),
		ProxyHeaders: c.ProxyHeaders, PathIdentity: p.PathIdentity, ComplaintsTo: p.ComplaintsTo, LogoutsFile: p.LogoutsFile}
	if p.KeyFile != "" {
		key, err := readKey(p.KeyFile)
		if err != nil {
			return nil, c.errAt("posting.key_file", "%v", err)
		}
		o.Key = key
	}
	ps, err := newsweb.NewPosting(o)
	if err != nil {
		if p.Users != "" && newsweb.CheckUsersFile(p.Users) != nil {
			return nil, c.errAt("posting.users", "%v", usersFileError(p.Users, err))
		}
		if p.LogoutsFile != "" && newsweb.CheckLogoutsFile(p.LogoutsFile) != nil {
			return nil, c.errAt("posting.logouts_file", "%v", err)
		}
		return nil, c.errAt("posting", "%v", err)
	}
	return ps, nil
}

// configError is a configuration mistake, located in its file
// (FILE:LINE: KEY: MESSAGE).
type configError = tomlconf.Error

// parseConfig parses the text of the configuration file name and checks
// every value; unknown keys are errors so that a typo does not silently
// leave a default in place. Errors are *configError values (or several
// joined) naming the file, line and key: every mistake of the file, not
// only the first (a value of the wrong kind is reported, its line left
// out, and the rest decoded again). With errors, the configuration read
// so far comes back too, for checkFiles.
func parseConfig(name string, b []byte) (config, error) {
	var c config
	keys, err := tomlconf.DecodeAll(name, b, &c)
	c.source = name
	if keys == nil { // not TOML: nothing more can be read
		return c, err
	}
	c.keys = keys
	return c, errors.Join(err, c.check())
}

// check refuses the values no page could be served with.
func (c config) check() error {
	var errs []error
	// A count or size the file sets is checked as written: only a key
	// left out takes the default, so 0 is a mistake, not "the default".
	counts := []struct {
		key string
		n   int64
	}{
		{"thread_limit", int64(c.ThreadLimit)}, {"per_page", int64(c.PerPage)},
		{"queue.capacity", int64(c.Queue.Capacity)}, {"cache.article_bytes", int64(c.Cache.ArticleBytes)},
		{"posting.rate_limit", int64(c.Posting.RateLimit)}, {"search_bytes", int64(c.SearchBytes)},
	}
	for i, e := range c.Servers {
		counts = append(counts, struct {
			key string
			n   int64
		}{fmt.Sprintf("server[%d].connections", i+1), int64(e.Connections)})
	}
	for _, v := range counts {
		if v.n < 1 && (v.n < 0 || c.keys.Has(v.key)) {
			errs = append(errs, c.errAt(v.key, "must be at least 1 (got %d); leave the key out for the default", v.n))
		}
	}
	for _, v := range []struct {
		key string
		d   tomlconf.Duration
	}{
		{"request_timeout", c.RequestTimeout}, {"server_timeout", c.ServerTimeout},
		{"cache.article", c.Cache.Article}, {"cache.article_not_found", c.Cache.ArticleNotFound},
		{"cache.threads", c.Cache.Threads}, {"cache.thread", c.Cache.Thread},
		{"cache.groups", c.Cache.Groups}, {"cache.group_stats", c.Cache.GroupStats},
		{"queue.priority_aging", c.Queue.PriorityAging}, {"posting.rate_window", c.Posting.RateWindow},
		{"posting.session_lifetime", c.Posting.SessionLife},
	} {
		if v.d <= 0 && c.keys.Has(v.key) {
			errs = append(errs, c.errAt(v.key, "must be more than 0; leave the key out for the default"))
		}
	}
	for _, v := range []struct{ key, addr string }{{"listen", c.Listen}, {"admin", c.Admin}} {
		if v.addr != "" || (v.key == "listen" && c.keys.Has(v.key)) {
			if err := checkAddr(v.addr); err != nil {
				errs = append(errs, c.errAt(v.key, "%v", err))
			}
		}
	}
	if c.LogLevel != "" {
		var level slog.Level
		if level.UnmarshalText([]byte(c.LogLevel)) != nil {
			errs = append(errs, c.errAt("log_level", "%q: want debug, info, warn or error", c.LogLevel))
		}
	}
	if p := c.Posting; p.Enabled {
		if p.FromDomain == "" {
			errs = append(errs, c.errAt("posting.from_domain", "missing: posting needs the domain of From addresses, e.g. \"readers.example\""))
		}
		if p.TrustedHeader == "" && p.Users == "" {
			errs = append(errs, c.errAt("posting.enabled", "set trusted_header or users: posting needs to know who posts"))
		}
		if p.PathIdentity != "" {
			if err := newsweb.CheckPathIdentity(p.PathIdentity); err != nil {
				errs = append(errs, c.errAt("posting.path_identity", "%v", err))
			}
		}
		if p.ComplaintsTo != "" {
			if err := newsweb.CheckComplaintsTo(p.ComplaintsTo); err != nil {
				errs = append(errs, c.errAt("posting.complaints_to", "%v", err))
			}
		}
	}
	if h := c.HiddenGroups; h != nil && *h != "" {
		if _, err := proto.ParseGroupPatterns([]string{*h}); err != nil {
			errs = append(errs, c.errAt("hidden_groups", "%v", err))
		}
	}
	if c.SearchBodies != "" {
		if _, err := proto.ParseGroupPatterns([]string{c.SearchBodies}); err != nil {
			errs = append(errs, c.errAt("search_bodies", "%v", err))
		} else if c.Search != nil && !*c.Search {
			errs = append(errs, c.errAt("search_bodies", "needs search = true: bodies are indexed with the rest of the search index"))
		}
	}
	for i, e := range c.Servers {
		key := fmt.Sprintf("server[%d].url", i+1)
		if e.URL == "" {
			errs = append(errs, c.errAt(key, "missing: want \"nntp://host\" or \"nntps://host\""))
		} else if _, err := newsweb.ParseServerURL(e.URL); err != nil {
			errs = append(errs, c.errAt(key, "%v", err))
		}
		if e.Inject != "" {
			if _, err := newsweb.ParseServerURL(e.Inject); err != nil {
				errs = append(errs, c.errAt(fmt.Sprintf("server[%d].inject", i+1), "%v", err))
			}
		}
	}
	return errors.Join(errs...)
}

// checkAddr checks a listen address: HOST:PORT with a numeric port
// 0-65535 (0: any free port); the host may be empty (every address).
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
			err = fmt.Errorf("port %q is not a number 0-65535", port)
		}
	}
	if err != nil {
		return fmt.Errorf("%q: want HOST:PORT with a numeric port 0-65535, e.g. \"127.0.0.1:8080\" (%v)", addr, err)
	}
	return nil
}

// checkFiles reads the files the configuration names (each server's
// ca_file, the posting users and key files) and reports every one that
// cannot be used, at its key.
func (c config) checkFiles() error {
	var errs []error
	for i, e := range c.Servers {
		if e.CAFile != "" {
			if _, err := trustFile(e.CAFile); err != nil {
				errs = append(errs, c.errAt(fmt.Sprintf("server[%d].ca_file", i+1), "%v", err))
			}
		}
	}
	if p := c.Posting; p.Enabled {
		if p.Users != "" {
			if err := newsweb.CheckUsersFile(p.Users); err != nil {
				errs = append(errs, c.errAt("posting.users", "%v", usersFileError(p.Users, err)))
			}
		}
		if p.KeyFile != "" {
			if _, err := readKey(p.KeyFile); err != nil {
				errs = append(errs, c.errAt("posting.key_file", "%v", err))
			}
		}
	}
	return errors.Join(errs...)
}

// usersFileError says what is wrong with the users file at path once,
// as "users file PATH: ...", whatever prefix err carries; a missing file
// with how to make it.
func usersFileError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, fs.ErrNotExist) {
			return fmt.Errorf("users file %s: %w; make it with htpasswd -B -c %s NAME (Debian: apt-get install apache2-utils)", path, pe.Err, path)
		}
		return fmt.Errorf("users file %s: %w", path, pe.Err)
	}
	msg := strings.TrimPrefix(err.Error(), "newsweb: ")
	msg = strings.TrimPrefix(msg, "users file ")
	msg = strings.TrimPrefix(msg, path)
	msg = strings.TrimPrefix(msg, ": ")
	msg = strings.TrimPrefix(msg, " ")
	return fmt.Errorf("users file %s: %s", path, msg)
}

// readKey reads the secret of key_file.
func readKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("%s: want a file of at least 16 secret bytes (e.g. head -c 32 /dev/urandom > %s)", path, path)
	}
	return key, nil
}

// errAt returns a configError for key, at its line, or when the file does
// not set it, at the first line of its table.
func (c config) errAt(key, format string, args ...any) error {
	line := c.keys.Line(key)
	if table, _, ok := strings.Cut(key, "."); ok && line == 0 {
		for k, l := range c.keys {
			if strings.HasPrefix(k, table+".") && (line == 0 || l < line) {
				line = l
			}
		}
	}
	return &configError{File: c.source, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// loadConfig reads and parses the file at path.
func loadConfig(path string) (config, error) {
	return tomlconf.Load(path, parseConfig)
}

// serverConfig turns the i-th [[server]] entry (from 0) into a
// ServerConfig, reading its ca_file; a mistake is located at its key.
func (c config) serverConfig(i int) (newsweb.ServerConfig, error) {
	key := fmt.Sprintf("server[%d].", i+1)
	e := c.Servers[i]
	sc, err := e.serverConfig()
	if err != nil {
		return sc, c.errAt(key+"url", "%v", err)
	}
	if e.CAFile != "" {
		if sc.TLSConfig, err = trustFile(e.CAFile); err != nil {
			return sc, c.errAt(key+"ca_file", "%v", err)
		}
	}
	return sc, nil
}

// serverConfig turns a [[server]] entry into a ServerConfig; its ca_file
// is config.serverConfig's to read.
func (e serverEntry) serverConfig() (newsweb.ServerConfig, error) {
	if e.URL == "" {
		return newsweb.ServerConfig{}, errors.New("[[server]] needs url = \"nntp://host\" or \"nntps://host\"")
	}
	sc, err := newsweb.ParseServerURL(e.URL)
	if err != nil {
		return newsweb.ServerConfig{}, err
	}
	if e.Name != "" {
		sc.Name = e.Name
	}
	if e.Priority != nil {
		sc.Priority = *e.Priority
	}
	if e.Connections != 0 {
		sc.Connections = e.Connections
	}
	if e.User != "" {
		sc.User, sc.Pass = e.User, e.Pass
	}
	if e.Inject != "" {
		in, err := newsweb.ParseServerURL(e.Inject)
		if err != nil {
			return newsweb.ServerConfig{}, fmt.Errorf("inject: %w", err)
		}
		sc.Inject = newsweb.InjectTarget{Addr: in.Addr, TLS: in.TLS, User: in.User, Pass: in.Pass}
	}
	return sc, nil
}

// trustFile returns a TLS configuration trusting the PEM certificates in path.
func trustFile(path string) (*tls.Config, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificates", path)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// hiddenGroups is hidden_groups parsed (check has refused a bad one).
func (c config) hiddenGroups() *proto.GroupPatterns {
	var list []string
	if c.HiddenGroups != nil && *c.HiddenGroups != "" {
		list = []string{*c.HiddenGroups}
	}
	g, _ := proto.ParseGroupPatterns(list)
	return &g
}

// cacheConfig is the [cache] section with the defaults filled in.
func (c config) cacheConfig() mreader.CacheConfig {
	return mreader.CacheConfig{
		Article:         time.Duration(c.Cache.Article),
		ArticleNotFound: time.Duration(c.Cache.ArticleNotFound),
		Threads:         time.Duration(c.Cache.Threads),
		Thread:          time.Duration(c.Cache.Thread),
		Groups:          time.Duration(c.Cache.Groups),
		GroupStats:      time.Duration(c.Cache.GroupStats),
	}.WithDefaults()
}
