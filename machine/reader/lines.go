package reader

import (
	"bytes"
	"fmt"

	"github.com/newsflow/newsflow/proto"
)

// maxStatusLine is the longest status line, CRLF included, a Client accepts.
// RFC 3977 §3.1 allows 512 octets; real servers send longer greetings and
// 2xx texts, but nothing near this.
const maxStatusLine = 4 * proto.MaxResponseLine

// inBuffer holds received bytes not yet consumed, whatever the split of the
// input: status lines are taken whole, block bytes as they come.
type inBuffer struct {
	buf []byte
	off int // bytes of buf already consumed
}

// add appends received bytes, first dropping what was consumed when that is
// most of the buffer (so the buffer does not grow with the session).
func (b *inBuffer) add(p []byte) {
	if b.off > 0 && (b.off == len(b.buf) || b.off >= len(b.buf)/2) {
		n := copy(b.buf, b.buf[b.off:])
		b.buf, b.off = b.buf[:n], 0
	}
	b.buf = append(b.buf, p...)
}

// line returns the next complete line without its line ending (CRLF or a
// tolerated bare LF). The slice is valid until the next add. An error means
// a line longer than maxStatusLine.
func (b *inBuffer) line() ([]byte, bool, error) {
	rest := b.buf[b.off:]
	i := bytes.IndexByte(rest, '\n')
	if i < 0 || i+1 > maxStatusLine {
		if i >= 0 || len(rest) > maxStatusLine {
			return nil, false, fmt.Errorf("status line of more than %d octets: %w", maxStatusLine, proto.ErrLineTooLong)
		}
		return nil, false, nil
	}
	b.off += i + 1
	return bytes.TrimSuffix(rest[:i], []byte("\r")), true, nil
}

// peek returns the unconsumed bytes; skip consumes n of them.
func (b *inBuffer) peek() []byte { return b.buf[b.off:] }
func (b *inBuffer) skip(n int)   { b.off += n }

// buffered is the number of unconsumed bytes.
func (b *inBuffer) buffered() int { return len(b.buf) - b.off }
