package spoolfs

import (
	"fmt"
	"io"
)

// A ReadAhead reads stored articles for a sender that asks for them in
// about the order they were stored, as a peer's queue hands out its
// backlog: one pread fills a window from the first article asked for, and
// the articles after it that lie in the window come from memory. Profiling
// newsfeed on 2 KB articles showed a pread per article as the largest cost
// left once the sends were gathered.
//
// Every article is checked as AppendArticle checks it (record header and
// CRC). Only bytes already written to the segment file are read ahead (a
// sealed segment, or the active one up to what Put has written); an
// article still in Put's buffer, or one larger than the window, goes
// through AppendArticle. A ReadAhead is not safe for concurrent use: give
// each sending connection its own.
type ReadAhead struct {
	s    *Spool
	size int
	seg  uint32 // segment of the window; 0 when there is none
	off  int64  // file offset of buf[0]
	buf  []byte
	path string

	bseg uint32 // Bound's segment; 0 when there is no bound
	bend int64  // Bound's end offset
}

// NewReadAhead returns a ReadAhead with a window of size bytes (256 KiB
// when size <= 0).
func (s *Spool) NewReadAhead(size int) *ReadAhead {
	if size <= 0 {
		size = 256 << 10
	}
	return &ReadAhead{s: s, size: size}
}

// Bound says that the articles asked for next lie in segment seg and end
// at or before file offset end: a window filled in seg for an article
// ending there or before reads no further than end (a window of fixed size
// reads the articles stored after them too, which a sender whose next
// articles lie elsewhere never asks for). It holds until the next Bound;
// it changes what is read ahead, never what AppendArticle returns.
func (r *ReadAhead) Bound(seg uint32, end int64) {
	r.bseg, r.bend = seg, end
}

// AppendArticle is Spool.AppendArticle through the window.
func (r *ReadAhead) AppendArticle(dst []byte, tok Token) ([]byte, error) {
	s := r.s
	if tok.Seg == 0 || tok.Off < segHeaderSize+recHeaderSize || tok.Len == 0 {
		return s.AppendArticle(dst, tok) // which says what is wrong
	}
	recOff := int64(tok.Off) - recHeaderSize
	need := recHeaderSize + int(tok.Len)
	if need > r.size {
		return s.AppendArticle(dst, tok)
	}
	if r.seg == tok.Seg && recOff >= r.off && recOff+int64(need) <= r.off+int64(len(r.buf)) {
		i := recOff - r.off
		return s.checkArticle(dst, r.buf[i:i+int64(need)], tok, r.path)
	}
	// Fill the window from this record on: as far as the segment is
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
	if r.bseg == tok.Seg && recOff+int64(need) <= r.bend {
		n = int(min(int64(n), r.bend-recOff))
	}
	if limit >= 0 {
		n = int(min(int64(n), limit-recOff))
	}
	if cap(r.buf) < r.size {
		r.buf = make([]byte, r.size)
	}
	m, err := seg.f.ReadAt(r.buf[:n], recOff)
	r.path = seg.path
	s.release(seg)
	r.buf = r.buf[:m]
	r.seg, r.off = tok.Seg, recOff
	if m < need {
		r.seg = 0
		if err == nil || err == io.EOF {
			err = ErrNotFound
		}
		return dst, fmt.Errorf("spool: get %s: %w", tok, err)
	}
	return s.checkArticle(dst, r.buf[:need], tok, r.path)
}
