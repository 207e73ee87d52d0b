package queue

import "github.com/newsflow/newsflow/machine/table"

// The lifecycle of the REPLAY file <peer>.P, in one table. It is:
//
//   - None: no file. With the memory queue empty and a connection up (the
//     queue not paused), the oldest ready backlog file is renamed to it
//     (Promote); at start, one found on disk resumes at its checkpoint
//     (RecoverP).
//   - Idle: open, no read asked. When the memory queue runs dry (the queue
//     not paused) a read of half a queue is asked (ReadAsked); a rename that failed (RestoreB,
//     RestoreD) puts the file back where it was, tried again after
//     DeferDelay.
//   - Reading: a ReadReplay action is out, its ReplayRead not yet in. A read
//     that did not reach the end goes back to Idle (Read); one that did
//     (ReadEOF), or a failed one (ReadFailed: what was left in the file is
//     dropped and the file will be quarantined), goes to Draining.
//   - Draining: read to the end; waiting for the entries read from it to be
//     settled before it is deleted or quarantined (Drained).
//   - Stuck: deleting or quarantining it failed (DeleteFailed); retried on
//     Tick after DeferDelay (RetryDelete), and no other file is promoted
//     meanwhile.
var replayTable = table.Must("queue replay file", []rule[ReplayState]{
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
})

// ReplayState is where the replay file <peer>.P is.
type ReplayState uint8

// Replay file states.
const (
	ReplayNone ReplayState = iota
	ReplayIdle
	ReplayReading
	ReplayDraining
	ReplayStuck
)

// String returns the state's name as used in errors.
func (s ReplayState) String() string {
	return name(s, "none", "idle", "reading", "draining", "stuck")
}
