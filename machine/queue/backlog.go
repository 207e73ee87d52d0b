package queue

// The backlog files <peer>.B.<ts> and <peer>.D.<ts>: appending entries to
// the current file of a kind (rotating it when due), the limits that drop
// whole files or the entries being written, and the list of files ordered by
// timestamp. Entries move by the entry table (state_entry.go).

import (
	"fmt"
	"slices"
	"time"
)

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
	resend      bool      // a journal a crash left behind: its entries are resends (Done)
}

func kindIndex(k Kind) int {
	if k == KindDeferred {
		return 1
	}
	return 0
}

func kindState(k Kind) EntryState {
	if k == KindDeferred {
		return Deferred
	}
	return Backlog
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
func (q *Queue) appendBacklog(now time.Time, k Kind, from EntryState, on Trigger, items []item) (int, string) {
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
		q.emitManifest() // lists the new file, and the closed one sealed
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
// The manifest stops listing it first, so a crash between cannot accuse a
// file we deleted ourselves.
func (q *Queue) dropFile(f *file, r Reason, on Trigger) {
	q.moveN(kindState(f.kind), on, f.entries)
	q.event(Drop{Reason: r, Count: int(f.entries), File: f.name})
	q.removeFile(f)
	q.bytes -= f.bytes
	q.emitManifest()
	q.emit(DeleteBacklog{File: f.name})
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
