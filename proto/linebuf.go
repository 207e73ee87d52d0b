package proto

import (
	"bytes"
	"fmt"
)

// DefaultMaxStatusLine is the longest line, CRLF included, a LineBuffer
// accepts by default. RFC 3977 §3.1 allows 512 octets for responses; real
// servers send longer greetings and capability lines, but nothing near this,
// so a longer line means the peer is not speaking NNTP.
const DefaultMaxStatusLine = 4 * MaxResponseLine

// A LineBuffer splits bytes received in arbitrary pieces into lines ending in
// LF (CRLF, or a tolerated bare LF), for the status and command lines of the
// connection machines. Bytes that are not lines (a multi-line block) can be
// taken raw with Peek and Skip. The zero value is ready to use.
type LineBuffer struct {
	// Max is the longest line accepted, line ending included; 0 means
	// DefaultMaxStatusLine.
	Max int
	// Name names the lines in the too-long error ("response line"); ""
	// means "line".
	Name string

	buf []byte
	off int // bytes of buf already consumed
}

// Add appends received bytes, first dropping what was consumed when that is
// most of the buffer, so the buffer does not grow with the session.
func (l *LineBuffer) Add(p []byte) {
	if l.off > 0 && l.off >= len(l.buf)/2 {
		n := copy(l.buf, l.buf[l.off:])
		l.buf, l.off = l.buf[:n], 0
	}
	l.buf = append(l.buf, p...)
}

// Next returns the next complete line without its line ending; the slice is
// valid until the next Add. ok is false when no complete line is buffered.
// The error, wrapping ErrLineTooLong, reports a line longer than Max in the
// same words however the input was split.
func (l *LineBuffer) Next() (line []byte, ok bool, err error) {
	max := l.Max
	if max <= 0 {
		max = DefaultMaxStatusLine
	}
	rest := l.buf[l.off:]
	i := bytes.IndexByte(rest, '\n')
	if (i < 0 && len(rest) > max) || i+1 > max {
		name := l.Name
		if name == "" {
			name = "line"
		}
		return nil, false, fmt.Errorf("%s of more than %d octets: %w", name, max, ErrLineTooLong)
	}
	if i < 0 {
		return nil, false, nil
	}
	l.off += i + 1
	return bytes.TrimSuffix(rest[:i], []byte("\r")), true, nil
}

// Peek returns the bytes not yet consumed, without consuming them.
func (l *LineBuffer) Peek() []byte { return l.buf[l.off:] }

// Skip consumes n bytes of what Peek returned.
func (l *LineBuffer) Skip(n int) { l.off += n }

// Buffered is the number of bytes received and not yet consumed.
func (l *LineBuffer) Buffered() int { return len(l.buf) - l.off }

// Rest returns a copy of the bytes not yet consumed, for the machine that
// takes the connection over.
func (l *LineBuffer) Rest() []byte { return bytes.Clone(l.buf[l.off:]) }
