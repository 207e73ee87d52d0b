package queue

import "github.com/newsflow/newsflow/machine/table"

// The lifecycle of a JOURNAL file <peer>.J.<ts>, in one table. A journal
// file holds a line for every entry offered while a connection was up
// (entries offered while none is go to .B, which is their durable record).
// It is:
//
//   - None: not there, or its delete was asked. The first offer with no
//     journal open creates one (JournalOpen).
//   - Open: the current file, taking lines. It is rotated by size or age
//     (JournalRotate) and closed at Shutdown; creating it or appending to
//     it may fail (WriteFailed).
//   - Broken: a create or append failed: it takes no more lines and is
//     closed at the next append or Tick (JournalRotate), or at Shutdown.
//   - Closed: waiting for every entry journaled in it to be settled, and
//     then deleted (Drained).
//   - Stuck: the delete failed (DeleteFailed); retried on Tick after
//     DeferDelay (RetryDelete).
//
// An entry is settled when it reaches a final state or is appended to a .B
// or .D file: spoolfs syncs every appended line before it deletes a journal
// file, so the entry is durable in its new file before its journal line
// goes.
var journalTable = table.Must("queue journal", []rule[JournalState]{
	{JournalNone, OnJournalOpen, JournalOpen},
	{JournalOpen, OnJournalRotate, JournalClosed},
	{JournalOpen, OnWriteFailed, JournalBroken},
	{JournalOpen, OnShutdown, JournalClosed},
	{JournalBroken, OnJournalRotate, JournalClosed},
	{JournalBroken, OnShutdown, JournalClosed},
	{JournalClosed, OnDrained, JournalNone},
	{JournalNone, OnDeleteFailed, JournalStuck},
	{JournalStuck, OnRetryDelete, JournalNone},
})

// JournalState is where a journal file is.
type JournalState uint8

// Journal file states.
const (
	JournalNone JournalState = iota
	JournalOpen
	JournalBroken
	JournalClosed
	JournalStuck
)

// String returns the state's name as used in errors.
func (s JournalState) String() string {
	return name(s, "journal-none", "journal-open", "journal-broken", "journal-closed", "journal-stuck")
}
