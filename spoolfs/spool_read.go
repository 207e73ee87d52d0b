package spoolfs

// Reading the spool: segments open on demand with a reference each, a
// bounded set of descriptors kept, and every article checked against its
// record's CRC before it is handed out, whether copied or sent from the
// file.

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
)

// acquire returns segment num with an open descriptor and a reference that
// the caller must release.
func (s *Spool) acquire(num uint32) (*segment, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	seg := s.segs[num]
	if seg == nil {
		if len(s.order) > 0 && num < s.order[0].num {
			return nil, ErrExpired
		}
		return nil, ErrNotFound
	}
	if seg.f == nil {
		f, err := os.Open(seg.path)
		if err != nil {
			return nil, fmt.Errorf("spool: open segment: %w", err)
		}
		seg.f = f
		s.nopen++
	}
	seg.refs++ // before evicting, so that seg itself is not idle
	s.clock++
	seg.lastUse = s.clock
	s.evictLocked()
	return seg, nil
}

// release drops a reference taken by acquire.
func (s *Spool) release(seg *segment) {
	s.rmu.Lock()
	seg.refs--
	if seg.refs == 0 && seg.gone && seg.f != nil {
		seg.f.Close()
		seg.f = nil
		s.nopen--
	}
	s.rmu.Unlock()
}

// evictLocked closes the least recently used idle descriptors while more
// than MaxOpenSegments are open.
func (s *Spool) evictLocked() {
	for s.nopen > s.opts.MaxOpenSegments {
		var lru *segment
		for _, seg := range s.order {
			if seg.f != nil && seg.refs == 0 && (lru == nil || seg.lastUse < lru.lastUse) {
				lru = seg
			}
		}
		if lru == nil {
			return
		}
		lru.f.Close()
		lru.f = nil
		s.nopen--
	}
}

// Get returns a copy of the wire article at tok, after checking its record
// header and CRC. Errors wrap ErrExpired, ErrNotFound or ErrCorrupt.
func (s *Spool) Get(tok Token) ([]byte, error) { return s.AppendArticle(nil, tok) }

// AppendArticle is Get appending to dst, for callers that reuse buffers.
func (s *Spool) AppendArticle(dst []byte, tok Token) ([]byte, error) {
	if tok.Seg == 0 || tok.Off < segHeaderSize+recHeaderSize || tok.Len == 0 {
		return dst, fmt.Errorf("spool: get %s: %w", tok, ErrNotFound)
	}
	recOff := int64(tok.Off) - recHeaderSize
	need := recHeaderSize + int(tok.Len)
	if tok.Seg == s.activeNum.Load() {
		// Not yet written: serve it from the append buffer.
		s.mu.Lock()
		if a := s.active; a.num == tok.Seg && recOff >= a.written {
			i := recOff - a.written
			var err error
			if i+int64(need) > int64(len(s.buf)) {
				err = fmt.Errorf("spool: get %s: %w", tok, ErrNotFound)
			} else {
				dst, err = s.checkArticle(dst, s.buf[i:i+int64(need)], tok, a.path)
			}
			s.mu.Unlock()
			return dst, err
		} else if a.num == tok.Seg && recOff+int64(need) > a.written {
			// Past the records: the file may go on with zeros written ahead.
			s.mu.Unlock()
			return dst, fmt.Errorf("spool: get %s: %w", tok, ErrNotFound)
		}
		s.mu.Unlock()
	}
	seg, err := s.acquire(tok.Seg)
	if err != nil {
		return dst, fmt.Errorf("spool: get %s: %w", tok, err)
	}
	start := len(dst)
	// The article is read straight into its place in dst and checked
	// there: no zeroing of the room first, no second copy. Its header goes
	// to hb, read with it by one pread where dst has recHeaderSize bytes
	// before start to lend (put back after), by a pread of its own
	// otherwise.
	dst = slices.Grow(dst, int(tok.Len))[:start+int(tok.Len)]
	var hb [recHeaderSize]byte
	var n int
	if start >= recHeaderSize {
		lent := dst[start-recHeaderSize : start]
		saved := [recHeaderSize]byte(lent)
		n, err = seg.f.ReadAt(dst[start-recHeaderSize:], recOff)
		hb = [recHeaderSize]byte(lent)
		copy(lent, saved[:])
	} else if n, err = seg.f.ReadAt(hb[:], recOff); n == recHeaderSize {
		var m int
		m, err = seg.f.ReadAt(dst[start:], int64(tok.Off))
		n += m
	}
	path := seg.path
	s.release(seg)
	if n < need {
		if err == nil || err == io.EOF {
			err = ErrNotFound
		}
		return dst[:start], fmt.Errorf("spool: get %s: %w", tok, err)
	}
	if err := s.checkRecord(hb[:], dst[start:], tok, path); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// checkArticle verifies the record rec (header and article) against tok and
// appends the article to dst; rec may overlap the tail of dst's array.
func (s *Spool) checkArticle(dst, rec []byte, tok Token, path string) ([]byte, error) {
	if err := s.checkRecord(rec[:recHeaderSize], rec[recHeaderSize:], tok, path); err != nil {
		return dst, err
	}
	return append(dst, rec[recHeaderSize:]...), nil
}

// checkRecord verifies a record's header hdr and its article against tok.
func (s *Spool) checkRecord(hdr, article []byte, tok Token, path string) error {
	h, ok := parseRecordHeader(hdr)
	switch {
	case !ok:
		s.log.Error("corrupt record header", "segment", path, "token", tok.String())
		return fmt.Errorf("spool: get %s: %w: bad header", tok, ErrCorrupt)
	case h.kind != kindArticle || h.n != tok.Len:
		return fmt.Errorf("spool: get %s: %w: token does not match the record", tok, ErrNotFound)
	case crc32c(article) != h.crcP:
		s.log.Error("corrupt article", "segment", path, "token", tok.String())
		return fmt.Errorf("spool: get %s: %w: CRC mismatch", tok, ErrCorrupt)
	}
	return nil
}

// A Section is an open view of one stored article for zero-copy sending
// (sendfile(2) from File at Offset for Length bytes). File is shared: read it
// only at explicit offsets (ReadAt, pread, sendfile with an offset), never
// through its file position. Close the Section when done; until then the
// file stays readable even if Expire removes its segment.
type Section struct {
	File   *os.File
	Offset int64
	Length int64

	s    *Spool
	seg  *segment
	once sync.Once
}

// Reader returns an io.SectionReader over the article.
func (x *Section) Reader() *io.SectionReader { return io.NewSectionReader(x.File, x.Offset, x.Length) }

// Close releases the section.
func (x *Section) Close() error {
	x.once.Do(func() { x.s.release(x.seg) })
	return nil
}

// Section returns the article at tok as a file range, checking its record
// header (not its CRC, which would mean reading it: use Get for that). An
// article still in the append buffer is written to the file first.
func (s *Spool) Section(tok Token) (*Section, error) {
	sec, _, err := s.section(tok)
	return sec, err
}

// section is Section, also returning the record's header.
func (s *Spool) section(tok Token) (*Section, recordHeader, error) {
	var none recordHeader
	if tok.Seg == 0 || tok.Off < segHeaderSize+recHeaderSize || tok.Len == 0 {
		return nil, none, fmt.Errorf("spool: section %s: %w", tok, ErrNotFound)
	}
	recOff := int64(tok.Off) - recHeaderSize
	if tok.Seg == s.activeNum.Load() {
		s.mu.Lock()
		var err error
		if a := s.active; a.num == tok.Seg {
			if recOff >= a.written {
				err = s.flushLocked()
			}
			if err == nil && int64(tok.Off)+int64(tok.Len) > a.written {
				// Past the records: the file may go on with zeros written ahead.
				err = ErrNotFound
			}
		}
		s.mu.Unlock()
		if err != nil {
			return nil, none, fmt.Errorf("spool: section %s: %w", tok, err)
		}
	}
	seg, err := s.acquire(tok.Seg)
	if err != nil {
		return nil, none, fmt.Errorf("spool: section %s: %w", tok, err)
	}
	var hb [recHeaderSize]byte
	if _, err := seg.f.ReadAt(hb[:], recOff); err != nil {
		s.release(seg)
		if err == io.EOF {
			err = ErrNotFound
		}
		return nil, none, fmt.Errorf("spool: section %s: %w", tok, err)
	}
	h, ok := parseRecordHeader(hb[:])
	if !ok {
		s.release(seg)
		s.log.Error("corrupt record header", "segment", seg.path, "token", tok.String())
		return nil, none, fmt.Errorf("spool: section %s: %w: bad header", tok, ErrCorrupt)
	}
	if h.kind != kindArticle || h.n != tok.Len {
		s.release(seg)
		return nil, none, fmt.Errorf("spool: section %s: %w: token does not match the record", tok, ErrNotFound)
	}
	return &Section{File: seg.f, Offset: int64(tok.Off), Length: int64(tok.Len), s: s, seg: seg}, h, nil
}
