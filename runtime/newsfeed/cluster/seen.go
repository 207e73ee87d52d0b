package cluster

import (
	"crypto/md5"
	"sync"
	"time"
)

// seen remembers the message-ids this node knows are in the history: it
// stored them, was told they are duplicates, or found their heads. CHECK,
// IHAVE and TAKETHIS of such an article, offered again (typically by
// another upstream), are answered from it without a round trip to NATS,
// and a CHECK without reading the head back, article and all.
//
// Only "present" is remembered, never "absent": an article stays present
// as long as the history keeps its message-id, so a remembered id is
// right for as long as it is remembered. The ids are kept in two
// generations; a new one begins after seenMax ids or one generation's age
// (seenAge, or a quarter of the history's lifetime if that is shorter),
// and the one before it is dropped then; generations older than twice
// that age are dropped both. So an id is forgotten at the latest four
// generations' ages after it was added: never after the history forgot
// it.
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

// newSeen makes a generation last at most a quarter of keep, the least
// time the history keeps an id (0: for ever), so that no id is
// remembered longer than the history keeps it.
func newSeen(keep time.Duration) *seen {
	age := seenAge
	if keep > 0 {
		age = min(age, keep/4)
	}
	return &seen{age: age, cur: map[[md5.Size]byte]struct{}{}, began: time.Now()}
}

// add remembers id as present.
func (s *seen) add(id string) { s.addSum(md5.Sum([]byte(id))) }

// addSum is add of the id whose MD5 is sum (the store's key: one digest
// per article serves the history, the subject and this).
func (s *seen) addSum(sum [md5.Size]byte) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case now.Sub(s.began) > 2*s.age:
		// Idle for longer than two generations: the current one is
		// too old to keep as the previous one (has would trust it for
		// two generations more).
		s.prev, s.cur, s.began = nil, map[[md5.Size]byte]struct{}{}, now
	case len(s.cur) >= seenMax || now.Sub(s.began) > s.age:
		s.prev, s.cur, s.began = s.cur, make(map[[md5.Size]byte]struct{}, len(s.cur)), now
	}
	s.cur[sum] = struct{}{}
}

// has reports whether id is remembered as present.
func (s *seen) has(id string) bool { return s.hasSum(md5.Sum([]byte(id))) }

// hasSum is has of the id whose MD5 is sum.
func (s *seen) hasSum(sum [md5.Size]byte) bool {
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
