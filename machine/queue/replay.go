package queue

// The replay file <peer>.P: promoting a backlog file to it, reading it back
// half a queue at a time, settling what was read batch by batch, the
// checkpoint, and deleting (or quarantining) it once drained. It moves by the
// replay table (state_replay.go).

import (
	"fmt"
	"time"
)

// replay is the state of <peer>.P.
type replay struct {
	state    ReplayState
	source   *file // the file promoted, for an undo when the rename fails
	unread   int64 // entries not read yet
	bytes    int64
	readOff  int64 // where the next read starts
	doneOff  int64 // every entry before this is settled
	ckptOff  int64 // the last checkpoint asked for (-1: unknown)
	lastCkpt time.Time
	batches  []batch // read batches not yet settled, oldest first
	firstSeq uint64  // sequence of batches[0]
	nextSeq  uint64
	pending  int64  // entries of batches still unsettled
	failed   bool   // a read failed: quarantine instead of delete
	stuck    Action // the delete or quarantine to retry
	retryAt  time.Time
	resend   bool // promoted from a journal a crash left behind: what is read is a resend
}

type batch struct {
	end  int64 // offset after the batch's last line
	left int64 // entries not yet settled
}

// ReplayRead gives the queue the result of its ReadReplay action: the
// entries read, the offset after the last line consumed (complete lines
// only; a torn last line is not consumed), and whether the end of <peer>.P
// was reached. The entries join the tail of the memory queue.
func (q *Queue) ReplayRead(now time.Time, entries []Entry, newOffset int64, eof bool) error {
	on := OnRead
	if eof {
		on = OnReadEOF
	}
	if q.state != Running {
		return q.queueErr(on)
	}
	if q.rp.state != ReplayReading {
		return q.replayErr(on)
	}
	if newOffset < q.rp.readOff || (newOffset == q.rp.readOff && (len(entries) > 0 || !eof)) {
		return fmt.Errorf("queue %s: replay read of %d entries (eof %t) ends at offset %d, not after %d", q.cfg.Peer, len(entries), eof, newOffset, q.rp.readOff)
	}
	for _, e := range entries {
		if err := CheckEntry(e); err != nil {
			return fmt.Errorf("queue %s: replay read: %w", q.cfg.Peer, err)
		}
	}
	n := int64(len(entries))
	if n > q.rp.unread { // more lines than were counted: the surplus is found
		extra := n - q.rp.unread
		q.moveN(Absent, OnFound, extra)
		q.recovered += extra
		q.rp.unread += extra
	}
	q.moveN(Replay, OnRead, n)
	q.rp.unread -= n
	seq := q.rp.nextSeq
	q.rp.nextSeq++
	q.rp.batches = append(q.rp.batches, batch{end: newOffset, left: n})
	q.rp.pending += n
	for _, e := range entries {
		e.Resend = e.Resend || q.rp.resend
		q.mem.pushBack(item{Entry: e, batch: seq + 1})
	}
	q.rp.readOff = newOffset
	// At the end, what was counted but not found is gone: a write that
	// failed unnoticed, or lines corrupted on disk (spoolfs quarantined
	// them). Count it, so the totals still add up.
	if eof && q.rp.unread > 0 {
		q.moveN(Replay, OnShortRead, q.rp.unread)
		q.event(Drop{Reason: ReasonShortRead, Count: int(q.rp.unread), File: ReplayName(q.cfg.Peer)})
		q.rp.unread = 0
	}
	q.moveReplay(on)
	q.advance()
	if q.mem.n > q.cfg.QueueSize {
		q.spill(now, max(q.third, q.mem.n-q.cfg.QueueSize))
	}
	q.pump(now)
	return nil
}

func (q *Queue) replayOpen() bool {
	switch q.rp.state {
	case ReplayIdle, ReplayReading, ReplayDraining:
		return true
	}
	return false
}

// settle notes that an entry no longer needs the file it came from: the
// read batch of <peer>.P, or its journal file.
func (q *Queue) settle(it item) {
	if it.jrnl != nil {
		q.settleJournal(it.jrnl)
	}
	if it.batch == 0 {
		return
	}
	i := it.batch - 1 - q.rp.firstSeq
	q.rp.batches[i].left--
	q.rp.pending--
	q.advance()
}

// advance moves the settled offset past every leading batch fully settled.
func (q *Queue) advance() {
	for len(q.rp.batches) > 0 && q.rp.batches[0].left == 0 {
		q.rp.doneOff = q.rp.batches[0].end
		q.rp.batches = q.rp.batches[1:]
		q.rp.firstSeq++
	}
}

func (q *Queue) checkpoint(now time.Time) {
	q.emit(Checkpoint{Offset: q.rp.doneOff, Left: q.rp.unread + q.rp.pending})
	q.rp.ckptOff = q.rp.doneOff
	q.rp.lastCkpt = now
}

// pump takes at most one step with the replay file, so that a failure the
// owner reports always concerns the step just taken: retry a stuck delete,
// delete a drained file, promote the oldest ready backlog file, or ask for a
// refill of the empty memory queue (checkpointing first, unless the last
// checkpoint is younger than RefillCheckpointGap). It promotes and refills
// only for connections that may take work (up, not paused).
func (q *Queue) pump(now time.Time) {
	if q.state != Running {
		return
	}
	want := !q.paused && len(q.conns) > 0 && q.mem.n == 0
	switch q.rp.state {
	case ReplayStuck:
		if !now.Before(q.rp.retryAt) {
			q.emit(q.rp.stuck)
			q.moveReplay(OnRetryDelete)
		}
	case ReplayDraining:
		if q.rp.pending == 0 {
			q.finishReplay()
		}
	case ReplayNone:
		if !want {
			return
		}
		for _, f := range q.files {
			if now.Before(f.notBefore) {
				continue
			}
			if f.kind == KindDeferred && now.Before(f.last.Add(q.deferDelay(f.maxAttempts))) {
				continue
			}
			q.promote(now, f)
			return
		}
	case ReplayIdle:
		if !want {
			return
		}
		if q.rp.doneOff > q.rp.ckptOff && now.Sub(q.rp.lastCkpt) >= q.cfg.RefillCheckpointGap {
			q.checkpoint(now)
		}
		q.emit(ReadReplay{Offset: q.rp.readOff, Max: q.half})
		q.moveReplay(OnReadAsked)
	}
}

func (q *Queue) promote(now time.Time, f *file) {
	q.moveReplay(OnPromote)
	q.moveN(kindState(f.kind), OnPromote, f.entries)
	q.removeFile(f)
	q.rp = replay{state: q.rp.state, source: f, unread: f.entries, bytes: f.bytes, resend: f.resend,
		lastCkpt: now, nextSeq: q.rp.nextSeq, firstSeq: q.rp.nextSeq}
	q.emit(PromoteToReplay{File: f.name})
	q.emitManifest() // lists <peer>.P in place of f
	q.event(ReplayStarted{File: f.name, Entries: int(f.entries)})
}

// finishReplay deletes (or quarantines) a replay file read to the end whose
// entries are all settled.
func (q *Queue) finishReplay() {
	failed := q.rp.failed
	q.moveReplay(OnDrained)
	q.bytes -= q.rp.bytes
	var a Action = DeleteReplay{}
	if failed {
		ts := q.lastTS + 1
		q.lastTS = ts
		a = QuarantineReplay{To: QuarantineName(q.cfg.Peer, ts)}
	}
	q.rp = replay{state: q.rp.state, nextSeq: q.rp.nextSeq, firstSeq: q.rp.nextSeq}
	q.emitManifest() // unlists <peer>.P before it goes
	q.emit(a)
	q.event(ReplayFinished{Quarantined: failed})
}
