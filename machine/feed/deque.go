package feed

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
