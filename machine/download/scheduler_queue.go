package download

// The Scheduler's waiting segments are grouped by signature (what the
// decision depends on, scheduler.go); each group is a queue, a min-heap by
// the order the segments were added, so the oldest waiting segment of a
// signature goes first.

// queue holds the waiting segments of one signature, a min-heap by seq.
type queue struct {
	sig sig
	h   []*seg
}

func (q *queue) less(i, j int) bool { return q.h[i].seq < q.h[j].seq }

func (q *queue) swap(i, j int) {
	q.h[i], q.h[j] = q.h[j], q.h[i]
	q.h[i].hi, q.h[j].hi = i, j
}

func (q *queue) push(sg *seg) {
	sg.q, sg.hi = q, len(q.h)
	q.h = append(q.h, sg)
	for i := len(q.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.swap(i, p)
		i = p
	}
}

// pop removes and returns the segment with the smallest seq.
func (q *queue) pop() *seg {
	top := q.h[0]
	last := len(q.h) - 1
	q.swap(0, last)
	q.h[last] = nil
	q.h = q.h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q.h) && q.less(l, m) {
			m = l
		}
		if r < len(q.h) && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.swap(i, m)
		i = m
	}
	top.q = nil
	return top
}
