package spoolfs

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"unsafe"
)

// table is the in-memory history index: an open-addressing hash table with
// linear probing, keyed by a 64-bit hash of the message-id, with the full id
// kept in an arena and compared on every hit so a hash collision can never
// answer for the wrong article. Slots and arena hold no pointers, so a table
// of millions of ids costs the garbage collector nothing to scan.
//
// Slots and arena live outside the Go heap (allocTable): a pointer-free
// array still counts toward the collector's heap goal, which let a history
// of 2 million ids hold about three times its own size in RSS (issue 15).
// The arena is a list of fixed chunks, so it never copies itself to grow;
// a grown slot array frees the old one at once; everything else is freed
// when the table is no longer reachable (a cleanup), so no reader can be
// left holding freed memory.
//
// Expiry builds a new table (see History.Expire), which also compacts the
// arena. The rare single deletion (an article found lost, see
// History.forgetLocked) shifts the probe run back, leaving no tombstone;
// its id stays in the arena until the next expiry.
type table struct {
	seed  maphash.Seed
	slots []slot // len is a power of two; hash 0 marks an empty slot
	count int
	mem   *tableMem // the memory behind slots and the arena
	used  int       // octets used in the last arena chunk
}

// arenaChunk is the size of one arena chunk; an id (length byte + at most
// 255 octets) never straddles two.
const arenaChunk = 1 << 20

// tableMem is the off-heap memory of a table: the slot array and the arena
// chunks of message-ids, each id as length byte + bytes.
type tableMem struct {
	slots  []byte
	chunks [][]byte
}

func (m *tableMem) free() {
	freeTable(m.slots)
	for _, c := range m.chunks {
		freeTable(c)
	}
	m.slots, m.chunks = nil, nil
}

// allocSlots returns n zeroed slots backed by allocTable, and the memory.
func allocSlots(n int) ([]slot, []byte) {
	b := allocTable(n * int(unsafe.Sizeof(slot{})))
	return unsafe.Slice((*slot)(unsafe.Pointer(unsafe.SliceData(b))), n), b
}

// slot is one history entry: 32 bytes (it was 48; issue 15, RSS with a
// peer down: at 2 million ids the slot array is most of the process).
// Whether an entry is still Pending is not in the slot but in the
// history's small map of recent Puts (History.pend).
type slot struct {
	hash uint32 // high bits of the id's maphash, never 0 in a used slot; picks the home slot
	seg  uint32 // token segment
	n    uint32 // token length
	alo  uint32 // arena offset, low 32 bits
	when int64  // arrival (or rejection) time, Unix nanoseconds
	pack uint64 // token offset (40 bits) | kind << 40 | arena offset >> 32 << 48
}

// maxTokenOff bounds a token's offset in a segment, which the slot keeps
// in 40 bits; OpenSpool bounds SegmentSize well below it.
const maxTokenOff = 1 << 40

// maxSegmentSize is the largest SpoolOptions.SegmentSize: every record
// starts before the segment size, so its offset stays below maxTokenOff.
const maxSegmentSize = 1 << 38

func (s *slot) kind() byte    { return byte(s.pack >> 40) }
func (s *slot) token() Token  { return Token{Seg: s.seg, Off: s.pack & (maxTokenOff - 1), Len: s.n} }
func (s *slot) arenaOff() int { return int(s.pack>>48)<<32 | int(s.alo) }

// newSlot is the slot of an entry (its hash is set when it is placed).
func newSlot(kind byte, tok Token, when int64) slot {
	if tok.Off >= maxTokenOff {
		panic(fmt.Sprintf("spoolfs: history: token offset %d beyond %d", tok.Off, uint64(maxTokenOff)))
	}
	return slot{seg: tok.Seg, n: tok.Len, when: when, pack: tok.Off | uint64(kind)<<40}
}

// setArena records the entry's arena offset.
func (s *slot) setArena(off uint64) {
	s.alo = uint32(off)
	s.pack = s.pack&(1<<48-1) | off>>32<<48
}

func (t *table) id(s *slot) []byte {
	o := s.arenaOff()
	c, i := t.mem.chunks[o/arenaChunk], o%arenaChunk
	return c[i+1 : i+1+int(c[i])]
}

// appendID copies msgid (at most 255 octets) into the arena and returns
// its arena offset.
func (t *table) appendID(msgid string) uint64 {
	m := t.mem
	if len(m.chunks) == 0 || t.used+1+len(msgid) > arenaChunk {
		m.chunks = append(m.chunks, allocTable(arenaChunk))
		t.used = 0
	}
	off := uint64(len(m.chunks)-1)*arenaChunk + uint64(t.used)
	c := m.chunks[len(m.chunks)-1]
	c[t.used] = byte(len(msgid))
	copy(c[t.used+1:], msgid)
	t.used += 1 + len(msgid)
	return off
}

func newTable(seed maphash.Seed, capacity int) *table {
	n := 64
	for n*7/10 < capacity {
		n *= 2
	}
	t := &table{seed: seed, mem: &tableMem{}}
	t.slots, t.mem.slots = allocSlots(n)
	runtime.AddCleanup(t, (*tableMem).free, t.mem)
	return t
}

func (t *table) hash(msgid string) uint32 {
	h := uint32(maphash.String(t.seed, msgid) >> 32)
	if h == 0 {
		h = 1
	}
	return h
}

// get returns the entry for msgid, or nil.
func (t *table) get(msgid string) *slot {
	h := t.hash(msgid)
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.hash == 0 {
			return nil
		}
		if s.hash == h && string(t.id(s)) == msgid {
			return s
		}
	}
}

// insert adds entry e (see newSlot) for msgid, which must not be present.
func (t *table) insert(msgid string, e slot) {
	if (t.count+1)*10 > len(t.slots)*7 {
		t.grow()
	}
	e.hash = t.hash(msgid)
	e.setArena(t.appendID(msgid))
	t.place(e)
	t.count++
}

// add inserts entry e (see newSlot) for msgid unless one exists, with a
// single probe sequence, and reports whether it did.
func (t *table) add(msgid string, e slot) bool {
	if (t.count+1)*10 > len(t.slots)*7 {
		t.grow()
	}
	h := t.hash(msgid)
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.hash == 0 {
			e.hash = h
			e.setArena(t.appendID(msgid))
			*s = e
			t.count++
			return true
		}
		if s.hash == h && string(t.id(s)) == msgid {
			return false
		}
	}
}

// remove deletes the entry for msgid and reports whether there was one.
// Linear probing without tombstones: every later entry of the run that
// the hole would cut off from its home slot moves back into it.
func (t *table) remove(msgid string) bool {
	h := t.hash(msgid)
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for {
		s := &t.slots[i]
		if s.hash == 0 {
			return false
		}
		if s.hash == h && string(t.id(s)) == msgid {
			break
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j].hash != 0; j = (j + 1) & mask {
		home := t.slots[j].hash & mask
		// Move j into the hole at i unless its home lies in (i, j]
		// (cyclically): then it is still reachable where it is.
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot{}
	t.count--
	return true
}

// place puts e in the first free slot of its probe sequence.
func (t *table) place(e slot) {
	mask := uint32(len(t.slots) - 1)
	for i := e.hash & mask; ; i = (i + 1) & mask {
		if t.slots[i].hash == 0 {
			t.slots[i] = e
			return
		}
	}
}

// grow doubles the slot array; the stored hashes make rehashing cheap.
// The old array is freed at once: callers hold the history's write lock,
// so no reader has a slot pointer into it.
func (t *table) grow() {
	old, oldMem := t.slots, t.mem.slots
	t.slots, t.mem.slots = allocSlots(2 * len(old))
	for i := range old {
		if old[i].hash != 0 {
			t.place(old[i])
		}
	}
	freeTable(oldMem)
}

// each calls fn for every entry, in no particular order.
func (t *table) each(fn func(msgid []byte, s *slot)) {
	for i := range t.slots {
		if s := &t.slots[i]; s.hash != 0 {
			fn(t.id(s), s)
		}
	}
}
