package spoolfs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by the spool. Wrapped errors carry the message-id, token
// or file; test them with errors.Is.
var (
	// ErrDuplicate: Put or Reject of a message-id the history already has.
	ErrDuplicate = errors.New("spool: duplicate message-id")
	// ErrNotFound: the token addresses no stored article.
	ErrNotFound = errors.New("spool: article not found")
	// ErrExpired: the token's segment was removed by Expire. It wraps
	// ErrNotFound, so errors.Is(err, ErrNotFound) holds for it too.
	ErrExpired = fmt.Errorf("spool: article expired: %w", ErrNotFound)
	// ErrCorrupt: the record at the token fails its checks (header or CRC).
	ErrCorrupt = errors.New("spool: corrupt record")
	// ErrBadArticle: Put was given something that is not a wire-format
	// article, an invalid message-id, or an article over MaxArticleSize.
	ErrBadArticle = errors.New("spool: not a storable article")
	// ErrClosed: the spool was closed.
	ErrClosed = errors.New("spool: closed")
)

// SpoolOptions tune a Spool. The zero value gives the defaults.
type SpoolOptions struct {
	// SegmentSize is the size at which a segment file is sealed and a new
	// one started (default 64 MiB). Expiry removes whole segments.
	SegmentSize int64
	// MaxArticleSize is the largest wire article Put accepts (default 16 MiB).
	MaxArticleSize int
	// FlushSize is how many bytes of records Put buffers before writing them
	// to the segment file (default 1 MiB). Sync writes the rest.
	FlushSize int
	// ReserveTimeout is how long History.Reserve holds an id in transit
	// (default 10 minutes).
	ReserveTimeout time.Duration
	// MaxOpenSegments bounds the read file descriptors kept open (default 256).
	MaxOpenSegments int
	// PreWrite is how far past the active segment's write end the spool
	// keeps the file already written, with zeros (default 4 MiB; negative:
	// never). A group commit whose records land on such blocks overwrites
	// them, and its fdatasync then has no size or allocation to commit to
	// the file system's journal: on ext4 it waits for the data alone,
	// which halves the median Sync of small rounds (BenchmarkCommitRound;
	// the mean pays for the round that writes the zeros). The zeros are
	// written after small rounds only (spool_prewrite.go), and cost as many
	// bytes written again as the spool takes in such rounds.
	PreWrite int64
	// HistorySize is how many message-ids the history's index is sized for
	// at open (default 0: for what the log holds). The index is rebuilt
	// from the log each time it outgrows itself, and lookups wait for that;
	// sizing it for the ids a history will hold (like INN's makedbz -s)
	// saves those pauses, at about 10 bytes an id.
	HistorySize int
	// Logger receives quarantine, recovery and disk-error reports
	// (default slog.Default()).
	Logger *slog.Logger
}

func (o SpoolOptions) withDefaults() SpoolOptions {
	if o.SegmentSize <= 0 {
		o.SegmentSize = 64 << 20
	}
	if o.MaxArticleSize <= 0 {
		o.MaxArticleSize = 16 << 20
	}
	if o.FlushSize <= 0 {
		o.FlushSize = 1 << 20
	}
	if o.ReserveTimeout <= 0 {
		o.ReserveTimeout = 10 * time.Minute
	}
	if o.MaxOpenSegments <= 0 {
		o.MaxOpenSegments = 256
	}
	if o.PreWrite == 0 {
		o.PreWrite = 4 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Spool stores articles once, in wire format, in append-only segment files,
// and keeps the message-id History beside them. Put buffers; Sync is the
// group commit that makes every earlier Put durable with one fdatasync. All
// methods are safe for concurrent use.
//
// Lock order: cmu, then syncMu, then mu, then History.mu, then rmu.
type Spool struct {
	dir    string
	segDir string
	opts   SpoolOptions
	log    *slog.Logger
	lock   *os.File
	hist   *History

	// cmu and cwake coordinate concurrent Sync calls (see Sync).
	cmu     sync.Mutex
	cwake   *sync.Cond
	syncing bool // a leader is syncing

	// syncMu serialises Sync, Close and history compaction, and guards the
	// history file and the durable position.
	syncMu     sync.Mutex
	hfile      *os.File
	hoff       int64    // end of the valid history log
	hwait      []byte   // records of durable articles not yet written to the log
	hspare     []byte   // the previous hpend, reused as the next
	ckpt       Position // last checkpoint written and fsynced to the log
	ckptNewest int64
	ckptSeg    atomic.Uint32 // ckpt.Seg, for Expire
	durEnd     Position      // end of the data made durable by the last Sync

	// mu guards the append path.
	mu       sync.Mutex
	active   *segment
	buf      []byte     // whole records not yet written, to go at active.written
	writeErr error      // the last write failed (ENOSPC...); retried before accepting more
	fatal    error      // an fsync failed: the spool accepts nothing until reopened
	dirty    []*segment // sealed segments awaiting their fdatasync (each holds a ref)
	dirSync  bool       // a segment was created since the last Sync
	needCkpt bool       // a segment was sealed since the last checkpoint
	hpend    []byte     // history records of Puts not yet durable
	closed   bool

	cutAt       map[uint32]int64 // open only: where recovery cut each torn segment
	cutMu       sync.Mutex
	putOff      []pendingCut // torn tails open could not quarantine for lack of space
	cutsPending atomic.Bool  // len(putOff) > 0
	lostAtOpen  int          // acknowledged articles the open found lost
	suspects    []suspect    // open only: articles dropLost checks

	seq       atomic.Uint64 // sequence number of the last Put or Reject (written under mu)
	durable   atomic.Uint64 // every Put/Reject with seq <= durable is durable
	activeNum atomic.Uint32 // active.num, for the read path
	bytes     atomic.Int64  // bytes in all segment files

	// rmu guards the segment table: segs, order, refs and read descriptors.
	rmu   sync.Mutex
	segs  map[uint32]*segment
	order []*segment // live segments, ascending
	nopen int
	clock uint64 // use counter for closing the least recently used descriptor
}

// segment is one segment file.
type segment struct {
	num  uint32
	path string

	// guarded by rmu
	f       *os.File // nil when not open
	refs    int      // users of f; the active segment holds one
	lastUse uint64
	gone    bool // removed by Expire: close f when refs drops to 0

	// For the active segment guarded by mu; fixed once sealed.
	written int64 // bytes of records (and header) in the file
	pre     int64 // the file's end while zeros lie past written (PreWrite); 0 when none
	// preFailed: writing zeros ahead failed (preWriteLocked); no more tries
	preFailed bool
	newest    int64 // newest arrival in the segment, Unix nanoseconds
	sealed    bool

	synced int64 // bytes known durable; guarded by syncMu
}

// History returns the spool's message-id history.
func (s *Spool) History() *History { return s.hist }

// Dir returns the directory the spool lives in.
func (s *Spool) Dir() string { return s.dir }

// checkMsgID applies RFC 3977 §3.6: 3 to 250 octets of printable US-ASCII,
// starting with '<' and ending with '>'.
func checkMsgID(id string) error {
	if len(id) < 3 || len(id) > maxMsgIDLen || id[0] != '<' || id[len(id)-1] != '>' {
		return fmt.Errorf("%w: bad message-id %q", ErrBadArticle, id)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f {
			return fmt.Errorf("%w: bad message-id %q", ErrBadArticle, id)
		}
	}
	return nil
}

// Put appends the wire-format article (CRLF lines, dot-stuffed, ending with
// ".\r\n") under msgid, and returns its token. The article is buffered, not
// durable: call Sync before acknowledging it. Put refuses, with ErrDuplicate,
// an id the history has as Pending, Stored or Rejected; a Reserved id is
// accepted (its reservation ends).
//
// If an earlier write failed (disk full), Put first retries it and returns
// that error, wrapping syscall.ENOSPC, while it still fails; nothing is
// accepted until it succeeds.
func (s *Spool) Put(msgid string, wire []byte, arrived time.Time) (Token, error) {
	if err := checkMsgID(msgid); err != nil {
		return Token{}, fmt.Errorf("spool: put: %w", err)
	}
	if len(wire) > s.opts.MaxArticleSize {
		return Token{}, fmt.Errorf("spool: put %s: %w: %d bytes, limit %d", msgid, ErrBadArticle, len(wire), s.opts.MaxArticleSize)
	}
	// RFC 3977 §3.1.1: a multi-line block ends with CRLF "." CRLF.
	if n := len(wire); n < 5 || string(wire[n-5:]) != "\r\n.\r\n" {
		return Token{}, fmt.Errorf("spool: put %s: %w: does not end with CRLF.CRLF", msgid, ErrBadArticle)
	}
	crcP := crc32c(wire) // outside the lock: the only per-byte work besides the copy
	at := arrived.UnixNano()
	size := recOverhead + len(wire) + len(msgid)

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return Token{}, fmt.Errorf("spool: put %s: %w", msgid, err)
	}
	// Every insert into the history happens under s.mu, so the id cannot
	// appear between this check and the insert below.
	h := s.hist
	h.mu.RLock()
	st := h.statusLocked(msgid, at)
	h.mu.RUnlock()
	if st != Unknown && st != Reserved {
		return Token{}, fmt.Errorf("spool: put %s: %w (%s)", msgid, ErrDuplicate, st)
	}
	if err := s.roomLocked(size); err != nil {
		return Token{}, fmt.Errorf("spool: put %s: %w", msgid, err)
	}
	seg := s.active
	tok := Token{Seg: seg.num, Off: uint64(seg.written) + uint64(len(s.buf)) + recHeaderSize, Len: uint32(len(wire))}
	s.buf = appendRecord(s.buf, kindArticle, msgid, wire, at, crcP)
	seg.newest = max(seg.newest, at)
	seq := s.seq.Add(1)
	h.mu.Lock()
	h.addNewLocked(msgid, kindArticle, tok, at, seq)
	h.mu.Unlock()
	s.hpend = appendHistRecord(s.hpend, kindArticle, msgid, tok, at)
	if len(s.buf) >= s.opts.FlushSize {
		// A failure here is kept in s.writeErr and reported by Sync and the
		// next Put; this record stays buffered and is not lost.
		s.flushLocked()
	}
	return tok, nil
}

// Reject remembers msgid as refused at time now, so that later offers are
// answered Rejected without a transfer. It is a no-op for an id the history
// already has. Like Put, it is durable after the next Sync.
func (s *Spool) Reject(msgid string, now time.Time) error {
	if err := checkMsgID(msgid); err != nil {
		return fmt.Errorf("spool: reject: %w", err)
	}
	at := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return fmt.Errorf("spool: reject %s: %w", msgid, err)
	}
	h := s.hist
	h.mu.RLock()
	_, seen := h.getLocked(msgid)
	h.mu.RUnlock()
	if seen {
		h.Release(msgid)
		return nil
	}
	if err := s.roomLocked(recOverhead + len(msgid)); err != nil {
		return fmt.Errorf("spool: reject %s: %w", msgid, err)
	}
	s.buf = appendRecord(s.buf, kindReject, msgid, nil, at, 0)
	seq := s.seq.Add(1)
	h.mu.Lock()
	h.addNewLocked(msgid, kindReject, Token{}, at, seq)
	h.mu.Unlock()
	s.hpend = appendHistRecord(s.hpend, kindReject, msgid, Token{}, at)
	if len(s.buf) >= s.opts.FlushSize {
		s.flushLocked()
	}
	return nil
}

// writableLocked reports why nothing can be appended now, if so. After a
// failed write it retries the write first, so Put works again as soon as
// space returns.
func (s *Spool) writableLocked() error {
	switch {
	case s.closed:
		return ErrClosed
	case s.fatal != nil:
		return s.fatal
	}
	if err := s.finishCuts(); err != nil {
		return err
	}
	if s.writeErr != nil {
		return s.flushLocked()
	}
	return nil
}

// roomLocked makes sure the active segment can take a record of size bytes,
// sealing it and starting the next one when it is full.
func (s *Spool) roomLocked(size int) error {
	a := s.active
	end := a.written + int64(len(s.buf))
	if a.sealed || end+int64(size) > s.opts.SegmentSize && end > segHeaderSize {
		return s.rotateLocked()
	}
	return nil
}

// flushLocked writes the buffered records at the end of the active segment.
// On failure the file is cut back to the last whole record (a partial write
// must not stay on disk), the records stay buffered, and the error is kept
// in s.writeErr to be retried.
func (s *Spool) flushLocked() error {
	if len(s.buf) == 0 {
		s.writeErr = nil
		return nil
	}
	if err := s.writeLocked(s.active, s.buf); err != nil {
		s.writeErr = err
		s.log.Error("spool write failed; records kept in memory", "segment", s.active.path, "bytes", len(s.buf), "err", err)
		return err
	}
	s.writeErr = nil
	if cap(s.buf) > 4*s.opts.FlushSize {
		s.buf = make([]byte, 0, s.opts.FlushSize+64<<10) // after a huge article
	} else {
		s.buf = s.buf[:0]
	}
	return nil
}

// writeLocked appends p to seg at seg.written, all or nothing. Past
// seg.written there is nothing or the zeros of preWriteLocked: p goes over
// them.
func (s *Spool) writeLocked(seg *segment, p []byte) error {
	n, err := seg.f.WriteAt(p, seg.written)
	if err != nil {
		if n > 0 {
			// The zeros written ahead go too: a partial record must not
			// stay, and the cut is the simplest way to be sure of it.
			if terr := seg.f.Truncate(seg.written); terr != nil {
				s.setFatalLocked(fmt.Errorf("spool: cut partial write in %s: %w", seg.path, terr))
			}
			if seg.pre > seg.written {
				s.bytes.Add(seg.written - seg.pre)
			}
			seg.pre = 0
		}
		return err // an *os.PathError naming the file and wrapping the errno
	}
	// s.bytes counts the file's size: what lands on zeros adds nothing.
	s.bytes.Add(max(seg.written+int64(n), seg.pre) - max(seg.written, seg.pre))
	seg.written += int64(n)
	return nil
}

// rotateLocked seals the active segment and starts the next one. A failure
// leaves the spool consistent: either the old segment is still open for
// appends, or it is sealed and the next Put retries creating the new one.
func (s *Spool) rotateLocked() error {
	if err := s.flushLocked(); err != nil {
		return err
	}
	old := s.active
	if !old.sealed {
		// A sealed segment ends with its seal: its zeros go first (the
		// Sync that makes the seal durable makes the cut durable too).
		if err := s.cutPreLocked(old); err != nil {
			return err
		}
		seal := appendRecord(nil, kindSeal, "", nil, old.newest, 0)
		if err := s.writeLocked(old, seal); err != nil {
			return err
		}
		old.sealed = true
		s.dirty = append(s.dirty, old) // takes over the active segment's ref
		s.needCkpt = true
	}
	seg, err := s.createSegment(old.num + 1)
	if err != nil {
		return err
	}
	s.dirSync = true
	s.rmu.Lock()
	s.addSegmentLocked(seg)
	seg.refs = 1 // the active segment's ref
	s.rmu.Unlock()
	s.active = seg
	s.activeNum.Store(seg.num)
	return nil
}

// segPath returns the file name of segment num.
func (s *Spool) segPath(num uint32) string {
	return filepath.Join(s.segDir, fmt.Sprintf("%08x.seg", num))
}

// createSegment creates segment num with its header. The caller fsyncs the
// directory before anything in the new file is called durable.
func (s *Spool) createSegment(num uint32) (*segment, error) {
	path := s.segPath(num)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	if _, err := f.WriteAt(appendSegHeader(nil, num), 0); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("create segment %s: %w", path, err)
	}
	s.bytes.Add(segHeaderSize)
	return &segment{num: num, path: path, f: f, written: segHeaderSize}, nil
}

// addSegmentLocked enters seg, which must be newer than all others, in the
// segment table.
func (s *Spool) addSegmentLocked(seg *segment) {
	s.segs[seg.num] = seg
	s.order = append(s.order, seg)
	if seg.f != nil {
		s.nopen++
	}
}

func (s *Spool) setFatalLocked(err error) {
	if s.fatal == nil {
		s.fatal = err
		s.log.Error("spool disabled until reopened", "err", err)
	}
}

func (s *Spool) setFatal(err error) {
	s.mu.Lock()
	s.setFatalLocked(err)
	s.mu.Unlock()
}

func (s *Spool) fatalErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

// Sync is the group commit: when it returns nil, every Put and Reject that
// returned before Sync was called is durable, and the caller may acknowledge
// those articles (239/235). Concurrent callers share one fdatasync: a Sync
// that finds its Puts already covered by another returns at once.
//
// If it fails (disk full: the error wraps syscall.ENOSPC), nothing is lost:
// the records stay buffered, their ids stay Pending, and a later Sync writes
// them when space returns. Do not acknowledge until a Sync succeeds. If an
// fsync itself fails, the spool refuses all writes until it is reopened,
// because after a failed fsync the kernel may have dropped the data.
func (s *Spool) Sync() error {
	target := s.seq.Load()
	// Leader and followers: one caller (the leader) syncs while the others
	// wait; when it is done they are all woken at once, and those it covered
	// return. Queueing on a plain mutex instead would wake them one by one,
	// each finding little new to sync: a convoy of small fdatasyncs.
	s.cmu.Lock()
	defer s.cmu.Unlock()
	for s.durable.Load() < target {
		if s.syncing {
			s.cwake.Wait()
			continue
		}
		s.syncing = true
		s.cmu.Unlock()
		s.syncMu.Lock()
		err := s.syncLocked(false)
		s.syncMu.Unlock()
		s.cmu.Lock()
		s.syncing = false
		s.cwake.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

// syncLocked does the work of Sync; syncMu is held. With ckpt, it also
// writes a checkpoint to the history log.
func (s *Spool) syncLocked(ckpt bool) error {
	// Step 1 (Put waits, briefly): hand the buffered records to the kernel
	// and collect what must be fsynced. A Sync's round may write zeros
	// ahead of the records for the rounds after it (preWriteLocked); a
	// checkpoint (Close, history expiry) does not.
	preWrite := !ckpt
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.fatal != nil {
		s.mu.Unlock()
		return s.fatal
	}
	if err := s.flushLocked(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("spool: sync: %w", err)
	}
	seq := s.seq.Load()
	files := s.dirty
	s.dirty = nil
	act := s.active
	actEnd := act.written
	if preWrite {
		s.preWriteLocked(act, actEnd-max(act.synced, segHeaderSize))
	}
	newest := act.newest
	dirSync := s.dirSync
	s.dirSync = false
	ckpt = ckpt || s.needCkpt
	s.needCkpt = false
	hrecs := s.hpend
	s.hpend, s.hspare = s.hspare[:0], nil
	s.rmu.Lock()
	act.refs++ // Expire must not close it under our fsync
	s.rmu.Unlock()
	s.mu.Unlock()

	// Step 2 (Put runs on): the articles become durable. Sealed segments
	// first, then the active one, then the directory if a segment was created.
	var err error
	for _, seg := range files {
		if err == nil && seg.synced < seg.written {
			err = syncData(seg.f)
		}
		if err == nil {
			seg.synced = seg.written
		}
		s.release(seg)
	}
	if err == nil && act.synced < actEnd {
		if err = syncData(act.f); err == nil {
			act.synced = actEnd
		}
	}
	s.release(act)
	if err == nil && dirSync {
		err = SyncDir(s.segDir)
	}
	if err != nil {
		s.setFatal(fmt.Errorf("spool: sync: %w", err))
		return s.fatalErr()
	}
	s.durable.Store(seq)
	s.durEnd = Position{Seg: act.num, Off: actEnd}

	// Step 3: their history records go to the log. No fsync is needed here:
	// a crash that loses them loses nothing, because open rebuilds the
	// history from the spool after the last checkpoint. Sealing a segment
	// (or Close, or history expiry) writes a checkpoint and fsyncs the log,
	// which bounds that rebuild to about one segment.
	s.hwait = append(s.hwait, hrecs...)
	s.hspare = hrecs
	if ckpt {
		end := Position{Seg: act.num, Off: actEnd}
		s.hwait = appendCheckpoint(s.hwait, end, newest)
		if err := s.writeHistoryLocked(); err != nil {
			s.log.Warn("history write failed; will retry", "err", err)
			s.mu.Lock()
			s.needCkpt = true
			s.mu.Unlock()
			return nil
		}
		if err := syncData(s.hfile); err != nil {
			s.setFatal(fmt.Errorf("spool: sync history: %w", err))
			return s.fatalErr()
		}
		s.ckpt, s.ckptNewest = end, newest
		s.ckptSeg.Store(end.Seg)
		return nil
	}
	if err := s.writeHistoryLocked(); err != nil {
		s.log.Warn("history write failed; will retry", "err", err)
	}
	return nil
}

// writeHistoryLocked appends s.hwait to the history log, all or nothing.
func (s *Spool) writeHistoryLocked() error {
	if len(s.hwait) == 0 {
		return nil
	}
	// A torn tail of the log kept for lack of space must go (to
	// quarantine) before anything is appended over it.
	if err := s.finishCuts(); err != nil {
		return fmt.Errorf("history: write: %w", err)
	}
	n, err := s.hfile.WriteAt(s.hwait, s.hoff)
	if err != nil {
		if n > 0 {
			if terr := s.hfile.Truncate(s.hoff); terr != nil {
				s.setFatal(fmt.Errorf("history: cut partial write: %w", terr))
			}
		}
		return fmt.Errorf("history: write: %w", err)
	}
	at := s.hoff
	s.hoff += int64(n)
	// The index learns where the records are (and may grow, rebuilt from
	// the log); a failure to read the log for that leaves the history
	// short of entries, so nothing more is taken.
	err = s.hist.logged(s.hwait, at)
	s.hwait = s.hwait[:0]
	if err != nil {
		s.setFatal(err)
		return s.fatalErr()
	}
	return nil
}

// End returns the durable end of the spool: the position after the last
// record made durable by Sync. Scan from an earlier End to see what arrived
// since.
func (s *Spool) End() Position {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.durEnd
}

// PutEnd returns the position after the last record taken by Put or
// Reject, durable or not: once a Sync that starts after it succeeds, every
// record before it is durable.
func (s *Spool) PutEnd() Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Position{Seg: s.active.num, Off: s.active.written + int64(len(s.buf))}
}

// Close syncs, writes a checkpoint, and closes every file. Sections still
// open become unusable. Close is not a substitute for checking Sync's
// result: its error means the last Puts may not be durable.
func (s *Spool) Close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.mu.Unlock()
	err := s.syncLocked(true)
	s.mu.Lock()
	if err == nil {
		err = s.closeActiveLocked()
	}
	s.closed = true
	s.mu.Unlock()
	s.closeFiles()
	if err != nil {
		return fmt.Errorf("spool: close %s: %w", s.dir, err)
	}
	return nil
}

// closeFiles closes every descriptor and the lock.
func (s *Spool) closeFiles() {
	s.rmu.Lock()
	for _, seg := range s.order {
		if seg.f != nil {
			seg.f.Close()
			seg.f = nil
		}
	}
	s.nopen = 0
	s.rmu.Unlock()
	if s.hfile != nil {
		s.hfile.Close()
	}
	if s.lock != nil {
		s.lock.Close()
	}
}
