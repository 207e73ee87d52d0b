package handshake

import (
	"bytes"
	"fmt"

	"github.com/newsflow/newsflow/proto"
)

// maxLine is the longest line, CRLF included, that the handshake accepts.
// RFC 3977 §3.1 allows 512 octets for responses, but greetings and
// capability lines of real servers are sometimes longer; anything past this
// is not a server speaking NNTP.
const maxLine = 4 * proto.MaxResponseLine

// lineBuffer splits received bytes into lines, whatever the split of the
// input: lines end with LF (CRLF, or a tolerated bare LF).
type lineBuffer struct {
	buf []byte
	off int // bytes of buf already returned
}

// add appends received bytes.
func (l *lineBuffer) add(p []byte) {
	if l.off > 0 && l.off == len(l.buf) {
		l.buf, l.off = l.buf[:0], 0
	}
	l.buf = append(l.buf, p...)
}

// next returns the next complete line without its line ending. The slice is
// valid until the next add. An error means a line longer than maxLine.
func (l *lineBuffer) next() ([]byte, bool, error) {
	rest := l.buf[l.off:]
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		if len(rest) > maxLine {
			return nil, false, fmt.Errorf("line of more than %d octets: %w", maxLine, proto.ErrLineTooLong)
		}
		return nil, false, nil
	}
	if i+1 > maxLine {
		// The same words as above, so that the outcome does not depend on
		// how the input was split.
		return nil, false, fmt.Errorf("line of more than %d octets: %w", maxLine, proto.ErrLineTooLong)
	}
	l.off += i + 1
	return bytes.TrimSuffix(rest[:i], []byte("\r")), true, nil
}

// peek returns the bytes not yet returned, without consuming them; skip
// consumes n of them.
func (l *lineBuffer) peek() []byte { return l.buf[l.off:] }
func (l *lineBuffer) skip(n int)   { l.off += n }

// buffered is the number of bytes received and not yet returned.
func (l *lineBuffer) buffered() int { return len(l.buf) - l.off }

// rest returns a copy of the bytes not yet returned.
func (l *lineBuffer) rest() []byte { return bytes.Clone(l.buf[l.off:]) }
