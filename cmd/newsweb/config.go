package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/newsweb"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// config is the TOML configuration file. Every field is optional; the
// defaults are the seed's.
type config struct {
	Listen         string            `toml:"listen"`          // HTTP address; 127.0.0.1:8080
	Admin          string            `toml:"admin"`           // admin HTTP address (/metrics); none when empty
	Site           string            `toml:"site"`            // name shown in page titles
	LogLevel       string            `toml:"log_level"`       // debug, info, warn, error
	RequestTimeout tomlconf.Duration `toml:"request_timeout"` // per page and per NNTP request; 30s
	ThreadLimit    int               `toml:"thread_limit"`    // newest articles a thread list covers; 1000
	PerPage        int               `toml:"per_page"`        // threads per group page; 50
	SearchDir      string            `toml:"search_dir"`      // search index directory; no search when empty
	SearchBytes    tomlconf.Size     `toml:"search_bytes"`    // bound on the search index; 1 GiB
	SearchBodies   string            `toml:"search_bodies"`   // wildmats of the groups whose bodies are indexed; none when empty

	Servers []serverEntry  `toml:"server"`
	Cache   cacheSection   `toml:"cache"`
	Queue   queueSection   `toml:"queue"`
	Posting postingSection `toml:"posting"`
	Cluster clusterSection `toml:"cluster"`

	source string        // the file's name, for errors
	keys   tomlconf.Keys // "server[1].url" -> line
}

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
}

// cacheSection is the seed's [cache]: the TTL of each cache.
type cacheSection struct {
	Article         tomlconf.Duration `toml:"article"`           // 24h
	ArticleNotFound tomlconf.Duration `toml:"article_not_found"` // 60s
	Threads         tomlconf.Duration `toml:"threads"`           // 5m
	Thread          tomlconf.Duration `toml:"thread"`            // 5m
	Groups          tomlconf.Duration `toml:"groups"`            // 1h
	GroupStats      tomlconf.Duration `toml:"group_stats"`       // 5m
	ArticleBytes    tomlconf.Size     `toml:"article_bytes"`     // size bound of the article cache; 256 MiB
}

// clusterSection makes replicas share their caches through NATS JetStream.
type clusterSection struct {
	NATS []string `toml:"nats"` // NATS server URLs; no sharing when empty
}

// queueSection tunes each server's queues.
type queueSection struct {
	PriorityAging tomlconf.Duration `toml:"priority_aging"` // 10s
	Capacity      int               `toml:"capacity"`       // per priority; 1024
}

// postingSection is [posting]: posting from the web (off unless enabled).
type postingSection struct {
	Enabled       bool              `toml:"enabled"`
	TrustedHeader string            `toml:"trusted_header"` // identity from a reverse proxy, e.g. X-Forwarded-User
	Users         string            `toml:"users"`          // htpasswd file of bcrypt hashes, with a login page
	FromDomain    string            `toml:"from_domain"`    // domain of From addresses and Message-IDs
	RateLimit     int               `toml:"rate_limit"`     // posts per rate_window per user; 20
	RateWindow    tomlconf.Duration `toml:"rate_window"`    // 1h
	KeyFile       string            `toml:"key_file"`       // secret for sessions and CSRF (shared by replicas); random when unset
}

// posting returns the posting state, or nil when posting is off.
func (c config) posting() (*newsweb.Posting, error) {
	p := c.Posting
	if !p.Enabled {
		return nil, nil
	}
	o := newsweb.PostingOptions{TrustedHeader: p.TrustedHeader, Users: p.Users, FromDomain: p.FromDomain,
		RateLimit: p.RateLimit, RateWindow: time.Duration(p.RateWindow)}
	if p.KeyFile != "" {
		key, err := os.ReadFile(p.KeyFile)
		if err != nil || len(key) < 16 {
			return nil, c.errAt("posting.key_file", "want a file of at least 16 secret bytes (%v)", err)
		}
		o.Key = key
	}
	ps, err := newsweb.NewPosting(o)
	if err != nil {
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
// joined) naming the file, line and key.
func parseConfig(name string, b []byte) (config, error) {
	c := config{source: name}
	keys, err := tomlconf.Decode(name, b, &c)
	if err != nil {
		keys.Number(err) // "server[2].url"
		return config{}, err
	}
	c.keys = keys
	if err := c.check(); err != nil {
		return config{}, err
	}
	return c, nil
}

// check refuses the values no page could be served with.
func (c config) check() error {
	var errs []error
	for _, v := range []struct {
		key string
		n   int64
	}{
		{"thread_limit", int64(c.ThreadLimit)}, {"per_page", int64(c.PerPage)},
		{"queue.capacity", int64(c.Queue.Capacity)}, {"cache.article_bytes", int64(c.Cache.ArticleBytes)},
		{"posting.rate_limit", int64(c.Posting.RateLimit)}, {"search_bytes", int64(c.SearchBytes)},
	} {
		if v.n < 0 {
			errs = append(errs, c.errAt(v.key, "must not be negative (got %d)", v.n))
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
	}
	if c.SearchBodies != "" {
		if _, err := proto.ParseGroupPatterns([]string{c.SearchBodies}); err != nil {
			errs = append(errs, c.errAt("search_bodies", "%v", err))
		} else if c.SearchDir == "" {
			errs = append(errs, c.errAt("search_bodies", "needs search_dir: bodies are indexed with the rest of the search index"))
		}
	}
	for i, e := range c.Servers {
		key := fmt.Sprintf("server[%d].url", i+1)
		if e.URL == "" {
			errs = append(errs, c.errAt(key, "missing: want \"nntp://host\" or \"nntps://host\""))
		} else if _, err := newsweb.ParseServerURL(e.URL); err != nil {
			errs = append(errs, c.errAt(key, "%v", err))
		}
	}
	return errors.Join(errs...)
}

// errAt returns a configError for key, at its line (or its table's).
func (c config) errAt(key, format string, args ...any) error {
	return &configError{File: c.source, Line: c.keys.Line(key), Key: key, Msg: fmt.Sprintf(format, args...)}
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

// cacheConfig is the [cache] section with the seed's defaults filled in.
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
