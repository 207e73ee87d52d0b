package reader

// Cache policy as data: what is cached, under
// which key, for how long. The caches themselves live in the runtime; this
// file holds what they must agree on, and the pure decisions around them:
// the incremental thread-list update from a high-water mark, debounced to at
// most once a second per group.

import (
	"fmt"
	"time"
)

// CacheKind names one of newsweb's caches.
type CacheKind uint8

// The caches, each named in comments by its key space's name.
const (
	CacheArticle         CacheKind = iota // article_cache: article content by message-id
	CacheArticleNotFound                  // article_not_found_cache: negative cache of missing articles
	CacheThreads                          // threads_cache: a group's thread list with its high-water mark
	CacheThread                           // thread_cache: one thread, "group:message_id"
	CacheGroups                           // groups_cache: the merged group list, key "groups"
	CacheGroupStats                       // group_stats_cache: article count and last article date
	NumCacheKinds                         // how many kinds there are (not a kind)
)

var cacheNames = [...]string{"article", "article_not_found", "threads", "thread", "groups", "group_stats"}

// String returns the cache's name without "_cache" ("article_not_found").
func (k CacheKind) String() string {
	if int(k) < len(cacheNames) {
		return cacheNames[k]
	}
	return fmt.Sprintf("cache(%d)", uint8(k))
}

// CacheConfig holds the time to live of each cache, newsweb's [cache]
// section. Every field is configurable; DefaultCacheConfig gives the
// defaults.
type CacheConfig struct {
	Article         time.Duration // article content
	ArticleNotFound time.Duration // a message-id no server has
	Threads         time.Duration // a group's thread list
	Thread          time.Duration // one thread
	Groups          time.Duration // the merged group list
	GroupStats      time.Duration // a group's count and last article date
}

// DefaultCacheConfig returns the default TTLs: article 24 h,
// article-not-found 60 s, thread lists 5 min, thread 5 min, groups 1 h,
// group stats 5 min.
func DefaultCacheConfig() CacheConfig {
	return CacheConfig{
		Article:         24 * time.Hour,
		ArticleNotFound: 60 * time.Second,
		Threads:         5 * time.Minute,
		Thread:          5 * time.Minute,
		Groups:          time.Hour,
		GroupStats:      5 * time.Minute,
	}
}

// WithDefaults returns c with every zero TTL replaced by its default, so a
// configuration file may set only what it changes.
func (c CacheConfig) WithDefaults() CacheConfig {
	d := DefaultCacheConfig()
	for _, f := range []struct {
		dst *time.Duration
		def time.Duration
	}{
		{&c.Article, d.Article}, {&c.ArticleNotFound, d.ArticleNotFound},
		{&c.Threads, d.Threads}, {&c.Thread, d.Thread},
		{&c.Groups, d.Groups}, {&c.GroupStats, d.GroupStats},
	} {
		if *f.dst == 0 {
			*f.dst = f.def
		}
	}
	return c
}

// TTL is the time to live of cache k (0 for an unknown kind).
func (c CacheConfig) TTL(k CacheKind) time.Duration {
	switch k {
	case CacheArticle:
		return c.Article
	case CacheArticleNotFound:
		return c.ArticleNotFound
	case CacheThreads:
		return c.Threads
	case CacheThread:
		return c.Thread
	case CacheGroups:
		return c.Groups
	case CacheGroupStats:
		return c.GroupStats
	}
	return 0
}

// Validate refuses negative TTLs.
func (c CacheConfig) Validate() error {
	for k := CacheKind(0); k < NumCacheKinds; k++ {
		if c.TTL(k) < 0 {
			return fmt.Errorf("reader: cache %s: negative TTL %v", k, c.TTL(k))
		}
	}
	return nil
}

// Cache keys. Each cache is its own keyspace; a store
// shared by all (Redis, memcached) prefixes the key with the kind's name,
// as StoreKey does.

// ArticleKey is the key of article_cache and article_not_found_cache: the
// message-id.
func ArticleKey(messageID string) string { return messageID }

// ThreadsKey is the key of threads_cache: the group.
func ThreadsKey(group string) string { return group }

// ThreadKey is the key of thread_cache: "group:message_id".
func ThreadKey(group, messageID string) string { return group + ":" + messageID }

// GroupsKey is the one key of groups_cache.
const GroupsKey = "groups"

// GroupStatsKey is the key of group_stats_cache: the group.
func GroupStatsKey(group string) string { return group }

// StoreKey is key in a store shared by every cache: "kind/key".
func StoreKey(k CacheKind, key string) string { return k.String() + "/" + key }

// CachedThreads is what threads_cache holds for a group: the articles'
// summaries, their threads, and the high-water mark, the highest article
// number the list covers.
type CachedThreads struct {
	Group     string
	HighWater int64
	Articles  []Summary
	Threads   []*Node // Thread(Articles)
}

// Update returns the request that brings c up to date: the articles after
// the high-water mark, at Low priority.
func (c CachedThreads) Update() GetNewArticles {
	return GetNewArticles{Group: c.Group, Since: c.HighWater}
}

// Apply merges the result of an incremental fetch into c: the new articles
// are threaded in (Merge) and the high-water mark moves to the fetch's. A
// result that is not newer than c (an older high-water mark) changes nothing.
func (c CachedThreads) Apply(r ThreadsResult) CachedThreads {
	if r.High < c.HighWater {
		return c
	}
	out := CachedThreads{Group: c.Group, HighWater: r.High}
	out.Articles = MergeSummaries(c.Articles, r.Articles)
	out.Threads = Thread(out.Articles)
	return out
}

// DefaultIncrementalDebounce is INCREMENTAL_DEBOUNCE_MS: at most one
// incremental check per group per second.
const DefaultIncrementalDebounce = time.Second

// Debouncer allows an action per key at most once per interval. Pure; not
// safe for concurrent use.
type Debouncer struct {
	interval time.Duration
	last     map[string]time.Time
}

// NewDebouncer returns a debouncer with the given interval
// (DefaultIncrementalDebounce when interval <= 0).
func NewDebouncer(interval time.Duration) *Debouncer {
	if interval <= 0 {
		interval = DefaultIncrementalDebounce
	}
	return &Debouncer{interval: interval, last: make(map[string]time.Time)}
}

// Allow reports whether the action for key may run at now: the first time,
// or at least the interval after the last allowed one. When it returns true
// it records now; a refused call records nothing.
func (d *Debouncer) Allow(key string, now time.Time) bool {
	if t, ok := d.last[key]; ok && now.Sub(t) < d.interval {
		return false
	}
	d.last[key] = now
	return true
}

// Prune forgets keys last allowed at least an interval before now; Allow
// answers the same for them afterwards, so Prune only bounds memory.
func (d *Debouncer) Prune(now time.Time) {
	for k, t := range d.last {
		if now.Sub(t) >= d.interval {
			delete(d.last, k)
		}
	}
}

// Len is the number of keys remembered.
func (d *Debouncer) Len() int { return len(d.last) }
