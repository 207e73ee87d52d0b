package jobs

import (
	"fmt"

	"github.com/newsflow/newsflow/machine/table"
)

// The lifecycle of a newsget job entry, in one table. Every change of an
// entry's state goes through Next, which looks it up here: what is not in the
// table is an illegal transition and comes back as a *TransitionError naming
// the entry, its state and the event.
//
// A JOB is one NZB to download; it has one or more ENTRIES, one per
// destination: each entry is queued, downloaded and removed on its own, and
// has its own metadata (target, per-file segment progress) and schedule. The
// states below are an entry's, and each is one place on disk
// (spoolfs/jobqueue.go), so a state change is one rename or one link:
//
//	Absent      not written yet
//	Writing     data/<job>/<dest> being written by Enqueue; no link yet
//	Queued      a link in queue/: waiting for its schedule's next attempt
//	InFlight    a link in inflight/: being downloaded
//	Cleanup     a link in cleanup/: being removed
//	Removed     gone (downloaded, or dropped): final
//	Quarantined moved to quarantine/ because it was damaged: final
//
// Rules of normal operation:
//
//   - Enqueue writes every entry of a job (Absent -> Writing), makes it
//     durable, and only then links each entry into queue/ (Commit: Writing ->
//     Queued). The first link is the job's commit point: before it a crash
//     rolls the whole job back, after it recovery rolls it forward. An
//     Enqueue that fails before its commit point removes what it wrote
//     (Abort: Writing -> Removed).
//   - SendStart moves a queued entry in flight; SendCancel moves it back,
//     keeping its progress (a download stopped, to be resumed later).
//   - Reschedule rewrites the schedule (attempts, next-attempt time) of a
//     queued entry: it stays Queued. To retry later, the owner cancels then
//     reschedules.
//   - Read (ReadInflight: the NZB and the metadata), Progress and Compact
//     concern an entry in flight: only a download reads its job or produces
//     progress.
//   - SendDone (downloaded) and Drop (abandoned while queued) move the entry
//     to cleanup/; Cleanup removes its files and then its link (Removed).
//
// Rules of recovery (spoolfs's Recover, once at start, before anything
// else). The state an entry is FOUND in is the most advanced place that
// holds a link to it (cleanup/ over inflight/ over queue/), or Writing when
// it has a data directory and no link; the event says what its data looks
// like (see Recover in recover.go):
//
//   - Recover (data intact): Queued stays; InFlight goes back to the queue
//     (the download it belonged to died with the process); Cleanup is
//     finished; Writing whose job passed its commit point is linked (rolled
//     forward).
//   - RecoverUncommitted: a Writing entry of a job with no link at all is an
//     Enqueue that never returned: it is rolled back (Removed), and reported.
//   - RecoverCorrupt (dangling link, metadata, schedule or the job's NZB
//     missing or unreadable): Queued, InFlight and committed Writing entries
//     are Quarantined, never deleted; a Cleanup entry was being
//     removed anyway, so its removal is finished.
var lifecycle = table.Must("jobs", []rule{
	// Enqueue.
	{Absent, OnEnqueue, Writing},
	{Writing, OnCommit, Queued},
	{Writing, OnAbort, Removed},

	// Downloading.
	{Queued, OnSendStart, InFlight},
	{Queued, OnReschedule, Queued},
	{InFlight, OnRead, InFlight},
	{InFlight, OnProgress, InFlight},
	{InFlight, OnCompact, InFlight},
	{InFlight, OnSendCancel, Queued},

	// Finishing.
	{InFlight, OnSendDone, Cleanup},
	{Queued, OnDrop, Cleanup},
	{Cleanup, OnCleanup, Removed},

	// Recovery at start.
	{Writing, OnRecover, Queued},
	{Writing, OnRecoverUncommitted, Removed},
	{Writing, OnRecoverCorrupt, Quarantined},
	{Queued, OnRecover, Queued},
	{Queued, OnRecoverCorrupt, Quarantined},
	{InFlight, OnRecover, Queued},
	{InFlight, OnRecoverCorrupt, Quarantined},
	{Cleanup, OnRecover, Removed},
	{Cleanup, OnRecoverCorrupt, Removed},
})

// rule is one row of the table: in state From, event On leads to To.
type rule table.Row[State, Event]

// State is where an entry is in its lifecycle; each state is one place on
// disk.
type State uint8

// The states, in lifecycle order.
const (
	Absent State = iota
	Writing
	Queued
	InFlight
	Cleanup
	Removed
	Quarantined

	numStates
)

var stateNames = [numStates]string{
	Absent: "absent", Writing: "writing", Queued: "queued", InFlight: "in-flight",
	Cleanup: "cleanup", Removed: "removed", Quarantined: "quarantined",
}

// String returns the state's name as used in errors.
func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Final reports whether no event leads out of s.
func (s State) Final() bool { return s == Removed || s == Quarantined }

// Event is what moves an entry: a storage primitive, or a recovery finding.
type Event uint8

// The events, in the order of the table.
const (
	OnEnqueue Event = iota
	OnCommit
	OnAbort
	OnSendStart
	OnReschedule
	OnRead
	OnProgress
	OnCompact
	OnSendCancel
	OnSendDone
	OnDrop
	OnCleanup
	OnRecover
	OnRecoverUncommitted
	OnRecoverCorrupt

	numEvents
)

var eventNames = [numEvents]string{
	OnEnqueue: "enqueue", OnCommit: "commit", OnAbort: "abort",
	OnSendStart: "send-start", OnReschedule: "reschedule", OnRead: "read", OnProgress: "progress",
	OnCompact: "compact", OnSendCancel: "send-cancel", OnSendDone: "send-done",
	OnDrop: "drop", OnCleanup: "cleanup", OnRecover: "recover",
	OnRecoverUncommitted: "recover-uncommitted", OnRecoverCorrupt: "recover-corrupt",
}

// String returns the event's name as used in errors.
func (e Event) String() string {
	if e < numEvents {
		return eventNames[e]
	}
	return fmt.Sprintf("Event(%d)", uint8(e))
}

// Next returns the state event on leads to from state from, for entry id
// (used only in the error). An illegal transition is a *TransitionError.
func Next(id ID, from State, on Event) (State, error) {
	if to, ok := lifecycle.Next(from, on); ok {
		return to, nil
	}
	return from, table.Illegal("jobs", "entry "+id.String(), from, on)
}

// TransitionError is an event the lifecycle table does not allow: its
// Subject is "entry <id>", its State a State and its Event an Event.
type TransitionError = table.TransitionError

// Ledger holds the state of every entry of a queue that is not final, and
// changes it only through the table. The zero Ledger is empty and ready.
type Ledger struct {
	m map[ID]State
}

// State returns id's state: Absent when the ledger does not hold it.
func (l *Ledger) State(id ID) State {
	if s, ok := l.m[id]; ok {
		return s
	}
	return Absent
}

// Apply moves id by event on and returns its new state. An entry that
// reaches a final state leaves the ledger. On error nothing changes.
func (l *Ledger) Apply(id ID, on Event) (State, error) {
	to, err := Next(id, l.State(id), on)
	if err != nil {
		return to, err
	}
	if to.Final() {
		delete(l.m, id)
		return to, nil
	}
	if l.m == nil {
		l.m = map[ID]State{}
	}
	l.m[id] = to
	return to, nil
}

// Set puts id in state s without a transition: for loading what spoolfs
// found on disk at open, before recovery. A final s removes id.
func (l *Ledger) Set(id ID, s State) {
	if s == Absent || s.Final() {
		delete(l.m, id)
		return
	}
	if l.m == nil {
		l.m = map[ID]State{}
	}
	l.m[id] = s
}

// List returns the entries in state s, sorted.
func (l *Ledger) List(s State) []ID {
	var ids []ID
	for id, st := range l.m {
		if st == s {
			ids = append(ids, id)
		}
	}
	SortIDs(ids)
	return ids
}

// Len returns how many entries the ledger holds.
func (l *Ledger) Len() int { return len(l.m) }
