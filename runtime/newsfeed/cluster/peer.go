package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/goroutine"
	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/newsfeed/peerconn"
)

// Feeding a peer from a cluster node: per peer one durable consumer shared
// by every node, and on this node cfg.Connections connections. Each
// connection runs the feed machine on the goroutine runtime and has a
// puller goroutine that fetches as many queue entries as the feed has room
// for, reads their articles from the store, keeps them in the
// connection's bodies (the runtime's BodySource) and hands them to the
// feed. The
// feed's verdict settles each entry: acknowledged when the peer answered
// for good, a delayed nak when it deferred, a short nak when the
// connection gave it back.
//
// Each connection pulls over a NATS connection of its own, and what its
// subscriptions may have asked for and not yet handled is bounded by
// feedBudget on that connection. A NATS server cuts off a client whose
// deliveries it has queued and not yet written pass max_pending (64 MB by
// default), and what was in flight either way is lost with it: the
// deliveries come back only after ack_wait, and the acks the client had
// written (articles the peer took) are lost too, so those entries come
// back and go to the peer a second time: several connections sharing one
// NATS connection and asking for 4 MB on each of four shards reach those
// 64 MB, and a node that does not read for a moment under load is cut off.
//
// The connection itself (dial, TLS, handshake, the feed, reconnects) is a
// peerconn.Conn, as the relay's; outConn is its Queue.

// peer is one peerfeed on this node.
type peer struct {
	n        *Node
	cfg      *newsfeed.PeerConfig
	patterns proto.GroupPatterns
	queue    *Queue
	conn     peerconn.Config // each connection's
	paused   atomic.Bool     // Node.Pause: no new entries pulled
	group    peerconn.Group  // the connections: a handshake ends the others' backoff waits

	skips                               newsfeed.Skips // masterfeed on this node
	queued                              atomic.Int64
	offered, accepted, refused, rejects atomic.Int64 // answers on this node
	deferrals, dropped, requeued        atomic.Int64
	missing                             atomic.Int64 // expired from the store before their turn
	acceptedBytes, connects, connFails  atomic.Int64

	mu    sync.Mutex
	conns []*outConn
	done  chan struct{}
}

func newPeer(ctx context.Context, n *Node, pc *newsfeed.PeerConfig) (*peer, error) {
	pats, err := proto.ParseGroupPatterns(pc.Groups)
	if err != nil {
		return nil, fmt.Errorf("cluster: peer %s: groups: %w", pc.Name, err)
	}
	p := &peer{n: n, cfg: pc, patterns: pats}
	p.conn, err = newsfeed.PeerConnConfig(pc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	p.conn.BackoffBase = n.opts.BackoffBase
	if pc.MaxConnections > pc.Connections {
		n.log.Warn("max_connections is the relay's: a cluster node opens connections per node, and more nodes add more",
			"peer", pc.Name, "connections", pc.Connections, "max_connections", pc.MaxConnections)
	}
	p.queue, err = n.store.Queue(ctx, pc.Name, QueueLimits{MaxAge: pc.BacklogMaxAge.D()})
	if err != nil {
		return nil, err
	}
	// The connections bind their consumers now, before the node takes
	// articles in: a bind is a few round trips to NATS (more while a
	// consumer's leader settles), which the first articles would
	// otherwise wait for. One that cannot bind now tries again when it
	// runs.
	var wg sync.WaitGroup
	for i := range pc.Connections {
		c := p.newConn(i + 1)
		p.conns = append(p.conns, c)
		wg.Add(1)
		go func() { defer wg.Done(); c.bindOnce(ctx) }()
	}
	wg.Wait()
	return p, nil
}

// start opens the peer's connections on this node.
func (p *peer) start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range p.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(ctx)
		}()
	}
	go func() { wg.Wait(); close(p.done) }()
}

// newConn makes connection id of the peer on this node.
func (p *peer) newConn(id int) *outConn {
	c := &outConn{p: p, id: id, bodies: bodies{m: map[string]*held{}}, arrived: make(chan struct{}, 1)}
	for range p.queue.Consumers {
		c.kicks = append(c.kicks, make(chan struct{}, 1))
	}
	c.pc = peerconn.New(peerconn.Options{Config: p.conn, ID: id, Queue: c, Now: p.n.now, Log: p.n.log,
		Connects: &p.connects, Fails: &p.connFails, Group: &p.group,
		Driver: func(nc net.Conn) (driver.Driver, error) {
			return goroutine.New(nc, goroutine.Options{TLSConfig: p.conn.TLS, Now: p.n.now, Bodies: &c.bodies}), nil
		}})
	return c
}

// kick ends the reconnect wait of the connections that wait; it returns
// how many were waiting.
func (p *peer) kick() int {
	p.mu.Lock()
	conns := p.conns
	p.mu.Unlock()
	return peerconn.KickAll(conns, func(c *outConn) *peerconn.Conn { return c.pc })
}

// setPaused pauses or resumes pulling new entries for the peer on this
// node; it reports whether that changed anything.
func (p *peer) setPaused(on bool) bool {
	if p.paused.Swap(on) == on {
		return false
	}
	p.mu.Lock()
	conns := p.conns
	p.mu.Unlock()
	for _, c := range conns {
		c.pc.Wake() // step asks again, with the new room
	}
	return true
}

// stop closes the connections gracefully (QUIT after the answers due;
// what stays unanswered goes back to the queue), waiting a little.
func (p *peer) stop() {
	p.mu.Lock()
	conns, done := p.conns, p.done
	p.mu.Unlock()
	for _, c := range conns {
		c.pc.Stop()
		c.poke()
	}
	peerconn.WaitStopped(done, p.n.opts.StopTimeout, p.n.log, p.cfg.Name)
}

// held is a queue entry pulled and offered, with its article and how
// many times it was delivered (its metadata, parsed once when pulled).
type held struct {
	msg       jetstream.Msg
	body      []byte
	delivered uint64
}

// bodies are a connection's pulled articles by token (the queue entry's
// stream sequence): the runtime's BodySource while the feed sends them.
type bodies struct {
	mu sync.Mutex
	m  map[string]*held
}

// Body gives the article of token (machine.BodySource).
func (b *bodies) Body(token string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.m[token]
	if !ok {
		return nil, fmt.Errorf("%w: cluster: no article pulled for token %s", peerconn.ErrUnreadableBody, token)
	}
	return h.body, nil
}

func (b *bodies) put(token string, h *held) {
	b.mu.Lock()
	b.m[token] = h
	b.mu.Unlock()
}

// delivered is how many times the entry of token was delivered; 0 when
// it is not held.
func (b *bodies) delivered(token string) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h, ok := b.m[token]; ok {
		return h.delivered
	}
	return 0
}

func (b *bodies) take(token string) *held {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.m[token]
	delete(b.m, token)
	return h
}

// all returns every held entry and forgets them.
func (b *bodies) all() []*held {
	b.mu.Lock()
	defer b.mu.Unlock()
	var hs []*held
	for k, h := range b.m {
		hs = append(hs, h)
		delete(b.m, k)
	}
	return hs
}

// each calls fn for every held entry.
func (b *bodies) each(fn func(*held)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range b.m {
		fn(h)
	}
}

// outConn is one connection to the peer from this node (peerconn.Conn)
// and its Queue: the peer's consumers, pulled on the connection's own NATS
// connection.
type outConn struct {
	p       *peer
	id      int
	pc      *peerconn.Conn
	kicks   []chan struct{} // per shard subscription: room came
	arrived chan struct{}   // entries came into inbox
	inMu    sync.Mutex
	inbox   []jetstream.Msg // entries the subscriptions handed over, for the puller
	bodies  bodies
	// nc carries the connection's pulls, deliveries and acks; cons are
	// the peer's consumers on it, by shard. Set by run before the first
	// session (nc is read by the status page too).
	nc   atomic.Pointer[nats.Conn]
	cons []jetstream.Consumer

	// mu guards the room: want is how many entries the feed has room
	// for that no subscription has taken, pending how many were taken
	// and are not yet ready (or dropped), ready the articles loaded and
	// not yet offered.
	mu      sync.Mutex
	want    int
	pending int
	ready   []feed.Article

	pulling sync.WaitGroup // the session's puller
}

func (c *outConn) poke() {
	for _, k := range c.kicks {
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

// run binds the connection's NATS connection, then feeds (peerconn.Conn.Run)
// until ctx ends or the node stops.
func (c *outConn) run(ctx context.Context) {
	if c.nc.Load() == nil && !c.bind(ctx) {
		c.pc.Stop()
		c.pc.Run(ctx) // returns at once: the state says stopped
		return
	}
	defer func() {
		// The last acks and naks are publishes: flush them, then close.
		nc := c.nc.Load()
		nc.FlushTimeout(5 * time.Second)
		nc.Close()
	}()
	c.pc.Run(ctx)
}

// bind connects the connection's own NATS connection and binds the
// peer's consumers on it, trying again until ctx ends or the node stops
// (false then).
func (c *outConn) bind(ctx context.Context) bool {
	p := c.p
	for ctx.Err() == nil && !c.pc.Stopping() {
		err := c.bindOnce(ctx)
		if err == nil {
			return true
		}
		p.n.log.Warn("peer connection cannot reach NATS; retrying", "peer", p.cfg.Name, "conn", c.id, "err", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
	return false
}

// bindOnce connects the connection's NATS connection and binds the
// peer's consumers on it (within ctx).
func (c *outConn) bindOnce(ctx context.Context) error {
	p := c.p
	nc, err := p.n.connect(fmt.Sprintf("feed %s %d", p.cfg.Name, c.id))
	if err != nil {
		return err
	}
	c.cons, err = p.n.store.Bind(ctx, nc, p.queue)
	if err != nil {
		nc.Close()
		return err
	}
	c.nc.Store(nc)
	return nil
}

// Begin starts the session's puller (peerconn.Queue).
func (c *outConn) Begin(ctx context.Context, _ time.Time) {
	c.mu.Lock()
	c.want, c.pending, c.ready = 0, 0, nil
	c.mu.Unlock()
	c.pulling.Add(1)
	go func() { defer c.pulling.Done(); c.puller(ctx) }()
}

// End waits for the puller, whose ctx ended with the session, and gives
// what the feed still held back to the queue, for any node
// (peerconn.Queue).
func (c *outConn) End(time.Time) {
	c.pulling.Wait()
	for _, h := range c.bodies.all() {
		c.giveBack(h.msg)
	}
	c.mu.Lock()
	c.want, c.pending, c.ready = 0, 0, nil
	c.mu.Unlock()
}

// Take moves up to n loaded articles to dst (peerconn.Queue).
func (c *outConn) Take(dst []feed.Article, n int) []feed.Article {
	c.mu.Lock()
	n = min(n, len(c.ready))
	dst = append(dst, c.ready[:n]...)
	rest := copy(c.ready, c.ready[n:])
	clear(c.ready[rest:])
	c.ready = c.ready[:rest]
	c.mu.Unlock()
	c.p.offered.Add(int64(n))
	return dst
}

// Ask sets how many more entries the subscriptions may take: the feed's
// room less what is ready or on its way; none while the peer is paused
// (peerconn.Queue). The node pulls no further ahead (prefetch): entries
// held unoffered would wait on this node while others could send them.
func (c *outConn) Ask(credits, _ int) {
	c.mu.Lock()
	c.want = max(0, credits-len(c.ready)-c.pending)
	if c.p.paused.Load() {
		c.want = 0
	}
	more := c.want > 0
	c.mu.Unlock()
	if more {
		c.poke()
	}
}

// Answer settles an offered article's queue entry (peerconn.Queue).
func (c *outConn) Answer(_ time.Time, a peerconn.Answer) {
	p := c.p
	switch a.Outcome {
	case peerconn.Accepted:
		p.accepted.Add(1)
		p.acceptedBytes.Add(a.Article.Size)
		c.settle(a.Article, ack)
	case peerconn.Refused:
		p.refused.Add(1)
		c.settle(a.Article, ack)
	case peerconn.Rejected:
		// A 439 or 437 to an entry JetStream delivers again counts as
		// refused: it was offered before (by a node that stopped or
		// died with it, or the peer deferred it), the peer may hold it,
		// and INN answers a duplicate with the same 439 as a rejection.
		if c.bodies.delivered(a.Article.Token) > 1 {
			p.refused.Add(1)
		} else {
			p.rejects.Add(1)
		}
		c.settle(a.Article, ack)
	case peerconn.Deferred:
		p.deferrals.Add(1)
		c.settle(a.Article, deferral)
	case peerconn.Requeued:
		p.requeued.Add(1)
		c.settle(a.Article, requeue)
	}
}

// puller takes queue entries while the feed has room, reads their
// articles and makes them ready for the feed (offer). Each shard's
// consumer delivers to a subscription of the connection's own (nats.go's
// Consume: pulls kept going ahead of need, at most pullMsgs entries or
// pullBytes octets buffered); its handler waits for room in the feed for
// each entry and leaves it in the connection's inbox, which this goroutine
// loads in batches. A Fetch would not do: it ends its subscription after a
// second without a message, and what the server sends later is lost until
// ack_wait brings it back. The puller
// also keeps the entries it holds alive (InProgress) so that a slow
// peer's entries are not redelivered to another node while this one still
// waits for answers.
func (c *outConn) puller(ctx context.Context) {
	p := c.p
	var subs []jetstream.ConsumeContext
	for i, cons := range c.cons {
		cc, err := c.consume(ctx, cons, c.kicks[i])
		if err != nil {
			break // the session ended
		}
		subs = append(subs, cc)
	}
	alive := time.NewTicker(max(time.Second, p.n.store.set.AckWait/3))
	defer alive.Stop()
	for ctx.Err() == nil {
		select {
		case <-c.arrived:
			if msgs := c.takeInbox(); len(msgs) > 0 {
				c.offer(ctx, msgs)
			}
		case <-alive.C:
			c.bodies.each(func(h *held) { h.msg.InProgress() })
		case <-ctx.Done():
		}
	}
	// What the subscriptions still buffer goes to the handler, which
	// gives it back now that ctx is done; then what the inbox holds.
	for _, cc := range subs {
		cc.Drain()
	}
	// One StopTimeout for all of them, not one each.
	timeout := time.NewTimer(p.n.opts.StopTimeout)
	defer timeout.Stop()
drain:
	for _, cc := range subs {
		select {
		case <-cc.Closed():
		case <-timeout.C:
			break drain
		}
	}
	for _, m := range c.takeInbox() {
		c.giveBack(m)
	}
}

// consume subscribes to one shard's consumer, trying again while NATS
// does not answer, until ctx ends.
func (c *outConn) consume(ctx context.Context, cons jetstream.Consumer, kick chan struct{}) (jetstream.ConsumeContext, error) {
	p := c.p
	bytes := pullBytes(len(c.cons), int(c.nc.Load().MaxPayload()))
	for {
		cc, err := cons.Consume(func(m jetstream.Msg) { c.arrive(ctx, m, kick) },
			jetstream.PullMaxMessagesWithBytesLimit(pullMsgs, bytes),
			jetstream.PullHeartbeat(pullHeartbeat), jetstream.PullExpiry(pullExpiry),
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				p.n.log.Debug("queue consume", "peer", p.cfg.Name, "err", err)
			}))
		if err == nil {
			return cc, nil
		}
		p.n.log.Debug("queue consume", "peer", p.cfg.Name, "err", err)
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// pullHeartbeat is how often the server says a pull is alive while it has
// nothing to deliver, and pullExpiry how long a pull lasts. A pull that no
// server took (sent while its consumer had no leader: "no responders") or
// that a leader change lost is noticed when two heartbeats are missed, and
// pulled again: nats.go's defaults (a 30 s pull, heartbeats at half of it)
// left a shard unfed for 30 s. A pull pulled again so may still be alive
// at the server until it expires; with the expiry at four heartbeats, at
// most two of a subscription's pulls are alive as a rule (pullBytes
// allows for that).
const (
	pullHeartbeat = time.Second
	pullExpiry    = 4 * pullHeartbeat
)

// pullMsgs and pullBytes bound the entries a connection's subscription to
// one shard has asked for and not yet handed over. The entries carry their
// articles, and a NATS server cuts a client off whose deliveries it has
// queued pass its max_pending (64 MB by default): all the subscriptions
// of one NATS connection together ask for at most feedBudget, a quarter
// of that (nats.go may ask again before a pull is used up, when a
// heartbeat is late), yet each for at least one message of max_payload.
// So max_pending must be at least 2 x shards x max_payload; the default
// holds for up to 32 shards at the default max_payload of 1 MB.
const (
	pullMsgs     = 128
	maxPullBytes = 4 << 20
	feedBudget   = 16 << 20
)

// pullBytes is the byte limit of each of a connection's subscriptions to
// shards shards, for messages of at most maxPayload octets.
func pullBytes(shards, maxPayload int) int {
	// A pull's byte count includes the subject and headers.
	least := maxPayload + 8<<10
	return max(least, min(maxPullBytes, feedBudget/max(1, shards)))
}

// arrive is a subscription's handler: it waits for a credit, then leaves
// m in the inbox for the puller. Once the session ends it gives m back.
func (c *outConn) arrive(ctx context.Context, m jetstream.Msg, kick chan struct{}) {
	for !c.takeCredit() {
		select {
		case <-kick:
		case <-ctx.Done():
			c.giveBack(m)
			return
		}
	}
	if ctx.Err() != nil {
		c.mu.Lock()
		c.pending--
		c.mu.Unlock()
		c.giveBack(m)
		return
	}
	c.inMu.Lock()
	c.inbox = append(c.inbox, m)
	c.inMu.Unlock()
	select {
	case c.arrived <- struct{}{}:
	default:
	}
}

// takeInbox takes the entries the subscriptions handed over.
func (c *outConn) takeInbox() []jetstream.Msg {
	c.inMu.Lock()
	defer c.inMu.Unlock()
	msgs := c.inbox
	c.inbox = nil
	return msgs
}

// giveBack returns an entry the session will not offer to the queue, for
// any connection, after requeueDelay.
func (c *outConn) giveBack(m jetstream.Msg) {
	c.p.requeued.Add(1)
	m.NakWithDelay(requeueDelay)
}

// takeCredit takes room for one entry, if the feed has some.
func (c *outConn) takeCredit() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.want <= 0 {
		return false
	}
	c.want--
	c.pending++
	return true
}

// offer loads the articles of msgs and makes them ready for the feed,
// waking its step. The room of entries not offered (skipped, dropped,
// given back) returns to the subscriptions: the feed asks for more only as
// offers are answered.
func (c *outConn) offer(ctx context.Context, msgs []jetstream.Msg) {
	arts := c.load(ctx, msgs)
	c.mu.Lock()
	c.pending -= len(msgs)
	c.ready = append(c.ready, arts...)
	back := len(msgs) - len(arts)
	c.want += back
	c.mu.Unlock()
	if back > 0 {
		c.poke()
	}
	if len(arts) > 0 {
		c.pc.Wake()
	}
}

// readers bounds the part reads one connection has in flight: a read is
// a round trip to a replica, and reading a batch one after the other
// made the round trips, not CPU, the limit of feeding.
const readers = 32

// missingAfter is how many deliveries of an entry find no part before
// the article counts as missing (expired from the store) and the entry is
// dropped: the first misses may be a replica behind its leader.
const missingAfter = 4

// load takes the articles of pulled heads: the head is the article
// (parts, for an article cut in pieces, are read in parallel). It keeps
// them in the connection's bodies and returns them to offer, in order.
// Heads not for this peer, delete markers and entries older than the
// peer's backlog_max_age are acknowledged and skipped.
func (c *outConn) load(ctx context.Context, msgs []jetstream.Msg) []feed.Article {
	p := c.p
	arts := make([]feed.Article, len(msgs))
	sem := make(chan struct{}, readers)
	var wg sync.WaitGroup
	for i, m := range msgs {
		md, err := m.Metadata()
		if err != nil {
			m.Term()
			continue
		}
		e, err := ParseEntry(m.Headers())
		switch {
		case err != nil:
			p.n.log.Warn("bad queue entry; dropped", "peer", p.cfg.Name, "err", err)
			p.dropped.Add(1)
			m.Term()
			continue
		case e.Marker || !e.For(p.cfg.Name):
			m.Ack()
			continue
		case p.queue.Limits.MaxAge > 0 && p.n.now().Sub(md.Timestamp) > p.queue.Limits.MaxAge:
			// backlog_max_age: too old to be worth sending.
			p.dropped.Add(1)
			m.Term()
			continue
		}
		tok := md.Stream + "/" + strconv.FormatUint(md.Sequence.Stream, 10)
		put := func(body []byte) {
			c.bodies.put(tok, &held{msg: m, body: body, delivered: md.NumDelivered})
			arts[i] = feed.Article{Token: tok, MessageID: e.MessageID, Size: int64(len(body))}
		}
		if e.Parts.N == 0 {
			put(m.Data())
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			body, err := p.n.store.Body(ctx, e, m.Data())
			switch {
			case err == nil:
				put(body)
			case errors.Is(err, jetstream.ErrMsgNotFound) && md.NumDelivered < missingAfter:
				// A replica that has not applied a part yet answered
				// the direct get: again in a moment.
				m.NakWithDelay(requeueDelay)
			case errors.Is(err, jetstream.ErrMsgNotFound):
				// Expired from the store (spool_max_age): it counts
				// as missing, as an article gone from a relay's spool.
				p.n.log.Warn("article missing from the store; not offered", "peer", p.cfg.Name, "id", e.MessageID, "err", err)
				p.missing.Add(1)
				m.Term()
			default:
				// The session ended, or NATS did not answer: the entry
				// goes back for any connection, never dropped.
				m.NakWithDelay(requeueDelay)
			}
		}()
	}
	wg.Wait()
	out := arts[:0]
	for _, a := range arts {
		if a.Token != "" {
			out = append(out, a)
		}
	}
	return out
}

// settle answers the queue entry of a: see Action.
func (c *outConn) settle(a feed.Article, o outcome) {
	h := c.bodies.take(a.Token)
	if h == nil {
		return
	}
	cfg := c.p.cfg
	delivered := h.delivered
	act := settleAction(o, delivered, cfg.MaxDefers, cfg.DeferDelay.D(), cfg.DeferMaxDelay.D())
	switch act.Kind {
	case actAck:
		h.msg.Ack()
	case actNak:
		h.msg.NakWithDelay(act.Delay)
	case actDrop:
		c.p.dropped.Add(1)
		c.p.n.log.Warn("article deferred too often; dropped", "peer", cfg.Name, "id", a.MessageID, "deferrals", delivered)
		h.msg.Term()
	}
}
