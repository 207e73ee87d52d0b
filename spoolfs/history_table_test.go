package spoolfs

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

// TestTableRemove deletes and re-adds ids at random in a small table (long
// probe runs, wrap-around) and checks every lookup against a map.
func TestTableRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tb := newTable(maphash.MakeSeed(), 0)
	want := map[string]uint32{}
	for step := range 20000 {
		id := fmt.Sprintf("<%d@t>", rng.IntN(300))
		if _, ok := want[id]; ok && rng.IntN(2) == 0 {
			if !tb.remove(id) {
				t.Fatalf("step %d: remove %s: not found", step, id)
			}
			delete(want, id)
		} else if !ok {
			tb.insert(id, slot{n: uint32(step)}, kindArticle)
			want[id] = uint32(step)
		} else if tb.remove(id + "x") {
			t.Fatalf("step %d: removed %sx, never added", step, id)
		}
		if step%97 == 0 || step > 19900 {
			for id, n := range want {
				if s := tb.get(id); s == nil || s.n != n {
					t.Fatalf("step %d: get %s = %v, want n=%d", step, id, s, n)
				}
			}
			if tb.count != len(want) {
				t.Fatalf("step %d: count %d, want %d", step, tb.count, len(want))
			}
		}
	}
}
