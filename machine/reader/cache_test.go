package reader

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCacheDefaults checks the caches' keys and default TTLs.
func TestCacheDefaults(t *testing.T) {
	c := DefaultCacheConfig()
	type row struct {
		kind string
		key  string
		ttl  time.Duration
	}
	got := []row{
		{CacheArticle.String(), ArticleKey("<a@b>"), c.TTL(CacheArticle)},
		{CacheArticleNotFound.String(), ArticleKey("<a@b>"), c.TTL(CacheArticleNotFound)},
		{CacheThreads.String(), ThreadsKey("comp.lang.go"), c.TTL(CacheThreads)},
		{CacheThread.String(), ThreadKey("comp.lang.go", "<a@b>"), c.TTL(CacheThread)},
		{CacheGroups.String(), GroupsKey, c.TTL(CacheGroups)},
		{CacheGroupStats.String(), GroupStatsKey("comp.lang.go"), c.TTL(CacheGroupStats)},
	}
	want := []row{
		{"article", "<a@b>", 24 * time.Hour},
		{"article_not_found", "<a@b>", 60 * time.Second},
		{"threads", "comp.lang.go", 5 * time.Minute},
		{"thread", "comp.lang.go:<a@b>", 5 * time.Minute},
		{"groups", "groups", time.Hour},
		{"group_stats", "comp.lang.go", 5 * time.Minute},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(row{})); d != "" {
		t.Errorf("cache table (-want +got):\n%s", d)
	}
	if got := StoreKey(CacheThread, "g:<a@b>"); got != "thread/g:<a@b>" {
		t.Errorf("StoreKey = %q", got)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	if got := CacheKind(99).String(); !strings.HasPrefix(got, "cache(") {
		t.Errorf("unknown kind = %q", got)
	}
}

func TestCacheWithDefaults(t *testing.T) {
	got := CacheConfig{Article: time.Hour, ArticleNotFound: -time.Second}.WithDefaults()
	want := DefaultCacheConfig()
	want.Article, want.ArticleNotFound = time.Hour, -time.Second
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("WithDefaults (-want +got):\n%s", d)
	}
	if err := got.Validate(); err == nil {
		t.Error("a negative TTL validates")
	}
}

// TestDebouncer: at most one incremental check per group per second.
func TestDebouncer(t *testing.T) {
	tests := []struct {
		at   time.Duration
		key  string
		want bool
	}{
		{0, "g", true},
		{0, "h", true},
		{500 * time.Millisecond, "g", false},
		{999 * time.Millisecond, "g", false},
		{time.Second, "g", true},
		{1500 * time.Millisecond, "g", false},
		{1500 * time.Millisecond, "h", true},
		{2 * time.Second, "g", true},
	}
	d := NewDebouncer(0)
	for i, tc := range tests {
		if got := d.Allow(tc.key, t0.Add(tc.at)); got != tc.want {
			t.Errorf("step %d: Allow(%s) at %v = %v, want %v", i, tc.key, tc.at, got, tc.want)
		}
	}
	d.Prune(t0.Add(2500 * time.Millisecond)) // h allowed at 1.5 s is over an interval old
	if d.Len() != 1 {
		t.Errorf("after Prune: %d keys, want 1", d.Len())
	}
	if !d.Allow("h", t0.Add(2500*time.Millisecond)) {
		t.Error("pruned key refused")
	}
}

// TestCachedThreadsUpdate: a cache hit asks only for the articles after the
// high-water mark, and applying the answer merges and moves the mark.
func TestCachedThreadsUpdate(t *testing.T) {
	arts := []Summary{art(10, "a", 0), art(11, "b", 1, "a")}
	c := CachedThreads{Group: "g", HighWater: 11, Articles: arts, Threads: Thread(arts)}
	if d := cmp.Diff(GetNewArticles{Group: "g", Since: 11}, c.Update()); d != "" {
		t.Errorf("Update (-want +got):\n%s", d)
	}
	c2 := c.Apply(ThreadsResult{Group: "g", Since: 11, Low: 12, High: 14, Articles: []Summary{art(13, "c", 2, "a", "b")}})
	if c2.HighWater != 14 {
		t.Errorf("HighWater = %d, want 14", c2.HighWater)
	}
	if d := cmp.Diff([]string{"a", "  b", "    c"}, render(c2.Threads, false)); d != "" {
		t.Errorf("threads (-want +got):\n%s", d)
	}
	if len(c.Articles) != 2 || c.HighWater != 11 {
		t.Error("Apply modified the cached value")
	}
	// An older answer (a slow fetch overtaken by a newer one) changes nothing.
	c3 := c2.Apply(ThreadsResult{Group: "g", Since: 11, High: 12, Articles: []Summary{art(12, "z", 9)}})
	if c3.HighWater != 14 || len(c3.Articles) != 3 {
		t.Errorf("stale answer applied: hwm %d, %d articles", c3.HighWater, len(c3.Articles))
	}
}
