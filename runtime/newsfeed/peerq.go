package newsfeed

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/spoolfs"
)

// peerQueue shares one peer's spoolfs.PeerQueue (the queue machine and its
// backlog files) between the committer and the peer's connections: one
// mutex around every call, a timer for the machine's deadline, and a wake
// callback that pokes connections when work may have arrived.
type peerQueue struct {
	name string
	log  *slog.Logger
	now  func() time.Time

	mu    sync.Mutex
	q     *spoolfs.PeerQueue
	timer *time.Timer
	wake  func() // called (without mu) after anything that may give connections work
	shut  bool
	up    int // connections up, as told to the queue
	// paused (newsfeed ctl pause) keeps next from handing out work: the
	// queue still takes offers, spilling to .B when memory is full.
	paused bool
}

// openPeerQueue recovers the peer's backlog files in dir (journals left by
// a crash become backlog to send again) and starts its queue machine.
func openPeerQueue(dir string, cfg queue.Config, now func() time.Time, log *slog.Logger) (*peerQueue, error) {
	q, err := spoolfs.OpenPeerQueue(dir, cfg, now(), log)
	if err != nil {
		return nil, fmt.Errorf("queue %s: %w", cfg.Peer, err)
	}
	p := &peerQueue{name: cfg.Peer, log: log, now: now, q: q, wake: func() {}}
	p.mu.Lock()
	p.armLocked(now())
	p.mu.Unlock()
	return p, nil
}

// lostFiles is how many backlog files were found gone at open.
func (p *peerQueue) lostFiles() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.q.LostFiles())
}

// failed logs an error of the queue: the machine refused an input, which
// is a bug, or a file operation failed (already logged by PeerQueue).
func (p *peerQueue) failed(what string, err error) {
	if err != nil {
		p.log.Error("peer queue", "peer", p.name, "op", what, "err", err)
	}
}

// armLocked sets the timer to the machine's deadline.
func (p *peerQueue) armLocked(now time.Time) {
	if p.shut {
		return
	}
	d, ok := p.q.Deadline()
	if !ok {
		if p.timer != nil {
			p.timer.Stop()
		}
		return
	}
	wait := max(d.Sub(now), time.Millisecond)
	if p.timer == nil {
		p.timer = time.AfterFunc(wait, p.tick)
	} else {
		p.timer.Reset(wait)
	}
}

func (p *peerQueue) tick() {
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		return
	}
	now := p.now()
	p.failed("tick", p.q.Tick(now))
	p.armLocked(now)
	wake := p.wake
	p.mu.Unlock()
	wake()
}

// offer queues entries for the peer (the masterfeed's copies), their
// journal lines in one write. They are durable in the queue's files after
// the next sync.
func (p *peerQueue) offer(now time.Time, es []queue.Entry) error {
	p.mu.Lock()
	var first error
	if p.shut {
		first = fmt.Errorf("queue %s: shut down", p.name)
	} else {
		first = p.q.OfferBatch(now, es)
	}
	p.armLocked(now)
	wake := p.wake
	p.mu.Unlock()
	wake()
	return first
}

func (p *peerQueue) connUp(now time.Time, c queue.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		return
	}
	p.failed("conn up", p.q.ConnUp(now, c))
	p.up++
	p.armLocked(now)
}

// connsUp is the number of connections up.
func (p *peerQueue) connsUp() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up
}

func (p *peerQueue) connDown(now time.Time, c queue.Conn) {
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		return
	}
	p.failed("conn down", p.q.ConnDown(now, c))
	p.up--
	p.armLocked(now)
	wake := p.wake
	p.mu.Unlock()
	wake() // other connections may take what came back
}

// next hands connection c up to max entries, appended to dst.
func (p *peerQueue) next(now time.Time, c queue.Conn, max int, dst []queue.Entry) []queue.Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut || p.paused {
		return dst
	}
	for range max {
		e, ok, err := p.q.Next(now, c)
		if err != nil {
			p.failed("next", err)
			break
		}
		if !ok {
			break
		}
		dst = append(dst, e)
	}
	p.armLocked(now)
	return dst
}

// done reports the peer's answer for an entry handed to c.
func (p *peerQueue) done(now time.Time, c queue.Conn, id string, o queue.Outcome) {
	p.doneBatch(now, c, []answer{{id: id, o: o}})
}

// doneBatch reports the peer's answers for entries handed to c, in
// order, under one lock.
func (p *peerQueue) doneBatch(now time.Time, c queue.Conn, as []answer) {
	if len(as) == 0 {
		return
	}
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		return
	}
	deferred := false
	for _, a := range as {
		p.failed("done", p.q.Done(now, c, a.id, a.o))
		deferred = deferred || a.o == queue.OutcomeDeferred
	}
	p.armLocked(now)
	wake := p.wake
	p.mu.Unlock()
	if deferred {
		wake() // other connections may take it once its delay is over
	}
}

// setWake sets the callback that pokes the peer's connections (a peer
// rebuilt by a reload takes over the queue).
func (p *peerQueue) setWake(fn func()) {
	p.mu.Lock()
	p.wake = fn
	p.mu.Unlock()
}

// setPaused pauses or resumes handing out work; it reports whether the
// state changed. The queue machine is told too, so that a paused peer's
// backlog stays on disk (a flush is not read back into memory). Resuming
// wakes the connections.
func (p *peerQueue) setPaused(on bool) bool {
	p.mu.Lock()
	changed := p.paused != on
	p.paused = on
	if changed && !p.shut {
		now := p.now()
		p.failed("pause", p.q.Pause(now, on))
		p.armLocked(now)
	}
	wake := p.wake
	p.mu.Unlock()
	if changed && !on {
		wake()
	}
	return changed
}

// isPaused reports whether the queue is paused.
func (p *peerQueue) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// flush writes the memory queue to backlog, as a shutdown does, while the
// queue keeps running; it returns how many entries it wrote. The entries
// stay durable throughout: the machine syncs the .B file before it deletes
// the journal that held them, and the rest are in the spool after the
// fan-out position until the committer's next sync (fanout.go).
func (p *peerQueue) flush(now time.Time) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		return 0, fmt.Errorf("queue %s: shut down", p.name)
	}
	n, err := p.q.Flush(now)
	p.armLocked(now)
	return n, err
}

// sync makes every offer since the last sync durable; an error means some
// may not be (do not acknowledge them).
func (p *peerQueue) sync() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		return fmt.Errorf("queue %s: shut down", p.name)
	}
	return p.q.Sync()
}

func (p *peerQueue) stats() queue.Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.q.Stats()
}

// shutdown writes the memory queue and everything in flight to backlog and
// closes the files; the queue takes no input afterwards.
func (p *peerQueue) shutdown(now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		return nil
	}
	p.shut = true
	if p.timer != nil {
		p.timer.Stop()
	}
	return p.q.Shutdown(now)
}
