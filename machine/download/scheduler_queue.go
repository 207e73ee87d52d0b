package download

// The Scheduler's waiting segments are grouped by signature (what the
// decision depends on, scheduler.go); each group is a queue, a min-heap of
// segment seqs (the order the segments were added), so the oldest waiting
// segment of a signature goes first. A seq costs 4 bytes in the heap.

// queue holds the waiting segments of one signature, a min-heap of seqs.
type queue struct {
	sig sig
	h   []int32
}

func (q *queue) push(i int32) {
	q.h = append(q.h, i)
	for j := len(q.h) - 1; j > 0; {
		p := (j - 1) / 2
		if q.h[j] >= q.h[p] {
			break
		}
		q.h[j], q.h[p] = q.h[p], q.h[j]
		j = p
	}
}

// pop removes and returns the smallest seq.
func (q *queue) pop() int32 {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q.h) && q.h[l] < q.h[m] {
			m = l
		}
		if r < len(q.h) && q.h[r] < q.h[m] {
			m = r
		}
		if m == i {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	if len(q.h) == 0 {
		q.h = nil // an emptied queue holds no memory
	}
	return top
}
