package queue

import (
	"fmt"

	"github.com/newsflow/newsflow/machine/table"
)

// The lifecycles of a peer's queue, each a table of rows. Five
// things have a state, and each has its own state type and its own table,
// with the rules that justify its rows written above it:
//
//   - an ENTRY (one article for this peer): state_entry.go;
//   - a CONNECTION to the peer: state_conn.go;
//   - the REPLAY file <peer>.P: state_replay.go;
//   - a JOURNAL file <peer>.J.<ts>: state_journal.go;
//   - the QUEUE itself: below.
//
// Every change of state happens through the helpers at the end of this file,
// which look the change up in its subject's table: what is not in the table
// is an illegal transition. An input that would take one comes back as a
// *TransitionError naming the subject, its state and the trigger; a move the
// machine asks for itself and the table lacks is a bug, and panics. All five
// tables share one Trigger type, because one input (Shutdown) moves several
// subjects; their state types are distinct, so a row that moves one subject
// into another's state does not compile.
//
// The QUEUE is Running until Shutdown, then Closed: every input after that is
// an error.
var runTable = table.Must("queue", []rule[RunState]{
	{Running, OnShutdown, Closed},
})

// RunState is the queue's own state.
type RunState uint8

// The queue's states.
const (
	Running RunState = iota
	Closed
)

// String returns the state's name as used in errors.
func (s RunState) String() string { return name(s, "running", "closed") }

// rule is one row of a table: in state From, trigger On leads to To.
type rule[S table.State] table.Row[S, Trigger]

// TransitionError is an input a lifecycle table does not allow. Its Machine
// is "queue <peer>"; its Subject is "entry <id> on conn 2", "conn 2",
// "replay file", "journal <file>" or "queue"; its State is of that
// subject's state type (EntryState, ConnState, ReplayState, JournalState or
// RunState) and its Event a Trigger.
type TransitionError = table.TransitionError

// Trigger is what moves a state: an input, or a decision the machine takes
// on one.
type Trigger uint8

// Triggers, in the order of the tables' comments.
const (
	OnOffer Trigger = iota
	OnOfferDown
	OnNext
	OnAccepted
	OnRefused
	OnRejected
	OnMissing
	OnDefer
	OnGiveUp
	OnConnLost
	OnSpill
	OnTrim
	OnExpire
	OnPromote
	OnRestoreB
	OnRestoreD
	OnRead
	OnShortRead
	OnFound
	OnReadFailed
	OnWriteFailed
	OnRecoverB
	OnRecoverD
	OnRecoverP
	OnShutdown
	OnConnUp
	OnConnDown
	OnReadAsked
	OnReadEOF
	OnDrained
	OnDeleteFailed
	OnRetryDelete
	OnRecoverJ
	OnSpillDown
	OnJournalOpen
	OnJournalRotate
	OnRecoverLost

	numTriggers
)

var triggerNames = [numTriggers]string{
	OnOffer: "offer", OnOfferDown: "offer-peer-down", OnNext: "next",
	OnAccepted: "accepted", OnRefused: "refused", OnRejected: "rejected",
	OnMissing: "missing", OnDefer: "defer", OnGiveUp: "give-up",
	OnConnLost: "conn-lost", OnSpill: "spill", OnTrim: "trim", OnExpire: "expire",
	OnPromote: "promote", OnRestoreB: "restore-B", OnRestoreD: "restore-D",
	OnRead: "read", OnShortRead: "short-read", OnFound: "found",
	OnReadFailed: "read-failed", OnWriteFailed: "write-failed",
	OnRecoverB: "recover-B", OnRecoverD: "recover-D", OnRecoverP: "recover-P",
	OnShutdown: "shutdown", OnConnUp: "conn-up", OnConnDown: "conn-down",
	OnReadAsked: "read-asked", OnReadEOF: "read-eof", OnDrained: "drained",
	OnDeleteFailed: "delete-failed", OnRetryDelete: "retry-delete",
	OnRecoverJ: "recover-J", OnSpillDown: "spill-down",
	OnJournalOpen: "journal-open", OnJournalRotate: "journal-rotate",
	OnRecoverLost: "recover-lost",
}

// String returns the trigger's name as used in errors.
func (t Trigger) String() string {
	if t < numTriggers {
		return triggerNames[t]
	}
	return fmt.Sprintf("Trigger(%d)", uint8(t))
}

// name returns names[s], or the state's number when it has no name.
func name[S ~uint8](s S, names ...string) string {
	if int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("%T(%d)", s, uint8(s))
}

// step looks up the move of n subjects of table t from state from by
// trigger on, and returns the state they reach. The machine only asks for
// moves it has checked, so one the table lacks is a bug and panics.
func step[S table.State](q *Queue, t *table.Table[S, Trigger], from S, on Trigger, n int64) S {
	r, ok := t.Row(from, on)
	if !ok {
		panic(table.Illegal("queue "+q.cfg.Peer, "internal "+t.Name(), from, on).Error())
	}
	if q.trace != nil && n > 0 {
		q.trace(r)
	}
	return r.To
}

// moveN moves n entries from state from by trigger on, and returns the
// state they reach.
func (q *Queue) moveN(from EntryState, on Trigger, n int64) EntryState {
	to := step(q, entryTable, from, on, n)
	q.count[from] -= n
	q.count[to] += n
	return to
}

// moveConn moves one connection from state from by trigger on.
func (q *Queue) moveConn(from ConnState, on Trigger) { step(q, connTable, from, on, 1) }

// moveReplay moves <peer>.P from its state by trigger on.
func (q *Queue) moveReplay(on Trigger) { q.rp.state = step(q, replayTable, q.rp.state, on, 1) }

// moveJournal moves journal file j from its state by trigger on.
func (q *Queue) moveJournal(j *journalFile, on Trigger) {
	j.state = step(q, journalTable, j.state, on, 1)
}

// moveRun moves the queue itself by trigger on.
func (q *Queue) moveRun(on Trigger) { q.state = step(q, runTable, q.state, on, 1) }

// illegal is the error for an input that subject, in state from, does not
// take.
func illegal[S table.State](q *Queue, subject string, from S, on Trigger) error {
	return table.Illegal("queue "+q.cfg.Peer, subject, from, on)
}

func (q *Queue) queueErr(on Trigger) error { return illegal(q, "queue", q.state, on) }

func (q *Queue) connErr(c Conn, st ConnState, on Trigger) error {
	return illegal(q, fmt.Sprintf("conn %d", c), st, on)
}

func (q *Queue) replayErr(on Trigger) error { return illegal(q, "replay file", q.rp.state, on) }
