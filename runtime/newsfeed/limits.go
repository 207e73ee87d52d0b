package newsfeed

// Ingest limits: what upstream connections may make the relay spend.
//
//   - Connections: at most max_connections open, and at most
//     max_connections_per_host from one address. A connection beyond them
//     is greeted "400 Too many connections" and closed (RFC 3977 §5.1.1:
//     400 is "service temporarily unavailable"); a feeder retries later.
//     The refusals are counted and logged at most once per limitLogEvery,
//     with the count since the last line, so a flood cannot flood the log.
//   - Buffered article bytes: the ingest machines hold the input they have
//     not parsed and the article they are decoding. Their sum is kept in
//     buffered. An article past its slab grows in fixed chunks
//     (ingest.ArticleChunk) that the machine charges to the budget
//     (ingestBudget) before it allocates them, so article buffers never
//     pass max_buffered_bytes: a machine refused a chunk is Starved and
//     Paused. The rest (unparsed input, the start of an article) is added
//     after each input, and a connection that grows the sum past the
//     budget that way is held (ingest.Ingest.SetHold: Paused, so neither
//     runtime reads from it). Held and starved connections wait until the
//     sum falls below the budget again, when every one is woken to look.
//     Their articles' deadlines keep running, so connections that hold
//     the budget and stall are closed in time.
//   - Time: the machines' write, stall and whole-article deadlines (see
//     machine/ingest), configured from the relay's keys.

import (
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/machine/ingest"
)

// limitLogEvery is how often a refusal for the same cause is logged.
const limitLogEvery = 10 * time.Second

// ingestLimits is the relay's accounting of upstream connections and of
// the article bytes they buffer.
type ingestLimits struct {
	mu     sync.Mutex
	open   int                // connections admitted and not ended
	byHost map[netip.Addr]int // the same, per remote address
	held   map[*inConn]struct{}
	chunks [][]byte // article chunks given back, for reuse (ingestBudget)

	buffered atomic.Int64 // octets the ingest machines hold

	limitLog, acceptLog logEvery
}

// logEvery rate-limits one kind of log line.
type logEvery struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// ok reports whether a line may be logged now, and how many were
// suppressed since the last one.
func (l *logEvery) ok(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < limitLogEvery {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}

// remoteAddr is nc's remote IP address; the zero Addr when it is not IP
// (a test's pipe), which the per-address limit then ignores.
func remoteAddr(nc net.Conn) netip.Addr {
	ta, ok := nc.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	a, _ := netip.AddrFromSlice(ta.IP)
	return a.Unmap()
}

// admit counts a new upstream connection from addr in, or returns why it
// is refused (the text of its 400 greeting).
func (r *Relay) admit(addr netip.Addr) string {
	l := &r.limits
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= r.cfg.MaxConnections {
		return "Too many connections"
	}
	if max := r.cfg.MaxConnectionsPerHost; max > 0 && addr.IsValid() && l.byHost[addr] >= max {
		return "Too many connections from this address"
	}
	l.open++
	if addr.IsValid() {
		if l.byHost == nil {
			l.byHost = map[netip.Addr]int{}
		}
		l.byHost[addr]++
	}
	return ""
}

// refuse greets nc with 400 and closes it (in the accept loop: see
// denyConn), counting and logging the refusal.
func (r *Relay) refuse(nc net.Conn, why string) {
	r.ingest.limited.Add(1)
	if ok, n := r.limits.limitLog.ok(time.Now()); ok {
		r.log.Warn("ingest connection refused", "reason", why, "remote", nc.RemoteAddr().String(),
			"max_connections", r.cfg.MaxConnections, "max_connections_per_host", r.cfg.MaxConnectionsPerHost,
			"refused_since_last_line", n)
	}
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	nc.Write([]byte("400 " + why + "\r\n"))
	nc.Close()
}

// leave counts an ended connection out: its admission, its buffered
// bytes and its hold.
func (r *Relay) leave(ic *inConn) {
	l := &r.limits
	l.mu.Lock()
	l.open--
	if ic.addr.IsValid() {
		if l.byHost[ic.addr]--; l.byHost[ic.addr] <= 0 {
			delete(l.byHost, ic.addr)
		}
	}
	delete(l.held, ic)
	l.mu.Unlock()
	ic.g.Drop()
	if ic.counted != 0 {
		r.release(int64(ic.counted))
		ic.counted = 0
	}
}

// ingestBudget is the ingest machines' ingest.Budget: chunks charged to
// the relay's buffered sum, bounded by max_buffered_bytes, and kept for
// reuse when given back, so that article buffers neither pass the budget
// nor leave garbage for the collector: the chunks in use and those kept
// together stay within the budget.
type ingestBudget struct{ r *Relay }

// Chunk charges a chunk to the sum and returns it, or nil when that would
// pass the budget. The budget is never below what the largest article
// takes in chunks, so that one can always be read.
func (b ingestBudget) Chunk() []byte {
	l := &b.r.limits
	max := max(int64(b.r.cfg.MaxBufferedBytes), int64(b.r.cfg.MaxArticleSize)+2*ingest.ArticleChunk)
	for {
		cur := l.buffered.Load()
		if cur+ingest.ArticleChunk > max {
			return nil
		}
		if l.buffered.CompareAndSwap(cur, cur+ingest.ArticleChunk) {
			break
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.chunks); n > 0 {
		c := l.chunks[n-1]
		l.chunks[n-1] = nil
		l.chunks = l.chunks[:n-1]
		return c[:0]
	}
	return make([]byte, 0, ingest.ArticleChunk)
}

// Free takes a chunk off the sum and keeps it for the next Chunk while the
// chunks kept and the sum stay within the budget.
func (b ingestBudget) Free(c []byte) {
	l := &b.r.limits
	l.mu.Lock()
	if int64(len(l.chunks)+1)*ingest.ArticleChunk+l.buffered.Load() <= int64(b.r.cfg.MaxBufferedBytes) {
		l.chunks = append(l.chunks, c[:0])
	}
	l.mu.Unlock()
	b.r.release(ingest.ArticleChunk)
}

// release takes n octets off the buffered sum and, once it is under the
// budget, wakes the held connections to look again.
func (r *Relay) release(n int64) {
	l := &r.limits
	if l.buffered.Add(-n) > int64(r.cfg.MaxBufferedBytes) {
		return
	}
	l.mu.Lock()
	held := slices.Collect(maps.Keys(l.held))
	l.mu.Unlock()
	for _, ic := range held {
		ic.mb.Wake()
	}
}

// account brings the relay's sum up to date with what the connection's
// machine holds now, and holds or lets go of the connection (on the
// connection's goroutine, after every input). It reports whether it
// resumed a starved machine, which may then have events.
func (ic *inConn) account(now time.Time) bool {
	r, l := ic.r, &ic.r.limits
	b := ic.g.Buffered()
	delta := b - ic.counted
	ic.counted = b
	var total int64
	switch {
	case delta > 0:
		total = l.buffered.Add(int64(delta))
	case delta < 0:
		r.release(int64(-delta))
		total = l.buffered.Load()
	default:
		total = l.buffered.Load()
	}
	budget := int64(r.cfg.MaxBufferedBytes)
	switch {
	case !ic.holding && delta > 0 && total > budget && !ic.g.Closed():
		ic.holding = true
		ic.g.SetHold(now, true)
		l.mu.Lock()
		if l.held == nil {
			l.held = map[*inConn]struct{}{}
		}
		l.held[ic] = struct{}{}
		l.mu.Unlock()
		r.ingest.held.Add(1)
		r.log.Debug("ingest connection held: buffered article bytes over max_buffered_bytes",
			"remote", ic.remote, "buffered", total, "max", budget)
	case ic.holding && (total <= budget || ic.g.Closed()):
		ic.holding = false
		ic.g.SetHold(now, false)
		if !ic.g.Starved() {
			l.mu.Lock()
			delete(l.held, ic)
			l.mu.Unlock()
		}
	}
	if !ic.g.Starved() {
		return false
	}
	// Registered before the budget is looked at again, so a release in
	// between wakes it.
	l.mu.Lock()
	if l.held == nil {
		l.held = map[*inConn]struct{}{}
	}
	l.held[ic] = struct{}{}
	l.mu.Unlock()
	if l.buffered.Load()+ingest.ArticleChunk > budget {
		return false
	}
	if !ic.holding {
		l.mu.Lock()
		delete(l.held, ic)
		l.mu.Unlock()
	}
	ic.g.Resume(now)
	return true
}
