package newsfeed

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/newsfeed/peerconn"
)

// peer is one peerfeed: its patterns, its queue and its connections.
type peer struct {
	r        *Relay
	cfg      *PeerConfig
	patterns proto.GroupPatterns
	q        *peerQueue
	conn     peerconn.Config // each connection's; TLS is nil without TLS

	// The counters outlive a reload that rebuilds the peer.
	*peerCounters

	dyn   peerconn.Dynamic // when to open connections beyond cfg.Connections
	group peerconn.Group   // the connections: a handshake ends the others' backoff waits

	mu     sync.Mutex
	conns  []*outConn
	done   chan struct{}
	ctx    context.Context    // the connections' context (extra ones start in it)
	cancel context.CancelFunc // ends the connections' context (stop, after the graceful part)
	halted bool               // stop was called: no more connections open
}

// peerCounters are a peer's counters besides its queue's.
type peerCounters struct {
	skips                       Skips // masterfeed: not offered, and why
	offeredBytes, acceptedBytes atomic.Int64
	deferrals                   atomic.Int64 // 431/436 answers (each retried later)
	tooOldCount                 atomic.Int64 // not offered: older than max_age at its turn (maxage.go)
	connects, connFails         atomic.Int64
	extras                      atomic.Int64 // extra connections opened, ever (their ids follow)

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
// patterns, address and the connections' configuration. newPeer adds the
// queue and counters; a reload hands over those of the peer it replaces.
func buildPeer(r *Relay, pc *PeerConfig) (*peer, error) {
	pats, err := proto.ParseGroupPatterns(pc.Groups)
	if err != nil {
		return nil, fmt.Errorf("relay: peer %s: groups: %w", pc.Name, err)
	}
	p := &peer{r: r, cfg: pc, patterns: pats}
	p.conn, err = PeerConnConfig(pc)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	p.conn.BackoffBase = r.opts.BackoffBase
	p.dyn = peerconn.Dynamic{Max: pc.MaxConnections, Window: pc.Window, Interval: time.Second}
	return p, nil
}

// PeerConnConfig is the configuration of a connection to the peer pc, for
// the relay's and the cluster node's connections alike. BackoffBase is
// left for the caller.
func PeerConnConfig(pc *PeerConfig) (peerconn.Config, error) {
	cc := peerconn.Config{
		Name: pc.Name, Addr: net.JoinHostPort(pc.Host, strconv.Itoa(pc.Port)), BindAddr: pc.BindAddress,
		ImplicitTLS: pc.TLS, StartTLS: pc.StartTLS, Streaming: pc.Streaming,
		Feed: feed.Config{Window: pc.Window, ResponseTimeout: pc.ResponseTimeout.D(), NoCheckOff: !pc.NoCheck,
			NoCheckHigh: pc.NoCheckHigh, NoCheckLow: pc.NoCheckLow, NoCheckFilter: pc.NoCheckFilter},
		User: pc.Username, Pass: pc.Password,
		ConnectTimeout: pc.ConnectTimeout.D(), ReconnectMax: pc.ReconnectMax.D(), ExtraIdle: pc.ExtraIdle.D(),
	}
	if pc.TLS || pc.StartTLS {
		t, err := peerconn.TLSConfig(pc.Host, pc.ServerName, pc.TLSVerify, pc.CAFile)
		if err != nil {
			return cc, fmt.Errorf("peer %s: %w", pc.Name, err)
		}
		cc.TLS = t
	}
	return cc, nil
}

// start opens the peer's connections; each reconnects by itself until ctx
// ends.
func (p *peer) start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, p.cancel = context.WithCancel(ctx)
	p.ctx = ctx
	p.done = make(chan struct{})
	var wg sync.WaitGroup
	for i := range p.cfg.Connections {
		c := p.newConn(queue.Conn(i+1), false)
		p.conns = append(p.conns, c)
		wg.Add(1)
		p.r.wg.Add(1)
		go func() {
			defer p.r.wg.Done()
			defer wg.Done()
			c.pc.Run(ctx)
		}()
	}
	go func() { wg.Wait(); close(p.done) }()
}

// newConn makes connection id of the peer; an extra one is beyond
// cfg.Connections (peerconn.Dynamic).
func (p *peer) newConn(id queue.Conn, extra bool) *outConn {
	c := &outConn{p: p, id: id}
	c.pc = peerconn.New(peerconn.Options{Config: p.conn, ID: int(id), Queue: c, Now: p.r.now, Log: p.r.log, Extra: extra,
		Connects: &p.connects, Fails: &p.connFails, Group: &p.group,
		Driver: func(nc net.Conn) (driver.Driver, error) { return p.r.outDriver(nc, p) }})
	return c
}

// scale opens another connection while the articles waiting for the peer
// are more than its connections hold (peerconn.Dynamic), up to
// max_connections, and forgets the extra connections that ended.
func (p *peer) scale(now time.Time) {
	if p.cfg.MaxConnections <= p.cfg.Connections {
		return
	}
	st := p.q.stats()
	waiting := st.Queued + st.Backlog + st.Replay // deferred articles wait on purpose
	p.mu.Lock()
	defer p.mu.Unlock()
	live := make([]*outConn, 0, len(p.conns)+1)
	for _, c := range p.conns {
		if !c.ended.Load() {
			live = append(live, c)
		}
	}
	p.conns = live
	if p.ctx == nil || p.halted || !p.dyn.Grow(now, len(live), waiting) {
		return
	}
	// Extra connections take ids of their own, beyond any the floor
	// uses, so that one still ending never shares an id with a new one.
	c := p.newConn(queue.Conn(1000+p.extras.Add(1)), true)
	p.conns = append(p.conns, c)
	p.r.log.Info("opening another peer connection: articles wait beyond what the open ones hold",
		"peer", p.cfg.Name, "conn", int(c.id), "waiting", waiting, "connections", len(p.conns))
	ctx := p.ctx
	p.r.wg.Add(1)
	go func() {
		defer p.r.wg.Done()
		c.pc.Run(ctx)
		c.ended.Store(true)
	}()
}

// stop closes the peer's connections gracefully: each sends QUIT after the
// answers still due; what stays unanswered goes back to the queue. It waits
// a few seconds at most, then cuts what is left; with wait it also waits
// until every connection has ended (a reload restarting the peer).
func (p *peer) stop(wait bool) {
	p.mu.Lock()
	p.halted = true
	conns := append([]*outConn(nil), p.conns...)
	done, cancel := p.done, p.cancel
	p.mu.Unlock()
	for _, c := range conns {
		c.pc.Stop()
	}
	if done == nil {
		return
	}
	peerconn.WaitStopped(done, p.r.opts.StopTimeout, p.r.log, p.cfg.Name)
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
	return peerconn.KickAll(conns, func(c *outConn) *peerconn.Conn { return c.pc })
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

// outConn is one connection to a peer (peerconn.Conn) and its side of
// the peer's queue: the spoolfs peer queue hands it entries through its
// agent (peeragent.go) and takes the peer's answers.
type outConn struct {
	p      *peer
	id     queue.Conn
	pc     *peerconn.Conn
	ended  atomic.Bool           // an extra connection's Run returned
	hungry atomic.Bool           // the agent found fewer entries than it wanted
	agent  atomic.Pointer[agent] // the session's queue agent

	// Owned by the session's driver goroutine.
	answers []answer // drained, for the agent

	// The message-ids of the resends (queue.Entry.Resend) the agent
	// handed to the feed and not yet answered, so that a 439 to one is
	// logged as refused, as the queue counts it. nResent is its size,
	// read without the lock by every answer.
	resentMu sync.Mutex
	resent   map[string]struct{}
	nResent  atomic.Int64
}

// markResent notes that the entry of id, a resend, goes to the feed.
func (c *outConn) markResent(id string) {
	c.resentMu.Lock()
	if c.resent == nil {
		c.resent = make(map[string]struct{})
	}
	c.resent[id] = struct{}{}
	c.nResent.Store(int64(len(c.resent)))
	c.resentMu.Unlock()
}

// takeResent reports whether id is a resend in flight, and forgets it.
func (c *outConn) takeResent(id string) bool {
	if c.nResent.Load() == 0 {
		return false
	}
	c.resentMu.Lock()
	_, ok := c.resent[id]
	delete(c.resent, id)
	c.nResent.Store(int64(len(c.resent)))
	c.resentMu.Unlock()
	return ok
}

// forgetResent forgets every resend in flight: the session ended, and the
// queue takes back what it had.
func (c *outConn) forgetResent() {
	c.resentMu.Lock()
	clear(c.resent)
	c.nResent.Store(0)
	c.resentMu.Unlock()
}

// Begin starts the session's agent (peerconn.Queue).
func (c *outConn) Begin(_ context.Context, now time.Time) {
	c.p.q.connUp(now, c.id)
	c.agent.Store(c.startAgent())
}

// End settles the session with the queue (peerconn.Queue): see endSession.
func (c *outConn) End(time.Time) {
	ag := c.agent.Swap(nil)
	c.endSession(ag)
}

// Take moves up to n articles the agent made ready (checked against the
// spool: see agent.sendable) to dst (peerconn.Queue).
func (c *outConn) Take(dst []feed.Article, n int) []feed.Article {
	return c.agent.Load().take(dst, n)
}

// Ask hands the agent the answers drained and how many entries to take
// (peerconn.Queue).
func (c *outConn) Ask(credits, prefetch int) {
	c.agent.Load().ask(c.answers, credits, prefetch)
	clear(c.answers)
	c.answers = c.answers[:0]
}

// Answer counts and logs the peer's answer for an article and keeps it
// for the agent to report to the queue (peerconn.Queue). Articles the feed
// gave back stay in flight: the queue takes them back when the connection
// goes down.
func (c *outConn) Answer(now time.Time, a peerconn.Answer) {
	p := c.p
	id := a.Article.MessageID
	resent := c.takeResent(id)
	var o queue.Outcome
	switch a.Outcome {
	case peerconn.Accepted:
		p.acceptedBytes.Add(a.Article.Size)
		p.rates.add(now, 1)
		c.logAnswer(now, id, "accepted", a.Code)
		o = queue.OutcomeAccepted
	case peerconn.Refused:
		c.logAnswer(now, id, "refused", a.Code)
		o = queue.OutcomeRefused
	case peerconn.Rejected:
		if resent {
			// The queue counts it as refused (Queue.Done): the peer
			// may hold it from the earlier offer.
			c.logAnswer(now, id, "refused", a.Code)
		} else {
			p.r.alog.add(now, id, "peer="+p.cfg.Name, "rejected", "code", strconv.Itoa(a.Code), "reason", a.Reason)
		}
		o = queue.OutcomeRejected
	case peerconn.Deferred:
		p.deferrals.Add(1)
		p.r.alog.add(now, id, "peer="+p.cfg.Name, "deferred", "code", strconv.Itoa(a.Code))
		o = queue.OutcomeDeferred
	default:
		return
	}
	c.answers = append(c.answers, answer{id: id, o: o})
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
	c.forgetResent()
	p.q.connDown(p.r.now(), c.id)
}

// logAnswer writes a peer's answer to the article log.
func (c *outConn) logAnswer(now time.Time, id, verdict string, code int) {
	if a := c.p.r.alog; a != nil {
		a.add(now, id, "peer="+c.p.cfg.Name, verdict, "code", strconv.Itoa(code))
	}
}

// readAhead is the window of each connection's ReadAhead: about a hundred
// 2 KB articles, a window's worth of commands.
const readAhead = 256 << 10

// scaleLoop looks at the peers with max_connections above connections once
// a second (peer.scale) until ctx ends.
func (r *Relay) scaleLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if r.opts.NoConnect {
				continue
			}
			now := r.now()
			for _, p := range r.peerList() {
				p.scale(now)
			}
		}
	}
}
