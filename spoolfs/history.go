package spoolfs

import (
	"bufio"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Status is what the history knows about a message-id. It maps directly to
// the answers of CHECK (RFC 4644 §2.4) and IHAVE (RFC 3977 §6.3.2).
type Status uint8

const (
	// Unknown: never seen; the article is wanted (238 / 335).
	Unknown Status = iota
	// Reserved: another connection was told to send it and it has not
	// arrived yet; try later (431 / 436), as innd does for ids in transit.
	Reserved
	// Pending: stored, but not yet made durable by Sync; try later (431 / 436).
	Pending
	// Stored: stored durably; not wanted (438 / 435).
	Stored
	// Rejected: refused recently; not wanted (438 / 435).
	Rejected
)

var statusNames = [...]string{"unknown", "reserved", "pending", "stored", "rejected"}

// String returns the status as a lower-case word.
func (st Status) String() string {
	if int(st) < len(statusNames) {
		return statusNames[st]
	}
	return fmt.Sprintf("status(%d)", st)
}

// Entry is the history's record of one message-id.
type Entry struct {
	Token   Token     // where the article is; zero for a rejected id
	Arrived time.Time // arrival, or rejection, time
	Status  Status    // Pending, Stored or Rejected
}

// History is the message-id history of a Spool: every id stored or rejected,
// with its token and time, kept in memory (see table) and persisted through
// the spool and the history log so that it survives a restart. It also holds
// the reservations of ids in transit. All methods are safe for concurrent use.
type History struct {
	s        *Spool
	mu       sync.RWMutex
	t        *table
	reserved map[string]int64 // message-id -> reservation time, Unix nanoseconds
	timeout  int64            // reservations older than this are void
	sweepAt  int              // sweep stale reservations when the map reaches this size

	// pend holds the Spool sequence number of each recent Put or Reject,
	// so that an entry whose sequence number is past the spool's durable
	// one answers Pending. An id not in pend is durable (entries loaded at
	// open, and those swept from pend once durable). Keeping this here
	// rather than in every slot saves 8 bytes an id.
	pend      map[string]uint64
	pendSweep int // sweep durable ids from pend when it reaches this size
}

func newHistory(s *Spool, timeout time.Duration) *History {
	return &History{
		s:        s,
		t:        newTable(maphash.MakeSeed(), 0),
		reserved: make(map[string]int64),
		timeout:  int64(timeout),
		sweepAt:  1024,

		pend:      make(map[string]uint64),
		pendSweep: 1024,
	}
}

// Lookup returns the history entry for msgid: a stored or pending article, or
// a rejected id. Reservations are not entries.
func (h *History) Lookup(msgid string) (Entry, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e := h.t.get(msgid)
	if e == nil {
		return Entry{}, false
	}
	return Entry{Token: e.token(), Arrived: time.Unix(0, e.when), Status: h.entryStatus(msgid, e)}, true
}

// Seen reports whether msgid has a history entry (stored, pending or
// rejected).
func (h *History) Seen(msgid string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.t.get(msgid) != nil
}

// Len returns the number of history entries.
func (h *History) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.t.count
}

// Status returns what the history knows about msgid at time now (which
// decides whether a reservation has timed out).
func (h *History) Status(msgid string, now time.Time) Status {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.statusLocked(msgid, now.UnixNano())
}

// Reserve marks msgid as in transit if nothing is known about it, and reports
// whether it did. Call it when answering CHECK or IHAVE with "send it"; a
// second connection offering the same id then gets Reserved (431/436). The
// reservation ends when the article is stored (Spool.Put) or rejected
// (Spool.Reject), when Release is called, or after the spool's
// ReserveTimeout. When it returns false, the Status says why.
func (h *History) Reserve(msgid string, now time.Time) (Status, bool) {
	at := now.UnixNano()
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.statusLocked(msgid, at); st != Unknown {
		return st, false
	}
	if len(h.reserved) >= h.sweepAt {
		h.sweepLocked(at)
	}
	h.reserved[msgid] = at
	return Unknown, true
}

// Release ends the reservation of msgid without storing anything, for
// example when the connection that reserved it is lost.
func (h *History) Release(msgid string) {
	h.mu.Lock()
	delete(h.reserved, msgid)
	h.mu.Unlock()
}

// sweepLocked drops timed-out reservations, and sets the next sweep for when
// the map has doubled again.
func (h *History) sweepLocked(now int64) {
	for id, at := range h.reserved {
		if now-at >= h.timeout {
			delete(h.reserved, id)
		}
	}
	h.sweepAt = max(1024, 2*len(h.reserved))
}

func (h *History) statusLocked(msgid string, now int64) Status {
	if e := h.t.get(msgid); e != nil {
		return h.entryStatus(msgid, e)
	}
	if at, ok := h.reserved[msgid]; ok && now-at < h.timeout {
		return Reserved
	}
	return Unknown
}

// entryStatus is Rejected, Pending (its Put has not been covered by a
// successful Sync) or Stored.
func (h *History) entryStatus(msgid string, e *slot) Status {
	switch {
	case e.kind() == kindReject:
		return Rejected
	case h.pendingLocked(msgid, h.s.durable.Load()):
		return Pending
	default:
		return Stored
	}
}

// pendingLocked reports whether msgid's entry is not yet durable: its Put
// or Reject came after the Sync that made sequence number durable.
func (h *History) pendingLocked(msgid string, durable uint64) bool {
	seq, ok := h.pend[msgid]
	return ok && seq > durable
}

// sweepPendLocked drops the ids that have become durable from pend, and
// sets the next sweep for when the map has doubled again. h.mu must be
// held for writing.
func (h *History) sweepPendLocked() {
	durable := h.s.durable.Load()
	for id, seq := range h.pend {
		if seq <= durable {
			delete(h.pend, id)
		}
	}
	h.pendSweep = max(1024, 2*len(h.pend))
}

// addLocked inserts an entry unless msgid already has one, and reports
// whether it did. h.mu must be held for writing.
// A seq of 0 marks an entry durable already (loaded at open).
func (h *History) addLocked(msgid string, kind byte, tok Token, when int64, seq uint64) bool {
	if !h.t.add(msgid, newSlot(kind, tok, when)) {
		return false
	}
	if len(h.reserved) > 0 {
		delete(h.reserved, msgid)
	}
	if seq != 0 {
		if len(h.pend) >= h.pendSweep {
			h.sweepPendLocked()
		}
		h.pend[msgid] = seq
	}
	return true
}

// Expire forgets stored ids that arrived before now-keep and rejected ids
// refused before now-keepRejected (a zero duration keeps that kind forever),
// then compacts the history log, and returns how many entries it dropped.
//
// Keep stored ids at least as long as the spool keeps articles, or an expired
// id may be offered, and stored, again. Ids whose Put is not yet durable are
// always kept.
//
// The rewrite follows STYLE §7.1: the kept entries go to history.tmp, which is
// fsynced, renamed over history, and the directory is fsynced. Put and
// lookups wait while the entries are written to history.tmp (the page
// cache: about 0.1 s a million ids), not for its fsync; Sync waits for
// the whole rewrite, so run it at a quiet time, as INN runs expire.
func (h *History) Expire(now time.Time, keep, keepRejected time.Duration) (removed int, err error) {
	s := h.s
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	// Step 1: make everything durable and checkpointed, so every entry that is
	// not Pending has its record in the log before the checkpoint.
	if err := s.syncLocked(true); err != nil {
		return 0, fmt.Errorf("history: expire: %w", err)
	}
	durable := s.durable.Load()
	ckpt, ckptNewest := s.ckpt, s.ckptNewest

	// Step 2 (Put waits): the new log image goes to history.tmp as it is
	// made, through a small buffer, and the table is rebuilt only when
	// entries go. (The image used to be built in memory first: at 2
	// million ids, 140 MB of heap for the hourly expiry, and a second table
	// even when nothing expired; issue 15, RSS.)
	cutA, cutR := int64(-1<<63), int64(-1<<63)
	if keep > 0 {
		cutA = now.Add(-keep).UnixNano()
	}
	if keepRejected > 0 {
		cutR = now.Add(-keepRejected).UnixNano()
	}
	expired := func(id []byte, e *slot) bool {
		if h.pendingLocked(string(id), durable) {
			return false // not in the image either: its record comes from the next Sync (s.hpend)
		}
		if e.kind() == kindReject {
			return e.when < cutR
		}
		return e.when < cutA
	}
	path := filepath.Join(s.dir, histFileName)
	tmp := filepath.Join(s.dir, histTempName)
	tf, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, fmt.Errorf("history: expire: rewrite %s: %w", path, err)
	}
	w := &imageWriter{w: bufio.NewWriterSize(tf, 1<<20)}
	w.write(histMagic[:])
	s.mu.Lock()
	h.mu.Lock()
	old := h.t
	old.each(func(id []byte, e *slot) {
		if expired(id, e) {
			removed++
		}
	})
	nt := old
	if removed > 0 {
		nt = newTable(old.seed, old.count-removed)
	}
	old.each(func(id []byte, e *slot) {
		if removed > 0 && expired(id, e) {
			return
		}
		if !h.pendingLocked(string(id), durable) {
			w.buf = appendHistRecord(w.buf[:0], e.kind(), string(id), e.token(), e.when)
			w.write(w.buf)
		}
		if nt != old {
			nt.insert(string(id), *e)
		}
	})
	h.t = nt
	kept := nt.count
	h.mu.Unlock()
	s.mu.Unlock()
	w.buf = appendCheckpoint(w.buf[:0], ckpt, ckptNewest)
	w.write(w.buf)

	// Step 3: temp, fsync, rename, fsync dir; then switch to the new file.
	err = w.flush()
	if err == nil {
		err = syncData(tf)
	}
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return removed, fmt.Errorf("history: expire: rewrite %s: %w", path, err)
	}
	if err := syncDir(s.dir); err != nil {
		return removed, fmt.Errorf("history: expire: rewrite %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		s.setFatal(fmt.Errorf("history: reopen %s after rewrite: %w", path, err))
		return removed, s.fatalErr()
	}
	s.hfile.Close()
	s.hfile, s.hoff = f, w.n
	s.hwait = s.hwait[:0] // their entries are in the image

	s.log.Info("history expired", "removed", removed, "kept", kept, "bytes", w.n)
	return removed, nil
}

// imageWriter writes the history image of Expire, keeping the first error
// and the octets written.
type imageWriter struct {
	w   *bufio.Writer
	buf []byte // one record at a time
	n   int64
	err error
}

func (w *imageWriter) write(p []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(p)
	w.n += int64(n)
	w.err = err
}

func (w *imageWriter) flush() error {
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}
