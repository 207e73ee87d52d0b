package newsfeed

// Ingest authentication: the htpasswd file, the password check and the
// per-address limit on failed logins (see incoming.go for the rules).

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/newsflow/newsflow/machine/ingest"
)

// Failed logins are limited per address by a token bucket: authBurst
// failures at once, then one more every authRefill. An address with no
// tokens left gets 481 and close at once, without a password check.
const (
	authBurst   = 5
	authRefill  = 30 * time.Second
	authWorkers = 2    // password checks running at once (bcrypt is CPU-bound)
	authAddrs   = 4096 // addresses remembered; full buckets are forgotten first
)

// ingestAuth is the relay's authentication and TLS state, fixed at Open.
type ingestAuth struct {
	users   map[string][]byte // ingest_users: user -> bcrypt hash; nil when not set
	tls     *tls.Config       // tls_cert/tls_key; nil when not set
	feeders []*feeder         // [[incoming]], in file order
	sem     chan struct{}     // bounds concurrent password checks
	fails   failLimiter

	failed  atomic.Int64 // logins refused for bad credentials
	blocked atomic.Int64 // logins refused because the address failed too often
	groups  atomic.Int64 // articles refused by a feeder's groups
	log     logEvery     // bounds the log lines for failures
}

// openAuth loads the users file and the TLS key pair and prepares the
// feeders.
func (r *Relay) openAuth() error {
	a := &r.auth
	a.sem = make(chan struct{}, authWorkers)
	for i := range r.cfg.Incoming {
		a.feeders = append(a.feeders, &feeder{cfg: &r.cfg.Incoming[i]})
	}
	if r.cfg.IngestUsers != "" {
		users, err := loadUsers(r.cfg.IngestUsers)
		if err != nil {
			return fmt.Errorf("relay: ingest_users: %w", err)
		}
		a.users = users
	}
	tc, err := loadTLS(r.cfg)
	if err != nil {
		return err
	}
	a.tls = tc
	if tc != nil && r.cfg.Runtime == "epoll" {
		r.log.Info("tls_cert is set: ingest connections run on the goroutine runtime (crypto/tls needs a net.Conn); peers without TLS stay on epoll")
	}
	return nil
}

// loadUsers reads an htpasswd file.
func loadUsers(name string) (map[string][]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	users, err := parseUsers(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return users, nil
}

// parseUsers reads htpasswd lines "user:hash"; blank lines and lines
// starting with '#' are skipped. Only bcrypt hashes ($2a$, $2b$, $2y$, as
// "htpasswd -B" writes them) are accepted: the others htpasswd can write
// (MD5-crypt, SHA-1, crypt) are weak.
func parseUsers(b []byte) (map[string][]byte, error) {
	users := map[string][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("line %d: want user:bcrypt-hash", n)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("line %d: user %q: not a bcrypt hash (make it with htpasswd -B): %v", n, user, err)
		}
		if _, dup := users[user]; dup {
			return nil, fmt.Errorf("line %d: user %q listed twice", n, user)
		}
		users[user] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return users, nil
}

// dummyHash is checked for an unknown user, so that a lookup of a
// name costs what a check of a password does.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("newsflow"), bcrypt.MinCost)

// auth answers an AUTHINFO PASS: at once when the address is blocked,
// otherwise after a password check on another goroutine.
func (ic *inConn) auth(now time.Time, e ingest.Auth) {
	a := &ic.r.auth
	if !a.fails.allow(ic.addr, now) {
		a.blocked.Add(1)
		ic.logAuth(now, "ingest login refused: too many failures from this address", e.User)
		ic.authDone(now, e.Seq, ingest.AuthBlocked)
		return
	}
	hash, known := a.users[e.User]
	if !known {
		hash = dummyHash
	}
	go func() {
		a.sem <- struct{}{}
		ok := bcrypt.CompareHashAndPassword(hash, []byte(e.Password)) == nil && known
		<-a.sem
		ic.mb.Put(func(now time.Time) { ic.authChecked(now, e, ok) })
	}()
}

// authChecked finishes an AUTHINFO PASS once the password is checked.
func (ic *inConn) authChecked(now time.Time, e ingest.Auth, ok bool) {
	r := ic.r
	if !ok {
		r.auth.failed.Add(1)
		v := ingest.AuthRejected
		if r.auth.fails.fail(ic.addr, now) {
			v = ingest.AuthBlocked
		}
		ic.logAuth(now, "ingest login failed", e.User)
		ic.authDone(now, e.Seq, v)
		return
	}
	if f := r.feederByUser(e.User); f != nil {
		if why := r.joinFeeder(ic, f); why != "" {
			r.ingest.limited.Add(1)
			r.log.Warn("ingest login refused", "remote", ic.remote, "user", e.User, "reason", why)
			ic.authDone(now, e.Seq, ingest.AuthLimited)
			return
		}
	}
	ic.user = e.User
	r.log.Info("ingest login", "remote", ic.remote, "user", e.User, "feeder", ic.feederName())
	ic.authDone(now, e.Seq, ingest.AuthAccepted)
}

func (ic *inConn) authDone(now time.Time, seq uint64, v ingest.AuthVerdict) {
	if err := ic.g.AuthDone(now, seq, v); err != nil {
		ic.r.log.Error("ingest auth", "err", err)
	}
}

// logAuth logs a failed login, at most one line per limitLogEvery.
func (ic *inConn) logAuth(now time.Time, msg, user string) {
	if ok, n := ic.r.auth.log.ok(now); ok {
		ic.r.log.Warn(msg, "remote", ic.remote, "user", user, "failed_total", ic.r.auth.failed.Load(),
			"blocked_total", ic.r.auth.blocked.Load(), "suppressed_since_last_line", n)
	}
}

// feederName names the connection's [[incoming]] entry, "" for none.
func (ic *inConn) feederName() string {
	if ic.feeder == nil {
		return ""
	}
	return ic.feeder.cfg.Name
}

// failLimiter is a token bucket of failed logins per address.
type failLimiter struct {
	mu sync.Mutex
	m  map[netip.Addr]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// refill brings b up to now.
func (b *bucket) refill(now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(authBurst, b.tokens+float64(d)/float64(authRefill))
		b.at = now
	}
}

// allow reports whether addr may try a password now.
func (l *failLimiter) allow(addr netip.Addr, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[addr]
	if !ok {
		return true
	}
	b.refill(now)
	return b.tokens >= 1
}

// fail counts a failed login from addr and reports whether the address
// is now blocked.
func (l *failLimiter) fail(addr netip.Addr, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[netip.Addr]*bucket{}
	}
	b, ok := l.m[addr]
	if !ok {
		if len(l.m) >= authAddrs {
			l.forget(now)
		}
		b = &bucket{tokens: authBurst, at: now}
		l.m[addr] = b
	}
	b.refill(now)
	b.tokens--
	return b.tokens < 1
}

// forget drops the addresses whose buckets are full again, and if that
// frees nothing, one address, so the map stays bounded.
func (l *failLimiter) forget(now time.Time) {
	for a, b := range l.m {
		if b.refill(now); b.tokens >= authBurst {
			delete(l.m, a)
		}
	}
	for a := range l.m {
		if len(l.m) < authAddrs {
			break
		}
		delete(l.m, a)
	}
}
