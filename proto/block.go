package proto

// Multi-line blocks (RFC 3977 §3.1.1): the payload of ARTICLE, BODY, HEAD,
// OVER, LIST and friends, and what IHAVE/TAKETHIS/POST send, travels as lines
// with every line that begins with '.' given one more '.', and ends with a
// line holding only ".".
//
// Theory of operation. The decoder is a four-state machine (line start, in a
// line, after a leading '.', after a leading ".\r") but it only steps through
// the states for the one or two bytes after a leading dot. Everywhere else it
// finds line ends with bytes.IndexByte (SIMD in the Go runtime), checks each
// line's length, and copies the whole run of lines up to the next line that
// begins with '.' with a single append (memmove). Lines that begin with '.'
// are rare in real articles, so the common case is one IndexByte per line and
// one memmove per call. Input may be split at any byte boundary: the state and
// the length of the current line carry over between calls, and no input is
// kept, so output streams and a block is never held whole.
//
// The encoder is the mirror image: IndexByte per line, one append per run of
// lines between lines that need a stuffing dot.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
)

// DefaultMaxLine is the default longest line, in octets including the line
// ending, that a BlockDecoder accepts.
const DefaultMaxLine = 64 << 10

// Decoder states. Only stDot and stDotCR hold input whose meaning is not yet
// known ("." or ".\r" at the start of a line could still be the terminator).
const (
	stStart = iota // at the start of a line
	stLine         // inside a line; its leading dot, if any, is already dropped
	stDot          // after a '.' at the start of a line
	stDotCR        // after ".\r" at the start of a line
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
	state   uint8 // stStart ... stDotCR
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
// ErrLineTooLong; by then it has output and consumed the first maxLine octets
// of that line (n stops at the first octet past the limit), and it returns the
// same error, consuming nothing, until Reset.
func (d *BlockDecoder) Decode(dst, src []byte) (out []byte, n int, done bool, err error) {
	out, n, err = d.decode(dst, src, false)
	return out, n, d.done, err
}

// errInPlacePending reports a DecodeInPlace call on a decoder that Decode left
// holding a partial dot line.
var errInPlacePending = errors.New("nntp: block: DecodeInPlace after Decode left a partial dot line")

// DecodeInPlace is Decode for callers that own their buffer: it decodes buf
// into its own beginning, so buf[:m] is the payload decoded from buf[:n].
// Bytes from n on are untouched: after the terminator they are what follows
// the block. Unlike Decode it does not consume a "." or ".\r" at the start of
// a line at the end of buf (the only input whose output could outgrow it);
// the caller keeps buf[n:] and presents it again with more bytes after it.
// Do not mix Decode and DecodeInPlace on one block.
func (d *BlockDecoder) DecodeInPlace(buf []byte) (m, n int, done bool, err error) {
	if d.err == nil && (d.state == stDot || d.state == stDotCR) {
		return 0, 0, d.done, errInPlacePending
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
		case stStart:
			if src[p] != '.' {
				d.state = stLine
				continue
			}
			// RFC 3977 §3.1.1: a leading '.' is stuffing, or the start of
			// the terminating line.
			if d.lineLen+1 > d.maxLine {
				return dst, p, d.tooLong()
			}
			dotAt = p
			d.lineLen++
			d.state = stDot
			p++
		case stDot:
			switch src[p] {
			case '\n': // ".\n": tolerated bare-LF terminator
				if d.lineLen+1 > d.maxLine {
					return dst, p, d.tooLong()
				}
				p++
				d.done, d.state, d.lineLen = true, stStart, 0
			case '\r':
				if d.lineLen+1 > d.maxLine {
					return dst, p, d.tooLong()
				}
				p++
				d.lineLen++
				d.state = stDotCR
			default: // ".." -> "."; ".x" tolerated as "x": the dot is dropped
				d.state = stLine
			}
		case stDotCR:
			if src[p] == '\n' { // ".\r\n": the terminator
				if d.lineLen+1 > d.maxLine {
					return dst, p, d.tooLong()
				}
				p++
				d.done, d.state, d.lineLen = true, stStart, 0
				continue
			}
			// ".\r" then not LF: the CR is content of an ordinary line.
			dst = append(dst, '\r')
			d.state = stLine
		case stLine:
			var err error
			dst, p, err = d.run(dst, src, p)
			if err != nil {
				return dst, p, err
			}
		}
	}
	if inPlace && (d.state == stDot || d.state == stDotCR) {
		// Leave the partial dot line to the caller; it comes again whole.
		p, d.state, d.lineLen = dotAt, stStart, 0
	}
	return dst, p, nil
}

// run copies the run of lines starting at src[p] (inside a line) up to the
// next line that begins with '.', or the end of src, checking every line's
// length on the way. It returns the read position after the run.
func (d *BlockDecoder) run(dst, src []byte, p int) ([]byte, int, error) {
	start, q, lineLen := p, p, d.lineLen
	for {
		i := bytes.IndexByte(src[q:], '\n')
		if i < 0 {
			// A partial line fills the rest of src.
			if lineLen+len(src)-q > d.maxLine {
				cut := q + d.maxLine - lineLen
				return append(dst, src[start:cut]...), cut, d.tooLong()
			}
			d.lineLen = lineLen + len(src) - q
			return append(dst, src[start:]...), len(src), nil
		}
		if lineLen+i+1 > d.maxLine {
			cut := q + d.maxLine - lineLen
			return append(dst, src[start:cut]...), cut, d.tooLong()
		}
		q += i + 1
		lineLen = 0
		if q == len(src) || src[q] == '.' {
			d.state, d.lineLen = stStart, 0
			return append(dst, src[start:q]...), q, nil
		}
	}
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
	start, q := 0, 0
	if !e.midLine && p[0] == '.' {
		dst = append(dst, '.') // RFC 3977 §3.1.1: double a leading '.'
	}
	for {
		i := bytes.IndexByte(p[q:], '\n')
		if i < 0 {
			e.midLine = true
			return append(dst, p[start:]...)
		}
		q += i + 1
		if q == len(p) {
			e.midLine = false
			return append(dst, p[start:]...)
		}
		if p[q] == '.' {
			dst = append(dst, p[start:q]...)
			dst = append(dst, '.')
			start = q
		}
	}
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
		if r.d.state == stDotCR {
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
