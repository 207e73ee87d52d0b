package newsfeed

import (
	"sync"
	"time"

	"github.com/newsflow/newsflow/machine/ingest"
	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/spoolfs"
)

// pendingArt is one stored article waiting for the group commit.
type pendingArt struct {
	ic    *inConn // the connection to answer; nil for inject
	seq   uint64  // the ingest machine's sequence number
	entry queue.Entry
	peers []*peer
	done  chan ingest.Result // inject waits here; nil for connections
	// routed: the masterfeed chose peers (put), so a restart that routes
	// the spool again (fanout.go) chooses them again. Articles addressed
	// by their sender (an innd channel's sites) are not: their queue
	// entries are synced before they are answered.
	routed bool
}

// committer is the group commit: it takes every article stored since its
// last round, offers each to the peers that want it (their queues journal
// the offer), makes the spool durable with one Sync, and only then answers
// the articles' senders. While the disk is full it holds the batch, keeps
// ingest off, and retries.
//
// One fdatasync a round, not one for the spool and one per peer: an
// article's queue entries need not be durable when it is acknowledged,
// because the spool record is, and it lies after the fan-out position
// (fanout.go), from which a restart routes every article to its peers
// again. The peers' queue files are synced when the position moves (at
// most every fanoutEvery, on a goroutine of its own beside the next
// rounds), before it is written: the position never passes an article
// whose entries are not durable in its peers' files. The answers wait for
// the round, so a round of two fdatasyncs back to back would halve the
// speed of a feeder with a bounded window.
//
// Rounds run one at a time: round N+1 starts when round N is answered.
// Overlapping them (round N+1 Puts and starts its fdatasync while round
// N's runs) gains nothing: the device serializes the flushes, so an
// article arriving mid-round waits about the rest of the round plus one
// sync either way, and the earlier round's answers come later.
type committer struct {
	r *Relay

	mu       sync.Mutex
	cond     *sync.Cond
	items    []pendingArt
	running  bool
	stopping bool
	done     chan struct{}

	// For stats: successful rounds, the articles they made durable, and
	// the time they took (batch taken to batch answered).
	rounds, synced int64
	roundTime      time.Duration
	syncTime       time.Duration // of roundTime, in the spool's Sync
	wantProbe      bool          // a Put failed for lack of space: probe until it would not

	// The fan-out position (fanout.go), owned by the loop but for
	// posFrozen, which is under mu (a failed move sets it too).
	posFrozen bool // a round or a move failed: the position stays where it is
	posWrote  time.Time
	// unsynced are the queues offered to since the last move started,
	// owned by the loop: their files are synced before the next move.
	unsynced map[*peerQueue]struct{}
	every    time.Duration // fanoutEvery; tests set it before the first round
	// A round whose position was not written (too soon after the last)
	// leaves it here, owned by the loop; moveDue, under mu, is set
	// every later by a timer, so that an idle relay writes it then
	// rather than at the next round, whenever that comes.
	pendPos  spoolfs.Position
	pending  bool
	timerSet bool
	moveDue  bool
	moved    func() // tests: called after the position moved (by the move's goroutine)
}

// counts returns the stats of the successful rounds so far: how many,
// their articles, their total time in seconds, and the part of it spent
// in the spool's Sync.
func (c *committer) counts() (rounds, articles int64, seconds, syncSeconds float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rounds, c.synced, c.roundTime.Seconds(), c.syncTime.Seconds()
}

// frozen reports whether a failed round froze the fan-out position.
func (c *committer) frozen() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.posFrozen
}

func newCommitter(r *Relay) *committer {
	c := &committer{r: r, done: make(chan struct{}), unsynced: map[*peerQueue]struct{}{}, every: fanoutEvery}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// start runs the commit loop (once).
func (c *committer) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running || c.stopping {
		return
	}
	c.running = true
	go c.loop()
}

// add queues stored articles for the next round.
func (c *committer) add(items ...pendingArt) {
	c.mu.Lock()
	if c.stopping && !c.running {
		c.mu.Unlock()
		for _, it := range items {
			c.answer(it, ingest.Result{Outcome: ingest.StoreLater, Reason: "shutting down"})
		}
		return
	}
	c.items = append(c.items, items...)
	c.cond.Signal()
	c.mu.Unlock()
}

// stop finishes the round in progress and everything queued, then ends
// the loop. It is safe to call more than once, and on a committer never
// started.
func (c *committer) stop() {
	c.mu.Lock()
	if c.stopping {
		running := c.running
		c.mu.Unlock()
		if running {
			<-c.done
		}
		return
	}
	c.stopping = true
	running := c.running
	c.cond.Broadcast()
	c.mu.Unlock()
	if running {
		<-c.done
	}
}

func (c *committer) loop() {
	var batch []pendingArt
	var moving chan struct{} // closed when the fan-out move under way ends
	defer func() {
		if moving != nil {
			<-moving
		}
		close(c.done)
	}()
	for {
		c.mu.Lock()
		for len(c.items) == 0 && !c.stopping && !c.wantProbe && !c.moveDue {
			c.cond.Wait()
		}
		if c.moveDue && len(c.items) == 0 && !c.stopping {
			c.moveDue, c.timerSet = false, false
			move := c.pending && !c.posFrozen
			c.mu.Unlock()
			if move {
				if moving != nil {
					<-moving
				}
				moving = c.startMove(c.pendPos)
			}
			continue
		}
		if c.wantProbe && len(c.items) == 0 && !c.stopping {
			c.wantProbe = false
			c.mu.Unlock()
			c.probe()
			continue
		}
		if len(c.items) == 0 && c.stopping {
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if d := c.r.cfg.CommitDelay.D(); d > 0 {
			time.Sleep(d) // gather more articles for this fsync
		}
		// Take the batch under putMu: every article stored so far is in
		// it or in an earlier one, so the spool's end now (PutEnd, this
		// batch's records included) is a valid fan-out position once this
		// round's Sync succeeds.
		c.r.putMu.Lock()
		c.mu.Lock()
		batch = append(batch[:0], c.items...)
		clear(c.items)
		c.items = c.items[:0]
		c.mu.Unlock()
		pos := c.r.spool.PutEnd()
		c.r.putMu.Unlock()
		if len(batch) == 0 {
			continue
		}
		ok := c.commit(batch, time.Now())
		clear(batch)
		c.mu.Lock()
		if !ok {
			c.posFrozen = true
		}
		move := !c.posFrozen && c.r.now().Sub(c.posWrote) >= c.every
		c.mu.Unlock()
		if move && moving != nil {
			select {
			case <-moving:
				moving = nil
			default:
				move = false // the last one still runs: the next round moves
			}
		}
		if move {
			moving = c.startMove(pos)
		} else {
			c.pendPos, c.pending = pos, true
			c.mu.Lock()
			if !c.timerSet {
				c.timerSet = true
				time.AfterFunc(c.every, func() {
					c.mu.Lock()
					c.moveDue = true
					c.cond.Signal()
					c.mu.Unlock()
				})
			}
			c.mu.Unlock()
		}
	}
}

// startMove starts moving the fan-out position to pos on a goroutine of
// its own and returns the channel closed when it ends. The move's fsyncs
// overlap the next rounds rather than hold them up: they cover every
// offer before they start, and pos needs no more than the last round's.
func (c *committer) startMove(pos spoolfs.Position) chan struct{} {
	qs := c.unsynced
	c.unsynced = map[*peerQueue]struct{}{}
	c.posWrote = c.r.now()
	c.pending = false
	moving := make(chan struct{})
	go func() {
		defer close(moving)
		c.moveFanout(pos, qs)
	}()
	return moving
}

// moveFanout makes the queue entries of every round so far durable (one
// Sync per queue in qs, those offered to since the last move), then
// records pos as the fan-out position: every article before it was in one
// of those rounds. A failed Sync freezes the position instead, for the
// rest of the run: the articles are durable in the spool, acknowledged,
// and the next start routes them again from the old position. With the
// disk full, ingest stops until a probe write succeeds, as after a failed
// round. It runs on a goroutine of its own, one at a time.
func (c *committer) moveFanout(pos spoolfs.Position, qs map[*peerQueue]struct{}) {
	r := c.r
	var perr error
	for q := range qs {
		if err := q.sync(); err != nil {
			r.log.Error("peer queue sync failed: the articles are durable in the spool; the next start routes them again",
				"peer", q.name, "err", err)
			perr = err
		}
	}
	if perr != nil {
		c.mu.Lock()
		c.posFrozen = true
		c.mu.Unlock()
		if isDiskFull(perr) {
			r.setAccepting(false, "disk full")
			c.diskFull() // the loop probes
		}
		return
	}
	if c.frozen() {
		return // a round failed meanwhile: the position stays for the rest of the run
	}
	if err := writeFanout(r.cfg.Spool, pos); err != nil {
		r.log.Warn("cannot record the fan-out position", "err", err)
	}
	if c.moved != nil {
		c.moved()
	}
}

// commit is one round: fan out, sync the spool, answer. It reports
// whether the round made its articles durable in the spool (their queue
// entries are made durable by moveFanout).
// It started at start (wall clock, for the round-time stats).
func (c *committer) commit(batch []pendingArt, start time.Time) bool {
	r := c.r
	now := r.now()
	byPeer := map[*peer][]queue.Entry{}
	named := false // some article's peers were named by its sender
	for _, it := range batch {
		named = named || !it.routed
		for _, p := range it.peers {
			byPeer[p] = append(byPeer[p], it.entry)
		}
	}
	for p, es := range byPeer {
		if err := p.q.offer(now, es); err != nil {
			r.log.Error("queue offer failed", "peer", p.cfg.Name, "err", err)
		}
		p.offeredBytes.Add(sumSize(es))
		c.unsynced[p.q] = struct{}{}
	}
	// Durability: the spool (articles and history), then ack. The queue
	// entries just offered are durable at the next moveFanout; until then
	// the spool holds them, after the fan-out position (see committer).
	//
	// A Sync that fails for lack of space loses nothing: the spool keeps
	// the records buffered and writes them once space returns. But the
	// articles are not durable now, so they are answered "try later"
	// (TAKETHIS: 400 and close, IHAVE: 436) at once rather than held, and
	// ingest stops accepting until a probe write succeeds. Offered again,
	// they draw 431/436 while pending and 438 once written.
	// Ingest stops accepting before the batch is answered, so a feeder
	// that reconnects on the 400 finds it stopped (431/436), and the log
	// says why before anyone is told.
	syncStart := time.Now()
	err := r.spool.Sync()
	syncTime := time.Since(syncStart)
	if err != nil {
		if !isDiskFull(err) {
			r.log.Error("group commit failed: articles not acknowledged", "articles", len(batch), "err", err)
			r.setAccepting(false, "spool error: "+err.Error())
			c.answerAll(batch, "Disk full")
			return false
		}
		r.setAccepting(false, "disk full")
		r.log.Error("disk full: articles not acknowledged", "articles", len(batch), "err", err)
		c.answerAll(batch, "Disk full")
		c.probe()
		return false
	}
	if named && !c.syncQueues(batch, byPeer) {
		return false
	}
	if r.notAccepting() == "disk full" {
		r.setAccepting(true, "")
	}
	// Counted and logged before answered: a feeder told 239 finds its
	// article in status and trace.
	r.ingest.accepted.Add(int64(len(batch)))
	r.logArrivals(now, batch)
	ok := ingest.Result{Outcome: ingest.StoreAccepted}
	for _, it := range batch {
		c.answer(it, ok)
	}
	c.mu.Lock()
	c.rounds++
	c.synced += int64(len(batch))
	c.roundTime += time.Since(start)
	c.syncTime += syncTime
	c.mu.Unlock()
	return true
}

// syncQueues makes the round's queue entries durable in the queues'
// files before the round is answered, for articles whose peers the fan-out
// recovery could not choose again (routed false). If a Sync fails, the
// batch is answered "try later" and it reports false; the peers' copies are
// in their queues' memory already.
func (c *committer) syncQueues(batch []pendingArt, byPeer map[*peer][]queue.Entry) bool {
	r := c.r
	var perr error
	for p := range byPeer {
		if err := p.q.sync(); err != nil {
			r.log.Error("peer queue sync failed: articles not acknowledged", "peer", p.cfg.Name, "articles", len(batch), "err", err)
			perr = err
		}
	}
	if perr == nil {
		return true
	}
	if isDiskFull(perr) {
		r.setAccepting(false, "disk full")
	}
	c.answerAll(batch, "Cannot store articles now")
	if isDiskFull(perr) {
		c.probe()
	}
	return false
}

// diskFull asks the loop to probe the disk until it takes writes again
// (a Put failed for lack of space).
func (c *committer) diskFull() {
	c.mu.Lock()
	c.wantProbe = true
	c.cond.Signal()
	c.mu.Unlock()
}

// answerAll answers every article of the batch "try later".
func (c *committer) answerAll(batch []pendingArt, reason string) {
	for _, it := range batch {
		c.answer(it, ingest.Result{Outcome: ingest.StoreLater, Reason: reason})
	}
}

// probe waits until the disk takes writes again: every probe interval it
// writes and syncs a small file in the spool directory and retries the
// spool's buffered records. It turns accepting back on and returns true
// when both succeed, false if the relay stops first.
func (c *committer) probe() bool {
	r := c.r
	for {
		// Articles handed over meanwhile cannot be made durable either.
		c.mu.Lock()
		held := c.items
		c.items = nil
		stopping := c.stopping
		c.mu.Unlock()
		c.answerAll(held, "Disk full")
		if stopping {
			return false
		}
		time.Sleep(r.opts.ProbeInterval)
		if err := spoolfs.ProbeWrite(r.cfg.Spool); err != nil {
			r.log.Debug("disk still full", "err", err)
			continue
		}
		if err := r.spool.Sync(); err != nil {
			r.log.Debug("disk still full", "err", err)
			continue
		}
		if err := r.spool.Writable(); err != nil {
			r.log.Debug("disk still full", "err", err)
			continue
		}
		r.setAccepting(true, "")
		return true
	}
}

func (c *committer) isStopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopping
}

// answer gives an article's result to whoever waits for it.
func (c *committer) answer(it pendingArt, res ingest.Result) {
	switch {
	case it.done != nil:
		it.done <- res
	case it.ic != nil:
		it.ic.stored(it.seq, res)
	}
}

func sumSize(es []queue.Entry) int64 {
	var n int64
	for _, e := range es {
		n += e.Size
	}
	return n
}
