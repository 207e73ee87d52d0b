package proto

// Theory of operation
//
// YencDecoder turns the raw bytes of an NNTP multi-line body (what follows a
// "222" status line, exactly as read from the socket) into the binary data of
// one yEnc part, in one pass. The pass does four jobs at once:
//
//  1. NNTP framing (RFC 3977 §3.1.1): a line that starts with "." has that dot
//     removed (dot-stuffing), and the line "." ends the body. The decoder
//     reports how many bytes the body used, so a pipelined response that
//     follows in the same buffer is not lost.
//  2. yEnc control lines: a line that starts with "=y" after unstuffing is
//     =ybegin, =ypart or =yend (other "=y" lines are ignored). Lines before
//     =ybegin and after =yend are skipped.
//  3. yEnc data (yEnc 1.3 "Encoding Principle"): every byte is the original
//     plus 42; "=" escapes the next byte, which is the original plus 106.
//     CR and LF carry no data.
//  4. CRC-32 (IEEE) of the decoded bytes, computed in chunks as they are
//     written (hash/crc32 uses carry-less multiply instructions).
//
// Input may be split anywhere: inside an escape, a CRLF, a control line or
// the terminator. The state kept between calls is the line state (st), the
// phase of the part (phase), a pending escape (esc) and a partly read control
// line (line). Nothing is allocated per line.
//
// Tolerated sloppiness, all defined here so the fast path and the reference
// agree: CR anywhere in a data line is ignored; a bare LF ends a line; a
// line starting with a single "." (not doubled) loses the dot; "=" before the
// end of a line escapes the first data byte of the next line (encoders that
// split an escape pair across lines); "==" decodes the second "=" as the
// escaped byte; =ypart may be missing in a single-part post; crc values may be
// in either case, with or without 0x; extra spaces between parameters are
// fine.
//
// Safety: decoded bytes are only ever written to dst[len(dst):cap(dst)], and
// never more than the part declares (=ypart end-begin+1, or size= for a
// single part). A part with more data fails with ErrYencOverflow instead of
// writing past its range, so a caller may hand the decoder exactly the
// part's region of the output file.
//
// The hot loop (data bytes between line ends) has a SIMD kernel on amd64
// (yenc_amd64.s); everything else, and every block the kernel declines, runs
// the scalar code below.

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/bits"
)

// Kernels for the data-line loop; yencBestKernel is the fastest this CPU
// runs.
const (
	kernAuto   uint8 = iota // the zero value: use yencBestKernel
	kernScalar              // pure Go only
	kernAVX2                // amd64 AVX2 (yenc_amd64.s)
	kernAVX512              // amd64 AVX-512 BW+VBMI2 (yenc_amd64.s)
)

// Line states of the decoder.
const (
	ysLineStart uint8 = iota // at the start of a wire line
	ysDot                    // after "." at the start of a wire line
	ysDotCR                  // after ".\r" at the start of a wire line
	ysLogical                // at the start of the line's content (after unstuffing)
	ysEq                     // after "=" at the start of the content: a control line if "y" follows
	ysCtrl                   // reading a "=y" control line into line
	ysSkip                   // skipping the rest of a line
	ysHeadBlank              // after =ybegin, in a line that so far holds only CRs
	ysData                   // in a data line
)

// Phases of the part.
const (
	phBefore uint8 = iota // no =ybegin yet
	phHeader              // after =ybegin: =ypart, data or =yend may follow
	phData                // in the data
	phAfter               // after =yend (or after an error): skipping to the terminator
)

// yencWindow is how much input Feed decodes before it brings the CRC up to
// date, so that the CRC reads the output while it is still in cache.
const yencWindow = 32 << 10

// A YencDecoder decodes one yEnc part from a raw NNTP body, fused with
// dot-unstuffing, terminator detection and CRC-32. The zero value is ready to
// use; Reset prepares it for the next body.
type YencDecoder struct {
	part    YencPart
	st      uint8
	phase   uint8
	esc     bool  // an "=" escape waits for its byte
	done    bool  // the terminator has been consumed
	err     error // the first decoding error; the decoder then skips to the terminator
	kern    uint8 // tests and benchmarks: force a kernel (kernAuto: the best one here)
	nocrc   bool  // benchmarks: skip the CRC, to measure decoding alone
	lineLen int
	line    [MaxYencControlLine]byte
}

// Reset prepares the decoder for a new body.
func (d *YencDecoder) Reset() {
	d.part = YencPart{}
	d.st, d.phase, d.esc, d.done, d.err, d.lineLen = ysLineStart, phBefore, false, false, nil, 0
}

// Done reports whether the body's terminating "." line has been consumed.
func (d *YencDecoder) Done() bool { return d.done }

// Part returns what is known of the part so far: header and trailer fields,
// bytes decoded and their CRC.
func (d *YencDecoder) Part() YencPart { return d.part }

// Err returns the decoding error Feed reported, if any.
func (d *YencDecoder) Err() error { return d.err }

// Verify checks the finished part: it returns the decoding error if Feed
// reported one, and otherwise checks that =ybegin and =yend were seen, that
// the decoded size matches the header and trailer, and that the CRC-32
// matches pcrc32= (or crc32= for a single-part post). Call it after Done.
func (d *YencDecoder) Verify() error {
	if d.err != nil {
		return d.err
	}
	return d.part.verify()
}

// Feed decodes the body bytes in src and appends the decoded data to dst,
// never beyond cap(dst): it does not grow dst. It returns the extended dst and
// how many bytes of src it consumed. consumed < len(src) with a nil error
// means either the body ended (Done is true; the rest of src follows the
// body) or dst is full (call again with room, from src[consumed:]).
//
// dst may be src[:0]: decoding in place is safe, output never overtakes input.
//
// A malformed header or data beyond the declared size returns an error once;
// the decoder then discards input up to the terminator, so a caller that
// wants to keep the connection can go on feeding until Done. Verify returns
// the error again.
func (d *YencDecoder) Feed(dst, src []byte) (out []byte, consumed int, err error) {
	buf := dst[:cap(dst)]
	o, i := len(dst), 0
	for i < len(src) && !d.done {
		end := len(src)
		if end-i > yencWindow {
			end = i + yencWindow
		}
		o0 := o
		var stop bool
		o, i, stop, err = d.feed(buf, o, src[:end], i)
		if o > o0 && !d.nocrc {
			d.part.CRC = crc32.Update(d.part.CRC, crc32.IEEETable, buf[o0:o])
		}
		if err != nil || stop {
			break
		}
	}
	return buf[:o], i, err
}

// fail records err, switches to skipping and returns it.
func (d *YencDecoder) fail(err error) error {
	d.err = err
	d.phase = phAfter
	if d.st != ysLineStart && d.st != ysDot && d.st != ysDotCR {
		d.st = ysSkip
	}
	return err
}

// contentState is the state for line content that does not start with "=":
// which depends on the phase.
func (d *YencDecoder) contentState() uint8 {
	switch d.phase {
	case phHeader:
		return ysHeadBlank
	case phData:
		return ysData
	}
	return ysSkip
}

// startData ends the header: data (or =yend) follows =ybegin/=ypart.
func (d *YencDecoder) startData() error {
	if err := d.part.headerDone(); err != nil {
		return err
	}
	d.phase = phData
	d.esc = false
	return nil
}

// feed runs the state machine over src[i:] writing to buf[o:]. stop reports
// that Feed must return now: the body ended or buf is full.
func (d *YencDecoder) feed(buf []byte, o int, src []byte, i int) (int, int, bool, error) {
	for i < len(src) {
		switch d.st {
		case ysLineStart:
			if src[i] == '.' {
				d.st = ysDot
				i++
				continue
			}
			d.st = ysLogical

		case ysDot:
			switch src[i] {
			case '\r':
				d.st = ysDotCR
				i++
			case '\n':
				d.done = true
				return o, i + 1, true, nil
			default:
				d.st = ysLogical // the dot was stuffing (or a sloppy single dot)
			}

		case ysDotCR:
			if src[i] == '\n' {
				d.done = true
				return o, i + 1, true, nil
			}
			// ".\r" then more: stuffed content that begins with CR. A CR
			// never yields data, so continue as in a line's content; the
			// current byte is not at the start of the content.
			d.st = d.contentState()

		case ysLogical:
			if d.phase == phAfter {
				d.st = ysSkip
				continue
			}
			if src[i] == '=' {
				d.st = ysEq
				i++
				continue
			}
			d.st = d.contentState()

		case ysEq:
			if src[i] == 'y' {
				d.line[0], d.line[1], d.lineLen = '=', 'y', 2
				d.st = ysCtrl
				i++
				continue
			}
			if d.phase == phBefore {
				d.st = ysSkip
				continue
			}
			if d.phase == phHeader {
				if err := d.startData(); err != nil {
					return o, i, true, d.fail(err)
				}
			}
			// The "=" starts a data line: an escape, or the escaped byte
			// of an escape left pending at the end of the previous line.
			if !d.esc {
				d.esc = true
				d.st = ysData
				continue
			}
			if d.part.Decoded == d.part.PartSize() {
				return o, i, true, d.fail(d.overflow())
			}
			if o == len(buf) {
				return o, i, true, nil
			}
			buf[o] = '=' + 256 - 106
			o++
			d.part.Decoded++
			d.esc = false
			d.st = ysData

		case ysCtrl:
			rest := src[i:]
			j := bytes.IndexByte(rest, '\n')
			if j >= 0 {
				rest = rest[:j]
			}
			if d.lineLen+len(rest) > MaxYencControlLine {
				n := copy(d.line[d.lineLen:], rest)
				d.lineLen += n
				kw, _ := yencKeyword(d.line[:d.lineLen])
				switch string(kw) {
				case "begin", "part", "end":
					return o, i + n, true, d.fail(yencErrorf(ErrYencHeader, "yenc: =y%s line longer than %d octets", kw, MaxYencControlLine))
				}
				d.st = ysSkip
				i += n
				continue
			}
			d.lineLen += copy(d.line[d.lineLen:], rest)
			if j < 0 {
				i = len(src)
				continue
			}
			i += j + 1
			d.st = ysLineStart
			if err := d.control(); err != nil {
				return o, i, true, d.fail(err)
			}

		case ysSkip:
			j := bytes.IndexByte(src[i:], '\n')
			if j < 0 {
				i = len(src)
				continue
			}
			i += j + 1
			d.st = ysLineStart

		case ysHeadBlank:
			switch src[i] {
			case '\r':
				i++
			case '\n':
				i++
				d.st = ysLineStart
			default:
				if err := d.startData(); err != nil {
					return o, i, true, d.fail(err)
				}
				d.st = ysData
			}

		case ysData:
			size := d.part.PartSize()
			left := size - d.part.Decoded
			lim := len(buf)
			if int64(lim-o) > left {
				lim = o + int(left)
			}
			o1 := o
			var full, lineEnd bool
			kern := d.kern
			if kern == kernAuto {
				kern = yencBestKernel
			}
			for {
				if kern != kernScalar && len(src)-i >= 64 && lim > o {
					n, w, esc, ls := yencKernel(kern, buf[o:lim], src[i:], d.esc)
					i, o, d.esc = i+n, o+w, esc
					if ls {
						lineEnd = true
						break
					}
				}
				end := len(src)
				if kern != kernScalar && end-i > 128 {
					end = i + 128
				}
				o, i, d.esc, lineEnd, full = yencDataScalar(buf, o, lim, src, i, end, d.esc)
				if lineEnd || full || i == len(src) {
					break
				}
			}
			d.part.Decoded += int64(o - o1)
			if lineEnd {
				d.st = ysLineStart
			}
			if full {
				if d.part.Decoded == size {
					return o, i, true, d.fail(d.overflow())
				}
				return o, i, true, nil
			}
		}
	}
	return o, i, false, nil
}

func (d *YencDecoder) overflow() error {
	return yencErrorf(ErrYencOverflow, "yenc: part %d: more data than the declared %d bytes", d.part.number(), d.part.PartSize())
}

// control acts on the "=y" line in d.line.
func (d *YencDecoder) control() error {
	kw, params := yencKeyword(yencTrimRight(d.line[:d.lineLen]))
	if d.phase != phBefore {
		d.esc = false // a control line ends any escape left at a line end
	}
	switch string(kw) {
	case "begin":
		if d.phase != phBefore {
			return yencErrorf(ErrYencHeader, "yenc: part %d: =ybegin before =yend", d.part.number())
		}
		if err := d.part.parseBegin(params); err != nil {
			return err
		}
		d.phase = phHeader
	case "part":
		if d.phase != phHeader {
			return nil // a stray =ypart is ignored
		}
		if err := d.part.parsePart(params); err != nil {
			return err
		}
		d.phase = phData
	case "end":
		switch d.phase {
		case phBefore:
			return nil
		case phHeader:
			if err := d.startData(); err != nil {
				return err
			}
		}
		if err := d.part.parseEnd(params); err != nil {
			return err
		}
		d.phase = phAfter
	}
	return nil
}

// yencDataScalar decodes data-line bytes src[i:end] into buf[o:lim]. It
// returns after consuming a LF (lineEnd), at end, or when a byte must be
// written but o == lim (full; that byte is not consumed).
//
// Eight bytes at a time when none of them is "=", CR or LF (SWAR: the
// checks and the subtraction work on all bytes of a uint64 at once), byte
// by byte otherwise.
func yencDataScalar(buf []byte, o, lim int, src []byte, i, end int, esc bool) (int, int, bool, bool, bool) {
	buf = buf[:lim]
	src = src[:end]
	for i < len(src) {
		if !esc && i+8 <= len(src) && o+8 <= len(buf) {
			x := binary.LittleEndian.Uint64(src[i:])
			y := yencSWARSub42(x)
			m := yencSWARSpecial(x)
			if m == 0 {
				binary.LittleEndian.PutUint64(buf[o:], y)
				i += 8
				o += 8
				continue
			}
			// Only the bytes before the first special one are written:
			// writing all 8 could overwrite input not yet read when
			// decoding in place.
			k := bits.TrailingZeros64(m) >> 3
			for j := 0; j < k; j++ {
				buf[o+j] = byte(y >> (8 * j))
			}
			i += k
			o += k
		}
		c := src[i]
		if esc {
			switch c {
			case '\r':
				i++
				continue
			case '\n':
				return o, i + 1, esc, true, false
			}
			if o == len(buf) {
				return o, i, esc, false, true
			}
			buf[o] = c - 106
			o++
			i++
			esc = false
			continue
		}
		if yencSpecial[c] {
			i++
			switch c {
			case '=':
				esc = true
			case '\n':
				return o, i, esc, true, false
			}
			continue
		}
		if o == len(buf) {
			return o, i, esc, false, true
		}
		buf[o] = c - 42
		o++
		i++
	}
	return o, i, esc, false, false
}

// yencSpecial marks the bytes that do not decode to themselves minus 42 in
// a data line: the escape and the line ending bytes.
var yencSpecial = [256]bool{'=': true, '\r': true, '\n': true}

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// yencSWARSpecial returns a mask whose lowest set bit is the high bit of
// the first byte of x that is "=", CR or LF (0 if none). For each value,
// (v-1) & ^v has the high bit of a byte set where v's byte is zero; a
// borrow only leaves a zero byte, so bits above the first zero byte may be
// wrong but the lowest set bit is exact.
func yencSWARSpecial(x uint64) uint64 {
	zero := func(v uint64) uint64 { return (v - swarLo) & ^v & swarHi }
	return zero(x^(swarLo*'=')) | zero(x^(swarLo*'\r')) | zero(x^(swarLo*'\n'))
}

// yencSWARSub42 subtracts 42 from every byte of x, modulo 256 each. With
// the high bit of every byte set first, no byte borrows from its
// neighbour; the high bits are then corrected where x had them clear.
func yencSWARSub42(x uint64) uint64 {
	return ((x | swarHi) - swarLo*42) ^ (^x & swarHi)
}
