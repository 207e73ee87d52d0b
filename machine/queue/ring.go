package queue

// ring is the memory queue: a growable circular buffer of items.
type ring struct {
	buf  []item
	head int
	n    int
}

func (r *ring) grow() {
	nb := make([]item, max(16, 2*len(r.buf)))
	for i := 0; i < r.n; i++ {
		nb[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = nb, 0
}

func (r *ring) pushBack(it item) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = it
	r.n++
}

func (r *ring) pushFront(it item) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.head = (r.head - 1 + len(r.buf)) % len(r.buf)
	r.buf[r.head] = it
	r.n++
}

func (r *ring) popFront() item {
	it := r.buf[r.head]
	r.buf[r.head] = item{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return it
}

func (r *ring) at(i int) item { return r.buf[(r.head+i)%len(r.buf)] }
