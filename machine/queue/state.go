package queue

import "fmt"

// The lifecycle of a peer's queue, in one table (STYLE §2, after h11's
// _state.py). Every change of state below happens through Queue.move or
// Queue.moveN, which look the change up here: what is not in the table is an
// illegal transition and comes back as a *TransitionError naming the state
// and the trigger.
//
// Five things have a state:
//
// An ENTRY (one article for this peer) is born Absent and ends in one of the
// five final states; its count in each state is what Stats reports.
//
//   - Offer puts it in the memory queue (Queued) when a connection is up, or
//     straight into the current .B file (Backlog) when none is: innfeed's
//     peer-down behaviour.
//   - Next hands the head of the memory queue to a connection (InFlight).
//   - The connection's answer ends it: Accepted, Refused (CHECK 438),
//     Rejected (TAKETHIS 439, or 431 to TAKETHIS, which RFC 4644 §2.5 does not
//     allow and the feed machine reports as a reject), Missing (the spool no
//     longer has the article). Deferred (CHECK 431, IHAVE 436) appends it to
//     the current .D file with one more attempt, unless it has been deferred
//     MaxDefers times already: then it is Dropped (GiveUp), and counted.
//   - A connection that goes down puts its entries back at the HEAD of the
//     memory queue (ConnLost): nothing in flight is lost.
//   - When the memory queue is full, its OLDEST THIRD is appended to the
//     current .B file (Spill). The seed says "half" in its overview and "1/3
//     of head" in its implementation notes; newsflow takes the third, so the
//     queue keeps two thirds of its fresh articles and a refill (half a
//     queue) after a drain cannot immediately overflow it again.
//   - With the memory queue empty and a connection up, the oldest backlog
//     file (a .B, or a .D whose delay has passed) is renamed to <peer>.P
//     (Promote: Backlog/Deferred -> Replay) and read back half a queue at a
//     time (Read: Replay -> Queued).
//   - Limits drop whole files, oldest first, or the entries being written
//     (Trim, over BacklogMaxBytes; Expire, older than BacklogMaxAge); a
//     failed write drops what it held (WriteFailed); a replay file that
//     cannot be read drops what was left in it (ReadFailed); a replay file
//     that held fewer lines than were written to it drops the difference
//     (ShortRead), one with more finds the surplus (Found). Every drop is
//     counted and reported as a Drop event, never silent.
//   - When the last connection has been down for DownSpillDelay, the whole
//     memory queue is appended to .B (SpillDown): a down peer's articles do
//     not sit in memory, where a crash would leave only their journal.
//   - Shutdown writes the memory queue and everything in flight to .B.
//   - At start, Recover counts what the files hold (RecoverB, RecoverD,
//     RecoverP). A journal file found at start was renamed to .B by spoolfs
//     (RecoverJ): its entries are sent again, and counted as Resent.
//
// A CONNECTION is Down (never seen, or gone) or Up.
//
// The REPLAY file <peer>.P is None, Idle (open, no read asked), Reading (a
// ReadReplay action is out, its ReplayRead not yet in), Draining (read to the
// end; waiting for the entries read from it to be settled before it is
// deleted) or Stuck (deleting or quarantining it failed; retried on Tick,
// and no other file is promoted meanwhile).
//
// A JOURNAL file <peer>.J.<ts> holds a line for every entry offered while a
// connection was up (entries offered while none is go to .B, which is their
// durable record). It is None (not there, or its delete was asked), Open
// (the current file, taking lines), Broken (creating it or appending to it
// failed: it takes no more lines and is closed at the next append or Tick),
// Closed (rotated, by size or age, or at Shutdown; waiting for every entry
// journaled in it to be settled, and then deleted: Drained) or Stuck (the
// delete failed; retried on Tick). An entry is settled when it reaches a
// final state or is appended to a .B or .D file: spoolfs syncs every
// appended line before it deletes a journal file, so the entry is durable in
// its new file before its journal line goes.
//
// The QUEUE itself is Running until Shutdown, then Closed: every input after
// that is an error.
var table = [...]rule{
	// Entries.
	{Absent, OnOffer, Queued},
	{Absent, OnOfferDown, Backlog},
	{Absent, OnRecoverB, Backlog},
	{Absent, OnRecoverD, Deferred},
	{Absent, OnRecoverP, Replay},
	{Absent, OnRecoverJ, Backlog},
	{Absent, OnFound, Replay},
	{Absent, OnTrim, Dropped},
	{Queued, OnNext, InFlight},
	{Queued, OnSpill, Backlog},
	{Queued, OnSpillDown, Backlog},
	{Queued, OnTrim, Dropped},
	{Queued, OnShutdown, Backlog},
	{InFlight, OnAccepted, Accepted},
	{InFlight, OnRefused, Refused},
	{InFlight, OnRejected, Rejected},
	{InFlight, OnMissing, Missing},
	{InFlight, OnDefer, Deferred},
	{InFlight, OnGiveUp, Dropped},
	{InFlight, OnConnLost, Queued},
	{InFlight, OnTrim, Dropped},
	{InFlight, OnShutdown, Backlog},
	{Backlog, OnPromote, Replay},
	{Backlog, OnTrim, Dropped},
	{Backlog, OnExpire, Dropped},
	{Backlog, OnWriteFailed, Dropped},
	{Deferred, OnPromote, Replay},
	{Deferred, OnTrim, Dropped},
	{Deferred, OnExpire, Dropped},
	{Deferred, OnWriteFailed, Dropped},
	{Replay, OnRead, Queued},
	{Replay, OnShortRead, Dropped},
	{Replay, OnReadFailed, Dropped},
	{Replay, OnRestoreB, Backlog},
	{Replay, OnRestoreD, Deferred},

	// Connections.
	{ConnDown, OnConnUp, ConnUp},
	{ConnUp, OnConnDown, ConnDown},
	{ConnUp, OnShutdown, ConnDown},

	// The replay file.
	{ReplayNone, OnPromote, ReplayIdle},
	{ReplayNone, OnRecoverP, ReplayIdle},
	{ReplayNone, OnDeleteFailed, ReplayStuck},
	{ReplayIdle, OnReadAsked, ReplayReading},
	{ReplayIdle, OnRestoreB, ReplayNone},
	{ReplayIdle, OnRestoreD, ReplayNone},
	{ReplayReading, OnRead, ReplayIdle},
	{ReplayReading, OnReadEOF, ReplayDraining},
	{ReplayReading, OnReadFailed, ReplayDraining},
	{ReplayDraining, OnDrained, ReplayNone},
	{ReplayStuck, OnRetryDelete, ReplayNone},

	// Journal files.
	{JournalNone, OnJournalOpen, JournalOpen},
	{JournalOpen, OnJournalRotate, JournalClosed},
	{JournalOpen, OnWriteFailed, JournalBroken},
	{JournalOpen, OnShutdown, JournalClosed},
	{JournalBroken, OnJournalRotate, JournalClosed},
	{JournalBroken, OnShutdown, JournalClosed},
	{JournalClosed, OnDrained, JournalNone},
	{JournalNone, OnDeleteFailed, JournalStuck},
	{JournalStuck, OnRetryDelete, JournalNone},

	// The queue.
	{Running, OnShutdown, Closed},
}

// rule is one row of the table: in state From, trigger On leads to To.
type rule struct {
	From State
	On   Trigger
	To   State
}

// State is where an entry, a connection, the replay file or the queue is.
type State uint8

// Entry states (Absent is "not yet, or not known").
const (
	Absent State = iota
	Queued
	InFlight
	Backlog
	Deferred
	Replay
	Accepted
	Refused
	Rejected
	Missing
	Dropped

	// Connection states.
	ConnDown
	ConnUp

	// Replay file states.
	ReplayNone
	ReplayIdle
	ReplayReading
	ReplayDraining
	ReplayStuck

	// Journal file states.
	JournalNone
	JournalOpen
	JournalBroken
	JournalClosed
	JournalStuck

	// Queue states.
	Running
	Closed

	numStates
)

var stateNames = [numStates]string{
	Absent: "absent", Queued: "queued", InFlight: "in-flight", Backlog: "backlog",
	Deferred: "deferred", Replay: "replay", Accepted: "accepted", Refused: "refused",
	Rejected: "rejected", Missing: "missing", Dropped: "dropped",
	ConnDown: "down", ConnUp: "up",
	ReplayNone: "none", ReplayIdle: "idle", ReplayReading: "reading",
	ReplayDraining: "draining", ReplayStuck: "stuck",
	JournalNone: "journal-none", JournalOpen: "journal-open", JournalBroken: "journal-broken",
	JournalClosed: "journal-closed", JournalStuck: "journal-stuck",
	Running: "running", Closed: "closed",
}

// String returns the state's name as used in errors.
func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Trigger is what moves a state: an input, or a decision the machine takes
// on one.
type Trigger uint8

// Triggers, in the order of the table's comment.
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
}

// String returns the trigger's name as used in errors.
func (t Trigger) String() string {
	if t < numTriggers {
		return triggerNames[t]
	}
	return fmt.Sprintf("Trigger(%d)", uint8(t))
}

// next is the table as an array for the hot path: next[from][on] is To+1, or
// 0 when the transition is illegal.
var next = func() (n [numStates][numTriggers]State) {
	for _, r := range table {
		if n[r.From][r.On] != 0 {
			panic(fmt.Sprintf("queue: table has two rows for %s/%s", r.From, r.On))
		}
		n[r.From][r.On] = r.To + 1
	}
	return n
}()

// lookup returns the state trigger on leads to from state from.
func lookup(from State, on Trigger) (State, bool) {
	if from >= numStates || on >= numTriggers {
		return 0, false
	}
	to := next[from][on]
	return to - 1, to != 0
}

// TransitionError is an input the lifecycle table does not allow: Subject
// (an entry, a connection, the replay file or the queue) was in State when
// Trigger came.
type TransitionError struct {
	Peer    string
	Subject string // "entry <id> on conn 2", "conn 2", "replay file", "journal <file>", "queue"
	State   State
	Trigger Trigger
}

// Error says which state refused which trigger.
func (e *TransitionError) Error() string {
	return fmt.Sprintf("queue %s: %s in state %s: illegal event %s", e.Peer, e.Subject, e.State, e.Trigger)
}
