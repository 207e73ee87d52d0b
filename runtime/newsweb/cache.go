package newsweb

import (
	"container/list"
	"sync"
	"time"
)

// ttlCache is a map with a time to live per entry and a bound on the total
// cost of its entries (bytes, or 1 per entry), evicting the least recently
// used first. It is safe for concurrent use. The clock is injected.
//
// A hand-written cache rather than a library: the caches need per-entry
// TTLs (the thread list is re-inserted by each incremental update, which
// restarts its TTL), a cost bound for articles of very different sizes, and
// an injected clock for tests; that is these 100 lines.
type ttlCache[V any] struct {
	now     func() time.Time
	ttl     time.Duration
	maxCost int64
	// grace keeps an expired entry this long for stale (0: an expired
	// entry goes when touched).
	grace time.Duration

	mu    sync.Mutex
	items map[string]*list.Element
	lru   list.List // front: most recently used
	cost  int64
}

type cacheEntry[V any] struct {
	key     string
	val     V
	cost    int64
	expires time.Time
}

// newTTLCache returns a cache whose entries live ttl and whose total cost
// stays at or below maxCost (no bound when maxCost <= 0).
func newTTLCache[V any](ttl time.Duration, maxCost int64, now func() time.Time) *ttlCache[V] {
	return &ttlCache[V]{now: now, ttl: ttl, maxCost: maxCost, items: make(map[string]*list.Element)}
}

// withGrace keeps expired entries for stale up to grace.
func (c *ttlCache[V]) withGrace(grace time.Duration) *ttlCache[V] {
	c.grace = grace
	return c
}

// get returns the live value of key.
func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*cacheEntry[V])
	if now := c.now(); !now.Before(e.expires) {
		if !now.Before(e.expires.Add(c.grace)) {
			c.remove(el)
		}
		return zero, false
	}
	c.lru.MoveToFront(el)
	return e.val, true
}

// stale returns the value of key even when expired, within the cache's
// grace: what to show while no server answers.
func (c *ttlCache[V]) stale(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*cacheEntry[V])
	if !c.now().Before(e.expires.Add(c.grace)) {
		c.remove(el)
		return zero, false
	}
	return e.val, true
}

// put stores val under key for the cache's TTL, replacing any entry, and
// evicts the least recently used entries beyond the cost bound. An entry
// costing more than the bound is not stored.
func (c *ttlCache[V]) put(key string, val V, cost int64) {
	if c.ttl <= 0 || (c.maxCost > 0 && cost > c.maxCost) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
	e := &cacheEntry[V]{key: key, val: val, cost: cost, expires: c.now().Add(c.ttl)}
	c.items[key] = c.lru.PushFront(e)
	c.cost += cost
	for c.maxCost > 0 && c.cost > c.maxCost {
		c.remove(c.lru.Back())
	}
}

// delete removes key.
func (c *ttlCache[V]) delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
}

// len is the number of entries, expired ones included until touched.
func (c *ttlCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

func (c *ttlCache[V]) remove(el *list.Element) {
	e := el.Value.(*cacheEntry[V])
	c.lru.Remove(el)
	delete(c.items, e.key)
	c.cost -= e.cost
}
