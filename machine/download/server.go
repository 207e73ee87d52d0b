// Package download holds newsget's pure download decisions: which segment
// goes to which server (Scheduler), what each failure means (the retry
// table in retry.go), one NNTP connection fetching and decoding bodies
// (Fetch), the speed limit (Limiter) and the download quotas (Quota).
//
// Nothing here performs I/O, reads a clock or starts a goroutine: time comes
// in as now, outcomes come in as method calls, and decisions, deadlines and
// decoded bytes come out. The runtime (the engine) dials connections, runs
// the handshake, drives one Fetch per connection and tells the Scheduler
// what happened. It holds server levels, load-balancing groups, optional
// servers, retention, the connection selection and the retry strategy, all
// quota-safe: a segment is asked of one server at a time.
package download

import (
	"fmt"
	"time"
)

// Defaults for zero fields of Server and Config.
const (
	DefaultPipeline       = 2                // BODY requests in flight per connection
	DefaultArticleRetries = 3                // connection-error retries on one server
	DefaultBackoffBase    = 10 * time.Second // first block of a server after an auth or connect failure
	DefaultBackoffMax     = 5 * time.Minute  // the longest block; the doubling stops here
	// MaxServers is how many servers a Scheduler handles: per-segment
	// server sets are 64-bit masks.
	MaxServers = 64
)

// A Server is one news server as configured. Only what the scheduling
// decisions need is here; host, port, TLS and credentials belong to the
// runtime.
type Server struct {
	ID          int    // the owner's identifier, unique; events name servers by it
	Name        string // for messages
	Level       int    // 0 = primary, 1+ = fill/backup: tried only after every server of the levels below failed the article
	Group       int    // load-balancing group; 0 = none. Servers of one level and group share load and content
	Active      bool   // false: never used
	Optional    bool   // while blocked, counts as failed for the articles that wait on it
	Connections int    // most connections to open; 0 makes the server unusable
	Pipeline    int    // BODY requests in flight per connection; DefaultPipeline when 0
	Retention   int    // days; 0 = unlimited. Older articles are never requested here
	JoinGroup   bool   // send GROUP before BODY when the article's group changes
}

// Key names a segment: the owner's file index and the segment's number in
// that file (NZB <segment number=>).
type Key struct {
	File   int
	Number int
}

// String returns "file/number", the form used in test summaries and logs.
func (k Key) String() string { return fmt.Sprintf("%d/%d", k.File, k.Number) }

// A Segment is one article to download (an NZB <segment>, with what the
// NZB <file> says about it).
type Segment struct {
	Key
	MessageID string    // with or without angle brackets
	Bytes     int64     // NZB bytes=; informational
	Posted    time.Time // posting date (NZB <file date=>); zero = unknown, retention not checked
	Groups    []string  // newsgroups it was posted to; the first is used for GROUP
}

// ConnID names a connection the Scheduler asked for with Dial.
type ConnID int

// Config holds the Scheduler's tunables; zero fields take the defaults.
type Config struct {
	// ArticleRetries is how often a segment is tried again on the same
	// server after a connection error before that server counts as failed
	// for it (retries, so 1+ArticleRetries attempts). DefaultArticleRetries
	// when 0; negative means no retries.
	ArticleRetries int
	// BackoffBase is the first block of a server after an authentication
	// or connect failure; each further consecutive failure doubles it, up
	// to BackoffMax.
	BackoffBase, BackoffMax time.Duration
}

func (c Config) withDefaults() Config {
	switch {
	case c.ArticleRetries == 0:
		c.ArticleRetries = DefaultArticleRetries
	case c.ArticleRetries < 0:
		c.ArticleRetries = 0
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.BackoffMax < c.BackoffBase {
		c.BackoffMax = c.BackoffBase
	}
	return c
}

// backoff is the block after the n-th consecutive failure (n >= 1):
// base, 2*base, 4*base, ... up to max.
func (c Config) backoff(n int) time.Duration {
	d := c.BackoffBase
	for i := 1; i < n && d < c.BackoffMax; i++ {
		d *= 2
	}
	if d > c.BackoffMax {
		d = c.BackoffMax
	}
	return d
}

// checkServers validates a server list for NewScheduler.
func checkServers(servers []Server) error {
	if len(servers) > MaxServers {
		return fmt.Errorf("download: %d servers, at most %d are supported", len(servers), MaxServers)
	}
	seen := map[int]bool{}
	for _, s := range servers {
		switch {
		case seen[s.ID]:
			return fmt.Errorf("download: server %q: id %d used twice", s.Name, s.ID)
		case s.Level < 0:
			return fmt.Errorf("download: server %q: negative level %d", s.Name, s.Level)
		case s.Group < 0:
			return fmt.Errorf("download: server %q: negative group %d", s.Name, s.Group)
		case s.Connections < 0:
			return fmt.Errorf("download: server %q: negative connections %d", s.Name, s.Connections)
		case s.Pipeline < 0:
			return fmt.Errorf("download: server %q: negative pipeline %d", s.Name, s.Pipeline)
		case s.Retention < 0:
			return fmt.Errorf("download: server %q: negative retention %d", s.Name, s.Retention)
		}
		seen[s.ID] = true
	}
	return nil
}
