package queue

import (
	"fmt"
	"time"
)

// Entry is one article queued for one peer.
type Entry struct {
	Token     string    // spool token, opaque here ("@...@")
	MessageID string    // "<...>", as offered to the peer
	Size      int64     // article size in octets; 0 when read back from a file
	Offered   time.Time // when it was offered; zero when read back from a file
	Attempts  int       // how many times the peer deferred it (431/436)
	// Resend says the peer was offered the entry before: it was in flight
	// on a connection that went down or at a stop, the peer deferred it
	// (Attempts > 0 needs Resend), or it came from a journal a crash left
	// behind. The peer may hold it already, so a 439 or 437 to it counts
	// as refused (Done). It survives backlog files (the line's third
	// field).
	Resend bool
}

// Conn names one of the peer's connections. The owner picks the numbers.
type Conn int

// Outcome is what became of an entry handed to a connection.
type Outcome uint8

// Outcomes a connection reports with Done.
const (
	OutcomeAccepted Outcome = iota // 239 to TAKETHIS, 235 to IHAVE
	OutcomeRefused                 // 438 to CHECK, 435 to IHAVE: the peer has it
	OutcomeRejected                // 439 to TAKETHIS, 437 to IHAVE (and 431 to TAKETHIS)
	OutcomeDeferred                // 431 to CHECK, 436 to IHAVE: try again later
	OutcomeMissing                 // the spool no longer holds the article
)

var outcomeTriggers = [...]Trigger{
	OutcomeAccepted: OnAccepted, OutcomeRefused: OnRefused, OutcomeRejected: OnRejected,
	OutcomeDeferred: OnDefer, OutcomeMissing: OnMissing,
}

// String names the outcome.
func (o Outcome) String() string {
	if int(o) < len(outcomeTriggers) {
		return outcomeTriggers[o].String()
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Action is a file operation the machine asks its owner to carry out (with
// spoolfs.Backlog), in the order NextAction gives them. An action that fails
// is reported back with Queue.Failed before the next other input.
type Action interface{ isAction() }

// RotateBacklog closes file Closed (after syncing it; "" when there was no
// current file of this kind) and creates the empty file Opened, syncing the
// directory. Later AppendBacklog actions of this kind name Opened.
type RotateBacklog struct {
	Kind   Kind
	Closed string
	Opened string
}

// AppendBacklog appends the lines of Entries to File, which an earlier
// RotateBacklog created. The write need not be synced at once: spoolfs syncs
// in groups, and always before a Checkpoint.
type AppendBacklog struct {
	Kind    Kind
	File    string
	Entries []Entry
}

// PromoteToReplay renames File (syncing and closing it first if it is open)
// to <peer>.P and syncs the directory, removing any stale <peer>.P.ckpt
// first. A <peer>.P already present makes it fail rather than be
// overwritten.
type PromoteToReplay struct {
	File string
}

// ReadReplay reads up to Max entries from <peer>.P starting at byte Offset;
// the owner gives the result to Queue.ReplayRead.
type ReadReplay struct {
	Offset int64
	Max    int
}

// Checkpoint records that <peer>.P is dealt with up to byte Offset, so a
// restart resumes there: sync every appended backlog line first, then write
// <peer>.P.ckpt durably (temp, fsync, rename, fsync directory). Left is how
// many of its entries were not yet settled then (unread, or read and not
// answered): what would be lost if <peer>.P vanished.
type Checkpoint struct {
	Offset int64
	Left   int64
}

// DeleteReplay syncs every line appended to the peer's files (entries read
// from <peer>.P that went to a .B or .D file must be durable there first),
// then removes <peer>.P.ckpt and <peer>.P (spoolfs: checkpoint first, so a
// checkpoint alone means <peer>.P was deleted under us), syncing the
// directory: every entry read from it has been settled. The manifest that
// unlists <peer>.P comes first.
type DeleteReplay struct{}

// QuarantineReplay syncs every appended line (as DeleteReplay does), then
// renames <peer>.P to To (a <peer>.Q.<ts> name) and removes its checkpoint:
// the file could not be read, and what it still holds was
// counted as dropped, but it is kept for a human: quarantined, never deleted.
type QuarantineReplay struct {
	To string
}

// DeleteBacklog removes File (closing it first if open) and syncs the
// directory: a limit dropped it, and its entries were counted as dropped.
type DeleteBacklog struct {
	File string
}

// OpenJournal creates the empty journal file File (<peer>.J.<ts>) and syncs
// the directory. Later AppendJournal actions name it.
type OpenJournal struct {
	File string
}

// AppendJournal appends the lines of Entries (the backlog line format) to
// File, which an OpenJournal created. Like AppendBacklog it need not be
// synced at once: the owner's group-commit Sync makes it durable, and the
// owner acknowledges the offers upstream only after that Sync succeeded.
type AppendJournal struct {
	File    string
	Entries []Entry
}

// CloseJournal syncs File and closes it: it takes no more lines (it was
// rotated, or is broken). A file that is not open is not an error.
type CloseJournal struct {
	File string
}

// DeleteJournal removes File, a closed journal every entry of which is
// settled, and syncs the directory. FIRST it syncs every line appended to any
// of the peer's files: entries that left memory for a .B or .D file must be
// durable there before their journal line goes. A file already gone is not
// an error.
type DeleteJournal struct {
	File string
}

// WriteManifest replaces the manifest <peer>.M durably (temp, fsync,
// rename, fsync directory): the list of the peer's .B, .D and .P files with
// how many entries and octets each holds. The queue asks for it only when
// that list changes shape, never per entry: after a file is created or
// promoted to <peer>.P (a name is listed only once it is on disk), before
// one is deleted or quarantined (a name is unlisted before it goes), at
// start when files were found, and at Shutdown (exact counts). At the next
// start Recover reports every file it names that is gone (RecoverLost).
type WriteManifest struct {
	Files []ManifestFile
}

// ManifestFile is one file of the manifest.
type ManifestFile struct {
	Name    string // <peer>.B.<ts>, <peer>.D.<ts> or <peer>.P
	Entries int64  // entries not yet settled (for <peer>.P: unread, or read and unanswered)
	Bytes   int64  // octets
	Open    bool   // still taking lines: Entries and Bytes are at least this
}

// LostFile is a file the manifest named that was gone at start: its
// entries, acknowledged upstream, will never be sent.
type LostFile struct {
	Name    string // as the manifest named it, e.g. "peer.B.5db93971" or "peer.P"
	Entries int64  // entries lost (for <peer>.P: not yet sent at its last checkpoint)
	Bytes   int64  // octets of the file when the manifest was written
	Sent    int64  // <peer>.P: octets already sent (its checkpoint); 0 otherwise
	Open    bool   // the file was still taking lines: at least Entries were lost
}

func (RotateBacklog) isAction()    {}
func (AppendBacklog) isAction()    {}
func (PromoteToReplay) isAction()  {}
func (ReadReplay) isAction()       {}
func (Checkpoint) isAction()       {}
func (DeleteReplay) isAction()     {}
func (QuarantineReplay) isAction() {}
func (DeleteBacklog) isAction()    {}
func (OpenJournal) isAction()      {}
func (AppendJournal) isAction()    {}
func (CloseJournal) isAction()     {}
func (DeleteJournal) isAction()    {}
func (WriteManifest) isAction()    {}

// Event is something the owner may log or count; it needs no answer.
type Event interface{ isEvent() }

// Reason says why entries were dropped.
type Reason string

// Reasons for Drop.
const (
	ReasonAttempts    Reason = "defer-attempts" // deferred MaxDefers times already
	ReasonBytes       Reason = "backlog-bytes"  // over BacklogMaxBytes
	ReasonAge         Reason = "backlog-age"    // older than BacklogMaxAge
	ReasonWriteFailed Reason = "write-failed"   // an AppendBacklog failed
	ReasonReadFailed  Reason = "read-failed"    // the replay file could not be read
	ReasonShortRead   Reason = "short-read"     // the replay file held fewer lines than written
)

// Drop reports Count entries discarded for Reason (they are counted in
// Stats.Dropped); File is the backlog file they were in, "" when none.
type Drop struct {
	Reason Reason
	Count  int
	File   string
}

// Spilled reports that the memory queue wrote Count entries to File: its
// oldest third because it was full, or all of it (Down true) because no
// connection had been up for DownSpillDelay.
type Spilled struct {
	Count int
	File  string
	Down  bool
}

// ReplayStarted reports that File became <peer>.P, holding Entries entries.
type ReplayStarted struct {
	File    string
	Entries int
}

// ReplayFinished reports that <peer>.P was read to the end and every entry
// from it settled; it is being deleted (or quarantined, Quarantined true).
type ReplayFinished struct {
	Quarantined bool
}

func (Drop) isEvent()           {}
func (Spilled) isEvent()        {}
func (ReplayStarted) isEvent()  {}
func (ReplayFinished) isEvent() {}

// Stats are a queue's counters. They add up: Check verifies
//
//	Offered + Recovered = Accepted + Refused + Rejected + Missing + Dropped + Lost
//	                    + Queued + InFlight + Backlog + Deferred + Replay
//
// Entries recovered after a crash enter through Recovered, like every entry
// found in a file at start, not through Offered (Offered counts Offer calls
// of this life only). Resent is the part of Recovered that came from journal
// files: entries that were in memory, in flight, or already answered when the
// process died. They are sent again, and each may be a duplicate for the
// peer (which then refuses it, 438/435, or 439 to TAKETHIS, all counted in
// Refused: see Done); so the
// duplicates a crash causes are at most Resent, plus the entries of <peer>.P
// read after its last checkpoint (see the package's Durability section).
type Stats struct {
	Offered   int64 // Offer calls taken
	Recovered int64 // entries found in files at start (Resent included), or found surplus while replaying
	Resent    int64 // entries recovered from journal files at start: possible duplicates

	Accepted int64
	Refused  int64
	Rejected int64
	Missing  int64
	Dropped  int64 // by limits, attempts, I/O errors; each reported by a Drop event
	Lost     int64 // in files the manifest named that were gone at start (Recovered.Lost)

	Queued   int64 // in the memory queue
	InFlight int64 // handed to a connection, no answer yet
	Backlog  int64 // in .B files
	Deferred int64 // in .D files
	Replay   int64 // in <peer>.P, not read yet

	Spilled      int64 // entries the full memory queue wrote to .B (they are in Backlog, or moved on)
	Requeued     int64 // entries put back at the head when their connection went down
	Retried      int64 // deferrals written to .D
	BacklogBytes int64 // octets in this peer's .B, .D and .P files
	BacklogFiles int   // .B and .D files (not .P)

	Journaled    int64 // lines appended to journal files
	JournalBytes int64 // octets in journal files not yet deleted
	JournalFiles int   // journal files not yet deleted (the current one included)
}

// Config sets a queue's limits. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	Peer      string // names the files: <Peer>.B.<ts> and so on
	QueueSize int    // memory queue capacity, in entries

	RotateBytes    int64         // a .B/.D file this large is rotated...
	RotateInterval time.Duration // ...but no more often than this

	DeferDelay    time.Duration // wait before retrying a first deferral; doubles per attempt
	DeferMaxDelay time.Duration // the doubling stops here
	MaxDefers     int           // deferrals allowed; the next one drops the entry (<0: none allowed)

	BacklogMaxBytes int64         // drop oldest files beyond this many octets (0: no limit)
	BacklogMaxAge   time.Duration // drop files whose newest line is older (0: no limit)

	CheckpointInterval time.Duration // checkpoint a replay's progress at least this often

	// RefillCheckpointGap: a refill of the empty memory queue from
	// <peer>.P checkpoints the settled batches first, unless the last
	// checkpoint is younger than this (negative: at every refill). Each
	// checkpoint is a temp file, two fsyncs and a rename; at every refill
	// (half a queue) they were a tenth of newsfeed's CPU time draining 2 KB
	// articles to four peers, while a crash re-sends at most what was
	// settled since the last one (offered again, refused as a duplicate).
	RefillCheckpointGap time.Duration

	JournalRotateBytes    int64         // a journal file this large is rotated at the next offer...
	JournalRotateInterval time.Duration // ...and one this old at the next Tick, whatever its size
	// JournalSettledClose: the current journal file, once every entry in
	// it is settled (answered, or in .B/.D), is closed and deleted at
	// the next Tick when it is this old, so that a crash does not send
	// those entries again. Each close costs a delete and a directory
	// fsync, so it comes at most this often.
	JournalSettledClose time.Duration

	// DownSpillDelay is how long the memory queue waits for a connection
	// after the last one went down before all of it is appended to .B. A
	// negative value keeps it in memory (and in the journal) until a
	// connection comes back.
	DownSpillDelay time.Duration
}

// DefaultConfig returns the defaults: a 4096-entry queue, files rotated at
// 10 MB but at most every 5 minutes, deferrals retried after 1
// minute doubling up to 1 hour and dropped after 10, no backlog limits, a
// replay checkpoint at least every 10 seconds of progress (and at a refill
// a second or more after the last one), journal files
// rotated at 1 MB or after 30 seconds, and the memory queue of a peer with no
// connection spilled to .B after 30 seconds.
func DefaultConfig(peer string) Config {
	return Config{
		Peer:               peer,
		QueueSize:          4096,
		RotateBytes:        10 << 20,
		RotateInterval:     5 * time.Minute,
		DeferDelay:         time.Minute,
		DeferMaxDelay:      time.Hour,
		MaxDefers:          10,
		CheckpointInterval: 10 * time.Second,

		RefillCheckpointGap: time.Second,

		JournalRotateBytes:    1 << 20,
		JournalRotateInterval: 30 * time.Second,
		JournalSettledClose:   time.Second,
		DownSpillDelay:        30 * time.Second,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig(c.Peer)
	if c.QueueSize <= 0 {
		c.QueueSize = d.QueueSize
	}
	if c.RotateBytes <= 0 {
		c.RotateBytes = d.RotateBytes
	}
	if c.RotateInterval <= 0 {
		c.RotateInterval = d.RotateInterval
	}
	if c.DeferDelay <= 0 {
		c.DeferDelay = d.DeferDelay
	}
	if c.DeferMaxDelay < c.DeferDelay {
		c.DeferMaxDelay = max(d.DeferMaxDelay, c.DeferDelay)
	}
	if c.MaxDefers == 0 {
		c.MaxDefers = d.MaxDefers
	}
	if c.CheckpointInterval <= 0 {
		c.CheckpointInterval = d.CheckpointInterval
	}
	if c.RefillCheckpointGap == 0 {
		c.RefillCheckpointGap = d.RefillCheckpointGap
	}
	if c.JournalRotateBytes <= 0 {
		c.JournalRotateBytes = d.JournalRotateBytes
	}
	if c.JournalSettledClose <= 0 {
		c.JournalSettledClose = d.JournalSettledClose
	}
	if c.JournalRotateInterval <= 0 {
		c.JournalRotateInterval = d.JournalRotateInterval
	}
	if c.DownSpillDelay == 0 {
		c.DownSpillDelay = d.DownSpillDelay
	}
	return c
}

// FileInfo describes a .B or .D file found at start.
type FileInfo struct {
	Name        string
	Kind        Kind
	TS          int64     // from the name
	Bytes       int64     // octets of complete lines
	Entries     int       // valid lines
	MaxAttempts int       // the largest attempts field among them
	ModTime     time.Time // last write: the age limit and a .D's delay count from it

	// Journal says the file was the journal <peer>.J.<ts>, which Recover
	// renamed to <peer>.B.<ts>: the process stopped without settling it, and
	// its entries count as Resent.
	Journal bool
}

// ReplayInfo describes a <peer>.P found at start.
type ReplayInfo struct {
	Bytes   int64 // file size
	Offset  int64 // from <peer>.P.ckpt; 0 without one
	Entries int   // valid lines after Offset
}

// Recovered is what a peer's backlog directory held at start
// (spoolfs.Backlog.Recover).
type Recovered struct {
	Files  []FileInfo
	Replay *ReplayInfo // nil when there is no <peer>.P
	// Lost lists the files the manifest named that were gone: their
	// entries are counted in Recovered and Lost.
	Lost []LostFile
}
