// Package queue is the sans-I/O lifecycle of one peer's outgoing article
// queue in newsfeed: the memory queue, the articles in flight on each
// connection, and the peer's backlog files (seed 000: <peer>.B.<ts>,
// <peer>.D.<ts>, <peer>.P).
//
// # Theory of operation
//
// The masterfeed Offers each article for this peer. While a connection is
// up the article joins the memory queue, and connections take work from its
// head with Next; when none is up it goes straight to the current .B file
// (innfeed's peer-down behaviour). A connection reports each article's fate
// with Done. A deferred article ("try later", 431/436) goes to the current
// .D file with its attempt count raised; a connection that drops puts its
// articles back at the head of the memory queue.
//
// When the memory queue is full, its oldest third is written to .B; when no
// connection has been up for DownSpillDelay, all of it is. When it
// is empty and a connection wants work, the oldest backlog file is renamed to
// <peer>.P and read back half a queue at a time; .D files qualify only once
// their delay (DeferDelay doubling per attempt, up to DeferMaxDelay) has
// passed since their last line was written. How far <peer>.P has been dealt
// with is checkpointed, so a restart resumes there; the file is deleted once
// read to the end and every entry from it settled. Files rotate at
// RotateBytes but no more often than RotateInterval; a .D file also stops
// taking lines DeferDelay after it was opened, so its articles are retried
// in bounded time even while deferrals keep coming.
//
// The machine performs no I/O and reads no clock. Every input carries now.
// File operations leave as Actions (NextAction) for the owner to carry out
// with spoolfs, in order; a failure comes back through Failed, and the result
// of a read through ReplayRead. Events (NextEvent) report what the owner
// should log; Stats counts every entry exactly once, and Check verifies that
// the counts add up and agree with the queue's contents.
//
// The lifecycle is the table in state.go; every state change goes through it.
//
// # Durability
//
// An article acknowledged upstream must reach the peer even if the process
// is killed at any moment. So every entry offered while a connection is up
// (and therefore kept in memory) is also appended to the peer's current
// journal file <peer>.J.<ts> (AppendJournal); an entry offered while none is
// goes straight to .B, whose line is its durable record. Neither write is
// synced by itself: THE OWNER MUST SYNC (spoolfs.Backlog.Sync, one fsync per
// written file for all the offers since the last one) after carrying out the
// actions of its offers and BEFORE it acknowledges them upstream (239/235).
// That is the group commit of STYLE §7.6; the machine need not know when it
// happens, because nothing it decides depends on it.
//
// Each entry in memory or in flight remembers its journal file. It is settled
// when it reaches a final state (accepted, refused, rejected, missing,
// dropped) or is appended to a .B or .D file. The current journal is rotated
// at JournalRotateBytes or JournalRotateInterval; a rotated file whose
// entries are all settled is deleted (DeleteJournal), and spoolfs syncs every
// appended line of the peer's files before it deletes one, so an entry that
// moved to .B or .D is durable there before its journal line goes. At start,
// spoolfs renames every journal file it finds to .B (they only exist after a
// crash: Shutdown settles everything and deletes them), and those entries
// are sent again, counted as Resent. A crash therefore loses no entry that
// was offered and synced; it may duplicate at most the lines of the journal
// files still on disk (the current one, at most JournalRotateBytes or
// JournalRotateInterval's worth, and rotated ones with an entry still
// unsettled), and the peer refuses those cheaply with 438.
//
// Entries read from <peer>.P are not journaled: the file holds them.
// They are checkpointed only once settled (answered, or written to another
// backlog file, which spoolfs syncs before it writes the checkpoint), in
// whole read batches: after a crash, the entries of the unsettled batches
// are read and sent again. Those duplicates are the other documented cost,
// at most the entries of the batches in progress.
//
// # Driving it
//
// spoolfs.PeerQueue does all of this for a runtime. After every input, drain NextAction and carry each action out, reporting
// failures with Failed; drain NextEvent; then offer work to idle connections
// with Next, and repeat while Next hands out entries or actions appear (a
// Next with an empty memory queue asks for a replay file to be promoted or
// read). Call Tick when Deadline says.
package queue

import (
	"fmt"
	"slices"
	"time"
)

// Queue is the sans-I/O state machine of one peer's queue. It is not safe
// for concurrent use.
type Queue struct {
	cfg       Config
	third     int // entries spilled when the memory queue is full
	half      int // entries read from <peer>.P per refill
	maxDefers int // deferrals allowed before an entry is dropped
	state     State

	mem   ring
	conns map[Conn]*connState // up connections only

	files   []*file  // .B and .D files, ordered by timestamp
	current [2]*file // the file each kind appends to (index kindIndex)
	lastTS  int64
	bytes   int64 // octets in files and <peer>.P

	rp     replay
	wakeAt time.Time // a failure was reported: Tick soon

	journal   *journalFile   // the current journal file, nil when none is open
	journals  []*journalFile // journal files not yet deleted, oldest first (the current one last)
	downSince time.Time      // when the last connection went down; zero while one is up

	count     [Dropped + 1]int64 // entries per state; count[Absent] goes negative as entries are born
	offered   int64
	recovered int64
	spilled   int64
	requeued  int64
	retried   int64
	resent    int64
	journaled int64

	trace func(State, Trigger) // tests record the transitions taken

	actions []Action
	actHead int
	jbatch  AppendJournal // journal lines not yet in actions (emitJournal)
	events  []Event
	evHead  int
	scratch []item
}

// item is an entry with, when it was read from <peer>.P, its read batch, and
// when it was offered while a connection was up, its journal file.
type item struct {
	Entry
	batch uint64       // batch sequence + 1; 0 when not from the replay file
	jrnl  *journalFile // holds the entry's line until it is settled; nil when none does
}

// journalFile is one <peer>.J.<ts> file.
type journalFile struct {
	name      string
	state     State // JournalOpen, JournalBroken, JournalClosed or JournalStuck
	opened    time.Time
	bytes     int64
	unsettled int64     // entries journaled here and not settled yet
	retryAt   time.Time // JournalStuck: when to try the delete again
}

type connState struct {
	items []item // in flight, oldest first
}

// file is one .B or .D file.
type file struct {
	name        string
	kind        Kind
	ts          int64
	bytes       int64
	entries     int64
	maxAttempts int
	opened      time.Time // when it was created
	last        time.Time // when a line was last appended
	notBefore   time.Time // promotion failed: not again before this
	gone        bool      // its creation failed: forget it when empty
}

// replay is the state of <peer>.P.
type replay struct {
	state    State
	source   *file // the file promoted, for an undo when the rename fails
	unread   int64 // entries not read yet
	bytes    int64
	readOff  int64 // where the next read starts
	doneOff  int64 // every entry before this is settled
	ckptOff  int64 // the last checkpoint asked for (-1: unknown)
	lastCkpt time.Time
	batches  []batch // read batches not yet settled, oldest first
	firstSeq uint64  // sequence of batches[0]
	nextSeq  uint64
	pending  int64  // entries of batches still unsettled
	failed   bool   // a read failed: quarantine instead of delete
	stuck    Action // the delete or quarantine to retry
	retryAt  time.Time
}

type batch struct {
	end  int64 // offset after the batch's last line
	left int64 // entries not yet settled
}

// New returns the queue of cfg.Peer, resuming from what its backlog
// directory held at start (spoolfs.Backlog.Recover): .B and .D files are
// ordered by timestamp and a <peer>.P resumes at its checkpoint. Files
// created from now on get timestamps after every one found.
func New(cfg Config, now time.Time, r Recovered) (*Queue, error) {
	return newQueue(cfg, now, r, nil)
}

func newQueue(cfg Config, now time.Time, r Recovered, trace func(State, Trigger)) (*Queue, error) {
	if cfg.Peer == "" {
		return nil, fmt.Errorf("queue: config has no peer name")
	}
	cfg = cfg.withDefaults()
	q := &Queue{
		cfg:       cfg,
		third:     max(1, (cfg.QueueSize+2)/3),
		half:      max(1, cfg.QueueSize/2),
		maxDefers: max(0, cfg.MaxDefers),
		state:     Running,
		conns:     make(map[Conn]*connState),
		rp:        replay{state: ReplayNone},
		trace:     trace,
	}
	seen := make(map[string]bool)
	for _, fi := range r.Files {
		k, ts, ok := ParseFileName(cfg.Peer, fi.Name)
		if !ok || k != fi.Kind || ts != fi.TS {
			return nil, fmt.Errorf("queue %s: recovered file %q is not a %s file of timestamp %x", cfg.Peer, fi.Name, fi.Kind, fi.TS)
		}
		if fi.Journal && k != KindBacklog {
			return nil, fmt.Errorf("queue %s: recovered file %q is marked as a journal but is not a .B file", cfg.Peer, fi.Name)
		}
		if seen[fi.Name] || fi.Entries < 0 || fi.Bytes < 0 {
			return nil, fmt.Errorf("queue %s: recovered file %q listed twice or with negative counts", cfg.Peer, fi.Name)
		}
		seen[fi.Name] = true
		opened := time.Unix(fi.TS, 0)
		last := fi.ModTime
		if last.IsZero() {
			last = opened
		}
		f := &file{name: fi.Name, kind: k, ts: ts, bytes: fi.Bytes, entries: int64(fi.Entries),
			maxAttempts: fi.MaxAttempts, opened: opened, last: last}
		q.files = append(q.files, f)
		q.bytes += f.bytes
		q.lastTS = max(q.lastTS, ts)
		on := OnRecoverB
		switch {
		case k == KindDeferred:
			on = OnRecoverD
		case fi.Journal:
			// A journal the last life left behind: its entries were in
			// memory, in flight or answered when it died. All are sent
			// again; some are duplicates.
			on = OnRecoverJ
			q.resent += f.entries
		}
		q.moveN(Absent, on, f.entries)
		q.recovered += f.entries
	}
	slices.SortFunc(q.files, func(a, b *file) int {
		if a.ts != b.ts {
			return int(sign(a.ts - b.ts))
		}
		return int(a.kind) - int(b.kind)
	})
	if p := r.Replay; p != nil {
		if p.Offset < 0 || p.Offset > p.Bytes || p.Entries < 0 {
			return nil, fmt.Errorf("queue %s: recovered replay file has offset %d of %d bytes, %d entries", cfg.Peer, p.Offset, p.Bytes, p.Entries)
		}
		q.rp.state = q.mustMove(ReplayNone, OnRecoverP)
		q.rp.unread = int64(p.Entries)
		q.rp.bytes = p.Bytes
		q.rp.readOff, q.rp.doneOff, q.rp.ckptOff = p.Offset, p.Offset, p.Offset
		q.rp.lastCkpt = now
		q.bytes += p.Bytes
		q.moveN(Absent, OnRecoverP, q.rp.unread)
		q.recovered += q.rp.unread
	}
	return q, nil
}

func sign(v int64) int64 {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// Offer queues e for the peer: at the tail of the memory queue while a
// connection is up (spilling the oldest third to .B first when the queue is
// full), straight to .B when none is. e must pass CheckEntry.
func (q *Queue) Offer(now time.Time, e Entry) error {
	if q.state != Running {
		return q.queueErr(OnOffer)
	}
	if err := CheckEntry(e); err != nil {
		return fmt.Errorf("queue %s: offer %s: %w", q.cfg.Peer, e.MessageID, err)
	}
	q.offered++
	if len(q.conns) == 0 {
		// Peer down: nothing would take it from memory, so it goes where
		// it survives a restart.
		q.scratch = append(q.scratch[:0], item{Entry: e})
		q.appendBacklog(now, KindBacklog, Absent, OnOfferDown, q.scratch)
		q.pump(now)
		return nil
	}
	if q.mem.n >= q.cfg.QueueSize {
		// Full: the oldest third goes to .B (see the table's rules), so
		// the fresh articles stay in memory and go out first.
		q.spill(now, q.third)
	}
	it := item{Entry: e}
	q.journalAppend(now, &it) // memory does not survive a crash: the journal does
	q.mem.pushBack(it)
	q.moveN(Absent, OnOffer, 1)
	return nil
}

// ConnUp tells the queue that connection c can take work. It is an error if
// c is up already.
func (q *Queue) ConnUp(now time.Time, c Conn) error {
	if q.state != Running {
		return q.queueErr(OnConnUp)
	}
	if _, ok := q.conns[c]; ok {
		return q.connErr(c, ConnUp, OnConnUp)
	}
	q.mustMove(ConnDown, OnConnUp)
	q.conns[c] = &connState{}
	q.downSince = time.Time{}
	q.pump(now)
	return nil
}

// ConnDown tells the queue that connection c is gone: whatever it had in
// flight goes back to the head of the memory queue, oldest first, and if
// that overfills the queue the usual spill follows.
func (q *Queue) ConnDown(now time.Time, c Conn) error {
	if q.state != Running {
		return q.queueErr(OnConnDown)
	}
	cs, ok := q.conns[c]
	if !ok {
		return q.connErr(c, ConnDown, OnConnDown)
	}
	q.mustMove(ConnUp, OnConnDown)
	delete(q.conns, c)
	for i := len(cs.items) - 1; i >= 0; i-- {
		q.mem.pushFront(cs.items[i])
	}
	n := int64(len(cs.items))
	q.moveN(InFlight, OnConnLost, n)
	q.requeued += n
	if q.mem.n > q.cfg.QueueSize {
		q.spill(now, max(q.third, q.mem.n-q.cfg.QueueSize))
	}
	if len(q.conns) == 0 {
		q.downSince = now // DownSpillDelay counts from here
	}
	q.pump(now)
	return nil
}

// Next hands the entry at the head of the memory queue to connection c,
// which must be up. False means there is nothing to send now; the queue may
// then have asked, with an action, for a backlog file to be promoted or
// read, so drain NextAction and try again.
func (q *Queue) Next(now time.Time, c Conn) (Entry, bool) {
	if q.state != Running {
		return Entry{}, false
	}
	cs, ok := q.conns[c]
	if !ok {
		return Entry{}, false
	}
	if q.mem.n == 0 {
		q.pump(now)
		return Entry{}, false
	}
	it := q.mem.popFront()
	q.moveN(Queued, OnNext, 1)
	cs.items = append(cs.items, it)
	if q.mem.n == 0 {
		q.pump(now) // ask for the next refill before the connections run dry
	}
	return it.Entry, true
}

// Done reports the peer's answer for message-id id, handed to connection c
// by Next. When c has the same id in flight twice, the older one is meant.
// An id that is not in flight on c is an error naming the entry's state.
func (q *Queue) Done(now time.Time, c Conn, id string, o Outcome) error {
	if int(o) >= len(outcomeTriggers) {
		return fmt.Errorf("queue %s: done %s: unknown outcome %d", q.cfg.Peer, id, o)
	}
	on := outcomeTriggers[o]
	if q.state != Running {
		return q.queueErr(on)
	}
	cs, ok := q.conns[c]
	if !ok {
		return q.connErr(c, ConnDown, on)
	}
	i := slices.IndexFunc(cs.items, func(it item) bool { return it.MessageID == id })
	if i < 0 {
		return &TransitionError{Peer: q.cfg.Peer, Subject: fmt.Sprintf("entry %s on conn %d", id, c), State: Absent, Trigger: on}
	}
	it := cs.items[i]
	cs.items = slices.Delete(cs.items, i, i+1)
	// Entries read from <peer>.P are settled here (or by the append that
	// moves them to .D): their read batch may now let the checkpoint on.
	switch {
	case o != OutcomeDeferred:
		q.moveN(InFlight, on, 1)
		q.settle(it)
	case it.Attempts >= q.maxDefers:
		q.moveN(InFlight, OnGiveUp, 1)
		q.settle(it)
		q.event(Drop{Reason: ReasonAttempts, Count: 1})
	default:
		it.Attempts++
		q.scratch = append(q.scratch[:0], it)
		w, _ := q.appendBacklog(now, KindDeferred, InFlight, OnDefer, q.scratch)
		q.retried += int64(w)
	}
	q.pump(now)
	return nil
}

// ReplayRead gives the queue the result of its ReadReplay action: the
// entries read, the offset after the last line consumed (complete lines
// only; a torn last line is not consumed), and whether the end of <peer>.P
// was reached. The entries join the tail of the memory queue.
func (q *Queue) ReplayRead(now time.Time, entries []Entry, newOffset int64, eof bool) error {
	on := OnRead
	if eof {
		on = OnReadEOF
	}
	if q.state != Running {
		return q.queueErr(on)
	}
	if q.rp.state != ReplayReading {
		return q.replayErr(on)
	}
	if newOffset < q.rp.readOff || (newOffset == q.rp.readOff && (len(entries) > 0 || !eof)) {
		return fmt.Errorf("queue %s: replay read of %d entries (eof %t) ends at offset %d, not after %d", q.cfg.Peer, len(entries), eof, newOffset, q.rp.readOff)
	}
	for _, e := range entries {
		if err := CheckEntry(e); err != nil {
			return fmt.Errorf("queue %s: replay read: %w", q.cfg.Peer, err)
		}
	}
	n := int64(len(entries))
	if n > q.rp.unread { // more lines than were counted: the surplus is found
		extra := n - q.rp.unread
		q.moveN(Absent, OnFound, extra)
		q.recovered += extra
		q.rp.unread += extra
	}
	q.moveN(Replay, OnRead, n)
	q.rp.unread -= n
	seq := q.rp.nextSeq
	q.rp.nextSeq++
	q.rp.batches = append(q.rp.batches, batch{end: newOffset, left: n})
	q.rp.pending += n
	for _, e := range entries {
		q.mem.pushBack(item{Entry: e, batch: seq + 1})
	}
	q.rp.readOff = newOffset
	// At the end, what was counted but not found is gone: a write that
	// failed unnoticed, or lines corrupted on disk (spoolfs quarantined
	// them). Count it, so the totals still add up.
	if eof && q.rp.unread > 0 {
		q.moveN(Replay, OnShortRead, q.rp.unread)
		q.event(Drop{Reason: ReasonShortRead, Count: int(q.rp.unread), File: ReplayName(q.cfg.Peer)})
		q.rp.unread = 0
	}
	q.rp.state = q.mustMove(ReplayReading, on)
	q.advance()
	if q.mem.n > q.cfg.QueueSize {
		q.spill(now, max(q.third, q.mem.n-q.cfg.QueueSize))
	}
	q.pump(now)
	return nil
}

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
		q.rp.state = q.mustMove(ReplayIdle, on)
		q.moveN(Replay, on, q.rp.unread)
		f.notBefore = now.Add(q.cfg.DeferDelay)
		q.insertFile(f)
		q.rp = replay{state: q.rp.state, nextSeq: q.rp.nextSeq, firstSeq: q.rp.nextSeq}
	case ReadReplay:
		if q.rp.state != ReplayReading {
			return q.replayErr(OnReadFailed)
		}
		q.rp.state = q.mustMove(ReplayReading, OnReadFailed)
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
		q.rp.state = q.mustMove(ReplayNone, OnDeleteFailed)
		q.rp.stuck = a
		q.rp.retryAt = now.Add(q.cfg.DeferDelay)
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
			j.state = q.mustMove(JournalOpen, OnWriteFailed)
		}
	case CloseJournal:
		// Nothing to undo: the file takes no more lines either way, and
		// the owner's Sync reports that its last lines may not be durable.
	case DeleteJournal:
		if j := q.findJournal(a.File); j != nil {
			return &TransitionError{Peer: q.cfg.Peer, Subject: "journal " + a.File, State: j.state, Trigger: OnDeleteFailed}
		}
		// Tried again after DeferDelay; after a restart, its entries would
		// be sent again (and counted as Resent).
		j := &journalFile{name: a.File, state: q.mustMove(JournalNone, OnDeleteFailed), retryAt: now.Add(q.cfg.DeferDelay)}
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

// Tick lets time pass: files older than BacklogMaxAge are dropped, a stuck
// delete is retried, a replay's progress is checkpointed, a .D file whose
// delay has passed may be promoted, the memory queue of a peer down for
// DownSpillDelay is spilled to .B, and a journal file that is old enough (or
// broken) is rotated. Call it at Deadline; an early or repeated call is
// harmless.
func (q *Queue) Tick(now time.Time) {
	if q.state != Running {
		return
	}
	q.wakeAt = time.Time{}
	if q.downSpillDue(now) {
		q.spillDown(now)
	}
	for _, j := range slices.Clone(q.journals) {
		if j.state == JournalStuck && !now.Before(j.retryAt) {
			q.retryJournalDelete(j)
		}
	}
	if j := q.journal; j != nil && (j.state == JournalBroken || now.Sub(j.opened) >= q.cfg.JournalRotateInterval) {
		q.rotateJournal(j, OnJournalRotate)
	}
	if q.cfg.BacklogMaxAge > 0 {
		for _, f := range slices.Clone(q.files) {
			if now.Sub(f.last) >= q.cfg.BacklogMaxAge {
				q.dropFile(f, ReasonAge, OnExpire)
			}
		}
	}
	if q.replayOpen() && q.rp.doneOff > q.rp.ckptOff && now.Sub(q.rp.lastCkpt) >= q.cfg.CheckpointInterval {
		q.checkpoint(now)
	}
	q.pump(now)
}

// Shutdown stops the queue cleanly: everything in flight (connection by
// connection, in order of Conn) and then the memory queue are appended to
// .B, and the replay's progress is checkpointed. Every later input is an
// error.
func (q *Queue) Shutdown(now time.Time) error {
	if q.state != Running {
		return q.queueErr(OnShutdown)
	}
	ids := make([]Conn, 0, len(q.conns))
	for c := range q.conns {
		ids = append(ids, c)
	}
	slices.Sort(ids)
	q.scratch = q.scratch[:0]
	for _, c := range ids {
		q.mustMove(ConnUp, OnShutdown)
		q.scratch = append(q.scratch, q.conns[c].items...)
		delete(q.conns, c)
	}
	if len(q.scratch) > 0 {
		q.appendBacklog(now, KindBacklog, InFlight, OnShutdown, q.scratch)
	}
	q.scratch = q.scratch[:0]
	for q.mem.n > 0 {
		q.scratch = append(q.scratch, q.mem.popFront())
	}
	if len(q.scratch) > 0 {
		q.appendBacklog(now, KindBacklog, Queued, OnShutdown, q.scratch)
	}
	switch {
	case q.rp.state == ReplayDraining && q.rp.pending == 0:
		q.finishReplay()
	case q.replayOpen() && q.rp.doneOff > q.rp.ckptOff:
		q.checkpoint(now)
	}
	// Everything journaled is settled now (in a final state or in .B), so
	// closing the current journal deletes it, after the appends above: a
	// clean stop leaves no journal behind.
	for _, j := range slices.Clone(q.journals) {
		if j.state == JournalStuck {
			q.retryJournalDelete(j)
		}
	}
	if j := q.journal; j != nil {
		q.rotateJournal(j, OnShutdown)
	}
	q.state = q.mustMove(Running, OnShutdown)
	return nil
}

// NextAction returns the next file operation to carry out, in order.
func (q *Queue) NextAction() (Action, bool) {
	q.flushJournal()
	if q.actHead == len(q.actions) {
		q.actions, q.actHead = q.actions[:0], 0
		return nil, false
	}
	a := q.actions[q.actHead]
	q.actions[q.actHead] = nil
	q.actHead++
	return a, true
}

// NextEvent returns the next event to report. Adjacent drops of the same
// reason and file are merged into one event.
func (q *Queue) NextEvent() (Event, bool) {
	if q.evHead == len(q.events) {
		q.events, q.evHead = q.events[:0], 0
		return nil, false
	}
	e := q.events[q.evHead]
	q.events[q.evHead] = nil
	q.evHead++
	return e, true
}

// Deadline is when Tick must next be called; false means no deadline.
func (q *Queue) Deadline() (time.Time, bool) {
	var d time.Time
	set := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	if q.state != Running {
		return d, false
	}
	// Each deadline below is one the next Tick acts on, so a runtime that
	// calls Tick at Deadline never spins: after the Tick it has moved on.
	set(q.wakeAt)
	if j := q.journal; j != nil {
		set(j.opened.Add(q.cfg.JournalRotateInterval))
	}
	for _, j := range q.journals {
		if j.state == JournalStuck {
			set(j.retryAt)
		}
	}
	if len(q.conns) == 0 && q.mem.n > 0 && q.cfg.DownSpillDelay >= 0 {
		set(q.downSince.Add(q.cfg.DownSpillDelay))
	}
	if q.cfg.BacklogMaxAge > 0 {
		for _, f := range q.files {
			set(f.last.Add(q.cfg.BacklogMaxAge))
		}
	}
	switch {
	case q.rp.state == ReplayStuck:
		set(q.rp.retryAt)
	case q.replayOpen() && q.rp.doneOff > q.rp.ckptOff:
		set(q.rp.lastCkpt.Add(q.cfg.CheckpointInterval))
	}
	if q.rp.state == ReplayNone && len(q.conns) > 0 && q.mem.n == 0 {
		for _, f := range q.files { // the next file to become promotable
			t := f.notBefore
			if f.kind == KindDeferred {
				t = maxTime(t, f.last.Add(q.deferDelay(f.maxAttempts)))
			}
			set(t)
		}
	}
	return d, !d.IsZero()
}

// Stats returns the queue's counters.
func (q *Queue) Stats() Stats {
	var jbytes int64
	for _, j := range q.journals {
		jbytes += j.bytes
	}
	return Stats{
		Offered: q.offered, Recovered: q.recovered, Resent: q.resent,
		Accepted: q.count[Accepted], Refused: q.count[Refused], Rejected: q.count[Rejected],
		Missing: q.count[Missing], Dropped: q.count[Dropped],
		Queued: q.count[Queued], InFlight: q.count[InFlight], Backlog: q.count[Backlog],
		Deferred: q.count[Deferred], Replay: q.count[Replay],
		Spilled: q.spilled, Requeued: q.requeued, Retried: q.retried,
		BacklogBytes: q.bytes, BacklogFiles: len(q.files),
		Journaled: q.journaled, JournalBytes: jbytes, JournalFiles: len(q.journals),
	}
}

// ReplayState returns the state of <peer>.P (ReplayNone, ReplayIdle,
// ReplayReading, ReplayDraining or ReplayStuck).
func (q *Queue) ReplayState() State { return q.rp.state }

// Check verifies the queue's invariants: the counters add up, and each
// count agrees with what the queue holds (memory queue, connections, files,
// the replay file and its read batches). Tests call it after every step.
func (q *Queue) Check() error {
	s := q.Stats()
	// Conservation: every entry that came in is in exactly one state.
	in := s.Offered + s.Recovered
	out := s.Accepted + s.Refused + s.Rejected + s.Missing + s.Dropped +
		s.Queued + s.InFlight + s.Backlog + s.Deferred + s.Replay
	if in != out || -q.count[Absent] != in {
		return fmt.Errorf("queue %s: offered %d + recovered %d = %d, born %d, accounted %d (%+v)", q.cfg.Peer, s.Offered, s.Recovered, in, -q.count[Absent], out, s)
	}
	for st := Queued; st <= Dropped; st++ {
		if q.count[st] < 0 {
			return fmt.Errorf("queue %s: %d entries in state %s", q.cfg.Peer, q.count[st], st)
		}
	}
	if int64(q.mem.n) != s.Queued {
		return fmt.Errorf("queue %s: memory queue holds %d, counted %d", q.cfg.Peer, q.mem.n, s.Queued)
	}
	var inflight, pending int64
	held := map[*journalFile]int64{} // entries whose journal line is not settled, per file
	for c, cs := range q.conns {
		inflight += int64(len(cs.items))
		for _, it := range cs.items {
			if it.batch != 0 {
				pending++
			}
			if it.jrnl != nil {
				held[it.jrnl]++
			}
			if CheckEntry(it.Entry) != nil {
				return fmt.Errorf("queue %s: conn %d holds invalid entry %+v", q.cfg.Peer, c, it.Entry)
			}
		}
	}
	if inflight != s.InFlight {
		return fmt.Errorf("queue %s: connections hold %d, counted %d in flight", q.cfg.Peer, inflight, s.InFlight)
	}
	for i := 0; i < q.mem.n; i++ {
		it := q.mem.at(i)
		if it.batch != 0 {
			pending++
		}
		if it.jrnl != nil {
			held[it.jrnl]++
		}
	}
	if err := q.checkJournals(held); err != nil {
		return err
	}
	var left int64
	for _, b := range q.rp.batches {
		left += b.left
	}
	if pending != q.rp.pending || left != q.rp.pending {
		return fmt.Errorf("queue %s: %d entries from the replay file held, batches wait for %d, pending %d", q.cfg.Peer, pending, left, q.rp.pending)
	}
	var kinds [2]int64
	bytes := int64(0)
	for i, f := range q.files {
		if i > 0 && q.files[i-1].ts > f.ts {
			return fmt.Errorf("queue %s: files out of order: %s before %s", q.cfg.Peer, q.files[i-1].name, f.name)
		}
		if f.entries < 0 || f.bytes < 0 {
			return fmt.Errorf("queue %s: file %s has %d entries, %d bytes", q.cfg.Peer, f.name, f.entries, f.bytes)
		}
		kinds[kindIndex(f.kind)] += f.entries
		bytes += f.bytes
	}
	for _, f := range q.current {
		if f != nil && q.findFile(f.name) != f {
			return fmt.Errorf("queue %s: current file %s is not listed", q.cfg.Peer, f.name)
		}
	}
	if kinds[0] != s.Backlog || kinds[1] != s.Deferred {
		return fmt.Errorf("queue %s: files hold %d B + %d D entries, counted %d + %d", q.cfg.Peer, kinds[0], kinds[1], s.Backlog, s.Deferred)
	}
	if q.replayOpen() {
		bytes += q.rp.bytes
	} else if q.rp.unread != 0 || len(q.rp.batches) != 0 {
		return fmt.Errorf("queue %s: no replay file, yet %d unread and %d batches", q.cfg.Peer, q.rp.unread, len(q.rp.batches))
	}
	if q.rp.unread != s.Replay {
		return fmt.Errorf("queue %s: replay file has %d unread, counted %d", q.cfg.Peer, q.rp.unread, s.Replay)
	}
	if bytes != q.bytes {
		return fmt.Errorf("queue %s: files hold %d octets, counted %d", q.cfg.Peer, bytes, q.bytes)
	}
	if q.rp.doneOff > q.rp.readOff {
		return fmt.Errorf("queue %s: replay settled to %d beyond read %d", q.cfg.Peer, q.rp.doneOff, q.rp.readOff)
	}
	return nil
}

// moveN moves n entries from state from by trigger on, and returns the
// state they reach. The table must allow it: the machine only asks for
// moves it has checked, so anything else is a bug and panics.
func (q *Queue) moveN(from State, on Trigger, n int64) State {
	to := q.transition(from, on, n)
	q.count[from] -= n
	q.count[to] += n
	return to
}

// mustMove moves one connection, the replay file or the queue.
func (q *Queue) mustMove(from State, on Trigger) State { return q.transition(from, on, 1) }

// transition looks a move of n things up in the table, panicking if it is
// not there.
func (q *Queue) transition(from State, on Trigger, n int64) State {
	to, ok := lookup(from, on)
	if !ok {
		panic((&TransitionError{Peer: q.cfg.Peer, Subject: "internal", State: from, Trigger: on}).Error())
	}
	if q.trace != nil && n > 0 {
		q.trace(from, on)
	}
	return to
}

func (q *Queue) queueErr(on Trigger) error {
	return &TransitionError{Peer: q.cfg.Peer, Subject: "queue", State: q.state, Trigger: on}
}

func (q *Queue) connErr(c Conn, st State, on Trigger) error {
	return &TransitionError{Peer: q.cfg.Peer, Subject: fmt.Sprintf("conn %d", c), State: st, Trigger: on}
}

func (q *Queue) replayErr(on Trigger) error {
	return &TransitionError{Peer: q.cfg.Peer, Subject: "replay file", State: q.rp.state, Trigger: on}
}

func (q *Queue) emit(a Action) {
	q.flushJournal()
	if ab, ok := a.(AppendBacklog); ok && len(q.actions) > q.actHead {
		if last, ok := q.actions[len(q.actions)-1].(AppendBacklog); ok && last.File == ab.File {
			last.Entries = append(last.Entries, ab.Entries...)
			q.actions[len(q.actions)-1] = last
			return
		}
	}
	q.actions = append(q.actions, a)
}

// emitJournal asks for e's line in journal file name. Consecutive lines
// gather in q.jbatch, which becomes one AppendJournal (many offers, one
// write) when any other action is emitted or the owner asks for the next:
// the order of actions is kept, and an offer costs no allocation of its own.
func (q *Queue) emitJournal(name string, e Entry) {
	if q.jbatch.File != name {
		q.flushJournal()
		q.jbatch.File = name
	}
	q.jbatch.Entries = append(q.jbatch.Entries, e)
}

// flushJournal turns the gathered journal lines into their action.
func (q *Queue) flushJournal() {
	if len(q.jbatch.Entries) > 0 {
		q.actions = append(q.actions, q.jbatch)
	}
	q.jbatch = AppendJournal{}
}

func (q *Queue) event(e Event) {
	if d, ok := e.(Drop); ok && len(q.events) > q.evHead {
		if last, ok := q.events[len(q.events)-1].(Drop); ok && last.Reason == d.Reason && last.File == d.File {
			last.Count += d.Count
			q.events[len(q.events)-1] = last
			return
		}
	}
	q.events = append(q.events, e)
}

func kindIndex(k Kind) int {
	if k == KindDeferred {
		return 1
	}
	return 0
}

func kindState(k Kind) State {
	if k == KindDeferred {
		return Deferred
	}
	return Backlog
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// deferDelay is how long a .D file whose most-deferred entry has attempts
// waits after its last write: DeferDelay doubled per attempt beyond the
// first, up to DeferMaxDelay.
func (q *Queue) deferDelay(attempts int) time.Duration {
	d := q.cfg.DeferDelay
	for i := 1; i < attempts && d < q.cfg.DeferMaxDelay; i++ {
		d *= 2
	}
	return min(d, q.cfg.DeferMaxDelay)
}

func (q *Queue) replayOpen() bool {
	switch q.rp.state {
	case ReplayIdle, ReplayReading, ReplayDraining:
		return true
	}
	return false
}

// spill writes the n oldest entries of the memory queue to .B.
func (q *Queue) spill(now time.Time, n int) { q.spillBy(now, n, OnSpill) }

// spillBy writes the n oldest entries of the memory queue to .B by trigger
// on (OnSpill: the queue is full; OnSpillDown: the peer is down).
func (q *Queue) spillBy(now time.Time, n int, on Trigger) {
	q.scratch = q.scratch[:0]
	for i := 0; i < n && q.mem.n > 0; i++ {
		q.scratch = append(q.scratch, q.mem.popFront())
	}
	written, name := q.appendBacklog(now, KindBacklog, Queued, on, q.scratch)
	q.spilled += int64(written)
	if written > 0 {
		q.event(Spilled{Count: written, File: name, Down: on == OnSpillDown})
	}
}

// appendBacklog writes items, all in state from, to the current file of
// kind (rotating it first if due), by trigger on. Over BacklogMaxBytes it
// drops the oldest other files first, then the oldest of items. It returns
// how many were written, and where.
func (q *Queue) appendBacklog(now time.Time, k Kind, from State, on Trigger, items []item) (int, string) {
	f := q.ensureFile(now, k)
	need := int64(0)
	for i := range items {
		need += LineLen(items[i].Entry)
	}
	if limit := q.cfg.BacklogMaxBytes; limit > 0 && q.bytes+need > limit {
		for q.bytes+need > limit {
			v := q.oldestOther(f)
			if v == nil {
				break
			}
			q.dropFile(v, ReasonBytes, OnTrim)
		}
		cut := 0
		for cut < len(items) && q.bytes+need > limit {
			need -= LineLen(items[cut].Entry)
			cut++
		}
		if cut > 0 {
			q.moveN(from, OnTrim, int64(cut))
			for _, it := range items[:cut] {
				q.settle(it)
			}
			q.event(Drop{Reason: ReasonBytes, Count: cut})
			items = items[cut:]
		}
	}
	if len(items) == 0 {
		return 0, f.name
	}
	entries := make([]Entry, len(items))
	for i, it := range items {
		entries[i] = it.Entry
		f.maxAttempts = max(f.maxAttempts, it.Attempts)
	}
	q.emit(AppendBacklog{Kind: k, File: f.name, Entries: entries})
	if to := q.moveN(from, on, int64(len(items))); to != kindState(k) {
		panic(fmt.Sprintf("queue: %s/%s leads to %s, not to a %s file", from, on, to, k))
	}
	f.entries += int64(len(items))
	f.bytes += need
	f.last = now
	q.bytes += need
	for _, it := range items {
		q.settle(it)
	}
	return len(items), f.name
}

// ensureFile returns the file kind appends to, rotating it first when it is
// full (RotateBytes, and RotateInterval since it was opened) or, for .D,
// when it has taken lines for DeferDelay already.
func (q *Queue) ensureFile(now time.Time, k Kind) *file {
	i := kindIndex(k)
	f := q.current[i]
	closed := ""
	if f != nil {
		age := now.Sub(f.opened)
		if (f.bytes >= q.cfg.RotateBytes && age >= q.cfg.RotateInterval) || (k == KindDeferred && age >= q.cfg.DeferDelay) {
			closed = f.name
			f = nil
		}
	}
	if f == nil {
		ts := q.nextTS(now)
		f = &file{name: FileName(q.cfg.Peer, k, ts), kind: k, ts: ts, opened: now, last: now}
		q.files = append(q.files, f)
		q.current[i] = f
		q.emit(RotateBacklog{Kind: k, Closed: closed, Opened: f.name})
	}
	return f
}

// oldestOther is the oldest file other than f, or nil.
func (q *Queue) oldestOther(f *file) *file {
	for _, v := range q.files {
		if v != f {
			return v
		}
	}
	return nil
}

// dropFile deletes a whole file for a limit, counting its entries dropped.
func (q *Queue) dropFile(f *file, r Reason, on Trigger) {
	q.emit(DeleteBacklog{File: f.name})
	q.moveN(kindState(f.kind), on, f.entries)
	q.event(Drop{Reason: r, Count: int(f.entries), File: f.name})
	q.removeFile(f)
	q.bytes -= f.bytes
}

func (q *Queue) findFile(name string) *file {
	for _, f := range q.files {
		if f.name == name {
			return f
		}
	}
	return nil
}

func (q *Queue) removeFile(f *file) {
	if i := slices.Index(q.files, f); i >= 0 {
		q.files = slices.Delete(q.files, i, i+1)
	}
	if q.current[kindIndex(f.kind)] == f {
		q.current[kindIndex(f.kind)] = nil
	}
}

func (q *Queue) insertFile(f *file) {
	i, _ := slices.BinarySearchFunc(q.files, f.ts, func(v *file, ts int64) int { return int(sign(v.ts - ts)) })
	q.files = slices.Insert(q.files, i, f)
}

// forgetIfGone drops the record of a file whose creation failed once the
// failed writes to it have been accounted for.
func (q *Queue) forgetIfGone(f *file) {
	if f.gone && f.entries == 0 {
		q.removeFile(f)
		q.bytes -= f.bytes
	}
}

// settle notes that an entry no longer needs the file it came from: the
// read batch of <peer>.P, or its journal file.
func (q *Queue) settle(it item) {
	if it.jrnl != nil {
		q.settleJournal(it.jrnl)
	}
	if it.batch == 0 {
		return
	}
	i := it.batch - 1 - q.rp.firstSeq
	q.rp.batches[i].left--
	q.rp.pending--
	q.advance()
}

// advance moves the settled offset past every leading batch fully settled.
func (q *Queue) advance() {
	for len(q.rp.batches) > 0 && q.rp.batches[0].left == 0 {
		q.rp.doneOff = q.rp.batches[0].end
		q.rp.batches = q.rp.batches[1:]
		q.rp.firstSeq++
	}
}

func (q *Queue) checkpoint(now time.Time) {
	q.emit(Checkpoint{Offset: q.rp.doneOff})
	q.rp.ckptOff = q.rp.doneOff
	q.rp.lastCkpt = now
}

// pump takes at most one step with the replay file, so that a failure the
// owner reports always concerns the step just taken: retry a stuck delete,
// delete a drained file, promote the oldest ready backlog file, or ask for a
// refill of the empty memory queue (checkpointing first).
func (q *Queue) pump(now time.Time) {
	if q.state != Running {
		return
	}
	want := len(q.conns) > 0 && q.mem.n == 0
	switch q.rp.state {
	case ReplayStuck:
		if !now.Before(q.rp.retryAt) {
			q.emit(q.rp.stuck)
			q.rp.state = q.mustMove(ReplayStuck, OnRetryDelete)
		}
	case ReplayDraining:
		if q.rp.pending == 0 {
			q.finishReplay()
		}
	case ReplayNone:
		if !want {
			return
		}
		for _, f := range q.files {
			if now.Before(f.notBefore) {
				continue
			}
			if f.kind == KindDeferred && now.Before(f.last.Add(q.deferDelay(f.maxAttempts))) {
				continue
			}
			q.promote(now, f)
			return
		}
	case ReplayIdle:
		if !want {
			return
		}
		if q.rp.doneOff > q.rp.ckptOff {
			q.checkpoint(now)
		}
		q.emit(ReadReplay{Offset: q.rp.readOff, Max: q.half})
		q.rp.state = q.mustMove(ReplayIdle, OnReadAsked)
	}
}

func (q *Queue) promote(now time.Time, f *file) {
	q.rp.state = q.mustMove(ReplayNone, OnPromote)
	q.moveN(kindState(f.kind), OnPromote, f.entries)
	q.removeFile(f)
	q.rp = replay{state: q.rp.state, source: f, unread: f.entries, bytes: f.bytes,
		lastCkpt: now, nextSeq: q.rp.nextSeq, firstSeq: q.rp.nextSeq}
	q.emit(PromoteToReplay{File: f.name})
	q.event(ReplayStarted{File: f.name, Entries: int(f.entries)})
}

// finishReplay deletes (or quarantines) a replay file read to the end whose
// entries are all settled.
func (q *Queue) finishReplay() {
	failed := q.rp.failed
	q.rp.state = q.mustMove(ReplayDraining, OnDrained)
	q.bytes -= q.rp.bytes
	if failed {
		ts := q.lastTS + 1
		q.lastTS = ts
		q.emit(QuarantineReplay{To: QuarantineName(q.cfg.Peer, ts)})
	} else {
		q.emit(DeleteReplay{})
	}
	q.rp = replay{state: q.rp.state, nextSeq: q.rp.nextSeq, firstSeq: q.rp.nextSeq}
	q.event(ReplayFinished{Quarantined: failed})
}

// ring is the memory queue: a growable circular buffer of items.
type ring struct {
	buf  []item
	head int
	n    int
}

func (r *ring) grow() {
	nb := make([]item, max(16, 2*len(r.buf)))
	for i := 0; i < r.n; i++ {
		nb[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = nb, 0
}

func (r *ring) pushBack(it item) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = it
	r.n++
}

func (r *ring) pushFront(it item) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.head = (r.head - 1 + len(r.buf)) % len(r.buf)
	r.buf[r.head] = it
	r.n++
}

func (r *ring) popFront() item {
	it := r.buf[r.head]
	r.buf[r.head] = item{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return it
}

func (r *ring) at(i int) item { return r.buf[(r.head+i)%len(r.buf)] }
