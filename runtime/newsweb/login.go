package newsweb

// Login limits: failed logins are limited per address and per account by
// token buckets, and the bcrypt checks run a few at a time. An address or
// an account with no tokens left is answered 429 at once, without a
// password check; a check that would wait behind too many others is
// answered 503 at once. An unknown user is checked against a dummy hash
// of the users file's own cost, so that a name lookup costs what a
// password check does, and counts against its address only (the account
// buckets are kept for the users in the file, so they stay bounded).

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Limits of the login guard.
const (
	loginAddrBurst  = 5                // failures from one address at once
	loginAddrRefill = 30 * time.Second // then one more per this
	loginUserBurst  = 10               // failures for one account at once, from any address
	loginUserRefill = time.Minute
	loginWorkers    = 2    // password checks at once (bcrypt is CPU-bound)
	loginQueue      = 16   // password checks waiting for a worker; more are answered 503
	loginAddrs      = 4096 // addresses remembered; full buckets are forgotten first
)

// loginGuard holds the login limits of a Posting.
type loginGuard struct {
	mu    sync.Mutex
	addrs map[string]*bucket
	users map[string]*bucket
	// slots holds a token per password check running or waiting; work
	// the first loginWorkers of them.
	slots chan struct{}
	work  chan struct{}
	// dummy is checked for unknown users: a hash of the file's cost
	// (guarded by mu).
	dummy []byte
}

func newLoginGuard(users map[string][]byte) *loginGuard {
	g := &loginGuard{addrs: map[string]*bucket{}, users: map[string]*bucket{},
		slots: make(chan struct{}, loginWorkers+loginQueue), work: make(chan struct{}, loginWorkers)}
	g.setDummy(users)
	return g
}

// setDummy makes the dummy hash at the cost most of users' hashes have.
func (g *loginGuard) setDummy(users map[string][]byte) {
	cost := bcrypt.DefaultCost
	counts := map[int]int{}
	for _, h := range users {
		if c, err := bcrypt.Cost(h); err == nil {
			counts[c]++
			if counts[c] > counts[cost] {
				cost = c
			}
		}
	}
	dummy, _ := bcrypt.GenerateFromPassword([]byte("no such user"), cost)
	g.mu.Lock()
	g.dummy = dummy
	g.mu.Unlock()
}

// bucket is a token bucket of failed logins.
type bucket struct {
	tokens float64
	at     time.Time
}

// refill brings b up to now.
func (b *bucket) refill(now time.Time, burst int, every time.Duration) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(float64(burst), b.tokens+float64(d)/float64(every))
		b.at = now
	}
}

// wait is how long until b has a token.
func (b *bucket) wait(every time.Duration) time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(every))
}

// blocked says how long addr, or account user when known, must wait
// before trying a password; 0 when it may now.
func (g *loginGuard) blocked(addr, user string, known bool, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var wait time.Duration
	if b, ok := g.addrs[addr]; ok {
		b.refill(now, loginAddrBurst, loginAddrRefill)
		wait = b.wait(loginAddrRefill)
	}
	if b, ok := g.users[user]; ok && known {
		b.refill(now, loginUserBurst, loginUserRefill)
		wait = max(wait, b.wait(loginUserRefill))
	}
	return wait
}

// fail counts a failed login from addr (and for user when known).
func (g *loginGuard) fail(addr, user string, known bool, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	take(g.addrs, addr, loginAddrBurst, loginAddrRefill, now)
	if known {
		take(g.users, user, loginUserBurst, loginUserRefill, now)
	}
}

// take removes a token from m[key], making the bucket when new; m holds
// at most loginAddrs buckets, full ones forgotten first.
func take(m map[string]*bucket, key string, burst int, every time.Duration, now time.Time) {
	b, ok := m[key]
	if !ok {
		if len(m) >= loginAddrs {
			for k, b := range m {
				if b.refill(now, burst, every); b.tokens >= float64(burst) {
					delete(m, k)
				}
			}
			for k := range m {
				if len(m) < loginAddrs {
					break
				}
				delete(m, k)
			}
		}
		b = &bucket{tokens: float64(burst), at: now}
		m[key] = b
	}
	b.refill(now, burst, every)
	b.tokens--
}

// check compares pass with hash (the dummy hash when nil) on one of the
// workers; ok is false when too many checks are waiting already.
func (g *loginGuard) check(r *http.Request, hash []byte, pass string) (match, ok bool) {
	select {
	case g.slots <- struct{}{}:
	default:
		return false, false
	}
	defer func() { <-g.slots }()
	select {
	case g.work <- struct{}{}:
	case <-r.Context().Done():
		return false, false
	}
	defer func() { <-g.work }()
	if hash == nil {
		g.mu.Lock()
		hash = g.dummy
		g.mu.Unlock()
	}
	return bcrypt.CompareHashAndPassword(hash, []byte(pass)) == nil, true
}

// clientAddr is the address the request came from: the host of
// RemoteAddr, or, when the proxy in front is trusted (ProxyHeaders), the
// last address of X-Forwarded-For: the one the proxy appended.
func (p *Posting) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if p.opts.ProxyHeaders {
		if v := r.Header.Values("X-Forwarded-For"); len(v) > 0 {
			parts := strings.Split(v[len(v)-1], ",")
			if a := strings.TrimSpace(parts[len(parts)-1]); a != "" && len(a) <= 64 {
				return a
			}
		}
	}
	return host
}
