package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/newsflow/newsflow/machine/ingest"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/goroutine"
)

// Ingest in a cluster node: the machine/ingest machine on the goroutine
// runtime, as in the single-node relay, with JetStream for history and
// store. Each Check and Article is answered by a goroutine of its own (the
// answer needs NATS round trips, and the machine pipelines many offers):
// it hands the verdict or result back through inConn.answer, and one
// applier goroutine gives the collected answers to the machine with Do.

// inConn is one upstream connection.
type inConn struct {
	n      *Node
	remote string
	gc     *goroutine.Conn
	g      *ingest.Ingest
	kick   chan struct{}
	ctx    context.Context

	mu       sync.Mutex
	answers  []func(now time.Time)
	shutdown string

	// Owned by Run's goroutine: reservations won at CHECK/IHAVE and not
	// yet used by the article.
	reserved map[string]Reservation
	// working counts the goroutines answering this connection's commands;
	// the connection's end waits for them before it releases reservations.
	working sync.WaitGroup
	// stores carries published heads, in order, to the one goroutine
	// that waits for their acknowledgements and answers them.
	stores chan pendingStore
	// flight counts the octets of articles being stored (published, not
	// yet answered): Run's goroutine waits while they pass storeBytes.
	flightMu   sync.Mutex
	flightCond *sync.Cond
	flight     int
	// path is Run's goroutine's buffer for the header section (or the
	// article) with our Path (spoolForm).
	path []byte
}

// pendingStore is an article whose head is published, waiting for its
// acknowledgement.
type pendingStore struct {
	p     *Pending
	seq   uint64
	r     Reservation
	size  int
	peers []string
}

// serveIngest runs one upstream connection to its end.
func (n *Node) serveIngest(ctx context.Context, nc net.Conn) {
	now := time.Now()
	g := ingest.New(now, ingest.Config{
		PathHost:       n.cfg.PathHost,
		MaxArticleSize: int64(n.cfg.MaxArticleSize),
		MaxBuffered:    2*int(n.cfg.MaxArticleSize) + 4<<20,
		MaxFuture:      -1, // a relay passes what its upstream accepted
	})
	ic := &inConn{n: n, remote: nc.RemoteAddr().String(), g: g, kick: make(chan struct{}, 1),
		reserved: map[string]Reservation{}, ctx: ctx, stores: make(chan pendingStore, storeWindow)}
	ic.flightCond = sync.NewCond(&ic.flightMu)
	ic.working.Add(1)
	go func() { defer ic.working.Done(); ic.waitStores() }()
	ic.gc = goroutine.New(nc, goroutine.Options{})
	n.mu.Lock()
	n.inConns[ic] = struct{}{}
	n.mu.Unlock()
	n.ingest.open.Add(1)

	sctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			select {
			case <-ic.kick:
				ic.gc.Do(sctx, ic.apply)
			case <-sctx.Done():
				return
			}
		}
	}()
	err := ic.gc.Run(sctx, g, ic.step)
	// Workers still running answer nobody; let them finish their
	// publishes (what they stored stays stored) before the reservations
	// go.
	close(ic.stores)
	ic.working.Wait()
	cancel()
	ic.gc.Close()
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	for _, r := range ic.reserved {
		n.store.Release(rctx, r)
	}
	rcancel()
	n.mu.Lock()
	delete(n.inConns, ic)
	n.mu.Unlock()
	n.ingest.open.Add(-1)
	if err != nil && ctx.Err() == nil {
		n.log.Debug("ingest connection ended", "remote", ic.remote, "err", err)
	}
}

// step drains the machine's events after every input (Run's goroutine).
func (ic *inConn) step(now time.Time) error {
	n := ic.n
	for {
		ev, ok := ic.g.NextEvent()
		if !ok {
			return nil
		}
		switch e := ev.(type) {
		case ingest.Check:
			ic.check(now, e)
		case ingest.Article:
			ic.article(e)
		case ingest.Rejected:
			n.ingest.rejected.Add(1)
			if r, ok := ic.reserved[e.MessageID]; ok {
				delete(ic.reserved, e.MessageID)
				ic.async(func(ctx context.Context) { n.store.Release(ctx, r) })
			}
			n.log.Info("article rejected", "remote", ic.remote, "cmd", e.Cmd.String(), "id", e.MessageID,
				"kind", e.Kind.String(), "reason", e.Reason)
		case ingest.Closed:
			n.log.Debug("ingest connection closed", "remote", ic.remote, "reason", e.Reason)
		}
	}
}

// async runs fn on a goroutine of its own with a bounded context; the
// connection's end waits for it.
func (ic *inConn) async(fn func(ctx context.Context)) {
	ic.working.Add(1)
	go func() {
		defer ic.working.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ic.ctx), time.Minute)
		defer cancel()
		fn(ctx)
	}()
}

// check answers CHECK or IHAVE from the cluster's history: the node that
// creates the key wants the article; a key held by a reservation defers
// the offer (431/436), a present one refuses it (438/435). An id the node
// knows is present (seen) is refused at once, here on Run's goroutine (step
// may give the machine inputs, and what they make it say is written):
// only the others need NATS, and a goroutine of their own to wait for it.
func (ic *inConn) check(now time.Time, e ingest.Check) {
	n := ic.n
	if n.store.Known(e.MessageID) {
		n.ingest.refused.Add(1)
		if err := ic.g.Decide(now, e.Seq, ingest.Refuse); err != nil {
			n.log.Error("ingest decide", "err", err)
		}
		return
	}
	ic.async(func(ctx context.Context) {
		v, r, err := n.store.Reserve(ctx, e.MessageID)
		verdict := ingest.Want
		switch {
		case err != nil:
			n.log.Warn("history", "id", e.MessageID, "err", err)
			verdict = ingest.Defer
			n.ingest.deferred.Add(1)
		case v == InProgress:
			verdict = ingest.Defer
			n.ingest.deferred.Add(1)
		case v == Present:
			verdict = ingest.Refuse
			n.ingest.refused.Add(1)
		}
		ic.answer(func(now time.Time) {
			if verdict == ingest.Want {
				ic.reserved[e.MessageID] = r
			}
			if err := ic.g.Decide(now, e.Seq, verdict); err != nil {
				n.log.Error("ingest decide", "err", err)
			}
		})
	})
}

// storeWindow and storeBytes bound the articles one connection has
// published and not seen acknowledged (their copies wait in the NATS
// client's buffers and the server's); beyond them the connection stops
// reading (the machine waits in step) until acknowledgements come.
const (
	storeWindow = 1024
	storeBytes  = 32 << 20
)

// takeFlight waits until size more octets fit in the connection's
// storeBytes (one article always does), and counts them.
func (ic *inConn) takeFlight(size int) {
	ic.flightMu.Lock()
	for ic.flight > 0 && ic.flight+size > storeBytes {
		ic.flightCond.Wait()
	}
	ic.flight += size
	ic.flightMu.Unlock()
}

// giveFlight uncounts an article whose store is answered.
func (ic *inConn) giveFlight(size int) {
	ic.flightMu.Lock()
	ic.flight -= size
	ic.flightMu.Unlock()
	ic.flightCond.Signal()
}

// article stores a received article: one conditional publish stores it,
// queues it for its peers and decides whether it is a duplicate (another
// node or connection stored it first); 239/235 only once JetStream
// acknowledged it (stored on a quorum). A reservation from CHECK or IHAVE
// only kept other nodes from asking for it meanwhile: it is released when
// the article could not be stored, and otherwise left to expire (the
// stored head answers for the message-id from now on).
//
// An article up to the chunk size is published here, on Run's goroutine,
// and its acknowledgement awaited by waitStores, in order: no goroutine
// nor timer per article. A larger one (parts first, then the head) is
// stored by a goroutine of its own.
func (ic *inConn) article(e ingest.Article) {
	n := ic.n
	r := ic.reserved[e.MessageID]
	delete(ic.reserved, e.MessageID)
	// The wire form is built in a buffer of its own, which the publish
	// takes over (no copy of the article between here and nats.go's).
	buf := wireBuffer(len(e.Data) + len(n.cfg.PathHost) + 64)
	wire, err := ic.spoolForm(*buf, e)
	*buf = wire
	if err != nil {
		putWire(buf)
		n.ingest.rejected.Add(1)
		ic.async(func(ctx context.Context) { n.store.Release(ctx, r) })
		ic.stored(e.Seq, ingest.Result{Outcome: ingest.StoreRejected, Reason: "Bad Path"})
		return
	}
	groups, _ := e.Header.Newsgroups()
	peers := n.route(e.MessageID, groups, e.Header.Path(), int64(len(wire)))
	if len(wire) <= n.store.ChunkSize() {
		// publishBuffer takes buf over, whatever the outcome.
		ic.takeFlight(len(wire))
		p, err := n.store.publishBuffer(e.MessageID, buf, peers)
		if err != nil {
			ic.giveFlight(len(wire))
			if errors.Is(err, ErrDuplicate) {
				ic.finish(ic.ctx, e.Seq, r, len(wire), peers, err)
				return
			}
			ic.async(func(ctx context.Context) { ic.finish(ctx, e.Seq, r, len(wire), peers, err) })
			return
		}
		ic.stores <- pendingStore{p: p, seq: e.Seq, r: r, size: len(wire), peers: peers}
		return
	}
	// Put runs on a goroutine of its own, which owns buf: once Put
	// returns, none of its publishes can be sent again.
	ic.takeFlight(len(wire))
	ic.async(func(ctx context.Context) {
		defer ic.giveFlight(len(wire))
		err := n.store.Put(ctx, e.MessageID, wire, peers)
		putWire(buf)
		ic.finish(ctx, e.Seq, r, len(wire), peers, err)
	})
}

// waitStores answers the connection's published heads as their
// acknowledgements come, until the connection ends and every one is
// answered.
// Each wait ends: the client fails an acknowledgement that does not come
// within its publish timeout.
func (ic *inConn) waitStores() {
	ctx := context.WithoutCancel(ic.ctx)
	for ps := range ic.stores {
		ic.finish(ctx, ps.seq, ps.r, ps.size, ps.peers, ps.p.Wait(ctx))
		ic.giveFlight(ps.size)
	}
}

// finish counts and answers a store's outcome.
func (ic *inConn) finish(ctx context.Context, seq uint64, r Reservation, size int, peers []string, err error) {
	n := ic.n
	switch {
	case errors.Is(err, ErrDuplicate):
		// Stored by another node or connection first (that one answers
		// 239; its sender keeps its copy until then).
		n.ingest.duplicate.Add(1)
		ic.stored(seq, ingest.Result{Outcome: ingest.StoreDuplicate})
		return
	case err != nil:
		n.log.Warn("cannot store", "err", err)
		n.store.Release(ctx, r)
		n.ingest.deferred.Add(1)
		ic.stored(seq, ingest.Result{Outcome: ingest.StoreLater, Reason: "Cannot store articles now"})
		return
	}
	n.ingest.accepted.Add(1)
	n.ingest.bytes.Add(int64(size))
	for _, p := range n.peers {
		for _, name := range peers {
			if name == p.cfg.Name {
				p.queued.Add(1)
			}
		}
	}
	ic.stored(seq, ingest.Result{Outcome: ingest.StoreAccepted})
}

// stored hands a store result to the machine.
func (ic *inConn) stored(seq uint64, res ingest.Result) {
	ic.answer(func(now time.Time) {
		if err := ic.g.Stored(now, seq, res); err != nil {
			ic.n.log.Error("ingest stored", "err", err)
		}
	})
}

// answer queues fn for the machine's goroutine and wakes the applier.
func (ic *inConn) answer(fn func(now time.Time)) {
	ic.mu.Lock()
	ic.answers = append(ic.answers, fn)
	ic.mu.Unlock()
	select {
	case ic.kick <- struct{}{}:
	default:
	}
}

// apply runs the queued answers on Run's goroutine (through Do).
func (ic *inConn) apply(now time.Time) {
	ic.mu.Lock()
	answers := ic.answers
	ic.answers = nil
	shut := ic.shutdown
	ic.mu.Unlock()
	for _, fn := range answers {
		fn(now)
	}
	if shut != "" {
		ic.g.Shutdown(now, shut)
	}
}

// stopIngest asks every upstream connection to finish (answers already
// owed still go out) and waits a little for them.
func (n *Node) stopIngest() {
	n.mu.Lock()
	conns := make([]*inConn, 0, len(n.inConns))
	for c := range n.inConns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	for _, ic := range conns {
		ic.mu.Lock()
		ic.shutdown = "Shutting down"
		ic.mu.Unlock()
		select {
		case ic.kick <- struct{}{}:
		default:
		}
	}
	deadline := time.Now().Add(n.opts.StopTimeout)
	for n.ingest.open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// spoolForm appends to dst the article as it is stored: the node's Path
// identity prepended to its Path field (RFC 5537 §3.2.1; none when
// path_host is empty), in wire form. ic.path is Run's goroutine's
// scratch buffer (Run's goroutine only).
func (ic *inConn) spoolForm(dst []byte, e ingest.Article) ([]byte, error) {
	wire, scratch, err := appendSpoolForm(dst, ic.path[:0], e.Data, e.Header, e.Body, ic.n.cfg.PathHost)
	ic.path = scratch[:0]
	if err != nil {
		return wire, fmt.Errorf("cluster: wire form of %s: %w", e.MessageID, err)
	}
	return wire, nil
}

// appendSpoolForm appends to dst what proto.AppendWire of
// proto.PrependPathIdentity(data, h, pathHost) makes (data as is when
// pathHost is empty), copying the body once: the identity goes into a
// copy of the header section (data[:body], where the Path field is) in
// scratch, and the header and the body are dot-stuffed into dst one after
// the other. An article with a bare LF (whose wire form AppendWire
// rewrites line by line) is made in one piece, as before. It returns
// scratch, perhaps grown, for the next call.
func appendSpoolForm(dst, scratch, data []byte, h proto.Header, body int, pathHost string) (wire, scratchOut []byte, err error) {
	head, rest := data, []byte(nil)
	// The header section ends a line, so its counts of LF and CRLF add up
	// with the body's; a body offset anywhere else takes the long way.
	if body > 0 && body <= len(data) && data[body-1] == '\n' {
		head, rest = data[:body], data[body:]
	}
	if pathHost != "" {
		scratch, err = proto.PrependPathIdentity(scratch[:0], head, h, pathHost)
		if err != nil && len(rest) > 0 {
			// Not found in the header section: the whole article gives
			// the answer (and the error) PrependPathIdentity gives.
			head, rest = data, nil
			scratch, err = proto.PrependPathIdentity(scratch[:0], head, h, pathHost)
		}
		if err != nil {
			return dst, scratch, err
		}
		head = scratch
	}
	if !proto.CRLFOnly(head) || !proto.CRLFOnly(rest) {
		// proto.AppendWire's long way needs the article in one piece.
		full := data
		if pathHost != "" {
			if scratch, err = proto.PrependPathIdentity(scratch[:0], data, h, pathHost); err != nil {
				return dst, scratch, err
			}
			full = scratch
		}
		return proto.AppendWire(dst, full), scratch, nil
	}
	var enc proto.BlockEncoder
	dst = enc.Append(dst, head)
	dst = enc.Append(dst, rest)
	return enc.Close(dst), scratch, nil
}
