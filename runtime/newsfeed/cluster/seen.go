package cluster

import (
	"crypto/md5"
	"sync"
	"time"
)

// seen remembers message-ids this node knows are in the history (it
// stored them, was told they are duplicates, or found their heads), so
// that CHECK, IHAVE and TAKETHIS of an article offered again — by another
// upstream, typically — are answered without a round trip to NATS (and
// without reading the head back, article and all). Only "present" is
// remembered, never "absent": a present article stays present as long as
// the history keeps it, and an entry lives at most two generations, half
// that long at the most.
type seen struct {
	age       time.Duration // of a generation
	mu        sync.Mutex
	cur, prev map[[md5.Size]byte]struct{}
	began     time.Time
}

// Generations: a new one after seenMax ids or seenAge (less for a short
// history), the one before it dropped.
const (
	seenMax = 1 << 17
	seenAge = 10 * time.Minute
)

// newSeen remembers for no longer than a quarter of keep, how long the
// history keeps an id at the least (0: for ever).
func newSeen(keep time.Duration) *seen {
	age := seenAge
	if keep > 0 {
		age = min(age, keep/4)
	}
	return &seen{age: age, cur: map[[md5.Size]byte]struct{}{}, began: time.Now()}
}

// add remembers id as present.
func (s *seen) add(id string) {
	sum := md5.Sum([]byte(id))
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cur) >= seenMax || now.Sub(s.began) > s.age {
		s.prev, s.cur, s.began = s.cur, make(map[[md5.Size]byte]struct{}, len(s.cur)), now
	}
	s.cur[sum] = struct{}{}
}

// has reports whether id is remembered as present.
func (s *seen) has(id string) bool {
	sum := md5.Sum([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.began) > 2*s.age {
		// Both generations are too old to trust.
		s.prev, s.cur, s.began = nil, map[[md5.Size]byte]struct{}{}, time.Now()
		return false
	}
	_, ok := s.cur[sum]
	if !ok {
		_, ok = s.prev[sum]
	}
	return ok
}
