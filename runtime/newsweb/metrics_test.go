package newsweb

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// Cache lookups land in the series named for their cache, whether counted
// through the series looked up at start or looked up as they come (a kind
// past the ones known).
func TestCacheLookupSeries(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	m.cacheLookup(mreader.CacheThread, true)
	m.cacheLookup(mreader.CacheThread, true)
	m.cacheLookup(mreader.CacheThread, false)
	m.cacheLookup(mreader.CacheGroupStats, false)
	m.cacheLookup(mreader.CacheKind(200), true)
	for _, tc := range []struct {
		vec        *prometheus.CounterVec
		what, name string
		want       float64
	}{
		{m.CacheHits, "hits", "thread", 2}, {m.CacheMisses, "misses", "thread", 1},
		{m.CacheMisses, "misses", "group_stats", 1}, {m.CacheHits, "hits", "group_stats", 0},
		{m.CacheHits, "hits", "article", 0}, {m.CacheHits, "hits", mreader.CacheKind(200).String(), 1},
	} {
		if got := testutil.ToFloat64(tc.vec.WithLabelValues(tc.name)); got != tc.want {
			t.Errorf("cache %s of %s = %v, want %v", tc.what, tc.name, got, tc.want)
		}
	}
}
