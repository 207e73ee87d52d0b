package newsfeed

import (
	"sync"
	"time"

	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/spoolfs"
)

// # The queue agent
//
// A connection's queue calls (answers reported with done, entries taken
// with next) run on a goroutine of their own, the connection's agent, and
// not on the goroutine that drives the feed machine. The queue's calls may
// wait for the disk: taking entries replays the backlog files, and
// settling them checkpoints the replay (an fdatasync, a temp file, a
// rename, two fsyncs). On the epoll runtime the driving goroutine is a
// loop that serves half of all connections, and such a wait would stop
// them all; on the goroutine runtime it would hold the peer's queue lock,
// and so the peer's other connections.
//
// The connection's step (peerconn) hands the agent the answers it drained
// and how many entries it wants (outConn.Ask), and offers what the agent
// made ready (outConn.Take). The agent
// keeps up to a window of entries ready beyond the feed's room, so a
// connection has work while its agent waits for the disk. Entries ready but
// not offered are in flight on the connection as far as the queue knows:
// when the session ends, the session stops the agent, reports the answers
// it had not reported yet, and then tells the queue the connection is down,
// which takes them back with everything else in flight.
//
// The agent also checks that each entry can be sent (Relay.sendable: the
// spool still holds it and the history names it) and settles as missing
// those that cannot, before step offers them.
//
// Both runtimes use the agent: one mechanism, though the goroutine runtime
// alone would do as well with the queue calls inline.

// answer is a peer's answer for an article, for the queue.
type answer struct {
	id string
	o  queue.Outcome
}

// agent is a connection's queue agent for one session.
type agent struct {
	c    *outConn
	kick chan struct{} // 1-buffered: work to do
	quit chan struct{} // closed by stop
	done chan struct{} // closed when the goroutine ends

	mu      sync.Mutex
	answers []answer       // drained by step, not yet reported
	want    int            // entries step asked for, beyond ready
	ready   []feed.Article // taken from the queue and sendable, not yet offered

	// The agent goroutine's own.
	spare []answer
	batch []queue.Entry
	arts  []feed.Article
}

// startAgent starts c's agent for a session.
func (c *outConn) startAgent() *agent {
	a := &agent{c: c, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

// poke makes the agent go round once more.
func (a *agent) poke() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// stop ends the agent goroutine and waits for it; it returns the answers
// not reported yet, for the session to report before the connection goes
// down.
func (a *agent) stop() []answer {
	close(a.quit)
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	as := a.answers
	a.answers, a.ready, a.want = nil, nil, 0
	return as
}

func (a *agent) run() {
	defer close(a.done)
	for {
		select {
		case <-a.kick:
		case <-a.quit:
			return
		}
		a.round()
	}
}

// round reports the answers waiting and takes the entries wanted.
func (a *agent) round() {
	c := a.c
	p, r := c.p, c.p.r
	a.mu.Lock()
	as := a.answers
	a.answers = a.spare[:0]
	want := a.want
	if want > 0 {
		// Before next, so that an offer that next misses wakes us
		// (peer.wake) rather than falling between next and here.
		c.hungry.Store(true)
	}
	a.mu.Unlock()
	now := r.now()
	p.q.doneBatch(now, c.id, as)
	clear(as)
	a.spare = as[:0]
	if want <= 0 {
		return
	}
	a.batch = p.q.next(now, c.id, want, a.batch[:0])
	got := len(a.batch)
	a.arts = a.arts[:0]
	for _, e := range a.batch {
		if size, ok := a.sendable(now, e); ok {
			if e.Resend {
				c.markResent(e.MessageID)
			}
			a.arts = append(a.arts, feed.Article{Token: e.Token, MessageID: e.MessageID, Size: size})
		}
	}
	clear(a.batch)
	n := len(a.arts)
	a.mu.Lock()
	// Only the sendable entries fill the want: those settled as missing
	// leave room that nobody else asks for (no answer comes for them).
	a.want = max(0, a.want-n)
	more := a.want > 0
	a.ready = append(a.ready, a.arts...)
	a.mu.Unlock()
	clear(a.arts)
	if got == want {
		c.hungry.Store(false)
		if more {
			a.poke() // the queue did not come up short: go round again
		}
	}
	if n > 0 {
		c.pc.Wake()
	}
}

// take moves up to n ready articles to dst, oldest first.
func (a *agent) take(dst []feed.Article, n int) []feed.Article {
	a.mu.Lock()
	defer a.mu.Unlock()
	n = min(n, len(a.ready))
	dst = append(dst, a.ready[:n]...)
	rest := copy(a.ready, a.ready[n:])
	clear(a.ready[rest:])
	a.ready = a.ready[:rest]
	return dst
}

// ask hands the agent the answers step drained and sets how many entries
// it wants: enough to fill the feed's room (credits) and keep a window
// (prefetch) ready beyond it. It wakes the agent when there is something
// to report, or entries to take and the queue did not come up short last
// time (when it did, peer.wake pokes the agent once work arrives).
func (a *agent) ask(as []answer, credits, prefetch int) {
	a.mu.Lock()
	a.answers = append(a.answers, as...)
	a.want = max(0, credits+prefetch-len(a.ready))
	kick := len(as) > 0 || (a.want > 0 && !a.c.hungry.Load())
	a.mu.Unlock()
	if kick {
		a.poke()
	}
}

// sendable checks an entry against the spool first (Relay.sendable): an
// article expired, cut off or damaged is settled as missing here, instead
// of breaking the connection when its body cannot be read.
func (a *agent) sendable(now time.Time, e queue.Entry) (size int64, ok bool) {
	c := a.c
	p := c.p
	tok, err := spoolfs.ParseToken(e.Token)
	if err != nil {
		p.r.log.Warn("bad token in queue", "peer", p.cfg.Name, "id", e.MessageID, "token", e.Token)
		p.q.done(now, c.id, e.MessageID, queue.OutcomeMissing)
		return 0, false
	}
	if !p.r.sendable(e.MessageID, e.Token, tok) { // which forgets one found bad when sent
		p.r.alog.add(now, e.MessageID, "peer="+p.cfg.Name, "missing")
		p.q.done(now, c.id, e.MessageID, queue.OutcomeMissing)
		return 0, false
	}
	if p.tooOld(now, e.MessageID) {
		p.r.alog.add(now, e.MessageID, "peer="+p.cfg.Name, "too_old")
		p.q.done(now, c.id, e.MessageID, queue.OutcomeMissing)
		return 0, false
	}
	return int64(tok.Len), true
}
