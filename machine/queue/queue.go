// Package queue is the sans-I/O lifecycle of one peer's outgoing article
// queue in newsfeed: the memory queue, the articles in flight on each
// connection, and the peer's backlog files.
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
// The lifecycles are tables, one per subject (state.go: entry, connection,
// replay file, journal file, the queue); every state change goes through
// them. The files beside this one hold the rest by concern: backlog.go the
// .B and .D files, replay.go <peer>.P, journal.go the journal, failed.go what
// a failed action undoes, check.go the counters and invariants, ring.go the
// memory queue.
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
// That is a group commit; the machine need not know when it
// happens, because nothing it decides depends on it.
//
// Each entry in memory or in flight remembers its journal file. It is settled
// when it reaches a final state (accepted, refused, rejected, missing,
// dropped) or is appended to a .B or .D file. The current journal is rotated
// at JournalRotateBytes or JournalRotateInterval, and once all its entries
// are settled and it is JournalSettledClose old; a rotated file whose
// entries are all settled is deleted (DeleteJournal), and spoolfs syncs every
// appended line of the peer's files before it deletes one, so an entry that
// moved to .B or .D is durable there before its journal line goes. At start,
// spoolfs renames every journal file it finds to .B (they only exist after a
// crash: Shutdown settles everything and deletes them), and those entries
// are sent again, counted as Resent. A crash therefore loses no entry that
// was offered and synced; it may duplicate at most the lines of the journal
// files still on disk (the current one, at most JournalRotateBytes or
// JournalRotateInterval's worth, and rotated ones with an entry still
// unsettled), and the peer refuses those cheaply with 438 (or 439 to a
// TAKETHIS, which Done counts as refused for them).
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
// spoolfs.PeerQueue does all of this for a runtime. After every input, drain
// NextAction and carry each action out, reporting failures with Failed; drain
// NextEvent; then offer work to idle connections with Next, and repeat while
// Next hands out entries or actions appear (a Next with an empty memory queue
// asks for a replay file to be promoted or read). Call Tick when Deadline
// says.
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
	state     RunState

	mem   ring
	conns map[Conn]*connWork // up connections only

	files   []*file  // .B and .D files, ordered by timestamp
	current [2]*file // the file each kind appends to (index kindIndex)
	lastTS  int64
	bytes   int64 // octets in files and <peer>.P

	rp     replay
	wakeAt time.Time // a failure was reported: Tick soon
	// paused: the owner hands the connections no work (Pause), so no
	// backlog file is replayed into memory.
	paused bool

	journal   *journalFile   // the current journal file, nil when none is open
	journals  []*journalFile // journal files not yet deleted, oldest first (the current one last)
	downSince time.Time      // when the last connection went down; zero while one is up

	count     [Lost + 1]int64 // entries per state; count[Absent] goes negative as entries are born
	offered   int64
	recovered int64
	spilled   int64
	requeued  int64
	retried   int64
	resent    int64
	journaled int64

	trace func(fmt.Stringer) // tests record the rows taken (table.Row values)

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

// connWork is what an up connection holds.
type connWork struct {
	items []item // in flight, oldest first: a window of base
	base  []item // the whole array items lies in (len = cap)
}

// push adds an entry handed out. Done drops answered entries off the front
// of items, so the array's room is at its front: when items reaches its
// end, push moves it back to the start of the array (when half of the
// array or more is free) rather than letting append allocate a new one for
// every window's worth of entries (a fifth of the queue's allocations,
// and their GC, feeding 2 KB articles to four peers).
func (cs *connWork) push(it item) {
	if n := len(cs.items); n == cap(cs.items) {
		if n > 0 && len(cs.base) >= 2*n {
			copy(cs.base, cs.items)
			clear(cs.base[n:]) // what stays of the old window's copies
			cs.items = cs.base[:n]
		} else {
			grown := make([]item, n, 2*n+8)
			copy(grown, cs.items)
			cs.base, cs.items = grown[:cap(grown)], grown
		}
	}
	cs.items = append(cs.items, it)
}

// New returns the queue of cfg.Peer, resuming from what its backlog
// directory held at start (spoolfs.Backlog.Recover): .B and .D files are
// ordered by timestamp and a <peer>.P resumes at its checkpoint. Files
// created from now on get timestamps after every one found.
func New(cfg Config, now time.Time, r Recovered) (*Queue, error) {
	return newQueue(cfg, now, r, nil)
}

func newQueue(cfg Config, now time.Time, r Recovered, trace func(fmt.Stringer)) (*Queue, error) {
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
		conns:     make(map[Conn]*connWork),
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
			maxAttempts: fi.MaxAttempts, opened: opened, last: last, resend: fi.Journal}
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
		q.moveReplay(OnRecoverP)
		q.rp.unread = int64(p.Entries)
		q.rp.bytes = p.Bytes
		q.rp.readOff, q.rp.doneOff, q.rp.ckptOff = p.Offset, p.Offset, p.Offset
		q.rp.lastCkpt = now
		q.bytes += p.Bytes
		q.moveN(Absent, OnRecoverP, q.rp.unread)
		q.recovered += q.rp.unread
	}
	if err := q.recoverLost(r.Lost); err != nil {
		return nil, err
	}
	if len(r.Files) > 0 || r.Replay != nil || len(r.Lost) > 0 {
		// List what was found (files from an older version included) and
		// forget what was lost, so it is reported once.
		q.emitManifest()
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
	q.moveConn(ConnDown, OnConnUp)
	q.conns[c] = &connWork{}
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
	q.moveConn(ConnUp, OnConnDown)
	delete(q.conns, c)
	for i := len(cs.items) - 1; i >= 0; i-- {
		it := cs.items[i]
		it.Resend = true // it may have been sent, its answer lost with c
		q.mem.pushFront(it)
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
	cs.push(it)
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
		return illegal(q, fmt.Sprintf("entry %s on conn %d", id, c), Absent, on)
	}
	it := cs.items[i]
	if i == 0 {
		// The usual case: peers answer in the order the entries were
		// sent (RFC 4644 §2.1), which is the order they were handed
		// out. Dropping the head is O(1); slices.Delete moved every
		// entry behind it, a window's worth per answer, which was a
		// fifth of newsfeed's CPU time on 2 KB articles to four peers.
		cs.items[0] = item{}
		cs.items = cs.items[1:]
	} else {
		cs.items = slices.Delete(cs.items, i, i+1)
	}
	// A 439 (or 437) to an entry offered to the peer before (Resend)
	// counts as refused, not rejected: the peer may have stored it the
	// first time, and INN answers a TAKETHIS of an article it holds with
	// the same bare 439 as a real rejection, so only our own record of the
	// earlier offer tells the two apart. Resends are the entries a
	// connection had in flight when it went down or at a Shutdown, those
	// the peer deferred, and those of journal files a crash left behind
	// (Recovered.Files with Journal). The mark goes with the entry into
	// .B and .D files (the line's third field), so it holds after a
	// restart too.
	if o == OutcomeRejected && it.Resend {
		on = OnRefused
	}
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
		it.Resend = true
		q.scratch = append(q.scratch[:0], it)
		w, _ := q.appendBacklog(now, KindDeferred, InFlight, OnDefer, q.scratch)
		q.retried += int64(w)
	}
	q.pump(now)
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
	if j := q.journal; j != nil && (j.state == JournalBroken || now.Sub(j.opened) >= q.cfg.JournalRotateInterval ||
		j.unsettled == 0 && now.Sub(j.opened) >= q.cfg.JournalSettledClose) {
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

// Pause tells the queue that its owner hands the connections no work (on,
// the operator's `newsfeed ctl pause`) or does again (off). While paused,
// no backlog file is promoted and no replay read is asked: what Flush or a
// spill wrote to backlog stays there instead of coming back into memory
// for connections that take nothing. Resuming refills as usual.
func (q *Queue) Pause(now time.Time, on bool) {
	q.paused = on
	q.pump(now)
}

// Flush writes the whole memory queue to .B now, as a full queue spills
// (the operator's `newsfeed ctl flush`): its journal lines are settled and
// the entries wait in the backlog, replayed in order as usual. What is in
// flight stays with its connection. It returns how many were written.
func (q *Queue) Flush(now time.Time) (int, error) {
	if q.state != Running {
		return 0, q.queueErr(OnSpill)
	}
	n := q.mem.n
	if n > 0 {
		q.spill(now, n)
	}
	return n, nil
}

// Shutdown stops the queue cleanly: everything in flight (connection by
// connection, in order of Conn, marked as resends: the peer may have
// taken them without its answer reaching us) and then the memory queue
// are appended to .B, and the replay's progress is checkpointed. Every
// later input is an error.
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
		q.moveConn(ConnUp, OnShutdown)
		for _, it := range q.conns[c].items {
			it.Resend = true
			q.scratch = append(q.scratch, it)
		}
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
	// Every file is closed now: the manifest lists exact counts.
	q.current = [2]*file{}
	if len(q.files) > 0 || q.replayOpen() {
		q.emitManifest()
	}
	q.moveRun(OnShutdown)
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
		if j.unsettled == 0 {
			set(j.opened.Add(q.cfg.JournalSettledClose))
		}
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
	if q.rp.state == ReplayNone && !q.paused && len(q.conns) > 0 && q.mem.n == 0 {
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

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
