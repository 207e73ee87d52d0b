package spoolfs

import (
	"fmt"
	"io"
	"sync"
)

// A SharedReadAhead is a ReadAhead for many senders at once: the
// connections of every peer of a fan-out, which send the same articles at
// about the same time. A ReadAhead per connection read each 2 KB article
// once per peer (and, with a peer's connections taking turns through its
// queue, read each window several times); profiling newsfeed's 4-peer
// fan-out showed those preads, and the CRC of every copy, as about a sixth
// of its CPU time.
//
// The last few windows stay in memory. A window is filled once (one pread
// from the first article asked for, as far as the segment is written) and
// not written again while it is in memory or a sender copies from it, so
// senders copy from it without holding a lock.
// Every article is checked as AppendArticle checks it, record header and
// CRC, but the CRC of the bytes at one offset of one window only once: the
// bytes cannot change, so the verdict cannot either. The header, which says
// which article the bytes are, is checked on every copy.
//
// Only bytes already written to the segment file are read ahead (a sealed
// segment, or the active one up to what Put has written); an article still
// in Put's buffer, or one larger than the window, goes through
// AppendArticle. A SharedReadAhead is safe for concurrent use.
type SharedReadAhead struct {
	s     *Spool
	size  int
	count int

	mu   sync.Mutex
	wins []*sharedWindow // newest last; at most count
	free []*sharedWindow // evicted and no longer read: buffers to reuse
}

// sharedWindow is one window of a SharedReadAhead. seg, off, buf and path
// do not change while it is in use (refs > 0); refs and checked are
// guarded by the SharedReadAhead's mu. Windows are reused once evicted and
// no longer read, so that the windows read for a fan-out do not make
// garbage (on 2 KB articles to four peers, a new 256 KiB buffer per window
// more than doubled the collector's work and cost more than it saved).
type sharedWindow struct {
	seg     uint32
	off     int64 // file offset of buf[0]
	buf     []byte
	path    string
	refs    int                // copies in progress, plus one while in wins
	checked map[int32]struct{} // offsets in buf of records whose CRC passed
}

// NewSharedReadAhead returns a SharedReadAhead that keeps count windows of
// size bytes (256 KiB and 8 when not positive).
func (s *Spool) NewSharedReadAhead(size, count int) *SharedReadAhead {
	if size <= 0 {
		size = 256 << 10
	}
	if count <= 0 {
		count = 8
	}
	return &SharedReadAhead{s: s, size: size, count: count}
}

// AppendArticle is Spool.AppendArticle through the shared windows.
func (r *SharedReadAhead) AppendArticle(dst []byte, tok Token) ([]byte, error) {
	s := r.s
	if tok.Seg == 0 || tok.Off < segHeaderSize+recHeaderSize || tok.Len == 0 {
		return s.AppendArticle(dst, tok) // which says what is wrong
	}
	recOff := int64(tok.Off) - recHeaderSize
	need := recHeaderSize + int(tok.Len)
	if need > r.size {
		return s.AppendArticle(dst, tok)
	}
	if w, checked := r.find(tok.Seg, recOff, need); w != nil {
		return r.copyOut(dst, w, recOff, need, tok, checked)
	}
	// Fill a new window from this record on: as far as the segment is
	// written, which for the active segment is what Put flushed (the
	// file's bytes below written never change again).
	limit := int64(-1)
	if tok.Seg == s.activeNum.Load() {
		s.mu.Lock()
		if a := s.active; a.num == tok.Seg {
			limit = a.written
		}
		s.mu.Unlock()
		if limit >= 0 && recOff+int64(need) > limit {
			return s.AppendArticle(dst, tok) // still in Put's buffer
		}
	}
	seg, err := s.acquire(tok.Seg)
	if err != nil {
		return dst, fmt.Errorf("spool: get %s: %w", tok, err)
	}
	n := r.size
	if limit >= 0 {
		n = int(min(int64(n), limit-recOff))
	}
	w := r.spare()
	w.seg, w.off, w.path = tok.Seg, recOff, seg.path
	m, err := seg.f.ReadAt(w.buf[:n], recOff)
	s.release(seg)
	if m < need {
		r.mu.Lock()
		r.free = append(r.free, w)
		r.mu.Unlock()
		if err == nil || err == io.EOF {
			err = ErrNotFound
		}
		return dst, fmt.Errorf("spool: get %s: %w", tok, err)
	}
	w.buf = w.buf[:m]
	r.mu.Lock()
	if len(r.wins) == r.count {
		r.unrefLocked(r.wins[0])
		copy(r.wins, r.wins[1:])
		r.wins[len(r.wins)-1] = nil
		r.wins = r.wins[:len(r.wins)-1]
	}
	w.refs = 2 // wins, and this copy
	r.wins = append(r.wins, w)
	r.mu.Unlock()
	return r.copyOut(dst, w, recOff, need, tok, false)
}

// spare returns a window that nobody uses, with a buffer of r.size bytes.
func (r *SharedReadAhead) spare() *sharedWindow {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.free); n > 0 {
		w := r.free[n-1]
		r.free[n-1] = nil
		r.free = r.free[:n-1]
		w.buf = w.buf[:cap(w.buf)]
		clear(w.checked)
		return w
	}
	return &sharedWindow{buf: make([]byte, r.size), checked: make(map[int32]struct{})}
}

// unrefLocked drops a reference to w; the last one frees it for reuse.
// r.mu is held.
func (r *SharedReadAhead) unrefLocked(w *sharedWindow) {
	w.refs--
	if w.refs == 0 {
		r.free = append(r.free, w)
	}
}

// find returns the newest window that holds the need bytes at recOff of
// segment seg, with a reference for the caller (copyOut drops it), and
// whether the record there passed its CRC check before.
func (r *SharedReadAhead) find(seg uint32, recOff int64, need int) (*sharedWindow, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.wins) - 1; i >= 0; i-- {
		w := r.wins[i]
		if w.seg == seg && recOff >= w.off && recOff+int64(need) <= w.off+int64(len(w.buf)) {
			_, ok := w.checked[int32(recOff-w.off)]
			w.refs++
			return w, ok
		}
	}
	return nil, false
}

// copyOut checks the record at recOff of w as checkArticle does (its CRC
// only when no copy checked it before), appends its payload to dst, and
// drops the caller's reference to w.
func (r *SharedReadAhead) copyOut(dst []byte, w *sharedWindow, recOff int64, need int, tok Token, checked bool) ([]byte, error) {
	i := recOff - w.off
	rec := w.buf[i : i+int64(need)]
	var out []byte
	var err error
	h, ok := parseRecordHeader(rec)
	if checked && ok && h.kind == kindArticle && h.n == tok.Len {
		// The CRC passed for these very bytes: only the header's claim
		// that they are tok's article needed checking.
		out = append(dst, rec[recHeaderSize:]...)
	} else {
		out, err = r.s.checkArticle(dst, rec, tok, w.path)
	}
	r.mu.Lock()
	if err == nil && !checked {
		w.checked[int32(i)] = struct{}{}
	}
	r.unrefLocked(w)
	r.mu.Unlock()
	return out, err
}
