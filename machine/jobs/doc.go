// Package jobs holds newsget's job queue as a pure machine: the lifecycle
// of a job entry as one table (lifecycle.go), the decisions recovery takes
// at start for each entry found on disk (recover.go), and the durable
// metadata of an entry: per-file segment progress (progress.go, segments.go)
// and its schedule (schedule.go).
//
// # Theory of operation
//
// Nothing here touches a disk or a clock. spoolfs.JobQueue owns the files
// and asks this package,
// before every storage primitive, whether the entry's state allows it
// (Ledger.Apply); an illegal call comes back as a *TransitionError before
// any file changes. At start, spoolfs describes each entry it finds (which
// directories link to it, whether its data reads back) and Recover says
// what to do: keep it, move it back to the queue, finish its removal, roll
// its Enqueue back or forward, or quarantine it.
//
// A download's progress is a stream of Records (segment done, segment
// missing) that spoolfs appends to a per-entry log between compactions;
// Metadata.Apply folds them in. Applying is idempotent and order-tolerant
// in the ways a crash needs (see Apply), so replaying a log on top of
// metadata it was already folded into changes nothing.
package jobs
