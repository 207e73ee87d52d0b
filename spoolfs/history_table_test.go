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
			tb.insert(id, newSlot(kindArticle, Token{Len: uint32(step)}, 0))
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

// TestSlotPacking round-trips the fields a 32-byte slot packs: the token
// offset in 40 bits beside the kind, the arena offset split over two words.
func TestSlotPacking(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  byte
		tok   Token
		arena uint64
	}{
		{"zero", kindArticle, Token{}, 0},
		{"reject", kindReject, Token{}, 1<<20 + 7},
		{"largest offset", kindArticle, Token{Seg: 1<<32 - 1, Off: maxTokenOff - 1, Len: 1<<32 - 1}, 1<<48 - 1},
		{"arena over 4 GiB", kindArticle, Token{Seg: 3, Off: 1 << 30, Len: 500_000}, 5<<32 | 12345},
	} {
		s := newSlot(tc.kind, tc.tok, 42)
		s.setArena(tc.arena)
		got := struct {
			Kind  byte
			Tok   Token
			Arena uint64
			When  int64
		}{s.kind(), s.token(), uint64(s.arenaOff()), s.when}
		want := struct {
			Kind  byte
			Tok   Token
			Arena uint64
			When  int64
		}{tc.kind, tc.tok, tc.arena, 42}
		if got != want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, want)
		}
	}
}

// TestTableArenaChunks fills more than one arena chunk with long ids and
// finds every one, so ids at chunk ends and in later chunks read back.
func TestTableArenaChunks(t *testing.T) {
	tb := newTable(maphash.MakeSeed(), 0)
	id := func(i int) string { return fmt.Sprintf("<%0240d@chunk>", i) }
	n := 3*arenaChunk/250 + 17
	for i := range n {
		if !tb.add(id(i), newSlot(kindArticle, Token{Seg: 1, Off: uint64(i), Len: 1}, 0)) {
			t.Fatalf("add %d: already there", i)
		}
	}
	if got := len(tb.mem.chunks); got < 3 {
		t.Fatalf("%d ids in %d arena chunks, want at least 3", n, got)
	}
	for i := range n {
		s := tb.get(id(i))
		if s == nil || s.token().Off != uint64(i) || string(tb.id(s)) != id(i) {
			t.Fatalf("get %d: %+v", i, s)
		}
	}
}
