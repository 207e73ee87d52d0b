//go:build linux

package epoll

import "time"

// timerHeap orders connections by their next deadline (Conn.key), nearest
// first. Each connection is in it at most once; Conn.hidx is its index, -1
// when it is not in the heap. The loop turns the nearest key into
// epoll_wait's timeout.
type timerHeap []*Conn

// set puts c in the heap with key, or moves it there.
func (h *timerHeap) set(c *Conn, key time.Time) {
	if c.hidx >= 0 {
		old := c.key
		c.key = key
		if key.Before(old) {
			h.up(c.hidx)
		} else {
			h.down(c.hidx)
		}
		return
	}
	c.key = key
	c.hidx = len(*h)
	*h = append(*h, c)
	h.up(c.hidx)
}

// remove takes c out of the heap, if it is there.
func (h *timerHeap) remove(c *Conn) {
	i := c.hidx
	if i < 0 {
		return
	}
	last := len(*h) - 1
	h.swap(i, last)
	(*h)[last] = nil
	*h = (*h)[:last]
	c.hidx = -1
	if i < last {
		h.down(i)
		h.up(i)
	}
}

// pop removes and returns the connection with the nearest key.
func (h *timerHeap) pop() *Conn {
	c := (*h)[0]
	h.remove(c)
	return c
}

func (h timerHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx = i
	h[j].hidx = j
}

func (h timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].key.Before(h[p].key) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h timerHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].key.Before(h[l].key) {
			m = r
		}
		if !h[m].key.Before(h[i].key) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
