package reader

// Theory of operation: priority pick with aging, and coalescing.
//
// A server's requests wait in three bounded FIFO queues, one per Priority:
// High (GetArticle, GetThread: a user is waiting for the page), Normal
// (GetThreads, GetGroups: page loads) and Low (GetGroupStats, GetNewArticles:
// background refresh and prefetch). A worker that is free calls
// Scheduler.Pick, which takes the oldest High request, else Normal, else Low,
// except for aging: when a Low request is waiting and none has been picked
// for Aging (NNTP_PRIORITY_AGING_SECS, default 10 s), the Low request goes
// first. The aging clock starts when the Scheduler is made and restarts at
// every Low pick, whichever rule picked it; so under sustained High/Normal
// load a Low request runs at least once per Aging (plus the time the worker
// is busy with the request in hand). A runtime that wants a clock per worker
// gives each worker its own by calling PickAged with the worker's last Low
// time instead.
//
// Queues are bounded: Push on a full queue fails with ErrQueueFull and the
// caller answers the request at once (a busy server is an error the HTTP
// side can show, not a reason to grow memory).
//
// Coalescer is the map of pending requests: the first Join for a key is the
// leader, which sends the request; later Joins while it is pending are
// followers, which wait for the leader's result. Finish removes the entry
// when the result is in. An entry older than the request timeout is expired:
// Expire removes it (the runtime fails its waiters), and a Join that finds an
// expired entry replaces it and leads a new request.

import (
	"errors"
	"fmt"
	"time"
)

// Priority orders requests to one server.
type Priority uint8

// Priorities, highest first.
const (
	High   Priority = iota // a user waits for content: GetArticle, GetThread
	Normal                 // page loads: GetThreads, GetGroups
	Low                    // background: GetGroupStats, GetNewArticles
)

// numPriorities is the number of priorities (queues).
const numPriorities = 3

// String returns "high", "normal" or "low".
func (p Priority) String() string {
	switch p {
	case High:
		return "high"
	case Normal:
		return "normal"
	case Low:
		return "low"
	}
	return fmt.Sprintf("priority(%d)", uint8(p))
}

// DefaultPriorityAging is NNTP_PRIORITY_AGING_SECS: the longest a waiting
// Low request is passed over.
const DefaultPriorityAging = 10 * time.Second

// DefaultQueueCapacity is the capacity of each queue when none is given.
const DefaultQueueCapacity = 1024

// ErrQueueFull is the result of Push on a full queue.
var ErrQueueFull = errors.New("queue full")

// SchedulerConfig sizes the queues and sets the aging.
type SchedulerConfig struct {
	Capacity [numPriorities]int // per priority; DefaultQueueCapacity when 0
	Aging    time.Duration      // DefaultPriorityAging when 0
}

// ring is a bounded FIFO queue.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (r *ring[T]) push(v T) bool {
	if r.size == len(r.buf) {
		return false
	}
	r.buf[(r.head+r.size)%len(r.buf)] = v
	r.size++
	return true
}

func (r *ring[T]) pop() (T, bool) {
	var zero T
	if r.size == 0 {
		return zero, false
	}
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return v, true
}

// Scheduler is the three bounded priority queues of one server with the
// aging rule. It is pure: the caller passes the time. Not safe for
// concurrent use.
type Scheduler[T any] struct {
	q       [numPriorities]ring[T]
	aging   time.Duration
	lastLow time.Time
}

// NewScheduler returns empty queues whose aging clock starts at now.
func NewScheduler[T any](now time.Time, cfg SchedulerConfig) *Scheduler[T] {
	s := &Scheduler[T]{aging: cfg.Aging, lastLow: now}
	if s.aging <= 0 {
		s.aging = DefaultPriorityAging
	}
	for p := range s.q {
		n := cfg.Capacity[p]
		if n <= 0 {
			n = DefaultQueueCapacity
		}
		s.q[p].buf = make([]T, n)
	}
	return s
}

// Push appends v to the queue of priority p. On a full queue it returns an
// error wrapping ErrQueueFull and keeps nothing.
func (s *Scheduler[T]) Push(p Priority, v T) error {
	if int(p) >= numPriorities {
		return fmt.Errorf("reader: push: unknown %v", p)
	}
	if !s.q[p].push(v) {
		return fmt.Errorf("reader: %s queue holds %d requests: %w", p, len(s.q[p].buf), ErrQueueFull)
	}
	return nil
}

// Len is the number of requests waiting at priority p.
func (s *Scheduler[T]) Len(p Priority) int {
	if int(p) >= numPriorities {
		return 0
	}
	return s.q[p].size
}

// Cap is the capacity of the queue of priority p.
func (s *Scheduler[T]) Cap(p Priority) int {
	if int(p) >= numPriorities {
		return 0
	}
	return len(s.q[p].buf)
}

// LastLow is when a Low request was last picked (or the Scheduler made).
func (s *Scheduler[T]) LastLow() time.Time { return s.lastLow }

// Pick takes the next request at now: a Low one if one waits and none was
// picked for the aging period, else the oldest of the highest priority
// that has any. ok is false when every queue is empty.
func (s *Scheduler[T]) Pick(now time.Time) (v T, p Priority, ok bool) {
	v, p, ok = s.PickAged(now, s.lastLow)
	if ok && p == Low {
		s.lastLow = now
	}
	return v, p, ok
}

// PickAged is Pick with the aging clock kept by the caller: lastLow is when
// the caller last ran a Low request. It does not change the Scheduler's own
// clock; the caller updates its lastLow when p is Low.
func (s *Scheduler[T]) PickAged(now, lastLow time.Time) (v T, p Priority, ok bool) {
	if s.q[Low].size > 0 && now.Sub(lastLow) >= s.aging {
		v, _ = s.q[Low].pop()
		return v, Low, true
	}
	for p := High; p <= Low; p++ {
		if v, ok := s.q[p].pop(); ok {
			return v, p, true
		}
	}
	var zero T
	return zero, 0, false
}

// pendingEntry is one in-flight request of a Coalescer.
type pendingEntry struct {
	started   time.Time
	followers int
}

// Coalescer is the table of in-flight requests keyed by request identity.
// Pure; not safe for concurrent use.
type Coalescer[K comparable] struct {
	timeout time.Duration
	pending map[K]*pendingEntry
}

// DefaultRequestTimeout is the request timeout after which a pending
// request is expired when none is configured.
const DefaultRequestTimeout = 30 * time.Second

// NewCoalescer returns an empty table whose entries expire timeout after
// their leader joined (DefaultRequestTimeout when timeout <= 0).
func NewCoalescer[K comparable](timeout time.Duration) *Coalescer[K] {
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	return &Coalescer[K]{timeout: timeout, pending: make(map[K]*pendingEntry)}
}

// Join registers interest in key at now. It returns true for the leader
// (no request for key is pending, or the pending one has expired and is
// replaced): the leader sends the request and calls Finish when it is done.
// It returns false for a follower, which waits for the leader's result.
func (c *Coalescer[K]) Join(key K, now time.Time) (leader bool) {
	if e, ok := c.pending[key]; ok && now.Sub(e.started) < c.timeout {
		e.followers++
		return false
	}
	c.pending[key] = &pendingEntry{started: now}
	return true
}

// Finish removes key's entry and returns how many followers joined it. A
// key with no entry (already expired and removed) returns 0.
func (c *Coalescer[K]) Finish(key K) (followers int) {
	e, ok := c.pending[key]
	if !ok {
		return 0
	}
	delete(c.pending, key)
	return e.followers
}

// Expire removes the entries whose leader joined at least the timeout
// before now and returns their keys (in no particular order), so the
// runtime can fail their waiters.
func (c *Coalescer[K]) Expire(now time.Time) []K {
	var out []K
	for k, e := range c.pending {
		if now.Sub(e.started) >= c.timeout {
			delete(c.pending, k)
			out = append(out, k)
		}
	}
	return out
}

// Pending reports whether key has an unexpired entry at now.
func (c *Coalescer[K]) Pending(key K, now time.Time) bool {
	e, ok := c.pending[key]
	return ok && now.Sub(e.started) < c.timeout
}

// Len is the number of entries, expired or not.
func (c *Coalescer[K]) Len() int { return len(c.pending) }

// Deadline is when the oldest entry expires; false when there is none.
func (c *Coalescer[K]) Deadline() (time.Time, bool) {
	var d time.Time
	ok := false
	for _, e := range c.pending {
		if t := e.started.Add(c.timeout); !ok || t.Before(d) {
			d, ok = t, true
		}
	}
	return d, ok
}
