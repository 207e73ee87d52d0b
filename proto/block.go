package proto

// Multi-line blocks (RFC 3977 §3.1.1): the payload of ARTICLE, BODY, HEAD,
// OVER, LIST and friends, and what IHAVE/TAKETHIS/POST send, travels as lines
// with every line that begins with '.' given one more '.', and ends with a
// line holding only ".".
//
// Theory of operation. The decoder is a four-state machine (line start, in a
// line, after a leading '.', after a leading ".\r") but it only steps through
// the states for the one or two bytes after a leading dot. Everywhere else it
// looks for the next "\n." (the next line that begins with '.') and copies the
// whole run of lines before it with a single append (memmove). Lines that
// begin with '.' are rare in real articles, so the common case is one search
// and one memmove per call, not work per line. The search is AVX2 assembly on
// amd64 (64 positions a round) and a portable word-at-a-time loop elsewhere.
// Line lengths are checked a window of maxLine octets at a time: if the last
// LF in the window (bytes.LastIndexByte, which stops within a line of the
// window's end) is inside it, no line ending in it can be too long.
// A search per line with bytes.IndexByte was measured first: on ~100-octet
// lines its fixed cost per call held decoding to between a sixth and a tenth
// of copy speed; the "\n." search brings it within three times.
//
// Input may be split at any byte boundary: the state and the length of the
// current line carry over between calls, and no input is kept, so output
// streams and a block is never held whole.
//
// The encoder is the mirror image: the same search, one append per run of
// lines between lines that need a stuffing dot.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// DefaultMaxLine is the default longest line, in octets including the line
// ending, that a BlockDecoder accepts.
const DefaultMaxLine = 64 << 10

// Decoder states. Only blockAfterDot and blockAfterDotCR hold input whose meaning is not yet
// known ("." or ".\r" at the start of a line could still be the terminator).
const (
	blockAtStart    = iota // at the start of a line
	blockInLine            // inside a line; its leading dot, if any, is already dropped
	blockAfterDot          // after a '.' at the start of a line
	blockAfterDotCR        // after ".\r" at the start of a line
)

// A BlockDecoder undoes dot-stuffing of one multi-line block incrementally:
// input may be split at any byte boundary. Output keeps each line's ending
// bytes as received (CRLF, or a tolerated bare LF). The terminating ".\r\n"
// is consumed and not output.
//
// A line is every octet up to and including the next LF. Tolerances, kept
// from the first implementation because real servers and clients need them:
//   - a bare LF ends a line like CRLF does, and ".\n" terminates the block;
//   - a CR not followed by LF is ordinary line content (".\rx\r\n" is a line);
//   - a line that begins with '.' followed by anything but a second '.' or
//     the line ending is not valid stuffing; the dot is dropped all the same,
//     so ".x\r\n" decodes to "x\r\n" (INN and most readers do this too).
//
// A line longer than the limit, counting its leading dot and its line ending,
// is an error wrapping ErrLineTooLong. The error is sticky until Reset.
type BlockDecoder struct {
	maxLine int
	lineLen int   // octets of the current line consumed so far
	state   uint8 // blockAtStart ... blockAfterDotCR
	done    bool
	err     error
}

// NewBlockDecoder returns a decoder that refuses lines longer than maxLine
// octets (0 means DefaultMaxLine) with an error wrapping ErrLineTooLong.
func NewBlockDecoder(maxLine int) *BlockDecoder {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &BlockDecoder{maxLine: maxLine}
}

// Reset prepares the decoder for the next block.
func (d *BlockDecoder) Reset() { *d = BlockDecoder{maxLine: d.maxLine} }

// Done reports whether the terminator has been seen.
func (d *BlockDecoder) Done() bool { return d.done }

// Decode appends the payload decoded from src to dst. It returns the extended
// dst, how many bytes of src it consumed (all of them unless the block ended
// inside src: the rest belongs to what follows the block), and whether the
// terminator was seen.
//
// Output never lags input by more than a pending "." or ".\r" at the start
// of a line, which is emitted (or recognised as the terminator) when the next
// byte arrives. Decode appends at most len(src)+1 bytes to dst (the +1 is a
// CR held back from the previous call). Once done, Decode consumes nothing.
//
// On a line longer than the limit, Decode returns an error wrapping
// ErrLineTooLong. By then it has consumed the first maxLine octets of that
// line (n stops at the first octet past the limit) and output them decoded,
// except a "." or ".\r" that could still have been the terminator. It returns
// the same error, consuming nothing, until Reset.
func (d *BlockDecoder) Decode(dst, src []byte) (out []byte, n int, done bool, err error) {
	out, n, err = d.decode(dst, src, false)
	return out, n, d.done, err
}

// errBlockInPlacePending reports a DecodeInPlace call on a decoder that Decode left
// holding a partial dot line.
var errBlockInPlacePending = errors.New("nntp: block: DecodeInPlace after Decode left a partial dot line")

// DecodeInPlace is Decode for callers that own their buffer: it decodes buf
// into its own beginning, so buf[:m] is the payload decoded from buf[:n].
// Bytes from n on are untouched: after the terminator they are what follows
// the block. Unlike Decode it does not consume a "." or ".\r" at the start of
// a line at the end of buf (the only input whose output could outgrow it);
// the caller keeps buf[n:] and presents it again with more bytes after it.
// Do not mix Decode and DecodeInPlace on one block.
func (d *BlockDecoder) DecodeInPlace(buf []byte) (m, n int, done bool, err error) {
	if d.err == nil && (d.state == blockAfterDot || d.state == blockAfterDotCR) {
		return 0, 0, d.done, errBlockInPlacePending
	}
	out, n, err := d.decode(buf[:0], buf, true)
	return len(out), n, d.done, err
}

// tooLong records and returns the line-length error.
func (d *BlockDecoder) tooLong() error {
	d.err = errLine(d.maxLine)
	return d.err
}

// decode is the machine behind Decode and DecodeInPlace. In place, dst is
// buf[:0] and src is buf: every append writes at or before the read position,
// so it never reallocates and copy's memmove handles the overlap.
func (d *BlockDecoder) decode(dst, src []byte, inPlace bool) ([]byte, int, error) {
	if d.err != nil {
		return dst, 0, d.err
	}
	p := 0      // read position in src
	dotAt := -1 // in place: where the pending dot line started in src
	for p < len(src) && !d.done {
		switch d.state {
		case blockAtStart:
			if src[p] != '.' {
				d.state = blockInLine
				continue
			}
			// RFC 3977 §3.1.1: a leading '.' is stuffing, or the start of
			// the terminating line.
			if d.lineLen+1 > d.maxLine {
				return dst, p, d.tooLong()
			}
			dotAt = p
			d.lineLen++
			d.state = blockAfterDot
			p++
		case blockAfterDot:
			switch src[p] {
			case '\n': // ".\n": tolerated bare-LF terminator
				if d.lineLen+1 > d.maxLine {
					return dst, p, d.tooLong()
				}
				p++
				d.done, d.state, d.lineLen = true, blockAtStart, 0
			case '\r':
				if d.lineLen+1 > d.maxLine {
					return dst, p, d.tooLong()
				}
				p++
				d.lineLen++
				d.state = blockAfterDotCR
			default: // ".." -> "."; ".x" tolerated as "x": the dot is dropped
				d.state = blockInLine
			}
		case blockAfterDotCR:
			// Whatever comes, it is the third octet of the line: check the
			// limit before the held-back CR is emitted.
			if d.lineLen+1 > d.maxLine {
				return dst, p, d.tooLong()
			}
			if src[p] == '\n' { // ".\r\n": the terminator
				p++
				d.done, d.state, d.lineLen = true, blockAtStart, 0
				continue
			}
			// ".\r" then not LF: the CR is content of an ordinary line.
			dst = append(dst, '\r')
			d.state = blockInLine
		case blockInLine:
			var err error
			dst, p, err = d.run(dst, src, p)
			if err != nil {
				return dst, p, err
			}
		}
	}
	if inPlace && (d.state == blockAfterDot || d.state == blockAfterDotCR) {
		// Leave the partial dot line to the caller; it comes again whole.
		p, d.state, d.lineLen = dotAt, blockAtStart, 0
	}
	return dst, p, nil
}

// run copies the run of lines starting at src[p] (inside a line) up to the
// next line that begins with '.', or the end of src, checking every line's
// length on the way. It returns the read position after the run.
func (d *BlockDecoder) run(dst, src []byte, p int) ([]byte, int, error) {
	// The run ends after the LF of the next "\n." or at the end of src.
	e := len(src)
	if i := blockIndexNLDot(src[p:]); i >= 0 {
		e = p + i + 1
	}
	// Line lengths, a window at a time: the current line (lineLen octets
	// in) must end within room octets, and every later line that ends in
	// the same window is shorter than the window. One LastIndexByte per
	// window, not one search per line.
	q, lineLen := p, d.lineLen
	for e-q > d.maxLine-lineLen {
		room := d.maxLine - lineLen
		j := bytes.LastIndexByte(src[q:q+room], '\n')
		if j < 0 {
			cut := q + room
			return append(dst, src[p:cut]...), cut, d.tooLong()
		}
		q, lineLen = q+j+1, 0
	}
	// Read src before the append: in place, it overwrites src[:e].
	if src[e-1] == '\n' {
		d.state, d.lineLen = blockAtStart, 0
	} else {
		// Input ends inside a line: carry its length to the next call.
		if j := bytes.LastIndexByte(src[q:e], '\n'); j >= 0 {
			q, lineLen = q+j+1, 0
		}
		d.lineLen = lineLen + e - q
	}
	return append(dst, src[p:e]...), e, nil
}

// blockIndexNLDot returns the index of the first "\n." in s (a line that
// begins with '.'), or -1.
func blockIndexNLDot(s []byte) int {
	if !blockHaveAVX2 || len(s) <= 64 {
		return blockIndexNLDotSWAR(s)
	}
	blocks := (len(s) - 1) / 64
	if j := blockNLDotAVX2(s, blocks); j >= 0 {
		return j
	}
	if blocks*64 < len(s)-1 {
		// The last positions: one more round over the final 65 bytes,
		// overlapping positions already known to hold no pair.
		t := len(s) - 65
		if j := blockNLDotAVX2(s[t:], 1); j >= 0 {
			return t + j
		}
	}
	return -1
}

// blockIndexNLDotSWAR is the portable blockIndexNLDot: 32 positions a round,
// eight to a 64-bit word, the last round overlapping the one before it.
// Inputs shorter than a round are searched bytewise.
func blockIndexNLDotSWAR(s []byte) int {
	if len(s) < 33 {
		return blockIndexNLDotBytes(s, 0)
	}
	i := 0
	for ; i+33 <= len(s); i += 32 {
		if blockRoundSWAR(s[i : i+33]) {
			return blockIndexNLDotBytes(s[:i+33], i)
		}
	}
	if i < len(s)-1 && blockRoundSWAR(s[len(s)-33:]) {
		return blockIndexNLDotBytes(s, i)
	}
	return -1
}

// blockRoundSWAR reports whether t (33 bytes) holds "\n." at a position
// below 32. A byte of z = (x^nl)|(y^dot) is zero exactly where t has "\n."
// (x holds t[k:k+8], y holds t[k+1:k+9]), and (z-lo)&^z&hi is non-zero
// exactly when some byte of z is zero, so a round that reports true has a
// pair and the bytewise search of it finds one. (Mind Go's precedence: ^ and
// | bind alike, so the parentheses in z matter.)
func blockRoundSWAR(t []byte) bool {
	const lo = 0x0101010101010101
	const hi = 0x8080808080808080
	const nl, dot = lo * '\n', lo * '.'
	le := binary.LittleEndian
	t = t[:33]
	z0 := (le.Uint64(t[0:8]) ^ nl) | (le.Uint64(t[1:9]) ^ dot)
	z1 := (le.Uint64(t[8:16]) ^ nl) | (le.Uint64(t[9:17]) ^ dot)
	z2 := (le.Uint64(t[16:24]) ^ nl) | (le.Uint64(t[17:25]) ^ dot)
	z3 := (le.Uint64(t[24:32]) ^ nl) | (le.Uint64(t[25:33]) ^ dot)
	return ((z0-lo)&^z0|(z1-lo)&^z1|(z2-lo)&^z2|(z3-lo)&^z3)&hi != 0
}

// blockIndexNLDotBytes searches s for "\n." from index i, a byte at a time.
func blockIndexNLDotBytes(s []byte, i int) int {
	for ; i+1 < len(s); i++ {
		if s[i] == '\n' && s[i+1] == '.' {
			return i
		}
	}
	return -1
}

// A BlockEncoder dot-stuffs a payload incrementally; Close terminates it.
//
// Round trip: for any bytes x, however split across Append calls, decoding
// Close(Append(nil, x)) with a limit no smaller than its longest line yields
// x, followed by "\r\n" when x is non-empty and does not end in '\n', and
// consumes exactly the encoded bytes. Line endings are not rewritten: a bare
// LF in x goes out as a bare LF (converting to CRLF is the article wire-format
// layer's job).
type BlockEncoder struct {
	midLine bool // false at the start of a line
}

// Append appends p, dot-stuffed, to dst.
func (e *BlockEncoder) Append(dst, p []byte) []byte {
	if len(p) == 0 {
		return dst
	}
	// Room for p and a few stuffing dots; more grow by append as usual.
	dst = slices.Grow(dst, len(p)+8)
	if !e.midLine && p[0] == '.' {
		dst = append(dst, '.') // RFC 3977 §3.1.1: double a leading '.'
	}
	start := 0
	for {
		i := blockIndexNLDot(p[start:])
		if i < 0 {
			break
		}
		cut := start + i + 1
		dst = append(dst, p[start:cut]...)
		dst = append(dst, '.')
		start = cut
	}
	e.midLine = p[len(p)-1] != '\n'
	return append(dst, p[start:]...)
}

// Close appends a CRLF if the payload did not end a line, then the
// terminator ".\r\n", and resets the encoder.
func (e *BlockEncoder) Close(dst []byte) []byte {
	if e.midLine {
		dst = append(dst, '\r', '\n')
	}
	*e = BlockEncoder{}
	return append(dst, '.', '\r', '\n')
}

// AppendBlock appends payload as a complete dot-stuffed, terminated block.
func AppendBlock(dst, payload []byte) []byte {
	var e BlockEncoder
	return e.Close(e.Append(dst, payload))
}

// A BlockReader is an io.Reader of the payload of one multi-line block read
// from an underlying reader. Read returns io.EOF after the terminator and
// io.ErrUnexpectedEOF (wrapped) if the underlying reader ends first.
type BlockReader struct {
	d     BlockDecoder
	br    *bufio.Reader
	extra []byte // decoded byte that did not fit a one-byte Read
	one   [2]byte
	err   error // sticky: io.EOF after the terminator, or the failure
}

// NewBlockReader returns a reader of the block's payload from r, refusing
// lines longer than maxLine (0 means DefaultMaxLine). Given a *bufio.Reader,
// it never consumes past the terminator: what follows the block (a pipelined
// response, say) stays in r. Any other reader is wrapped in a new
// bufio.Reader, available from Reader, which may read ahead.
func NewBlockReader(r io.Reader, maxLine int) *BlockReader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	return &BlockReader{d: *NewBlockDecoder(maxLine), br: br}
}

// Reader returns the buffered reader the block is read from; after Read has
// returned io.EOF it is positioned just past the terminator.
func (r *BlockReader) Reader() *bufio.Reader { return r.br }

// Read reads decoded payload into p.
func (r *BlockReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(r.extra) > 0 {
		p[0] = r.extra[0]
		r.extra = r.extra[1:]
		return 1, nil
	}
	for r.err == nil {
		if r.d.done {
			r.err = io.EOF
			break
		}
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				r.err = fmt.Errorf("nntp: block: %w", err)
				break
			}
		}
		src, _ := r.br.Peek(r.br.Buffered())
		// Decode may add a held-back CR to what src yields; keep the
		// output within p so append never leaves p's array.
		room := len(p)
		if r.d.state == blockAfterDotCR {
			room--
		}
		var out []byte
		var n int
		var err error
		if room == 0 {
			out, n, _, err = r.d.Decode(r.one[:0], src[:1])
			copy(p, out)
			r.extra = out[min(1, len(out)):]
			out = out[:min(1, len(out))]
		} else {
			out, n, _, err = r.d.Decode(p[:0], src[:min(len(src), room)])
		}
		r.br.Discard(n)
		if err != nil {
			r.err = err
			return len(out), err
		}
		if len(out) > 0 {
			return len(out), nil
		}
	}
	return 0, r.err
}

// blockWriteChunk bounds the encoding buffer of a BlockWriter.
const blockWriteChunk = 32 << 10

// A BlockWriter is an io.WriteCloser that dot-stuffs what is written to it
// onto an underlying writer; Close writes the terminator.
type BlockWriter struct {
	w   io.Writer
	e   BlockEncoder
	buf []byte
	err error
}

// NewBlockWriter returns a writer that sends the payload written to it to w
// as a multi-line block.
func NewBlockWriter(w io.Writer) *BlockWriter { return &BlockWriter{w: w} }

// Write dot-stuffs p onto the underlying writer.
func (w *BlockWriter) Write(p []byte) (int, error) {
	n := 0
	for w.err == nil && n < len(p) {
		chunk := p[n:min(len(p), n+blockWriteChunk)]
		w.buf = w.e.Append(w.buf[:0], chunk)
		if _, err := w.w.Write(w.buf); err != nil {
			w.err = fmt.Errorf("nntp: block write: %w", err)
			break
		}
		n += len(chunk)
	}
	return n, w.err
}

// Close ends the line if the payload did not, and writes the terminator. It
// does not close the underlying writer. The BlockWriter can then be used for
// the next block.
func (w *BlockWriter) Close() error {
	if w.err != nil {
		return w.err
	}
	w.buf = w.e.Close(w.buf[:0])
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = fmt.Errorf("nntp: block write: %w", err)
	}
	return w.err
}
