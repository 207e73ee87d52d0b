package queue

import "fmt"

// Stats returns the queue's counters.
func (q *Queue) Stats() Stats {
	var jbytes int64
	for _, j := range q.journals {
		jbytes += j.bytes
	}
	return Stats{
		Offered: q.offered, Recovered: q.recovered, Resent: q.resent,
		Accepted: q.count[Accepted], Refused: q.count[Refused], Rejected: q.count[Rejected],
		Missing: q.count[Missing], Dropped: q.count[Dropped], Lost: q.count[Lost],
		Queued: q.count[Queued], InFlight: q.count[InFlight], Backlog: q.count[Backlog],
		Deferred: q.count[Deferred], Replay: q.count[Replay],
		Spilled: q.spilled, Requeued: q.requeued, Retried: q.retried,
		BacklogBytes: q.bytes, BacklogFiles: len(q.files),
		Journaled: q.journaled, JournalBytes: jbytes, JournalFiles: len(q.journals),
	}
}

// ReplayState returns the state of <peer>.P (ReplayNone, ReplayIdle,
// ReplayReading, ReplayDraining or ReplayStuck).
func (q *Queue) ReplayState() ReplayState { return q.rp.state }

// Check verifies the queue's invariants: the counters add up, and each
// count agrees with what the queue holds (memory queue, connections, files,
// the replay file and its read batches). Tests call it after every step.
func (q *Queue) Check() error {
	s := q.Stats()
	// Conservation: every entry that came in is in exactly one state.
	in := s.Offered + s.Recovered
	out := s.Accepted + s.Refused + s.Rejected + s.Missing + s.Dropped + s.Lost +
		s.Queued + s.InFlight + s.Backlog + s.Deferred + s.Replay
	if in != out || -q.count[Absent] != in {
		return fmt.Errorf("queue %s: offered %d + recovered %d = %d, born %d, accounted %d (%+v)", q.cfg.Peer, s.Offered, s.Recovered, in, -q.count[Absent], out, s)
	}
	for st := Queued; st <= Lost; st++ {
		if q.count[st] < 0 {
			return fmt.Errorf("queue %s: %d entries in state %s", q.cfg.Peer, q.count[st], st)
		}
	}
	if int64(q.mem.n) != s.Queued {
		return fmt.Errorf("queue %s: memory queue holds %d, counted %d", q.cfg.Peer, q.mem.n, s.Queued)
	}
	var inflight, pending int64
	held := map[*journalFile]int64{} // entries whose journal line is not settled, per file
	for c, cs := range q.conns {
		inflight += int64(len(cs.items))
		for _, it := range cs.items {
			if it.batch != 0 {
				pending++
			}
			if it.jrnl != nil {
				held[it.jrnl]++
			}
			if CheckEntry(it.Entry) != nil {
				return fmt.Errorf("queue %s: conn %d holds invalid entry %+v", q.cfg.Peer, c, it.Entry)
			}
		}
	}
	if inflight != s.InFlight {
		return fmt.Errorf("queue %s: connections hold %d, counted %d in flight", q.cfg.Peer, inflight, s.InFlight)
	}
	for i := 0; i < q.mem.n; i++ {
		it := q.mem.at(i)
		if it.batch != 0 {
			pending++
		}
		if it.jrnl != nil {
			held[it.jrnl]++
		}
	}
	if err := q.checkJournals(held); err != nil {
		return err
	}
	var left int64
	for _, b := range q.rp.batches {
		left += b.left
	}
	if pending != q.rp.pending || left != q.rp.pending {
		return fmt.Errorf("queue %s: %d entries from the replay file held, batches wait for %d, pending %d", q.cfg.Peer, pending, left, q.rp.pending)
	}
	var kinds [2]int64
	bytes := int64(0)
	for i, f := range q.files {
		if i > 0 && q.files[i-1].ts > f.ts {
			return fmt.Errorf("queue %s: files out of order: %s before %s", q.cfg.Peer, q.files[i-1].name, f.name)
		}
		if f.entries < 0 || f.bytes < 0 {
			return fmt.Errorf("queue %s: file %s has %d entries, %d bytes", q.cfg.Peer, f.name, f.entries, f.bytes)
		}
		kinds[kindIndex(f.kind)] += f.entries
		bytes += f.bytes
	}
	for _, f := range q.current {
		if f != nil && q.findFile(f.name) != f {
			return fmt.Errorf("queue %s: current file %s is not listed", q.cfg.Peer, f.name)
		}
	}
	if kinds[0] != s.Backlog || kinds[1] != s.Deferred {
		return fmt.Errorf("queue %s: files hold %d B + %d D entries, counted %d + %d", q.cfg.Peer, kinds[0], kinds[1], s.Backlog, s.Deferred)
	}
	if q.replayOpen() {
		bytes += q.rp.bytes
	} else if q.rp.unread != 0 || len(q.rp.batches) != 0 {
		return fmt.Errorf("queue %s: no replay file, yet %d unread and %d batches", q.cfg.Peer, q.rp.unread, len(q.rp.batches))
	}
	if q.rp.unread != s.Replay {
		return fmt.Errorf("queue %s: replay file has %d unread, counted %d", q.cfg.Peer, q.rp.unread, s.Replay)
	}
	if bytes != q.bytes {
		return fmt.Errorf("queue %s: files hold %d octets, counted %d", q.cfg.Peer, bytes, q.bytes)
	}
	if q.rp.doneOff > q.rp.readOff {
		return fmt.Errorf("queue %s: replay settled to %d beyond read %d", q.cfg.Peer, q.rp.doneOff, q.rp.readOff)
	}
	return nil
}
