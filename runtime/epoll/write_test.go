//go:build linux

package epoll

import "testing"

// TestDetachOwnQueue: after detach no item refers to the loop's scratch
// space, also when the queue was already the connection's own and a later
// flush copied articles into the scratch space for it (the scratch space
// is reused by the next connection's flush: an item left pointing into it
// would send that connection's bytes).
func TestDetachOwnQueue(t *testing.T) {
	for _, own := range []bool{false, true} {
		scratch := []byte("TAKETHIS <a@b>\r\nbody of a\r\n")
		q := outQueue{own: own, items: []outItem{
			{b: []byte("written before\r\n")},
			{b: scratch[:16], scratch: true},
			{b: scratch[16:], token: "@a@", size: int64(len(scratch) - 16), resolved: true, scratch: true},
		}}
		q.detach()
		copy(scratch, "the next connection's bytes!!")
		got := ""
		for _, it := range q.items {
			if it.scratch {
				t.Errorf("own=%v: an item still marked as the scratch space's after detach", own)
			}
			got += string(it.b)
		}
		if want := "written before\r\nTAKETHIS <a@b>\r\nbody of a\r\n"; got != want {
			t.Errorf("own=%v: after detach and reuse of the scratch space the queue holds %q, want %q", own, got, want)
		}
	}
}
