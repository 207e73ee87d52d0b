package feed

import (
	"bytes"
	"fmt"

	"github.com/newsflow/newsflow/proto"
)

// maxLine is the longest response line, CRLF included, that a Feed
// accepts. RFC 3977 §3.1 allows 512 octets; servers sometimes send longer
// text, but past this the peer is not speaking NNTP.
const maxLine = 4 * proto.MaxResponseLine

// lineBuffer splits received bytes into lines whatever the split of the
// input: lines end with LF (CRLF, or a tolerated bare LF).
type lineBuffer struct {
	buf []byte
	off int // bytes of buf already returned
}

// add appends received bytes, first dropping what was returned.
func (l *lineBuffer) add(p []byte) {
	if l.off > 0 {
		n := copy(l.buf, l.buf[l.off:])
		l.buf, l.off = l.buf[:n], 0
	}
	l.buf = append(l.buf, p...)
}

// next returns the next complete line without its line ending; the slice is
// valid until the next add. The error reports a line longer than maxLine,
// in the same words however the input was split.
func (l *lineBuffer) next() ([]byte, bool, error) {
	rest := l.buf[l.off:]
	i := bytes.IndexByte(rest, '\n')
	if (i < 0 && len(rest) > maxLine) || i+1 > maxLine {
		return nil, false, fmt.Errorf("response line of more than %d octets: %w", maxLine, proto.ErrLineTooLong)
	}
	if i < 0 {
		return nil, false, nil
	}
	l.off += i + 1
	return bytes.TrimSuffix(rest[:i], []byte("\r")), true, nil
}

// buffered is the number of bytes received and not yet returned.
func (l *lineBuffer) buffered() int { return len(l.buf) - l.off }

// deque is a double-ended queue on a ring buffer: the Feed's send and
// receive queues.
type deque[T any] struct {
	buf  []T
	head int
	n    int
}

func (q *deque[T]) len() int { return q.n }

func (q *deque[T]) grow() {
	size := max(16, 2*len(q.buf))
	nb := make([]T, size)
	for i := 0; i < q.n; i++ {
		nb[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = nb, 0
}

// pushBack appends v at the tail.
func (q *deque[T]) pushBack(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
}

// pushFront puts v before the head.
func (q *deque[T]) pushFront(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.buf[q.head] = v
	q.n++
}

// front returns a pointer to the head; the queue must not be empty.
func (q *deque[T]) front() *T { return &q.buf[q.head] }

// at returns the i-th element from the head.
func (q *deque[T]) at(i int) T { return q.buf[(q.head+i)%len(q.buf)] }

// popFront removes and returns the head; the queue must not be empty.
func (q *deque[T]) popFront() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return v
}

// drain removes everything, head first, calling fn for each element.
func (q *deque[T]) drain(fn func(T)) {
	for q.n > 0 {
		fn(q.popFront())
	}
}
