// Package records walks files of self-validating records (spoolfs's spool
// segments and history log, searchindex's body files): each record is used
// only when it checks out whole, a damaged stretch between good records is
// reported and skipped, and what no good record follows is a torn tail.
package records

import (
	"bytes"
	"fmt"
	"io"
)

// A Scanner walks the self-validating records of one file (a spool segment or
// the history log) through a sliding window, so memory stays bounded by the
// largest record, not the file. It is the only code that reads records it
// does not already trust, so it is where the rules for self-validating records
// and quarantine (spoolfs's package doc) are kept:
//
//   - a record is used only if every check passes (magic, header CRC, payload
//     CRC, end marker); anything else is not a record;
//   - invalid bytes followed by a valid record are a corrupt region: reported
//     (the caller quarantines a copy and logs), skipped, never reused;
//   - invalid bytes with no valid record after them are the torn tail of an
//     interrupted append: scan stops there and returns where it stopped.
type Scanner struct {
	r     io.ReaderAt
	size  int64                                 // bytes in the file
	magic []byte                                // every record starts with it
	parse func(b []byte) (n, need int, ok bool) // see NewScanner
	chunk int                                   // minimum read size

	buf    []byte
	bufOff int64 // file offset of buf[0]
}

// NewScanner returns a Scanner over size bytes of r whose records start
// with magic; parse says whether a record starts at the start of b:
// ok with its length n, or, when b is too short to tell, need (how many
// bytes it must see; 0 when b is invalid whatever follows).
func NewScanner(r io.ReaderAt, size int64, magic []byte, parse func(b []byte) (n, need int, ok bool)) *Scanner {
	return &Scanner{r: r, size: size, magic: magic, parse: parse, chunk: 1 << 20}
}

// UseBuffer makes sc read through buf (its capacity is the least read),
// for callers that keep the window off the Go heap or test small ones.
func (sc *Scanner) UseBuffer(buf []byte) {
	sc.buf, sc.chunk = buf[:0], max(1, cap(buf))
}

// window returns the bytes of the file from off on, at least need of them
// unless the file ends first. It rereads only when the buffer does not
// already hold them.
func (sc *Scanner) window(off int64, need int) ([]byte, error) {
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
func (sc *Scanner) recordAt(off int64) ([]byte, bool, error) {
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
func (sc *Scanner) resync(from int64) (int64, bool, error) {
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

// Scan calls rec for every valid record from start on, and bad for every
// corrupt region [off, off+n) that has a valid record after it. It returns
// the end of the last valid record (start if there is none): bytes from
// there to the end of the file are a torn tail. An error from rec stops the
// scan and is returned.
func (sc *Scanner) Scan(start int64, rec func(off int64, b []byte) error, bad func(off, n int64)) (int64, error) {
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
