// Package dlqueue holds the pure decisions of newsget's download daemon
// (newsget serve): the order jobs run in (priority, then arrival), the
// fail-fast rule (is a job's damage already beyond what its PAR2 volumes
// can repair?) and duplicate detection (same NZB name or same content).
//
// # Theory of operation
//
// Nothing here touches a disk, a socket or a clock. The daemon
// (runtime/newsget/serve) keeps its queue as a list of Entry values and
// asks Next which one to run; while a job downloads it adds up, per NZB
// file, the bytes of the articles no server had, and asks Assess after
// every failed article whether the job can still be repaired; when a new
// NZB arrives it asks Duplicate whether the queue or the history already
// holds it. Each answer is a plain value, tested with tables.
package dlqueue
