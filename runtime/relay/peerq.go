package relay

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/spoolfs"
)

// peerQueue drives one peer's queue machine (machine/queue) for the relay:
// it serialises the machine's inputs under one mutex, carries out its file
// actions with spoolfs.Backlog as they appear, logs its events, and serves
// its deadline with a timer. Connections and the masterfeed call it from
// their own goroutines.
type peerQueue struct {
	name string
	log  *slog.Logger
	now  func() time.Time

	mu    sync.Mutex
	q     *queue.Queue
	b     *spoolfs.Backlog
	timer *time.Timer
	wake  func() // called (without mu) after anything that may give connections work
	shut  bool
}

// openPeerQueue recovers the peer's backlog files in dir and starts its
// queue machine.
func openPeerQueue(dir string, cfg queue.Config, now func() time.Time, log *slog.Logger) (*peerQueue, error) {
	b, err := spoolfs.OpenBacklog(dir, cfg.Peer, log)
	if err != nil {
		return nil, err
	}
	rec, err := b.Recover()
	if err != nil {
		b.Close()
		return nil, err
	}
	q, err := queue.New(cfg, now(), rec)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("queue %s: %w", cfg.Peer, err)
	}
	p := &peerQueue{name: cfg.Peer, log: log, now: now, q: q, b: b, wake: func() {}}
	var files, entries int
	for _, f := range rec.Files {
		files++
		entries += f.Entries
	}
	if rec.Replay != nil {
		files++
		entries += rec.Replay.Entries
	}
	if files > 0 {
		log.Info("backlog recovered", "peer", cfg.Peer, "files", files, "articles", entries)
	}
	p.mu.Lock()
	p.drainLocked(now())
	p.mu.Unlock()
	return p, nil
}

// drainLocked carries out every pending action, logs events and re-arms
// the timer, and returns how many actions it carried out. Call it with mu
// held after every input.
func (p *peerQueue) drainLocked(now time.Time) int {
	n := 0
	for {
		a, ok := p.q.NextAction()
		if !ok {
			break
		}
		p.doLocked(now, a)
		n++
	}
	for {
		ev, ok := p.q.NextEvent()
		if !ok {
			break
		}
		p.logEvent(ev)
	}
	p.armLocked(now)
	return n
}

func (p *peerQueue) logEvent(ev queue.Event) {
	switch e := ev.(type) {
	case queue.Drop:
		p.log.Warn("articles dropped", "peer", p.name, "reason", string(e.Reason), "count", e.Count, "file", e.File)
	case queue.Spilled:
		p.log.Info("memory queue spilled to backlog", "peer", p.name, "count", e.Count, "file", e.File)
	case queue.ReplayStarted:
		p.log.Info("replaying backlog", "peer", p.name, "file", e.File, "articles", e.Entries)
	case queue.ReplayFinished:
		p.log.Info("backlog replayed", "peer", p.name, "quarantined", e.Quarantined)
	default:
		p.log.Debug("queue event", "peer", p.name, "event", fmt.Sprintf("%+v", ev))
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
	p.q.Tick(now)
	p.drainLocked(now)
	p.mu.Unlock()
	p.wake()
}

// offer queues entries for the peer (the masterfeed's copy).
func (p *peerQueue) offer(now time.Time, es []queue.Entry) error {
	p.mu.Lock()
	var first error
	for _, e := range es {
		if p.shut {
			first = fmt.Errorf("queue %s: shut down", p.name)
			break
		}
		if err := p.q.Offer(now, e); err != nil && first == nil {
			first = err
		}
	}
	p.drainLocked(now)
	p.mu.Unlock()
	p.wake()
	return first
}

func (p *peerQueue) connUp(now time.Time, c queue.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		return
	}
	if err := p.q.ConnUp(now, c); err != nil {
		p.log.Error("queue", "peer", p.name, "err", err)
	}
	p.drainLocked(now)
}

func (p *peerQueue) connDown(now time.Time, c queue.Conn) {
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		return
	}
	if err := p.q.ConnDown(now, c); err != nil {
		p.log.Error("queue", "peer", p.name, "err", err)
	}
	p.drainLocked(now)
	p.mu.Unlock()
	p.wake() // other connections may take what came back
}

// next hands connection c up to max entries, appended to dst.
func (p *peerQueue) next(now time.Time, c queue.Conn, max int, dst []queue.Entry) []queue.Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		return dst
	}
	for n, retries := 0, 0; n < max; {
		e, ok := p.q.Next(now, c)
		if ok {
			dst = append(dst, e)
			n++
			continue
		}
		// Nothing in memory: the machine may have asked for a replay file
		// to be promoted or read. Carry that out and try again.
		if p.drainLocked(now) == 0 || retries == 3 {
			break
		}
		retries++
	}
	p.drainLocked(now)
	return dst
}

// done reports the peer's answer for an entry handed to c.
func (p *peerQueue) done(now time.Time, c queue.Conn, id string, o queue.Outcome) {
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		return
	}
	if err := p.q.Done(now, c, id, o); err != nil {
		p.log.Error("queue", "peer", p.name, "err", err)
	}
	p.drainLocked(now)
	p.mu.Unlock()
	if o == queue.OutcomeDeferred {
		p.wake()
	}
}

// sync makes every backlog line appended so far durable (the group
// commit's share of this peer).
func (p *peerQueue) sync() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.Sync()
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
	if err := p.q.Shutdown(now); err != nil {
		p.log.Error("queue shutdown", "peer", p.name, "err", err)
	}
	p.drainLocked(now)
	p.shut = true
	if p.timer != nil {
		p.timer.Stop()
	}
	return p.b.Close()
}

// doLocked carries out one action and reports its outcome to the machine.
func (p *peerQueue) doLocked(now time.Time, a queue.Action) {
	batch, err := p.b.Do(a)
	if err != nil {
		p.log.Error("backlog action failed", "peer", p.name, "action", fmt.Sprintf("%T", a), "err", err)
		if ferr := p.q.Failed(now, a, err); ferr != nil {
			p.log.Error("queue", "peer", p.name, "err", ferr)
		}
		return
	}
	if _, isRead := a.(queue.ReadReplay); isRead {
		if err := p.q.ReplayRead(now, batch.Entries, batch.Offset, batch.EOF); err != nil {
			p.log.Error("queue", "peer", p.name, "err", err)
		}
	}
}
