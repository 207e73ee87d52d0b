package newsfeed

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/driver"
)

// peer is one peerfeed: its patterns, its queue and its connections.
type peer struct {
	r        *Relay
	cfg      *PeerConfig
	patterns proto.GroupPatterns
	q        *peerQueue
	tls      *tls.Config // nil without TLS
	addr     string

	// The counters outlive a reload that rebuilds the peer.
	*peerCounters

	mu     sync.Mutex
	conns  []*outConn
	done   chan struct{}
	cancel context.CancelFunc // ends the connections' context (stop, after the graceful part)
}

// peerCounters are a peer's counters besides its queue's.
type peerCounters struct {
	skips                       Skips // masterfeed: not offered, and why
	offeredBytes, acceptedBytes atomic.Int64
	deferrals                   atomic.Int64 // 431/436 answers (each retried later)
	tooOldCount                 atomic.Int64 // not offered: older than max_age at its turn (maxage.go)
	connects, connFails         atomic.Int64

	last  statsSnap // the previous stats line, for rates (statsLoop only)
	rates rateRing  // accepted articles per second, the last minute (rate.go)
}

// newPeer prepares a peer: patterns, TLS, and its queue recovered from
// the backlog directory.
func newPeer(r *Relay, pc *PeerConfig, backlogDir string) (*peer, error) {
	p, err := buildPeer(r, pc)
	if err != nil {
		return nil, err
	}
	p.peerCounters = &peerCounters{}
	qc := queue.DefaultConfig(pc.Name)
	qc.QueueSize = pc.QueueSize
	qc.DeferDelay = pc.DeferDelay.D()
	qc.DeferMaxDelay = pc.DeferMaxDelay.D()
	qc.MaxDefers = pc.MaxDefers
	if pc.MaxDefers == 0 {
		qc.MaxDefers = -1 // none allowed: the first deferral drops
	}
	qc.BacklogMaxBytes = int64(pc.BacklogMaxBytes)
	qc.BacklogMaxAge = pc.BacklogMaxAge.D()
	if r.opts.QueueConfig != nil {
		r.opts.QueueConfig(&qc)
	}
	p.q, err = openPeerQueue(backlogDir, qc, r.now, r.log)
	if err != nil {
		return nil, fmt.Errorf("relay: peer %s: %w", pc.Name, err)
	}
	p.q.setWake(p.wake)
	return p, nil
}

// buildPeer makes the parts of a peer its configuration determines:
// patterns, address and TLS. newPeer adds the queue and counters; a reload
// hands over those of the peer it replaces.
func buildPeer(r *Relay, pc *PeerConfig) (*peer, error) {
	pats, err := proto.ParseGroupPatterns(pc.Groups)
	if err != nil {
		return nil, fmt.Errorf("relay: peer %s: groups: %w", pc.Name, err)
	}
	p := &peer{r: r, cfg: pc, patterns: pats, addr: net.JoinHostPort(pc.Host, strconv.Itoa(pc.Port))}
	if pc.TLS || pc.StartTLS {
		p.tls, err = peerTLS(pc)
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// peerTLS builds the client TLS configuration: verification on unless
// tls_verify = false, roots from ca_file when given.
func peerTLS(pc *PeerConfig) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: pc.ServerName, MinVersion: tls.VersionTLS12}
	if cfg.ServerName == "" {
		cfg.ServerName = pc.Host
	}
	if pc.TLSVerify != nil && !*pc.TLSVerify {
		cfg.InsecureSkipVerify = true
	}
	if pc.CAFile != "" {
		pem, err := os.ReadFile(pc.CAFile)
		if err != nil {
			return nil, fmt.Errorf("relay: peer %s: ca_file: %w", pc.Name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("relay: peer %s: ca_file %s: no PEM certificates", pc.Name, pc.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// start opens the peer's connections; each reconnects by itself until ctx
// ends.
func (p *peer) start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	var wg sync.WaitGroup
	for i := range p.cfg.Connections {
		c := &outConn{p: p, id: queue.Conn(i + 1), stopped: make(chan struct{}), kick: make(chan struct{}, 1),
			state: "starting"}
		p.conns = append(p.conns, c)
		wg.Add(1)
		p.r.wg.Add(1)
		go func() {
			defer p.r.wg.Done()
			defer wg.Done()
			c.run(ctx)
		}()
	}
	go func() { wg.Wait(); close(p.done) }()
}

// stop closes the peer's connections gracefully: each sends QUIT after the
// answers still due; what stays unanswered goes back to the queue. It waits
// a few seconds at most, then cuts what is left; with wait it also waits
// until every connection has ended (a reload restarting the peer).
func (p *peer) stop(wait bool) {
	p.mu.Lock()
	conns := append([]*outConn(nil), p.conns...)
	done, cancel := p.done, p.cancel
	p.mu.Unlock()
	for _, c := range conns {
		c.stop()
	}
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(p.r.opts.StopTimeout):
		p.r.log.Warn("peer connections slow to close; cutting them", "peer", p.cfg.Name)
	}
	cancel()
	if wait {
		<-done
	}
}

// kick ends the reconnect wait of every connection that waits, with the
// backoff back at its base: `newsfeed ctl kick`. It returns how many were
// waiting.
func (p *peer) kick() int {
	p.mu.Lock()
	conns := append([]*outConn(nil), p.conns...)
	p.mu.Unlock()
	n := 0
	for _, c := range conns {
		c.mu.Lock()
		waiting := c.state == "waiting"
		c.mu.Unlock()
		if waiting {
			n++
		}
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	return n
}

// wake pokes the agents of connections that want work (the queue got
// some).
func (p *peer) wake() {
	p.mu.Lock()
	conns := p.conns
	p.mu.Unlock()
	for _, c := range conns {
		if !c.hungry.Load() {
			continue
		}
		if a := c.agent.Load(); a != nil {
			a.poke()
		}
	}
}

// outConn is one connection to a peer, reconnecting with backoff.
type outConn struct {
	p        *peer
	id       queue.Conn
	mb       driver.Mailbox        // wakes the feed's step: more work, or stop
	hungry   atomic.Bool           // the agent found fewer entries than it wanted
	agent    atomic.Pointer[agent] // the session's queue agent (peeragent.go)
	stopping atomic.Bool
	stopped  chan struct{} // closed by stop: ends a backoff wait
	stopOnce sync.Once
	kick     chan struct{} // ends a backoff wait and resets the backoff (peer.kick)

	mu      sync.Mutex
	state   string // for the status page
	lastErr string
	errAt   time.Time // when lastErr happened
	mode    string
	since   time.Time

	// Owned by the session's driver goroutine.
	f       *feed.Feed
	credits int
	closing bool
	answers []answer       // drained, for the agent
	offers  []feed.Article // taken from the agent, being offered
	closed  error          // the feed's Closed event, why the session ended
}

func (c *outConn) setState(state, lastErr string) {
	c.mu.Lock()
	c.state = state
	if lastErr != "" {
		c.lastErr, c.errAt = lastErr, c.p.r.now()
	}
	c.since = c.p.r.now()
	c.mu.Unlock()
}

// stop asks the connection to finish: the feed sends QUIT after the
// answers still due (step sees stopping), and a backoff wait ends.
func (c *outConn) stop() {
	c.stopping.Store(true)
	c.stopOnce.Do(func() { close(c.stopped) })
	c.mb.Wake()
}

// run connects, feeds, and reconnects with growing backoff and jitter
// until ctx ends or the relay stops.
func (c *outConn) run(ctx context.Context) {
	r := c.p.r
	base := r.opts.BackoffBase
	ceiling := c.p.cfg.ReconnectMax.D()
	backoff := min(base, ceiling)
	for ctx.Err() == nil && !c.stopping.Load() {
		began := r.now()
		fed, err := c.session(ctx)
		if ctx.Err() != nil || c.stopping.Load() {
			break
		}
		if fed && r.now().Sub(began) > 10*time.Second {
			backoff = min(base, ceiling) // it worked for a while: start over
		}
		c.p.connFails.Add(1)
		if errors.Is(err, errUnreadableBody) {
			// An article could not be read; the peer did nothing wrong.
			// The article is settled as missing when it comes again:
			// reconnect at the base delay, without growing it.
			backoff = min(base, ceiling)
		}
		wait := jitter(backoff)
		c.setState("waiting", err.Error())
		r.log.Warn("peer connection failed; retrying", "peer", c.p.cfg.Name, "conn", int(c.id),
			"err", err, "retry_in", wait.Round(time.Millisecond))
		t := time.NewTimer(wait)
		kicked := false
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-c.stopped:
		case <-c.kick:
			kicked = true
		}
		t.Stop()
		switch {
		case kicked:
			r.log.Info("peer connection kicked: connecting now", "peer", c.p.cfg.Name, "conn", int(c.id))
			backoff = min(base, ceiling)
		case !errors.Is(err, errUnreadableBody):
			backoff = min(2*backoff, ceiling)
		}
	}
	c.setState("stopped", "")
}

// jitter spreads d by ±25%.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + time.Duration(rand.Int64N(int64(d)/2+1))
}

// session runs one connection: dial, handshake, feed. fed reports that the
// feed machine started.
func (c *outConn) session(ctx context.Context) (fed bool, err error) {
	p, r := c.p, c.p.r
	cfg := p.cfg
	c.setState("connecting", "")
	var implicit *tls.Config
	if cfg.TLS {
		implicit = p.tls
	}
	// One deadline for the dial, TLS and the NNTP handshake.
	dctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout.D())
	defer cancel()
	nc, err := driver.Dial(dctx, p.addr, cfg.ConnectTimeout.D(), implicit)
	if err != nil {
		return false, err
	}
	gc, err := r.outDriver(nc, p)
	if err != nil {
		return false, err
	}
	defer gc.Close()

	hcfg := handshake.Config{Stream: cfg.Streaming != "off", User: cfg.Username, Pass: cfg.Password,
		StepTimeout: cfg.ConnectTimeout.D()}
	if cfg.StartTLS {
		hcfg.TLS = handshake.TLSRequired
	}
	ready, left, err := driver.Handshake(dctx, gc, r.now(), hcfg)
	if err != nil {
		return false, err
	}
	if cfg.Streaming == "on" && !ready.Streaming {
		return false, errors.New("peer does not stream (MODE STREAM refused) and streaming = \"on\"")
	}
	p.connects.Add(1)
	now := r.now()
	c.f = feed.New(now, feed.Config{
		Streaming:       ready.Streaming,
		Window:          cfg.Window,
		ResponseTimeout: cfg.ResponseTimeout.D(),
		User:            cfg.Username,
		Pass:            cfg.Password,
	})
	c.credits, c.closing, c.closed = 0, false, nil
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
	r.log.Info("peer connected", "peer", cfg.Name, "conn", int(c.id), "addr", p.addr, "mode", mode, "tls", cfg.TLS || ready.TLS)

	p.q.connUp(now, c.id)
	ag := c.startAgent()
	c.agent.Store(ag)
	c.mb.Attach(gc)
	err = gc.Run(ctx, c.f, c.step)
	c.mb.Detach()
	c.agent.Store(nil)
	c.endSession(ag)
	c.f = nil
	if c.closed != nil {
		err = c.closed // the feed knows best why it ended
	}
	if err == nil {
		err = errors.New("connection closed")
	}
	return true, err
}

// endSession settles the session with the queue once its run ended: it
// stops the agent, reports the answers the agent had not reported yet, and
// only then tells the queue the connection is down, which takes back what
// is left in flight (the agent's ready entries among it). In the other
// order the answered articles would go back to the queue and be sent
// again.
func (c *outConn) endSession(ag *agent) {
	p := c.p
	p.q.doneBatch(p.r.now(), c.id, append(ag.stop(), c.answers...))
	clear(c.answers)
	c.answers = c.answers[:0]
	c.hungry.Store(false)
	p.q.connDown(p.r.now(), c.id)
}

// step runs after every input of the feed (Run's goroutine): it drains
// the feed's events, offers what the agent made ready while the feed has
// room, and hands the agent the answers and how much more to take.
func (c *outConn) step(now time.Time) error {
	if c.stopping.Load() && !c.closing {
		c.closing = true
		c.f.Close(now)
	}
	ag := c.agent.Load()
	for {
		c.drain(now)
		if c.closing || c.f.Closed() || c.credits <= 0 {
			break
		}
		if c.offer(now, ag) == 0 {
			break
		}
	}
	credits, prefetch := c.credits, c.p.cfg.Window
	if c.closing || c.f.Closed() {
		credits, prefetch = 0, 0
	}
	ag.ask(c.answers, credits, prefetch)
	clear(c.answers)
	c.answers = c.answers[:0]
	return nil
}

// drain handles the feed's events.
func (c *outConn) drain(now time.Time) {
	p := c.p
	for {
		ev, ok := c.f.NextEvent()
		if !ok {
			return
		}
		switch e := ev.(type) {
		case feed.WantMore:
			c.credits += e.N
		case feed.Accepted:
			p.acceptedBytes.Add(e.Article.Size)
			p.rates.add(now, 1)
			c.logAnswer(now, e.Article.MessageID, "accepted", 239, 235)
			c.answer(e.Article.MessageID, queue.OutcomeAccepted)
		case feed.Refused:
			c.logAnswer(now, e.Article.MessageID, "refused", 438, 435)
			c.answer(e.Article.MessageID, queue.OutcomeRefused)
		case feed.Rejected:
			p.r.alog.add(now, e.Article.MessageID, "peer="+p.cfg.Name, "rejected", "code", strconv.Itoa(e.Code), "reason", e.Reason)
			if e.Code != 0 {
				p.r.log.Debug("article rejected by peer", "peer", p.cfg.Name, "id", e.Article.MessageID, "code", e.Code, "reason", e.Reason)
			} else {
				p.r.log.Warn("article not offerable", "peer", p.cfg.Name, "id", e.Article.MessageID, "reason", e.Reason)
			}
			c.answer(e.Article.MessageID, queue.OutcomeRejected)
		case feed.Deferred:
			p.deferrals.Add(1)
			p.r.alog.add(now, e.Article.MessageID, "peer="+p.cfg.Name, "deferred", "code", strconv.Itoa(e.Code))
			c.answer(e.Article.MessageID, queue.OutcomeDeferred)
		case feed.Requeue:
			// The queue takes them back when the connection goes down.
		case feed.ModeChanged:
			p.r.log.Info("feed mode changed", "peer", p.cfg.Name, "conn", int(c.id), "from", e.From.String(), "to", e.To.String(), "percent", e.Percent, "why", e.Why)
			c.mu.Lock()
			c.mode = e.To.String()
			c.mu.Unlock()
		case feed.Warning:
			p.r.log.Warn("peer misbehaved", "peer", p.cfg.Name, "id", e.Article.MessageID, "response", e.Response, "text", e.Text)
		case feed.Closed:
			c.closed = e
			p.r.log.Debug("peer connection closed", "peer", p.cfg.Name, "conn", int(c.id), "reason", e.Error())
		}
	}
}

// answer keeps the peer's answer for an article, for the agent to
// report to the queue.
func (c *outConn) answer(id string, o queue.Outcome) {
	c.answers = append(c.answers, answer{id: id, o: o})
}

// offer offers the feed up to credits articles that the agent made ready
// (checked against the spool: see agent.sendable), and returns how many.
func (c *outConn) offer(now time.Time, ag *agent) int {
	c.offers = ag.take(c.offers[:0], c.credits)
	for _, a := range c.offers {
		c.f.Offer(now, a)
		c.credits--
	}
	n := len(c.offers)
	clear(c.offers)
	return n
}

// logAnswer writes a peer's answer to the article log, with the code its
// mode implies: the streaming one, or IHAVE's.
func (c *outConn) logAnswer(now time.Time, id, verdict string, streamCode, ihaveCode int) {
	a := c.p.r.alog
	if a == nil {
		return
	}
	c.mu.Lock()
	code := streamCode
	if c.mode == "ihave" {
		code = ihaveCode
	}
	c.mu.Unlock()
	a.add(now, id, "peer="+c.p.cfg.Name, verdict, "code", strconv.Itoa(code))
}

// readAhead is the window of each connection's ReadAhead: about a hundred
// 2 KB articles, a window's worth of commands.
const readAhead = 256 << 10
