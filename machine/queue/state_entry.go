package queue

import "github.com/newsflow/newsflow/machine/table"

// The lifecycle of an ENTRY (one article for this peer), in one table. An
// entry is born Absent and ends in one of the five final states; its count
// in each state is what Stats reports.
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
//     current .B file (Spill): a third, not a half, so the queue keeps two
//     thirds of its fresh articles and a refill (half a queue) after a drain
//     cannot immediately overflow it again.
//   - With the memory queue empty and a connection up, the oldest backlog
//     file (a .B, or a .D whose delay has passed) is renamed to <peer>.P
//     (Promote: Backlog/Deferred -> Replay) and read back half a queue at a
//     time (Read: Replay -> Queued). A rename that fails puts the entries
//     back in their file (RestoreB, RestoreD).
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
//   - A file the manifest <peer>.M named that was gone at start (deleted
//     under the relay) had its entries acknowledged upstream: they are born
//     Lost (RecoverLost), counted and reported, never silent.
var entryTable = table.Must("queue entry", []rule[EntryState]{
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
	{Absent, OnRecoverLost, Lost},
})

// EntryState is where an entry is: in memory, in flight, in a backlog file,
// or in one of the final states.
type EntryState uint8

// Entry states (Absent is "not yet, or not known").
const (
	Absent EntryState = iota
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
	Lost // in a backlog file that was gone at start
)

// String returns the state's name as used in errors.
func (s EntryState) String() string {
	return name(s, "absent", "queued", "in-flight", "backlog", "deferred", "replay",
		"accepted", "refused", "rejected", "missing", "dropped", "lost")
}
