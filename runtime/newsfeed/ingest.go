package newsfeed

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/machine/ingest"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/goroutine"
	"github.com/newsflow/newsflow/spoolfs"
)

// ingestStats counts what the ingest listener (and inject) did.
type ingestStats struct {
	conns    atomic.Int64 // connections accepted
	open     atomic.Int64 // connections open now
	accepted atomic.Int64 // articles made durable and acknowledged
	refused  atomic.Int64 // offers not wanted (history), articles another connection stored first
	deferred atomic.Int64 // offers answered "later" (in progress, disk full)
	rejected atomic.Int64 // articles or offers refused by validation
	denied   atomic.Int64 // connections from addresses not in allow
	limited  atomic.Int64 // connections refused by max_connections(_per_host)
	held     atomic.Int64 // times a connection was held for max_buffered_bytes
	timedOut atomic.Int64 // connections closed for a stall, a slow article or not reading
	checks   atomic.Int64 // CHECK commands
	takethis atomic.Int64 // TAKETHIS articles
}

// acceptLoop accepts upstream connections until ln closes.
func (r *Relay) acceptLoop(ctx context.Context, ln net.Listener) {
	var inWG sync.WaitGroup
	defer inWG.Wait()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return
			}
			// EMFILE and the like: say so once in a while, not 20 times a
			// second (max_connections should keep us below RLIMIT_NOFILE).
			if ok, n := r.limits.acceptLog.ok(time.Now()); ok {
				r.log.Warn("ingest accept", "err", err, "failed_since_last_line", n)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if !r.allowedConn(nc) {
			r.ingest.denied.Add(1)
			r.log.Warn("ingest connection denied (not in allow)", "remote", nc.RemoteAddr().String())
			denyConn(nc)
			continue
		}
		addr := remoteAddr(nc)
		if why := r.admit(addr); why != "" {
			r.refuse(nc, why)
			continue
		}
		r.ingest.conns.Add(1)
		r.wg.Add(1)
		if r.loop != nil && r.auth.tls == nil { // TLS needs a net.Conn: goroutine runtime

			r.serveIngestLoop(ctx, nc, addr)
			continue
		}
		go func() {
			defer r.wg.Done()
			r.serveIngest(ctx, nc, addr)
		}()
	}
}

// allowedConn reports whether nc's remote address is in the allow list
// (the relay's incoming.conf). Addresses that are not IP (a test's pipe)
// are allowed: the list restricts network feeders.
func (r *Relay) allowedConn(nc net.Conn) bool {
	ta, ok := nc.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return true
	}
	a, ok := netip.AddrFromSlice(ta.IP)
	return ok && r.cfg.Allowed(a)
}

// denyMsg is the greeting a denied feeder gets: RFC 3977 §5.1.1, 502
// means service permanently unavailable (INN answers 502 too).
var denyMsg = []byte("502 Access denied\r\n")

// denyConn writes the 502 greeting and closes nc. It runs in the accept
// loop: a few octets on a fresh socket go to its send buffer at once, and
// the deadline bounds the write should they not.
func denyConn(nc net.Conn) {
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	nc.Write(denyMsg)
	nc.Close()
}

// inConn is one upstream connection: the ingest machine, on either
// runtime, plus the answers the committer and the relay hand it through
// its mailbox. The machine's back-pressure (machine.Pauser) is the
// driver's business: no reads while it is paused.
type inConn struct {
	r      *Relay
	remote string
	g      *ingest.Ingest
	mb     driver.Mailbox // owner inputs: verdicts, accepting, shutdown

	// Owned by the driver's goroutine.
	reserved map[string]struct{}
	buf      []byte
	addr     netip.Addr // for the per-address limit (limits.go)
	counted  int        // the machine's Buffered as last added to the relay's sum
	holding  bool       // held for max_buffered_bytes
	feeder   *feeder    // its [[incoming]] entry, nil for none (incoming.go)
	user     string     // the user it authenticated as (auth.go)
	n        connCounts // for the close line (ingestlog.go)
}

// newInConn makes the ingest machine for an upstream connection from
// remote.
func (r *Relay) newInConn(remote string, addr netip.Addr, secure bool) *inConn {
	now := r.now()
	ic := &inConn{r: r, remote: remote, addr: addr, reserved: map[string]struct{}{}}
	unavailable := ""
	if f := r.feederByAddr(addr); f != nil {
		unavailable = r.joinFeeder(ic, f)
	}
	g := ingest.New(now, ingest.Config{
		Unavailable:     unavailable,
		AuthRequired:    r.auth.users != nil,
		StartTLS:        r.auth.tls != nil && !secure,
		Secure:          secure,
		TLSRequired:     r.cfg.TLSRequired,
		MaxAge:          r.cfg.ArtCutoff.D(),
		MaxFuture:       r.maxFuture(),
		PathHost:        r.cfg.PathHost,
		MaxArticleSize:  int64(r.cfg.MaxArticleSize),
		Budget:          ingestBudget{r},
		MaxBuffered:     2*int(r.cfg.MaxArticleSize) + 4<<20,
		TransferTimeout: r.cfg.TransferTimeout.D(),
		ArticleTimeout:  r.cfg.ArticleTimeout.D(),
		MinRate:         int64(r.cfg.MinTransferRate),
		WriteTimeout:    r.cfg.WriteTimeout.D(),
	})
	ic.g = g
	if unavailable != "" {
		r.ingest.limited.Add(1)
		r.log.Warn("ingest connection refused", "remote", remote, "reason", unavailable)
	}
	if why := r.notAccepting(); why != "" {
		g.SetAccepting(now, false, why)
	}
	return ic
}

// opened and ended count an upstream connection in and out.
func (r *Relay) opened(ic *inConn) {
	r.mu.Lock()
	r.inConns[ic] = struct{}{}
	r.mu.Unlock()
	r.ingest.open.Add(1)
	r.logConnOpened(ic)
}

func (r *Relay) ended(ctx context.Context, ic *inConn, err error) {
	r.mu.Lock()
	delete(r.inConns, ic)
	r.mu.Unlock()
	r.ingest.open.Add(-1)
	r.joinFeeder(ic, nil)
	h := r.spool.History()
	for id := range ic.reserved {
		h.Release(id)
	}
	r.leave(ic)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		r.ingest.timedOut.Add(1)
		ic.n.reason = "it stopped reading our answers (write_timeout)"
	}
	r.logConnClosed(ctx, ic, err)
}

// serveIngestLoop runs one upstream connection on the epoll loop: no
// goroutine of its own; step and the end run on the loop goroutine, and
// owner inputs arrive with Post.
func (r *Relay) serveIngestLoop(ctx context.Context, nc net.Conn, addr netip.Addr) {
	ic := r.newInConn(nc.RemoteAddr().String(), addr, false)
	r.opened(ic)
	d, err := r.loop.start(ctx, nc, ic.g, ic.step, func(err error) {
		ic.mb.Detach()
		r.ended(ctx, ic, err)
		r.wg.Done()
	})
	if err != nil {
		r.ended(ctx, ic, err)
		r.wg.Done()
		return
	}
	ic.mb.Attach(d)
}

// serveIngest runs one upstream connection to its end.
func (r *Relay) serveIngest(ctx context.Context, nc net.Conn, addr netip.Addr) {
	_, secure := nc.(*tls.Conn)
	ic := r.newInConn(nc.RemoteAddr().String(), addr, secure)
	gc := goroutine.New(nc, goroutine.Options{Now: r.now, TLSConfig: r.auth.tls, TLSServer: true})
	r.opened(ic)
	ic.mb.Attach(gc) // posts wait for Run
	err := gc.Run(ctx, ic.g, ic.step)
	ic.mb.Detach()
	gc.Close()
	r.ended(ctx, ic, err)
}

// step drains the machine's events after every input (Run's goroutine).
func (ic *inConn) step(now time.Time) error {
	r := ic.r
	for {
		ev, ok := ic.g.NextEvent()
		if !ok {
			if ic.account(now) {
				continue // resumed: it may have more to say
			}
			return nil
		}
		switch e := ev.(type) {
		case ingest.Check:
			if e.Cmd == ingest.CmdCheck {
				r.ingest.checks.Add(1)
			}
			ic.check(now, e)
		case ingest.Article:
			if e.Cmd == ingest.CmdTakeThis {
				r.ingest.takethis.Add(1)
			}
			ic.article(now, e)
		case ingest.Rejected:
			r.ingest.rejected.Add(1)
			ic.n.rejected++
			r.alog.add(now, e.MessageID, "ingest", "rejected", "from", ic.from(), "reason", e.Reason)
			ic.rejected(now, e)
			r.log.Info("article rejected", "remote", ic.remote, "cmd", e.Cmd.String(), "id", e.MessageID,
				"kind", e.Kind.String(), "reason", e.Reason)
		case ingest.Auth:
			ic.auth(now, e)
		case ingest.TLSStarted:
			r.log.Debug("ingest connection encrypted (STARTTLS)", "remote", ic.remote)
		case ingest.Closed:
			if timedOut(e.Reason) {
				r.ingest.timedOut.Add(1)
			}
			ic.n.reason = e.Reason
		}
	}
}

// timedOut reports whether a Closed reason is one of the machine's
// timeouts on a peer that was sending (not the ordinary idle close).
func timedOut(reason string) bool {
	return reason == "transfer timeout" || strings.HasPrefix(reason, "article transfer too slow")
}

// rejected ends the reservation of an article the machine refused, and
// remembers refusals that hold whatever the sender does (too large, loops,
// invalid headers) so that later offers of the id are refused at once, as
// INN's history does.
func (ic *inConn) rejected(now time.Time, e ingest.Rejected) {
	if _, ok := ic.reserved[e.MessageID]; ok {
		delete(ic.reserved, e.MessageID)
		ic.r.spool.History().Release(e.MessageID)
	}
	switch e.Kind {
	case ingest.RejectTooLarge, ingest.RejectInvalid, ingest.RejectPathLoop:
		if err := ic.r.spool.Reject(e.MessageID, now); err != nil {
			ic.r.log.Debug("cannot remember a rejected id", "id", e.MessageID, "err", err)
		}
	}
}

// check answers CHECK or IHAVE from the history: unknown ids are reserved
// for this connection and wanted; ids in transit elsewhere or not yet
// durable are deferred; stored or rejected ids are refused.
func (ic *inConn) check(now time.Time, e ingest.Check) {
	r := ic.r
	st, ok := r.spool.History().Reserve(e.MessageID, now)
	v := ingest.Want
	switch {
	case ok:
		ic.reserved[e.MessageID] = struct{}{}
	case st == spoolfs.Reserved || st == spoolfs.Pending:
		v = ingest.Defer
		r.ingest.deferred.Add(1)
		ic.n.deferred++
	default:
		v = ingest.Refuse
		r.ingest.refused.Add(1)
		ic.n.refused++
		r.alog.add(now, e.MessageID, "ingest", "refused", "from", ic.from())
	}
	if err := ic.g.Decide(now, e.Seq, v); err != nil {
		r.log.Error("ingest decide", "err", err)
	}
}

// article stores a received article and hands it to the group commit.
func (ic *inConn) article(now time.Time, e ingest.Article) {
	delete(ic.reserved, e.MessageID)
	if why := ic.groupsRefused(e.Header); why != "" {
		ic.refuseArticle(now, e, why)
		return
	}
	res, queued := ic.r.store(now, e.MessageID, e.Data, e.Header, &ic.buf, pendingArt{ic: ic, seq: e.Seq})
	if !queued {
		ic.n.count(res)
		ic.r.alog.add(now, e.MessageID, "ingest", verdictOf(res.Outcome), "from", ic.from(), "reason", res.Reason)
		if err := ic.g.Stored(now, e.Seq, res); err != nil {
			ic.r.log.Error("ingest stored", "err", err)
		}
	}
}

// store prepends our Path identity to an article that passed validation,
// puts its wire form in the spool, routes it and hands it to the group
// commit, which answers it through item (ic and seq, or done). It returns
// true then; false with the final result when the article was refused.
func (r *Relay) store(now time.Time, id string, data []byte, h proto.Header, buf *[]byte, item pendingArt) (ingest.Result, bool) {
	withPath, err := proto.PrependPathIdentity((*buf)[:0], data, h, r.cfg.PathHost)
	if err != nil {
		r.ingest.rejected.Add(1)
		return ingest.Result{Outcome: ingest.StoreRejected, Reason: "Bad Path: " + err.Error()}, false
	}
	// The wire form goes in the same buffer, after withPath (the spool
	// copies it), so a connection stores article after article without a
	// new buffer for each.
	full := proto.AppendWire(withPath, withPath)
	wire := full[len(withPath):]
	*buf = full[:0]
	return r.put(now, id, wire, h, item)
}

// put stores an article's wire form in the spool and hands it to the
// group commit for item.peers, or, when item.peers is nil, for the peers
// the masterfeed routes it to. It returns store's results.
func (r *Relay) put(now time.Time, id string, wire []byte, h proto.Header, item pendingArt) (ingest.Result, bool) {
	groups, _ := h.Newsgroups()
	path := h.Path()
	// Put and the hand-over to the committer under putMu: see fanout.go.
	r.putMu.Lock()
	tok, err := r.spool.Put(id, wire, now)
	if err == nil {
		size := int64(len(wire))
		item.entry = entryFor(tok, id, size, now)
		if item.peers == nil {
			item.peers, item.routed = r.route(id, groups, path, size, nil), true
		}
		r.com.add(item)
	}
	r.putMu.Unlock()
	switch {
	case err == nil:
	case errors.Is(err, spoolfs.ErrDuplicate):
		r.ingest.refused.Add(1) // stored by another connection first: one name, "refused"
		return ingest.Result{Outcome: ingest.StoreDuplicate}, false
	case isDiskFull(err):
		r.setAccepting(false, "disk full")
		r.com.diskFull()
		r.ingest.deferred.Add(1)
		return ingest.Result{Outcome: ingest.StoreLater, Reason: "Disk full"}, false
	case errors.Is(err, spoolfs.ErrBadArticle):
		r.ingest.rejected.Add(1)
		r.log.Info("article rejected by the spool", "id", id, "err", err)
		return ingest.Result{Outcome: ingest.StoreRejected, Reason: "Cannot store it"}, false
	default:
		r.log.Error("spool put", "id", id, "err", err)
		r.ingest.deferred.Add(1)
		return ingest.Result{Outcome: ingest.StoreLater, Reason: "Cannot store articles now"}, false
	}
	return ingest.Result{}, true
}

// stored hands the committer's result to the connection (any goroutine).
func (ic *inConn) stored(seq uint64, res ingest.Result) {
	ic.mb.Put(func(now time.Time) {
		ic.n.count(res)
		if err := ic.g.Stored(now, seq, res); err != nil {
			ic.r.log.Error("ingest stored", "err", err)
		}
	})
}

// setAccepting tells the connection's machine whether articles are taken.
func (ic *inConn) setAccepting(ok bool, reason string) {
	ic.mb.Put(func(now time.Time) { ic.g.SetAccepting(now, ok, reason) })
}

// stop asks the machine to finish gracefully.
func (ic *inConn) stop(reason string) {
	ic.mb.Put(func(now time.Time) { ic.g.Shutdown(now, reason) })
}

// stopIngest asks every upstream connection to finish (answers already
// owed still go out) and waits a little for them.
func (r *Relay) stopIngest() {
	r.mu.Lock()
	conns := make([]*inConn, 0, len(r.inConns))
	for c := range r.inConns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	for _, c := range conns {
		c.stop("Shutting down")
	}
	deadline := time.Now().Add(r.opts.StopTimeout)
	for r.ingest.open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}
