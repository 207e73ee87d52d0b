package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pelletier/go-toml/v2"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/runtime/newsweb"
)

// duration is a time.Duration written as "90s", "5m", "24h" in TOML.
type duration time.Duration

// UnmarshalText parses a Go duration ("90s", "5m"); negative is refused.
func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("negative duration %s", b)
	}
	*d = duration(v)
	return nil
}

// config is the TOML configuration file. Every field is optional; the
// defaults are the seed's.
type config struct {
	Listen         string   `toml:"listen"`          // HTTP address; 127.0.0.1:8080
	Admin          string   `toml:"admin"`           // admin HTTP address (/metrics); none when empty
	Site           string   `toml:"site"`            // name shown in page titles
	LogLevel       string   `toml:"log_level"`       // debug, info, warn, error
	RequestTimeout duration `toml:"request_timeout"` // per page and per NNTP request; 30s
	ThreadLimit    int      `toml:"thread_limit"`    // newest articles a thread list covers; 1000
	PerPage        int      `toml:"per_page"`        // threads per group page; 50

	Servers []serverEntry `toml:"server"`
	Cache   cacheSection  `toml:"cache"`
	Queue   queueSection  `toml:"queue"`
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
	Article         duration `toml:"article"`           // 24h
	ArticleNotFound duration `toml:"article_not_found"` // 60s
	Threads         duration `toml:"threads"`           // 5m
	Thread          duration `toml:"thread"`            // 5m
	Groups          duration `toml:"groups"`            // 1h
	GroupStats      duration `toml:"group_stats"`       // 5m
	ArticleBytes    int64    `toml:"article_bytes"`     // size bound of the article cache; 256 MiB
}

// queueSection tunes each server's queues.
type queueSection struct {
	PriorityAging duration `toml:"priority_aging"` // 10s
	Capacity      int      `toml:"capacity"`       // per priority; 1024
}

// parseConfig parses a configuration file's text; unknown keys are errors
// so that a typo does not silently leave a default in place.
func parseConfig(b []byte) (config, error) {
	var c config
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var sme *toml.StrictMissingError
		if errors.As(err, &sme) {
			return config{}, fmt.Errorf("unknown key: %s", sme.String())
		}
		return config{}, err
	}
	if c.ThreadLimit < 0 || c.PerPage < 0 || c.Queue.Capacity < 0 || c.Cache.ArticleBytes < 0 {
		return config{}, errors.New("thread_limit, per_page, queue.capacity and cache.article_bytes must not be negative")
	}
	return c, nil
}

// loadConfig reads and parses the file at path.
func loadConfig(path string) (config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return config{}, err
	}
	c, err := parseConfig(b)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// serverConfig turns a [[server]] entry into a ServerConfig.
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
	if e.CAFile != "" {
		cfg, err := trustFile(e.CAFile)
		if err != nil {
			return newsweb.ServerConfig{}, err
		}
		sc.TLSConfig = cfg
	}
	return sc, nil
}

// trustFile returns a TLS configuration trusting the PEM certificates in path.
func trustFile(path string) (*tls.Config, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca_file %s: no PEM certificates", path)
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
