package spoolfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// A scanner walks the self-validating records of one file (a spool segment or
// the history log) through a sliding window, so memory stays bounded by the
// largest record, not the file. It is the only code that reads records it
// does not already trust, so it is where STYLE §7.2 and §7.5 are kept:
//
//   - a record is used only if every check passes (magic, header CRC, payload
//     CRC, end marker); anything else is not a record;
//   - invalid bytes followed by a valid record are a corrupt region: reported
//     (the caller quarantines a copy and logs), skipped, never reused;
//   - invalid bytes with no valid record after them are the torn tail of an
//     interrupted append: scan stops there and returns where it stopped.
type scanner struct {
	r     io.ReaderAt
	size  int64                                 // bytes in the file
	magic []byte                                // every record starts with it
	parse func(b []byte) (n, need int, ok bool) // see parseRecord
	chunk int                                   // minimum read size

	buf    []byte
	bufOff int64 // file offset of buf[0]
}

// newScanner returns a scanner over size bytes of r.
func newScanner(r io.ReaderAt, size int64, magic []byte, parse func([]byte) (int, int, bool)) *scanner {
	return &scanner{r: r, size: size, magic: magic, parse: parse, chunk: 1 << 20}
}

// window returns the bytes of the file from off on, at least need of them
// unless the file ends first. It rereads only when the buffer does not
// already hold them.
func (sc *scanner) window(off int64, need int) ([]byte, error) {
	end := sc.bufOff + int64(len(sc.buf))
	if off >= sc.bufOff && off <= end && (off+int64(need) <= end || end == sc.size) {
		return sc.buf[off-sc.bufOff:], nil
	}
	want := max(need, sc.chunk)
	if rest := sc.size - off; int64(want) > rest {
		want = int(rest)
	}
	if cap(sc.buf) < want {
		sc.buf = make([]byte, want)
	}
	sc.buf = sc.buf[:want]
	n, err := sc.r.ReadAt(sc.buf, off)
	if n < want {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF // the file shrank under us
		}
		sc.buf, sc.bufOff = sc.buf[:0], off
		return nil, fmt.Errorf("read at %d: %w", off, err)
	}
	sc.bufOff = off
	return sc.buf, nil
}

// recordAt reports whether a valid record starts at off, and returns it.
func (sc *scanner) recordAt(off int64) ([]byte, bool, error) {
	b, err := sc.window(off, 0)
	if err != nil {
		return nil, false, err
	}
	for {
		n, need, ok := sc.parse(b)
		if ok {
			return b[:n], true, nil
		}
		if need <= len(b) || off+int64(need) > sc.size {
			return nil, false, nil // invalid, or longer than the file: torn
		}
		if b, err = sc.window(off, need); err != nil {
			return nil, false, err
		}
	}
}

// resync finds the first offset after from where a valid record starts, or
// returns found=false if none does before the end of the file.
func (sc *scanner) resync(from int64) (int64, bool, error) {
	q := from + 1
	for q+int64(len(sc.magic)) <= sc.size {
		b, err := sc.window(q, len(sc.magic))
		if err != nil {
			return 0, false, err
		}
		i := bytes.Index(b, sc.magic)
		if i < 0 {
			q += int64(len(b) - len(sc.magic) + 1)
			continue
		}
		c := q + int64(i)
		if _, ok, err := sc.recordAt(c); err != nil {
			return 0, false, err
		} else if ok {
			return c, true, nil
		}
		q = c + 1
	}
	return 0, false, nil
}

// scan calls rec for every valid record from start on, and bad for every
// corrupt region [off, off+n) that has a valid record after it. It returns
// the end of the last valid record (start if there is none): bytes from
// there to the end of the file are a torn tail. An error from rec stops the
// scan and is returned.
func (sc *scanner) scan(start int64, rec func(off int64, b []byte) error, bad func(off, n int64)) (int64, error) {
	end, p := start, start
	for p < sc.size {
		b, ok, err := sc.recordAt(p)
		if err != nil {
			return end, err
		}
		if !ok {
			next, found, err := sc.resync(p)
			if err != nil {
				return end, err
			}
			if !found {
				return end, nil
			}
			if bad != nil {
				bad(p, next-p)
			}
			p = next
			continue
		}
		if err := rec(p, b); err != nil {
			return end, err
		}
		p += int64(len(b))
		end = p
	}
	return end, nil
}

// Record is one stored article seen by Scan.
type Record struct {
	Token   Token
	MsgID   string
	Arrived time.Time
	Wire    []byte // the wire article; valid only during the callback
}

// Scan calls fn for every durable article from position from on (use the
// zero Position for the start of the spool), in the order they were stored,
// and returns the position after the last record it read: pass it to the
// next Scan to continue. A feeder that remembers such a position can hand
// every article that arrived since to its peers again after a crash.
// Corrupt regions are logged and skipped; an error from fn stops the scan.
func (s *Spool) Scan(from Position, fn func(Record) error) (Position, error) {
	end := s.End()
	s.rmu.Lock()
	var nums []uint32
	for _, seg := range s.order {
		if seg.num >= from.Seg && seg.num <= end.Seg {
			nums = append(nums, seg.num)
		}
	}
	s.rmu.Unlock()
	pos := from
	for _, num := range nums {
		seg, err := s.acquire(num)
		if errors.Is(err, ErrNotFound) {
			continue // expired meanwhile
		} else if err != nil {
			return pos, err
		}
		limit := seg.written // sealed before End was taken: fixed
		if num == end.Seg {
			limit = end.Off
		}
		start := int64(segHeaderSize)
		if num == from.Seg && from.Off > start {
			start = from.Off
		}
		if start > limit {
			start = limit
		}
		sc := newScanner(seg.f, limit, recMagic, parseRecord)
		stop, err := sc.scan(start, func(off int64, b []byte) error {
			r := viewRecord(off, b)
			if r.hdr.kind != kindArticle {
				return nil
			}
			return fn(Record{
				Token:   Token{Seg: num, Off: uint64(off) + recHeaderSize, Len: r.hdr.n},
				MsgID:   string(r.msgid),
				Arrived: time.Unix(0, r.hdr.arrived),
				Wire:    r.payload,
			})
		}, func(off, n int64) {
			s.log.Error("corrupt spool region skipped by scan", "segment", seg.path, "offset", off, "bytes", n)
		})
		s.release(seg)
		pos = Position{Seg: num, Off: stop}
		if err != nil {
			return pos, fmt.Errorf("spool: scan %s: %w", seg.path, err)
		}
		if stop < limit {
			s.log.Error("unreadable tail skipped by scan", "segment", seg.path, "offset", stop, "bytes", limit-stop)
			pos.Off = limit
		}
	}
	return pos, nil
}
