package queue

import (
	"fmt"
	"slices"
	"time"
)

// The journal: what keeps the memory queue and the entries in flight across
// a crash (see the package's Durability section and the journal table in
// state_journal.go). Every function here changes a journal file's state
// through the table.

// journalFile is one <peer>.J.<ts> file.
type journalFile struct {
	name      string
	state     JournalState
	opened    time.Time
	bytes     int64
	unsettled int64     // entries journaled here and not settled yet
	retryAt   time.Time // JournalStuck: when to try the delete again
}

// nextTS returns the timestamp of a new file: now in Unix seconds, or one
// more than the last one given, so that names stay unique and ordered even
// within a second. .B, .D and .J files share the sequence, so a journal
// renamed to .B at recovery never takes another file's name.
func (q *Queue) nextTS(now time.Time) int64 {
	ts := now.Unix()
	if ts <= q.lastTS {
		ts = q.lastTS + 1
	}
	q.lastTS = ts
	return ts
}

// journalAppend writes it's line to the current journal file, rotating it
// first when it is broken, JournalRotateBytes large or JournalRotateInterval
// old, and opening one when there is none. it remembers the file.
func (q *Queue) journalAppend(now time.Time, it *item) {
	j := q.journal
	if j != nil && (j.state == JournalBroken || j.bytes >= q.cfg.JournalRotateBytes || now.Sub(j.opened) >= q.cfg.JournalRotateInterval) {
		q.rotateJournal(j, OnJournalRotate)
		j = nil
	}
	if j == nil {
		j = &journalFile{name: JournalName(q.cfg.Peer, q.nextTS(now)), opened: now}
		q.moveJournal(j, OnJournalOpen)
		q.journal = j
		q.journals = append(q.journals, j)
		q.emit(OpenJournal{File: j.name})
	}
	// A journal is read only after a crash, when each of its entries may
	// have reached the peer: its lines carry the resend mark, which stays
	// with them through .B, <peer>.P and any later restart.
	je := it.Entry
	je.Resend = true
	q.emitJournal(j.name, je)
	j.bytes += LineLen(je)
	j.unsettled++
	q.journaled++
	it.jrnl = j
}

// rotateJournal closes the current journal file j (by trigger on:
// OnJournalRotate or OnShutdown); it is deleted at once if nothing in it
// waits, else when its last entry is settled.
func (q *Queue) rotateJournal(j *journalFile, on Trigger) {
	q.moveJournal(j, on)
	q.journal = nil
	q.emit(CloseJournal{File: j.name})
	if j.unsettled == 0 {
		q.deleteJournal(j)
	}
}

// settleJournal notes that one entry of journal file j is settled: in a final
// state, or appended to a .B/.D file by an action already given (spoolfs
// syncs that append before it carries out the DeleteJournal that may
// follow here).
func (q *Queue) settleJournal(j *journalFile) {
	j.unsettled--
	if j.unsettled == 0 && j.state == JournalClosed {
		q.deleteJournal(j)
	}
}

// deleteJournal asks for closed journal file j to be deleted and forgets it;
// a failed delete comes back through Failed.
func (q *Queue) deleteJournal(j *journalFile) {
	q.moveJournal(j, OnDrained)
	q.removeJournal(j)
	q.emit(DeleteJournal{File: j.name})
}

// retryJournalDelete asks again for the delete of journal file j, which
// failed before.
func (q *Queue) retryJournalDelete(j *journalFile) {
	q.moveJournal(j, OnRetryDelete)
	q.removeJournal(j)
	q.emit(DeleteJournal{File: j.name})
}

func (q *Queue) removeJournal(j *journalFile) {
	if i := slices.Index(q.journals, j); i >= 0 {
		q.journals = slices.Delete(q.journals, i, i+1)
	}
}

func (q *Queue) findJournal(name string) *journalFile {
	for _, j := range q.journals {
		if j.name == name {
			return j
		}
	}
	return nil
}

// downSpillDue reports whether the memory queue of a peer without
// connections has waited DownSpillDelay.
func (q *Queue) downSpillDue(now time.Time) bool {
	return len(q.conns) == 0 && q.mem.n > 0 && q.cfg.DownSpillDelay >= 0 &&
		!now.Before(q.downSince.Add(q.cfg.DownSpillDelay))
}

// spillDown appends the whole memory queue of a peer without connections to
// .B: its journal lines are then settled, and memory holds nothing for a
// peer that may stay down for days.
func (q *Queue) spillDown(now time.Time) { q.spillBy(now, q.mem.n, OnSpillDown) }

// checkJournals verifies the journal bookkeeping against held, the number of
// entries in memory and in flight per journal file: each file waits for
// exactly those, only the current file takes lines, and a file nobody
// waits for is open, stuck, or (broken, waiting for its rotation) current.
func (q *Queue) checkJournals(held map[*journalFile]int64) error {
	listed := map[*journalFile]bool{}
	for _, j := range q.journals {
		listed[j] = true
		if j.unsettled != held[j] {
			return fmt.Errorf("queue %s: journal %s waits for %d entries, %d held", q.cfg.Peer, j.name, j.unsettled, held[j])
		}
		switch j.state {
		case JournalOpen, JournalBroken:
			if j != q.journal {
				return fmt.Errorf("queue %s: journal %s is %s but not current", q.cfg.Peer, j.name, j.state)
			}
		case JournalClosed:
			if j.unsettled == 0 {
				return fmt.Errorf("queue %s: journal %s is closed and settled, yet not deleted", q.cfg.Peer, j.name)
			}
		case JournalStuck:
			if j.unsettled != 0 {
				return fmt.Errorf("queue %s: journal %s is stuck with %d entries waiting", q.cfg.Peer, j.name, j.unsettled)
			}
		default:
			return fmt.Errorf("queue %s: journal %s listed in state %s", q.cfg.Peer, j.name, j.state)
		}
	}
	for j, n := range held {
		if !listed[j] {
			return fmt.Errorf("queue %s: %d entries wait for journal %s, which is not listed", q.cfg.Peer, n, j.name)
		}
	}
	if q.journal != nil && !listed[q.journal] {
		return fmt.Errorf("queue %s: current journal %s is not listed", q.cfg.Peer, q.journal.name)
	}
	return nil
}
