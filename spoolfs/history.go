package spoolfs

import (
	"bufio"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/newsflow/newsflow/spoolfs/records"
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
// with its token and time, persisted through the spool and the history log
// so that it survives a restart. It also holds the reservations of ids in
// transit. All methods are safe for concurrent use.
//
// The log is the truth. In memory there are only an index of the log
// (index: 8 bytes a slot, no ids) and the entries whose records are not in
// the log yet (recent). A lookup that the index cannot rule out reads the
// record from the log (readEntry), from a copy of the log's newest bytes
// (tail) when it is there, else with a pread that the page cache answers.
type History struct {
	s        *Spool
	mu       sync.RWMutex
	seed     maphash.Seed
	reserved map[string]int64 // message-id -> reservation time, Unix nanoseconds
	timeout  int64            // reservations older than this are void
	sweepAt  int              // sweep stale reservations when the map reaches this size

	idx     *index   // off the Go heap, freed with the History
	log     *os.File // the history log, read here; the Spool appends to it
	tail    []byte   // the newest bytes of the log, [tailOff, tailOff+len(tail)), in tailMax octets off the Go heap
	tailOff int64

	// recent holds the entries whose records the Spool has not written to
	// the log yet: Puts and Rejects not yet durable or durable and waiting
	// for the next log write (Spool.hpend, Spool.hwait), and what open found
	// in the spool after the checkpoint. Each leaves when its record is
	// written (logged), so the map stays about one group commit in size.
	// An entry whose sequence number is past the spool's durable one
	// answers Pending.
	recent map[string]hentry

	// forgot counts, per id, the forget records not yet in the log: an
	// index rebuilt from the log alone would otherwise bring the id back.
	forgot map[string]int

	end        int64       // the end of the records in the log that the index knows
	run        logRun      // lookups in log order (a backlog draining)
	readFailed atomic.Bool // a log read failed (logged once)
}

// hentry is one history entry as the history uses it.
type hentry struct {
	tok  Token
	when int64  // arrival (or rejection) time, Unix nanoseconds
	seq  uint64 // the Put's or Reject's sequence number; 0 for a logged entry
	kind byte   // kindArticle or kindReject
}

func newHistory(s *Spool, timeout time.Duration) *History {
	h := &History{
		s:        s,
		seed:     maphash.MakeSeed(),
		reserved: make(map[string]int64),
		timeout:  int64(timeout),
		sweepAt:  1024,
		idx:      newIndex(indexSize(0)),
		tail:     allocTable(tailMax)[:0], // pages become resident as they are used
		recent:   make(map[string]hentry),
		forgot:   make(map[string]int),
	}
	// The off-heap memory goes when the History does (no reader can be
	// left holding it then).
	runtime.AddCleanup(h, (*index).free, h.idx)
	runtime.AddCleanup(h, freeTable, h.tail[:tailMax])
	h.run.buf = allocTable(runWindows * runBlock)
	h.run.reset()
	runtime.AddCleanup(h, freeTable, h.run.buf)
	return h
}

// Lookup returns the history entry for msgid: a stored or pending article, or
// a rejected id. Reservations are not entries.
func (h *History) Lookup(msgid string) (Entry, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e, ok := h.getLocked(msgid)
	if !ok {
		return Entry{}, false
	}
	return Entry{Token: e.tok, Arrived: time.Unix(0, e.when), Status: h.entryStatus(e)}, true
}

// Seen reports whether msgid has a history entry (stored, pending or
// rejected).
func (h *History) Seen(msgid string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	_, ok := h.getLocked(msgid)
	return ok
}

// Len returns the number of history entries.
func (h *History) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.idx.count + len(h.recent)
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
	h.reserved[histKey(msgid)] = at
	return Unknown, true
}

// Release ends the reservation of msgid without storing anything, for
// example when the connection that reserved it is lost.
func (h *History) Release(msgid string) {
	h.mu.Lock()
	delete(h.reserved, histKey(msgid))
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
	if e, ok := h.getLocked(msgid); ok {
		return h.entryStatus(e)
	}
	if at, ok := h.reserved[histKey(msgid)]; ok && now-at < h.timeout {
		return Reserved
	}
	return Unknown
}

// entryStatus is Rejected, Pending (its Put has not been covered by a
// successful Sync) or Stored.
func (h *History) entryStatus(e hentry) Status {
	switch {
	case e.kind == kindReject:
		return Rejected
	case e.seq > h.s.durable.Load():
		return Pending
	default:
		return Stored
	}
}

// getLocked returns the entry for msgid: from recent, or through the
// index from the log.
func (h *History) getLocked(msgid string) (hentry, bool) {
	if e, ok := h.recent[histKey(msgid)]; ok {
		return e, true
	}
	e, _, ok := h.findLogged(msgid, idHash(h.seed, msgid))
	return e, ok
}

// findLogged returns msgid's logged entry (hv is its hash) and its index
// slot.
func (h *History) findLogged(msgid string, hv uint64) (hentry, int, bool) {
	p := h.idx.probe(hv)
	for {
		pos, off, ok := p.next()
		if !ok {
			return hentry{}, 0, false
		}
		if e, ok := h.readEntry(off, msgid); ok {
			return e, pos, true
		}
	}
}

// recBufs are the buffers readEntry reads a record into.
var recBufs = sync.Pool{New: func() any { return new([histRecordOverhead + maxMsgIDLen]byte) }}

// readEntry reads the log record at off and returns its entry if it is
// msgid's article or rejection record. Any other record, or one that
// does not check, is not msgid's; a read error is logged once and answers
// the same (the id then looks new: offered again rather than refused).
func (h *History) readEntry(off int64, msgid string) (hentry, bool) {
	size := int64(histRecordOverhead + len(msgid))
	var b []byte
	if t := off - h.tailOff; t >= 0 && t+size <= int64(len(h.tail)) {
		b = h.tail[t : t+size]
	} else {
		bp := recBufs.Get().(*[histRecordOverhead + maxMsgIDLen]byte)
		defer recBufs.Put(bp)
		b = bp[:size]
		if err := h.run.read(h.log, b, off, h.end); err != nil {
			if h.readFailed.CompareAndSwap(false, true) {
				h.s.log.Error("history: cannot read the log; ids it holds may be taken again", "offset", off, "err", err)
			}
			return hentry{}, false
		}
	}
	if n, _, ok := parseHistRecord(b); !ok || int64(n) != size {
		return hentry{}, false
	}
	r := decodeHistRecord(b)
	if r.kind != kindArticle && r.kind != kindReject || !idEqual(r.msgid, msgid) {
		return hentry{}, false
	}
	return hentry{tok: r.tok, when: r.when, kind: r.kind}, true
}

// runBlock is how much of the log a run of lookups in log order reads at
// a time; runWindows is how many such runs are served at once (a backlog
// draining to each of several peers is one run per peer, each at its own
// place in the log).
const (
	runBlock   = 32 << 10
	runWindows = 8
)

// logRun serves lookups that walk the log in order, as a backlog drains
// (its entries were queued in arrival order, and the send path looks each
// one up): when a record is read a little after one a window read before,
// the next runBlock octets are read into that window, so the lookups that
// follow are copies, not preads. Each run in progress keeps a window of
// its own, so peers draining at different places do not take each
// other's blocks; other lookups read just their record.
type logRun struct {
	mu    sync.Mutex
	buf   []byte // runWindows x runBlock octets off the Go heap (see newHistory)
	win   [runWindows]runWindow
	tick  uint64
	reads int // preads issued (tests)
}

// runWindow is one run's block: [off, off+n) of the log in its part of
// buf, and where the run last read.
type runWindow struct {
	off, prev int64
	n         int
	used      uint64
}

// reset forgets the blocks, for a new log file or one whose torn tail is
// cut. The History's write lock is held: no lookup is running.
func (lr *logRun) reset() {
	for i := range lr.win {
		lr.win[i] = runWindow{prev: -runBlock}
	}
}

// read fills b from the log f at off; end bounds what may be read (the end
// of the records written, so that no bytes of a write being cut short are
// kept).
func (lr *logRun) read(f *os.File, b []byte, off, end int64) error {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.tick++
	seq, lru := -1, 0
	for i := range lr.win {
		w := &lr.win[i]
		if t := off - w.off; t >= 0 && t+int64(len(b)) <= int64(w.n) {
			w.used = lr.tick
			copy(b, lr.buf[i*runBlock+int(t):])
			return nil
		}
		if seq < 0 && off > w.prev && off-w.prev < runBlock {
			seq = i
		}
		if w.used < lr.win[lru].used {
			lru = i
		}
	}
	if seq < 0 { // not (yet) a run: the least recently used window watches for one
		lr.win[lru].prev, lr.win[lru].used = off, lr.tick
		lr.reads++
		_, err := f.ReadAt(b, off)
		return err
	}
	w := &lr.win[seq]
	w.prev, w.used = off, lr.tick
	want := min(int64(runBlock), end-off)
	lr.reads++
	if want < int64(len(b)) {
		_, err := f.ReadAt(b, off)
		return err
	}
	block := lr.buf[seq*runBlock : (seq+1)*runBlock]
	w.n = 0
	n, err := f.ReadAt(block[:want], off)
	if n < len(b) {
		return err
	}
	w.off, w.n = off, n
	copy(b, block)
	return nil
}

// addLocked inserts an entry unless msgid already has one, and reports
// whether it did. h.mu must be held for writing. A seq of 0 marks an entry
// durable already (found by open).
func (h *History) addLocked(msgid string, kind byte, tok Token, when int64, seq uint64) bool {
	if _, ok := h.getLocked(msgid); ok {
		return false
	}
	h.addNewLocked(msgid, kind, tok, when, seq)
	return true
}

// addNewLocked inserts an entry for msgid, which the caller has found
// absent under the Spool's mu (every insert happens under it). h.mu must
// be held for writing.
func (h *History) addNewLocked(msgid string, kind byte, tok Token, when int64, seq uint64) {
	key := histKey(msgid)
	h.recent[key] = hentry{tok: tok, when: when, seq: seq, kind: kind}
	if len(h.reserved) > 0 {
		delete(h.reserved, key)
	}
}

// forgetLocked drops msgid's entry, if any, and reports whether there was
// one; the caller queues its forget record. h.mu must be held for
// writing.
func (h *History) forgetLocked(msgid string) bool {
	key := histKey(msgid)
	if _, ok := h.recent[key]; ok {
		delete(h.recent, key)
	} else if _, pos, ok := h.findLogged(msgid, idHash(h.seed, msgid)); ok {
		h.idx.removeAt(pos)
	} else {
		return false
	}
	h.forgot[key]++
	return true
}

// tailMax is the size of the copy of the log's newest bytes
// (History.tail): 1 MB, about 14,000 records of 2 KB articles, so that the
// lookups of the send path, which follow the storing closely, are not
// preads. It is off the Go heap: on it, it would count twice toward the
// collector's heap goal.
const tailMax = 1 << 20

// logged moves the entries of recs, records the Spool has just written to
// the log at offset at, from recent to the index, growing the index
// first if they would take it past its load. An entry that changed since
// its record was queued (forgotten, and perhaps stored again) stays as it
// is. The Spool's syncMu is held, so the log does not change under it.
func (h *History) logged(recs []byte, at int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for p := 0; p < len(recs); p += histRecordOverhead + int(recs[p+3]) {
		if k := recs[p+2]; k == kindArticle || k == kindReject {
			n++
		}
	}
	var err error
	if !h.idx.fits(n) {
		start := time.Now()
		err = h.rebuildLocked(h.log, at, growSize(h.idx.count+n))
		// Lookups waited for it: when that was noticeable, say how long.
		if d := time.Since(start); d >= 10*time.Millisecond {
			h.s.log.Info("history index grown", "entries", h.idx.count, "slots", len(h.idx.slots),
				"mb", len(h.idx.slots)*8>>20, "took", d.Round(time.Millisecond))
		}
	}
	for p := 0; p < len(recs); {
		size := histRecordOverhead + int(recs[p+3])
		r := decodeHistRecord(recs[p : p+size])
		switch r.kind {
		case kindArticle, kindReject:
			key := histKey(string(r.msgid))
			e, ok := h.recent[key]
			if ok && e.kind == r.kind && e.tok == r.tok && e.when == r.when {
				h.idx.insert(idHash(h.seed, key), at+int64(p))
				delete(h.recent, key)
			}
		case kindForget:
			key := histKey(string(r.msgid))
			if c := h.forgot[key]; c > 1 {
				h.forgot[key] = c - 1
			} else {
				delete(h.forgot, key)
			}
		}
		p += size
	}
	h.appendTail(recs, at)
	h.end = at + int64(len(recs))
	return err
}

// appendTail adds recs, written at offset at, to the copy of the log's
// newest bytes, dropping its oldest half when it is full.
func (h *History) appendTail(recs []byte, at int64) {
	if h.tailOff+int64(len(h.tail)) != at || len(recs) > tailMax/2 {
		h.tail, h.tailOff = h.tail[:0], at
		if len(recs) > tailMax/2 {
			h.tailOff += int64(len(recs))
			return
		}
	}
	if len(h.tail)+len(recs) > tailMax {
		cut := len(h.tail) - tailMax/2
		h.tail = h.tail[:copy(h.tail, h.tail[cut:])]
		h.tailOff += int64(cut)
	}
	h.tail = append(h.tail, recs...) // within its capacity: never reallocated
}

// errIndexFull stops a replay whose index has reached its load.
var errIndexFull = errors.New("history index full")

// replayLocked loads the log of f, from its header to end, into a new
// index of at least size slots (and never fewer than the spool's
// HistorySize asks for), taking the place of the current one, which is
// freed first: a history never holds two. Article and reject records
// add their id unless it is there, forget records remove it, and the ids
// forgotten whose forget records are not in the log yet are removed at
// the end. rec, if not nil, sees every record first; bad sees the corrupt
// regions. It returns the end of the last valid record. h.mu must be held
// for writing, or the history not yet shared.
func (h *History) replayLocked(f *os.File, end int64, size int, rec func(off int64, r histRecord), bad func(off, n int64)) (int64, error) {
	size = max(size, indexSize(h.s.opts.HistorySize))
	for {
		h.idx.reset(size)
		h.log, h.end = f, end
		h.run.reset()
		h.tail, h.tailOff = h.tail[:0], end
		sc, done := newLogScanner(f, end)
		b := newReplayBatch()
		valid, err := sc.Scan(histHeaderSize, func(off int64, rb []byte) error {
			r := decodeHistRecord(rb)
			if rec != nil {
				rec(off, r)
			}
			switch r.kind {
			case kindForget:
				// In log order: what came before goes in first.
				if err := h.insertBatch(b); err != nil {
					return err
				}
				// The id as a string without a copy: only compared.
				id := unsafe.String(unsafe.SliceData(r.msgid), len(r.msgid))
				if _, pos, ok := h.findLogged(id, idHash(h.seed, id)); ok {
					h.idx.removeAt(pos)
				}
			case kindArticle, kindReject:
				b.add(idHash(h.seed, unsafe.String(unsafe.SliceData(r.msgid), len(r.msgid))), off)
				if b.full() {
					return h.insertBatch(b)
				}
			}
			return nil
		}, bad)
		if err == nil {
			err = h.insertBatch(b)
		}
		b.free()
		done()
		if err == errIndexFull {
			size *= 2
			continue
		}
		// A torn tail after valid is never read: open cuts it and the
		// next records are written there, so the blocks the replay's
		// lookups read, which may reach into it, are dropped.
		h.end, h.tailOff = valid, valid
		h.run.reset()
		for id := range h.forgot {
			if _, pos, ok := h.findLogged(id, idHash(h.seed, id)); ok {
				h.idx.removeAt(pos)
			}
		}
		return valid, err
	}
}

// replayBatch holds the article and reject records a replay has read and
// not yet put in the index: they go in grouped by the region of the index
// their home slots are in (1/1024th of it each, in order), so that the
// index is written from start to end rather than at random (a replay is
// about a cache miss a record otherwise; it is what lookups wait for while
// the index grows).
type replayBatch struct {
	mem  []byte     // off the Go heap: recs, then out
	recs []batchRec // in log order
	out  []batchRec // recs by region, in log order within one
}

// batchRec is one record of a replayBatch: its id's hash and its offset.
type batchRec struct {
	hv  uint64
	off int64
}

// replayBatchLen is the number of records a replayBatch holds (256 KB
// each for recs and out).
const replayBatchLen = 16384

// regionBits: the index is cut into 1<<regionBits regions. The home slot
// grows with the hash's top 32 bits, so its region is the hash's top
// regionBits bits.
const regionBits = 10

func newReplayBatch() *replayBatch {
	mem := allocTable(2 * replayBatchLen * int(unsafe.Sizeof(batchRec{})))
	all := unsafe.Slice((*batchRec)(unsafe.Pointer(unsafe.SliceData(mem))), 2*replayBatchLen)
	return &replayBatch{mem: mem, recs: all[:0:replayBatchLen], out: all[replayBatchLen:]}
}

func (b *replayBatch) add(hv uint64, off int64) { b.recs = append(b.recs, batchRec{hv, off}) }
func (b *replayBatch) full() bool               { return len(b.recs) == cap(b.recs) }
func (b *replayBatch) free()                    { freeTable(b.mem); b.mem, b.recs, b.out = nil, nil, nil }

// insertBatch puts the records of b in the index, region by region (a
// counting sort, which keeps the log order of one id's records), each
// unless its id is there already, and empties b.
func (h *History) insertBatch(b *replayBatch) error {
	var start [1<<regionBits + 1]int
	for _, r := range b.recs {
		start[r.hv>>(64-regionBits)+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	out := b.out[:len(b.recs)]
	for _, r := range b.recs {
		k := r.hv >> (64 - regionBits)
		out[start[k]] = r
		start[k]++
	}
	x := h.idx
	for _, r := range out {
		if h.loggedID(r.hv, r.off) {
			continue
		}
		if !x.fits(1) {
			return errIndexFull
		}
		x.insert(r.hv, r.off)
	}
	b.recs = b.recs[:0]
	return nil
}

// loggedID reports whether the index has the id of the record at off (its
// hash hv) already. Only a candidate with the same fragment costs reads.
func (h *History) loggedID(hv uint64, off int64) bool {
	p := h.idx.probe(hv)
	var id string
	for {
		_, cand, ok := p.next()
		if !ok {
			return false
		}
		if id == "" {
			var buf [histRecordOverhead + maxMsgIDLen]byte
			n := min(int64(len(buf)), h.end-off)
			if n < histRecordOverhead {
				return false
			}
			if _, err := h.log.ReadAt(buf[:n], off); err != nil {
				return false
			}
			size, _, ok := parseHistRecord(buf[:n])
			if !ok {
				return false
			}
			id = string(decodeHistRecord(buf[:size]).msgid)
		}
		if _, ok := h.readEntry(cand, id); ok {
			return true
		}
	}
}

// newLogScanner returns a scanner over the log of f up to end whose
// window is off the Go heap, and the function that frees it: a replay of
// the whole log then leaves no garbage for the collector.
func newLogScanner(f *os.File, end int64) (*records.Scanner, func()) {
	const chunk = 1 << 20 // records are at most 287 octets
	buf := allocTable(chunk)
	sc := records.NewScanner(f, end, histRecMagic, parseHistRecord)
	sc.UseBuffer(buf[:0:chunk])
	return sc, func() { freeTable(buf) }
}

// rebuildLocked replaces the index with one of at least size slots built
// from the log of f up to end. h.mu must be held for writing.
func (h *History) rebuildLocked(f *os.File, end int64, size int) error {
	if _, err := h.replayLocked(f, end, size, nil, nil); err != nil {
		return fmt.Errorf("history: rebuild the index from the log: %w", err)
	}
	return nil
}

// Expire forgets stored ids that arrived before now-keep and rejected ids
// refused before now-keepRejected (a zero duration keeps that kind forever),
// then compacts the history log, and returns how many entries it dropped.
//
// Keep stored ids at least as long as the spool keeps articles, or an expired
// id may be offered, and stored, again. Ids whose records are not in the
// log yet (recent) are always kept.
//
// The rewrite is a durable replace: the kept records go to history.tmp, which
// is fsynced, renamed over history, and the directory is fsynced. Put and
// lookups wait while the old log is read and the kept records are written
// to history.tmp (the page cache), and the index is rebuilt from it (about
// 0.2 s a million ids), not for its fsync; Sync waits for the whole
// rewrite, so run it at a quiet time, as INN runs expire.
func (h *History) Expire(now time.Time, keep, keepRejected time.Duration) (removed int, err error) {
	s := h.s
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	// Step 1: make everything durable and checkpointed, so every entry that is
	// not Pending has its record in the log before the checkpoint.
	if err := s.syncLocked(true); err != nil {
		return 0, fmt.Errorf("history: expire: %w", err)
	}
	ckpt, ckptNewest := s.ckpt, s.ckptNewest

	// Step 2 (Put waits): the old log is read in order and its live
	// records (those the index points at) that are not due go to
	// history.tmp as they are, through a small buffer; then the index is
	// rebuilt from history.tmp, which has the new offsets.
	cutA, cutR := int64(-1<<63), int64(-1<<63)
	if keep > 0 {
		cutA = now.Add(-keep).UnixNano()
	}
	if keepRejected > 0 {
		cutR = now.Add(-keepRejected).UnixNano()
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
	old, oldEnd := h.log, s.hoff
	sc, done := newLogScanner(old, oldEnd)
	_, err = sc.Scan(histHeaderSize, func(off int64, b []byte) error {
		r := decodeHistRecord(b)
		if r.kind != kindArticle && r.kind != kindReject || !h.indexedAt(r.msgid, off) {
			return nil // a checkpoint, a forget, or an entry since forgotten
		}
		if r.kind == kindReject && r.when < cutR || r.kind == kindArticle && r.when < cutA {
			removed++
			return nil
		}
		w.write(b)
		return nil
	}, nil)
	done()
	w.buf = appendCheckpoint(w.buf[:0], ckpt, ckptNewest)
	w.write(w.buf)
	if err == nil {
		err = w.flush()
	}
	if err == nil {
		err = h.rebuildLocked(tf, w.n, indexSize(h.idx.count-removed))
	}
	if err != nil {
		removed = 0
		if rerr := h.rebuildLocked(old, oldEnd, indexSize(h.idx.count)); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	kept := h.idx.count
	h.mu.Unlock()
	s.mu.Unlock()

	// Step 3: temp, fsync, rename, fsync dir; then switch to the new file.
	if err == nil {
		err = syncData(tf)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		tf.Close()
		os.Remove(tmp)
		if h.log != old {
			s.mu.Lock()
			h.mu.Lock()
			rerr := h.rebuildLocked(old, oldEnd, indexSize(h.idx.count))
			h.mu.Unlock()
			s.mu.Unlock()
			if rerr != nil {
				s.setFatal(rerr)
			}
		}
		return 0, fmt.Errorf("history: expire: rewrite %s: %w", path, err)
	}
	// The log's reader is already tf (the rebuild); now its writer too.
	s.hfile, s.hoff = tf, w.n
	old.Close()
	if err := SyncDir(s.dir); err != nil {
		return removed, fmt.Errorf("history: expire: rewrite %s: %w", path, err)
	}

	s.log.Info("history expired", "removed", removed, "kept", kept, "bytes", w.n)
	return removed, nil
}

// indexedAt reports whether the index points at offset off for id, that is
// whether the record there is id's live entry.
func (h *History) indexedAt(id []byte, off int64) bool {
	p := h.idx.probe(idHash(h.seed, unsafe.String(unsafe.SliceData(id), len(id))))
	for {
		_, o, ok := p.next()
		if !ok {
			return false
		}
		if o == off {
			return true
		}
	}
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
