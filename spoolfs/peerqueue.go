package spoolfs

// # Theory of operation: the owner of one peer's queue
//
// machine/queue decides and Backlog carries out; PeerQueue is the loop
// between them that every runtime would otherwise write: after each input
// it carries out the machine's actions in order, reports each failure back
// (queue.Failed) before the next input, hands replay reads back
// (queue.ReplayRead) once the input's actions are done, and repeats until
// the machine asks for nothing more. Events are logged.
//
// Durability is a group commit that spans peers. For each
// batch of articles received from upstream, the runtime stores them in the
// spool, calls Offer on the PeerQueue of every peer that wants each one,
// then calls Sync on every PeerQueue it offered to (and the spool's Sync),
// and acknowledges the batch upstream (239/235) only if all of them
// returned nil. Sync reports an error if any write since the last Sync
// failed, or the fsync did: those offers are not known to be durable, so
// the runtime must not acknowledge them (it answers "try later", 431/436,
// and upstream sends them again). A runtime that can rebuild the offers
// from something durable already may Sync less often: newsfeed's relay
// acknowledges once the spool is synced and calls Sync before it moves
// its fan-out position, the point from which a restart routes the spool's
// articles to the peers again (runtime/newsfeed/fanout.go).
//
// After that, a crash loses nothing: what was in memory or in flight is in
// a journal file, and OpenPeerQueue sends it again (Stats.Resent counts it;
// those are the possible duplicates).

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
)

// PeerQueue is one peer's outgoing queue on disk: a queue.Queue and the
// Backlog that carries out its file operations before each method returns.
//
// It is not safe for concurrent use: the runtime guards each PeerQueue with
// a mutex of its own (one per peer), held across every call, Sync included.
// Calls do file I/O while it is held: appends are write(2)s, a Next that
// refills the memory queue reads up to half a queue of lines from
// <peer>.P, Sync and rotations fsync.
type PeerQueue struct {
	q    *queue.Queue
	b    *Backlog
	log  *slog.Logger
	peer string

	writeErr error // the first failed write since the last Sync
	drops    map[queue.Reason]int64
	closed   bool
	dead     error // set once a test crash point was reached

	crashAfter int // tests: carry out this many more actions, then die (0: never)
}

// errPeerQueueCrash is what every call returns after a test crash point.
var errPeerQueueCrash = errors.New("peer queue: simulated crash")

// OpenPeerQueue opens the queue of cfg.Peer in dir: it recovers the peer's
// files (Backlog.Recover: journals left by a crash become backlog to send
// again) and starts the machine from them. A nil log discards.
func OpenPeerQueue(dir string, cfg queue.Config, now time.Time, log *slog.Logger) (*PeerQueue, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b, err := OpenBacklog(dir, cfg.Peer, log)
	if err != nil {
		return nil, err
	}
	rec, err := b.Recover()
	if err != nil {
		b.Close()
		return nil, err
	}
	q, err := queue.New(cfg, now, rec)
	if err != nil {
		b.Close()
		return nil, err
	}
	p := &PeerQueue{q: q, b: b, log: log, peer: cfg.Peer}
	if s := q.Stats(); s.Recovered > 0 {
		log.Info("peer queue: recovered", "peer", p.peer, "entries", s.Recovered, "resent", s.Resent,
			"backlog", s.Backlog, "deferred", s.Deferred, "replay", s.Replay)
	}
	if err := p.run(now); err != nil {
		b.Close()
		return nil, err
	}
	return p, nil
}

// LostFiles returns the backlog files the queue's durable state named that
// were gone at open (see Backlog.Lost): acknowledged articles lost.
func (p *PeerQueue) LostFiles() []LostFile { return p.b.Lost() }

// Offer queues e for the peer (see queue.Queue.Offer). The write it asks for
// is durable only after the next Sync succeeds: acknowledge e upstream after
// that, not before. An error means e was not taken (an invalid entry, or a
// closed queue); a failed write is reported by Sync instead.
func (p *PeerQueue) Offer(now time.Time, e queue.Entry) error {
	if err := p.usable(); err != nil {
		return err
	}
	if err := p.q.Offer(now, e); err != nil {
		return err
	}
	return p.run(now)
}

// OfferBatch is Offer for many entries at once, such as the copies of one
// group commit for this peer. The machine gathers consecutive journal lines
// into one AppendJournal, and the actions are carried out once, after the
// last offer, so the batch's lines leave in one write(2) instead of one
// each (profiling the relay showed a write per article per peer). Entries
// the machine refuses are skipped and the first such error is returned;
// the others are taken. A file operation that fails is reported to the
// machine after the whole batch: entries of the batch that went to the same
// file are counted as dropped, and, as with Offer, the next Sync fails, so
// none of the batch is acknowledged upstream.
func (p *PeerQueue) OfferBatch(now time.Time, es []queue.Entry) error {
	if err := p.usable(); err != nil {
		return err
	}
	var first error
	for _, e := range es {
		if err := p.q.Offer(now, e); err != nil && first == nil {
			first = err
		}
	}
	if err := p.run(now); err != nil {
		return err
	}
	return first
}

// Sync makes every offer since the last Sync durable: one fsync per file
// written. A non-nil error means some of those offers may not be durable (a
// write or an fsync failed): do not acknowledge them upstream.
func (p *PeerQueue) Sync() error {
	if err := p.usable(); err != nil {
		return err
	}
	werr := p.writeErr
	p.writeErr = nil
	err := p.b.Sync()
	if werr != nil {
		werr = fmt.Errorf("peer queue %s: a write since the last sync failed: %w", p.peer, werr)
	}
	return errors.Join(werr, err)
}

// Next hands connection c the next entry to send, refilling the memory
// queue from the backlog files when it is empty (which reads from disk).
// False means there is nothing to send now: call again after the next
// Offer, Done, ConnDown or Tick. An error is a bug (the machine refused
// what it had asked for).
func (p *PeerQueue) Next(now time.Time, c queue.Conn) (queue.Entry, bool, error) {
	if err := p.usable(); err != nil {
		return queue.Entry{}, false, err
	}
	// An empty memory queue asks for a promotion, then for a read; each
	// step is one action, so a few rounds reach the entries if there are
	// any.
	for range 8 {
		e, ok := p.q.Next(now, c)
		acted, err := p.runCount(now)
		if err != nil || ok {
			return e, ok && err == nil, err
		}
		if acted == 0 {
			break
		}
	}
	return queue.Entry{}, false, nil
}

// Done reports the peer's answer for message-id id on connection c (see
// queue.Queue.Done).
func (p *PeerQueue) Done(now time.Time, c queue.Conn, id string, o queue.Outcome) error {
	if err := p.usable(); err != nil {
		return err
	}
	if err := p.q.Done(now, c, id, o); err != nil {
		return err
	}
	return p.run(now)
}

// ConnUp tells the queue that connection c can take work.
func (p *PeerQueue) ConnUp(now time.Time, c queue.Conn) error {
	if err := p.usable(); err != nil {
		return err
	}
	if err := p.q.ConnUp(now, c); err != nil {
		return err
	}
	return p.run(now)
}

// ConnDown tells the queue that connection c is gone: what it had in flight
// goes back to the head of the memory queue.
func (p *PeerQueue) ConnDown(now time.Time, c queue.Conn) error {
	if err := p.usable(); err != nil {
		return err
	}
	if err := p.q.ConnDown(now, c); err != nil {
		return err
	}
	return p.run(now)
}

// Tick lets time pass; call it at Deadline.
func (p *PeerQueue) Tick(now time.Time) error {
	if err := p.usable(); err != nil {
		return err
	}
	p.q.Tick(now)
	return p.run(now)
}

// Deadline is when Tick must next be called; false means no deadline.
func (p *PeerQueue) Deadline() (time.Time, bool) { return p.q.Deadline() }

// Drops returns the entries dropped since open, by reason (a copy).
func (p *PeerQueue) Drops() map[queue.Reason]int64 {
	out := make(map[queue.Reason]int64, len(p.drops))
	for r, n := range p.drops {
		out[r] = n
	}
	return out
}

// Stats returns the queue's counters (queue.Stats).
func (p *PeerQueue) Stats() queue.Stats { return p.q.Stats() }

// Check verifies the machine's invariants (queue.Queue.Check); for tests
// and debugging.
func (p *PeerQueue) Check() error { return p.q.Check() }

// Pause tells the queue that its owner hands out no work (on) or does
// again: while paused no backlog file is replayed into memory
// (queue.Queue.Pause).
func (p *PeerQueue) Pause(now time.Time, on bool) error {
	if err := p.usable(); err != nil {
		return err
	}
	p.q.Pause(now, on)
	return p.run(now)
}

// Flush writes the memory queue to .B now (queue.Queue.Flush) and
// returns how many entries it wrote; they are durable after the next Sync.
func (p *PeerQueue) Flush(now time.Time) (int, error) {
	if err := p.usable(); err != nil {
		return 0, err
	}
	n, err := p.q.Flush(now)
	if err != nil {
		return 0, err
	}
	return n, p.run(now)
}

// Shutdown stops the queue cleanly: the memory queue and everything in
// flight are written to .B, the journals are deleted, every file is synced
// and closed. Every later call is an error.
func (p *PeerQueue) Shutdown(now time.Time) error {
	if err := p.usable(); err != nil {
		return err
	}
	err := p.q.Shutdown(now)
	if err == nil {
		err = p.run(now)
	}
	p.closed = true
	if cerr := p.b.Close(); err == nil {
		err = cerr
	}
	if err == nil && p.writeErr != nil {
		err = fmt.Errorf("peer queue %s: shutdown: %w", p.peer, p.writeErr)
	}
	return err
}

func (p *PeerQueue) usable() error {
	switch {
	case p.dead != nil:
		return p.dead
	case p.closed:
		return fmt.Errorf("peer queue %s: shut down", p.peer)
	}
	return nil
}

func (p *PeerQueue) run(now time.Time) error {
	_, err := p.runCount(now)
	return err
}

// runCount carries out the machine's actions until it asks for nothing
// more, and returns how many it carried out.
func (p *PeerQueue) runCount(now time.Time) (int, error) {
	acted := 0
	for {
		var reads []ReplayBatch
		for {
			a, ok := p.q.NextAction()
			if !ok {
				break
			}
			if p.crashAfter > 0 {
				p.crashAfter--
				if p.crashAfter == 0 {
					p.dead = errPeerQueueCrash
					return acted, p.dead
				}
			}
			acted++
			batch, err := p.b.Do(a)
			if err != nil {
				p.log.Warn("peer queue: file operation failed", "peer", p.peer, "action", fmt.Sprintf("%T", a), "err", err)
				switch a.(type) {
				case queue.ReadReplay, queue.WriteManifest:
					// Neither holds an article: a manifest only lets
					// the next start report files deleted under us.
				default:
					if p.writeErr == nil {
						// Conservative: any other failure may have
						// cost durability (most of them sync first).
						p.writeErr = err
					}
				}
				if ferr := p.q.Failed(now, a, err); ferr != nil {
					return acted, fmt.Errorf("peer queue %s: %w", p.peer, ferr)
				}
				continue
			}
			if _, ok := a.(queue.ReadReplay); ok {
				reads = append(reads, batch)
			}
		}
		p.logEvents()
		if len(reads) == 0 {
			return acted, nil
		}
		// Read results go back once every action of the input is done,
		// as the machine's contract asks.
		for _, r := range reads {
			if r.Bad > 0 {
				p.log.Warn("peer queue: corrupt backlog lines quarantined", "peer", p.peer, "lines", r.Bad)
			}
			if err := p.q.ReplayRead(now, r.Entries, r.Offset, r.EOF); err != nil {
				return acted, fmt.Errorf("peer queue %s: %w", p.peer, err)
			}
		}
	}
}

// logEvents logs what the machine reports: drops as warnings (they are
// counted in Stats.Dropped too), the rest for operators following along.
func (p *PeerQueue) logEvents() {
	for {
		ev, ok := p.q.NextEvent()
		if !ok {
			return
		}
		switch ev := ev.(type) {
		case queue.Drop:
			// A drop names the file it removed; entries in no file (the
			// oldest of a batch cut before it was written past
			// backlog_max_bytes, an article past max_defers) name none.
			attrs := []any{"peer", p.peer, "reason", string(ev.Reason), "count", ev.Count}
			if ev.File != "" {
				attrs = append(attrs, "file", ev.File)
			}
			p.log.Warn("peer queue: entries dropped", attrs...)
			if p.drops == nil {
				p.drops = map[queue.Reason]int64{}
			}
			p.drops[ev.Reason] += int64(ev.Count)
		case queue.Spilled:
			p.log.Debug("peer queue: spilled to backlog", "peer", p.peer, "count", ev.Count, "file", ev.File, "down", ev.Down)
		case queue.ReplayStarted:
			p.log.Info("peer queue: replaying backlog", "peer", p.peer, "file", ev.File, "entries", ev.Entries)
		case queue.ReplayFinished:
			p.log.Info("peer queue: backlog replayed", "peer", p.peer, "quarantined", ev.Quarantined)
		}
	}
}
