package queue

import (
	"fmt"
	"time"
)

// Failed reports that action a, given by NextAction, could not be carried
// out. Report it before any other input; it emits no action itself, and
// asks for a Tick (Deadline) to take the next step. What a failed .B/.D write held is dropped
// and counted; a failed rename puts the file back (tried again after
// DeferDelay); a failed read ends the replay, drops what was left in the file
// and quarantines it; a failed delete (of <peer>.P or of a journal) is
// retried after DeferDelay; a failed journal create or append breaks the
// journal file, which is rotated at the next offer or Tick, while its
// entries stay queued (the owner must not acknowledge them: its Sync
// reports the failure). Failures of the actions Shutdown asked for are
// taken after it too.
func (q *Queue) Failed(now time.Time, a Action, err error) error {
	switch a := a.(type) {
	case AppendBacklog:
		f := q.findFile(a.File)
		if f == nil {
			return nil // promoted since: the replay's read will come up short and count it
		}
		n, b := int64(0), int64(0)
		for _, e := range a.Entries {
			if n == f.entries {
				break
			}
			n++
			b += LineLen(e)
		}
		f.entries -= n
		f.bytes -= b
		q.bytes -= b
		q.moveN(kindState(f.kind), OnWriteFailed, n)
		q.event(Drop{Reason: ReasonWriteFailed, Count: int(n), File: f.name})
		q.forgetIfGone(f)
	case RotateBacklog:
		f := q.findFile(a.Opened)
		if f == nil {
			return nil
		}
		if q.current[kindIndex(f.kind)] == f {
			q.current[kindIndex(f.kind)] = nil
		}
		f.gone = true
		q.forgetIfGone(f)
	case PromoteToReplay:
		f := q.rp.source
		on := OnRestoreB
		if f != nil && f.kind == KindDeferred {
			on = OnRestoreD
		}
		if q.rp.state != ReplayIdle || f == nil || f.name != a.File {
			return q.replayErr(on)
		}
		q.moveReplay(on)
		q.moveN(Replay, on, q.rp.unread)
		f.notBefore = now.Add(q.cfg.DeferDelay)
		q.insertFile(f)
		q.rp = replay{state: q.rp.state, nextSeq: q.rp.nextSeq, firstSeq: q.rp.nextSeq}
	case ReadReplay:
		if q.rp.state != ReplayReading {
			return q.replayErr(OnReadFailed)
		}
		q.moveReplay(OnReadFailed)
		q.rp.failed = true
		if q.rp.unread > 0 {
			q.moveN(Replay, OnReadFailed, q.rp.unread)
			q.event(Drop{Reason: ReasonReadFailed, Count: int(q.rp.unread), File: ReplayName(q.cfg.Peer)})
			q.rp.unread = 0
		}
	case Checkpoint:
		if q.rp.state != ReplayNone && q.rp.state != ReplayStuck {
			q.rp.ckptOff = -1 // unknown: checkpoint again at the next chance
		}
	case DeleteReplay, QuarantineReplay:
		if q.rp.state != ReplayNone {
			return q.replayErr(OnDeleteFailed)
		}
		q.moveReplay(OnDeleteFailed)
		q.rp.stuck = a
		q.rp.retryAt = now.Add(q.cfg.DeferDelay)
	case WriteManifest:
		// Nothing moves: the next manifest lists the whole state again.
	case DeleteBacklog:
		// Its entries were counted as dropped already; the file stays on
		// disk and is found again (and sent) after a restart.
	case OpenJournal, AppendJournal:
		// The entries stay in memory and are sent as usual, but their
		// journal lines may be missing: the owner must not acknowledge
		// them (its Sync reports the failure). The file takes no more
		// lines; the next offer opens another.
		var name string
		switch a := a.(type) {
		case OpenJournal:
			name = a.File
		case AppendJournal:
			name = a.File
		}
		if j := q.findJournal(name); j != nil && j.state == JournalOpen {
			q.moveJournal(j, OnWriteFailed)
		}
	case CloseJournal:
		// Nothing to undo: the file takes no more lines either way, and
		// the owner's Sync reports that its last lines may not be durable.
	case DeleteJournal:
		if j := q.findJournal(a.File); j != nil {
			return illegal(q, "journal "+a.File, j.state, OnDeleteFailed)
		}
		// Tried again after DeferDelay; after a restart, its entries would
		// be sent again (and counted as Resent).
		j := &journalFile{name: a.File, retryAt: now.Add(q.cfg.DeferDelay)}
		q.moveJournal(j, OnDeleteFailed)
		q.journals = append(q.journals, j)
	default:
		return fmt.Errorf("queue %s: failed action %T is not one of the queue's", q.cfg.Peer, a)
	}
	// No new step here: the owner may be in the middle of carrying out the
	// actions of the last input. The next input, or the Tick asked for
	// now, takes it.
	q.wakeAt = now
	return nil
}
