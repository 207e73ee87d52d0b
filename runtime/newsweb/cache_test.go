package newsweb

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTTLCache(t *testing.T) {
	type op struct {
		advance time.Duration
		put     string // key to put (value = key), cost in cost
		cost    int64
		get     string
		want    bool // for get: found
	}
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		max  int64
		ops  []op
		keys int
	}{
		{"live then expired", time.Minute, 0, []op{
			{put: "a", cost: 1}, {get: "a", want: true},
			{advance: 59 * time.Second, get: "a", want: true},
			{advance: time.Second, get: "a", want: false},
		}, 0},
		{"put restarts the TTL", time.Minute, 0, []op{
			{put: "a", cost: 1}, {advance: 50 * time.Second, put: "a", cost: 1},
			{advance: 50 * time.Second, get: "a", want: true},
		}, 1},
		{"cost bound evicts least recently used", time.Hour, 10, []op{
			{put: "a", cost: 4}, {put: "b", cost: 4}, {get: "a", want: true},
			{put: "c", cost: 4}, // evicts b, the least recently used
			{get: "b", want: false}, {get: "a", want: true}, {get: "c", want: true},
		}, 2},
		{"too large is not stored", time.Hour, 10, []op{
			{put: "big", cost: 11}, {get: "big", want: false},
		}, 0},
		{"zero TTL caches nothing", 0, 0, []op{
			{put: "a", cost: 1}, {get: "a", want: false},
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			c := newTTLCache[string](tc.ttl, tc.max, clock.Now)
			for i, o := range tc.ops {
				clock.Advance(o.advance)
				if o.put != "" {
					c.put(o.put, o.put, o.cost)
				}
				if o.get != "" {
					v, ok := c.get(o.get)
					if ok != o.want || (ok && v != o.get) {
						t.Errorf("op %d: get(%q) = %q, %v; want found=%v", i, o.get, v, ok, o.want)
					}
				}
			}
			if d := cmp.Diff(tc.keys, c.len()); d != "" {
				t.Errorf("entries left (-want +got):\n%s", d)
			}
		})
	}
}

// A cache with a grace keeps an expired entry for stale (not get) until
// the grace too has passed.
func TestTTLCacheGrace(t *testing.T) {
	clock := newFakeClock()
	c := newTTLCache[string](time.Minute, 0, clock.Now).withGrace(time.Hour)
	c.put("a", "v", 1)
	clock.Advance(2 * time.Minute)
	if _, ok := c.get("a"); ok {
		t.Errorf("get of an expired entry found it")
	}
	if v, ok := c.stale("a"); !ok || v != "v" {
		t.Errorf("stale within the grace: %q %v", v, ok)
	}
	clock.Advance(time.Hour)
	if _, ok := c.stale("a"); ok || c.len() != 0 {
		t.Errorf("stale past the grace found it (%d entries)", c.len())
	}
}
