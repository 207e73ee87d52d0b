// Package peerconn feeds a peer over one connection, for the relay and the
// cluster node alike. A Conn dials (TCP from the configured source address,
// then TLS for nntps), runs the NNTP handshake, drives machine/feed with the
// articles its Queue hands over, reports the peer's answers to the Queue,
// and reconnects with a growing, jittered backoff that Kick cuts short. It
// reads the time from the injected clock.
//
// What differs between the relay and the cluster is the Queue: where the
// next articles come from, and how an answered article is settled (in the
// relay's spoolfs peer queue, or acknowledged in JetStream).
//
// The connections of one peer share a Group: when one of them completes
// its handshake, the others that wait out a backoff retry at once (see
// Group).
//
// A session that ends because a stored article cannot be read (an error
// wrapping ErrUnreadableBody) reconnects at the base delay without growing
// it: the peer did nothing wrong, and the Queue settles the article as
// missing when it comes again.
package peerconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/runtime/driver"
)

// ErrUnreadableBody marks a session that ended because an article could
// not be read from the store.
var ErrUnreadableBody = errors.New("stored article cannot be read")

// Config is what one connection to a peer needs of the peer's
// configuration.
type Config struct {
	Name     string      // the peer, for logs
	Addr     string      // host:port
	BindAddr string      // source address of the connection; "" lets the system pick
	TLS      *tls.Config // the client TLS configuration; nil without TLS
	// ImplicitTLS runs TLS from the first byte (nntps); StartTLS asks
	// for it with STARTTLS after the greeting.
	ImplicitTLS, StartTLS bool
	// Streaming is "auto" (MODE STREAM, IHAVE when refused), "on"
	// (streaming required) or "off" (IHAVE only).
	Streaming string
	// Feed is the feed machine's configuration; Streaming and the
	// credentials are set from the handshake and User, Pass.
	Feed       feed.Config
	User, Pass string
	// ConnectTimeout bounds the dial, TLS and the NNTP handshake together.
	ConnectTimeout time.Duration
	// BackoffBase is the first reconnect delay; it doubles after each
	// failure up to ReconnectMax, and Kick or ten seconds of feeding
	// bring it back.
	BackoffBase, ReconnectMax time.Duration
	// ExtraIdle is how long a connection opened beyond the peer's floor
	// (Options.Extra) stays with nothing to send before it closes.
	ExtraIdle time.Duration
}

// Outcome is the peer's answer for an article, as a Queue settles it.
type Outcome uint8

// Outcomes of an offered article.
const (
	Accepted Outcome = iota + 1 // the peer took it
	Refused                     // the peer does not want it (it has it)
	Rejected                    // the peer refused it for good, or it could not be offered (Code 0)
	Deferred                    // the peer asks for it later
	Requeued                    // the feed gave it back unanswered (the connection is ending)
)

// Answer is what became of one offered article.
type Answer struct {
	Article feed.Article
	Outcome Outcome
	// Code is the peer's response code (the IHAVE or the streaming one,
	// as the connection's mode was); 0 for Requeued and for an article
	// that could not be offered.
	Code   int
	Reason string // Rejected: the peer's text, or why it could not be offered
}

// Queue is where a Conn's articles come from and where the peer's answers
// go. Begin, Take, Answer and Ask run on the driver's goroutine (Begin and
// End on the Conn's own, between runs); Take and Ask after every input of
// the feed machine.
type Queue interface {
	// Begin starts a session: the feed machine runs until ctx ends.
	// Articles that become ready later are announced with Conn.Wake.
	Begin(ctx context.Context, now time.Time)
	// Take appends up to n articles ready to offer to dst.
	Take(dst []feed.Article, n int) []feed.Article
	// Answer settles one offered article.
	Answer(now time.Time, a Answer)
	// Ask says how many articles the feed machine has room for (credits)
	// and how many more the Queue may keep ready beyond them (prefetch);
	// both are 0 while the connection is closing.
	Ask(credits, prefetch int)
	// End ends the session after its run: what was taken and not
	// answered goes back to the queue.
	End(now time.Time)
}

// Options make a Conn.
type Options struct {
	Config Config
	ID     int // the connection's number within its peer, from 1
	Queue  Queue
	// Driver returns the driver that runs the connection nc (nc belongs
	// to it afterwards).
	Driver func(nc net.Conn) (driver.Driver, error)
	Now    func() time.Time // the clock (default time.Now)
	Log    *slog.Logger
	// Extra marks a connection opened beyond the peer's floor (Dynamic):
	// it sends QUIT after Config.ExtraIdle with nothing to send, and Run
	// returns when its one session ends, without reconnecting.
	Extra bool
	// Connects and Fails, when set, count the sessions that reached the
	// feed and the failed or ended sessions that led to a reconnect.
	Connects, Fails *atomic.Int64
	// Group, when set, holds the connections to the same peer: a
	// handshake one of them completes ends the others' backoff waits.
	Group *Group
}

// Group ties together the connections to one peer. When one of them
// completes its handshake the peer is back, and the others that wait out
// a reconnect backoff (up to reconnect_max) after a connect that failed
// retry at once, each with a connect of its own; one that fails again
// waits on with its backoff grown as usual. While none gets through, no
// wait is cut short: a peer that stays down sees no more connects than the
// backoff allows. A wait after a connect that completed its handshake is
// never cut short either, so a peer that drops every connection after the
// handshake gets no more handshakes than the backoff allows, however many
// connections it has.
//
// The zero Group is ready to use.
type Group struct {
	mu  sync.Mutex
	ups uint64        // handshakes completed by the group's connections
	up  chan struct{} // closed at the next handshake; nil until watched
}

// connected counts a handshake and wakes the connections watching.
func (g *Group) connected() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ups++
	if g.up != nil {
		close(g.up)
		g.up = nil
	}
}

// handshakes returns how many handshakes the group's connections have
// completed.
func (g *Group) handshakes() uint64 {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ups
}

// after returns a channel closed once the group's handshakes pass seen:
// closed already when they have. It is nil (never ready) without a group.
func (g *Group) after(seen uint64) <-chan struct{} {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ups != seen {
		return closedChan
	}
	if g.up == nil {
		g.up = make(chan struct{})
	}
	return g.up
}

// closedChan is a channel that is always ready.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Conn is one connection to a peer, reconnecting until stopped.
type Conn struct {
	o        Options
	log      *slog.Logger
	mb       driver.Mailbox // wakes the feed's step: more work, or stop
	stopping atomic.Bool
	stopped  chan struct{} // closed by Stop: ends a backoff wait
	stopOnce sync.Once
	kick     chan struct{} // ends a backoff wait and resets the backoff

	mu      sync.Mutex
	state   string // for the status page
	lastErr string
	errAt   time.Time // when lastErr happened
	retryAt time.Time // while waiting: when the wait ends, unless cut short
	mode    string
	since   time.Time

	// Owned by the session's driver goroutine.
	f       *feed.Feed
	credits int
	closing bool
	ihave   bool           // the feed offers with IHAVE: the answers' codes are IHAVE's
	offers  []feed.Article // taken from the Queue, being offered
	closed  error          // the feed's Closed event, why the session ended

	handshook bool // Run's goroutine: the last connect completed its handshake
}

// New makes a Conn; Run runs it.
func New(o Options) *Conn {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Connects == nil {
		o.Connects = new(atomic.Int64)
	}
	if o.Fails == nil {
		o.Fails = new(atomic.Int64)
	}
	return &Conn{o: o, log: o.Log.With("peer", o.Config.Name, "conn", o.ID), stopped: make(chan struct{}),
		kick: make(chan struct{}, 1), state: "starting", since: o.Now()}
}

// Status is a connection's state for the status page.
type Status struct {
	ID        int
	State     string    // starting, connecting, feeding, waiting, stopped
	Mode      string    // check, takethis, ihave, streaming (until the feed says more)
	LastErr   string    // the last error, kept after the connection recovers
	LastErrAt time.Time // when LastErr happened
	Since     time.Time // when State began
	// RetryAt is when a waiting connection connects again, from its
	// backoff (a kick or another connection's handshake may come
	// first); zero in the other states.
	RetryAt time.Time
}

// Status returns the connection's state now.
func (c *Conn) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Status{ID: c.o.ID, State: c.state, Mode: c.mode, LastErr: c.lastErr, LastErrAt: c.errAt, Since: c.since,
		RetryAt: c.retryAt}
}

func (c *Conn) setState(state, lastErr string) {
	c.setStateRetry(state, lastErr, time.Time{})
}

// setStateRetry sets the state, with the time of the next connect for
// "waiting".
func (c *Conn) setStateRetry(state, lastErr string, retryAt time.Time) {
	c.mu.Lock()
	c.state = state
	if lastErr != "" {
		c.lastErr, c.errAt = lastErr, c.o.Now()
	}
	c.since = c.o.Now()
	c.retryAt = retryAt
	c.mu.Unlock()
}

// Wake asks for a step of the running feed: the Queue has articles ready,
// or a flag step reads has changed.
func (c *Conn) Wake() { c.mb.Wake() }

// Stop asks the connection to finish: the feed sends QUIT after the
// answers still due, and a backoff wait ends. Run returns afterwards.
func (c *Conn) Stop() {
	c.stopping.Store(true)
	c.stopOnce.Do(func() { close(c.stopped) })
	c.mb.Wake()
}

// Stopping reports whether Stop was called.
func (c *Conn) Stopping() bool { return c.stopping.Load() }

// WaitStopped waits for done (closed when a peer's connections have all
// returned) at most timeout, and logs it when they were slower.
func WaitStopped(done <-chan struct{}, timeout time.Duration, log *slog.Logger, peer string) {
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(timeout):
		log.Warn("peer connections slow to close; cutting them", "peer", peer)
	}
}

// KickAll kicks the connections that conn finds in conns (a peer's, in
// the relay or a cluster node) and returns how many were waiting.
func KickAll[C any](conns []C, conn func(C) *Conn) int {
	n := 0
	for _, c := range conns {
		if conn(c).Kick() {
			n++
		}
	}
	return n
}

// Kick ends a reconnect wait now, with the backoff back at its base; it
// reports whether the connection was waiting.
func (c *Conn) Kick() bool {
	c.mu.Lock()
	waiting := c.state == "waiting"
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return waiting
}

// Run connects, feeds, and reconnects with growing backoff and jitter
// until ctx ends or Stop is called.
func (c *Conn) Run(ctx context.Context) {
	cfg := &c.o.Config
	base := min(cfg.BackoffBase, cfg.ReconnectMax)
	backoff := base
	for ctx.Err() == nil && !c.stopping.Load() {
		began := c.o.Now()
		// A sibling's handshake after this connect begins ends the wait
		// that follows, when this connect did not get that far: the peer
		// is back (see Group).
		seen := c.o.Group.handshakes()
		c.handshook = false
		fed, err := c.session(ctx)
		if ctx.Err() != nil || c.stopping.Load() {
			break
		}
		if c.o.Extra {
			c.log.Info("extra peer connection closed", "err", err)
			break
		}
		c.o.Fails.Add(1)
		unreadable := errors.Is(err, ErrUnreadableBody)
		if (fed && c.o.Now().Sub(began) > 10*time.Second) || unreadable {
			backoff = base // it worked for a while, or the article was at fault
		}
		wait := jitter(backoff)
		c.setStateRetry("waiting", err.Error(), c.o.Now().Add(wait))
		c.log.Warn("peer connection failed; retrying", "err", err, "retry_in", wait.Round(time.Millisecond))
		var back <-chan struct{}
		if !c.handshook {
			back = c.o.Group.after(seen)
		}
		t := time.NewTimer(wait)
		kicked := false
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-c.stopped:
		case <-c.kick:
			kicked = true
		case <-back:
			c.log.Info("another connection to the peer connected: connecting now")
		}
		t.Stop()
		if kicked {
			c.log.Info("peer connection kicked: connecting now")
		}
		backoff = nextBackoff(backoff, base, cfg.ReconnectMax, kicked, unreadable)
	}
	c.setState("stopped", "")
}

// nextBackoff is the reconnect delay after a wait of backoff: back at
// base after a kick, unchanged after a session an unreadable article
// ended, else doubled up to ceiling.
func nextBackoff(backoff, base, ceiling time.Duration, kicked, unreadable bool) time.Duration {
	switch {
	case kicked:
		return base
	case unreadable:
		return backoff
	}
	return min(2*backoff, ceiling)
}

// jitter spreads d by ±25%.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + time.Duration(rand.Int64N(int64(d)/2+1))
}

// Dial opens a TCP connection to addr within timeout, from bindAddr when
// it is not "", and runs the TLS client handshake when implicitTLS is not
// nil, inside the same deadline. Errors say which step failed.
func Dial(ctx context.Context, addr, bindAddr string, timeout time.Duration, implicitTLS *tls.Config) (net.Conn, error) {
	if bindAddr == "" {
		return driver.Dial(ctx, addr, timeout, implicitTLS)
	}
	ip := net.ParseIP(bindAddr)
	if ip == nil {
		return nil, fmt.Errorf("dial %s: bind address %q is not an IP address", addr, bindAddr)
	}
	return driver.DialFrom(ctx, addr, ip, timeout, implicitTLS)
}

// session runs one connection: dial, handshake, feed. fed reports that the
// feed machine started.
func (c *Conn) session(ctx context.Context) (fed bool, err error) {
	cfg := &c.o.Config
	c.setState("connecting", "")
	var implicit *tls.Config
	if cfg.ImplicitTLS {
		implicit = cfg.TLS
	}
	// One deadline for the dial, TLS and the NNTP handshake.
	dctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	nc, err := Dial(dctx, cfg.Addr, cfg.BindAddr, cfg.ConnectTimeout, implicit)
	if err != nil {
		return false, err
	}
	d, err := c.o.Driver(nc)
	if err != nil {
		return false, err
	}
	defer d.Close()

	hcfg := handshake.Config{Stream: cfg.Streaming != "off", User: cfg.User, Pass: cfg.Pass,
		StepTimeout: cfg.ConnectTimeout}
	if cfg.StartTLS {
		hcfg.TLS = handshake.TLSRequired
	}
	ready, left, err := driver.Handshake(dctx, d, c.o.Now(), hcfg)
	if err != nil {
		return false, err
	}
	if cfg.Streaming == "on" && !ready.Streaming {
		return false, errors.New("peer does not stream (MODE STREAM refused) and streaming = \"on\"")
	}
	c.o.Connects.Add(1)
	c.handshook = true
	c.o.Group.connected()
	now := c.o.Now()
	fc := cfg.Feed
	fc.Streaming, fc.User, fc.Pass = ready.Streaming, cfg.User, cfg.Pass
	if c.o.Extra {
		fc.IdleTimeout = cfg.ExtraIdle
	}
	c.f = feed.New(now, fc)
	c.credits, c.closing, c.closed, c.ihave = 0, false, nil, !ready.Streaming
	if len(left) > 0 {
		if err := c.f.Receive(now, left); err != nil {
			return false, fmt.Errorf("feed: %w", err)
		}
	}
	mode := "ihave"
	if ready.Streaming {
		mode = "streaming"
	}
	c.mu.Lock()
	c.mode = mode
	c.mu.Unlock()
	c.setState("feeding", "")
	c.log.Info("peer connected", "addr", cfg.Addr, "mode", mode, "tls", cfg.ImplicitTLS || ready.TLS)

	sctx, end := context.WithCancel(ctx)
	c.o.Queue.Begin(sctx, now)
	c.mb.Attach(d)
	err = d.Run(ctx, c.f, c.step)
	c.mb.Detach()
	end()
	c.o.Queue.End(c.o.Now())
	c.f = nil
	if c.closed != nil {
		err = c.closed // the feed knows best why it ended
	}
	if err == nil {
		err = errors.New("connection closed")
	}
	return true, err
}

// step runs after every input of the feed (the driver's goroutine): it
// drains the feed's events, offers what the Queue has ready while the feed
// has room, and tells the Queue how much more to make ready.
func (c *Conn) step(now time.Time) error {
	if c.stopping.Load() && !c.closing {
		c.closing = true
		c.f.Close(now)
	}
	for {
		c.drain(now)
		if c.closing || c.f.Closed() || c.credits <= 0 {
			break
		}
		if c.offer(now) == 0 {
			break
		}
	}
	credits, prefetch := c.credits, c.o.Config.Feed.Window
	if c.closing || c.f.Closed() {
		credits, prefetch = 0, 0
	}
	c.o.Queue.Ask(credits, prefetch)
	return nil
}

// offer offers the feed up to credits articles the Queue has ready, and
// returns how many.
func (c *Conn) offer(now time.Time) int {
	c.offers = c.o.Queue.Take(c.offers[:0], c.credits)
	for _, a := range c.offers {
		c.f.Offer(now, a)
		c.credits--
	}
	n := len(c.offers)
	clear(c.offers)
	return n
}

// drain handles the feed's events.
func (c *Conn) drain(now time.Time) {
	q := c.o.Queue
	for {
		ev, ok := c.f.NextEvent()
		if !ok {
			return
		}
		switch e := ev.(type) {
		case feed.WantMore:
			c.credits += e.N
		case feed.Accepted:
			q.Answer(now, Answer{Article: *e.Article, Outcome: Accepted, Code: c.code(239, 235)})
		case feed.Refused:
			q.Answer(now, Answer{Article: e.Article, Outcome: Refused, Code: c.code(438, 435)})
		case feed.Rejected:
			if e.Code != 0 {
				c.log.Debug("article rejected by peer", "id", e.Article.MessageID, "code", e.Code, "reason", e.Reason)
			} else {
				c.log.Warn("article not offerable", "id", e.Article.MessageID, "reason", e.Reason)
			}
			q.Answer(now, Answer{Article: e.Article, Outcome: Rejected, Code: e.Code, Reason: e.Reason})
		case feed.Deferred:
			q.Answer(now, Answer{Article: e.Article, Outcome: Deferred, Code: e.Code})
		case feed.Requeue:
			for _, a := range e.Articles {
				q.Answer(now, Answer{Article: a, Outcome: Requeued})
			}
		case feed.ModeChanged:
			// The percentage to one decimal place, as Why gives it.
			c.log.Info("feed mode changed", "from", e.From.String(), "to", e.To.String(), "percent", math.Round(e.Percent*10)/10, "why", e.Why)
			c.ihave = e.To == feed.ModeIHave
			c.mu.Lock()
			c.mode = e.To.String()
			c.mu.Unlock()
		case feed.Warning:
			c.log.Warn("peer misbehaved", "id", e.Article.MessageID, "response", e.Response, "text", e.Text)
		case feed.Closed:
			c.closed = e
			c.log.Debug("peer connection closed", "reason", e.Error())
		}
	}
}

// code is the response code of an answer in the connection's mode: the
// streaming one, or IHAVE's.
func (c *Conn) code(streaming, ihave int) int {
	if c.ihave {
		return ihave
	}
	return streaming
}

// TLSConfig builds a peer's client TLS configuration: the certificate is
// checked for serverName (host when empty), verification is on unless
// verify is false, and the roots come from caFile when it is given.
func TLSConfig(host, serverName string, verify *bool, caFile string) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if verify != nil && !*verify {
		cfg.InsecureSkipVerify = true
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s: no PEM certificates", caFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
