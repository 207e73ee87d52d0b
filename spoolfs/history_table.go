package spoolfs

import "hash/maphash"

// table is the in-memory history index: an open-addressing hash table with
// linear probing, keyed by a 64-bit hash of the message-id, with the full id
// kept in an arena and compared on every hit so a hash collision can never
// answer for the wrong article. Slots and arena hold no pointers, so a table
// of millions of ids costs the garbage collector nothing to scan.
//
// Entries are never deleted one by one: history expiry builds a new table
// (see History.Expire), which also compacts the arena.
type table struct {
	seed  maphash.Seed
	slots []slot // len is a power of two; hash 0 marks an empty slot
	count int
	arena []byte // message-ids, each as length byte + bytes
}

// slot is one history entry: 48 bytes.
type slot struct {
	hash uint64 // maphash of the message-id, never 0 in a used slot
	seq  uint64 // Spool sequence number of the Put/Reject, 0 if loaded at open
	when int64  // arrival (or rejection) time, Unix nanoseconds
	off  uint64 // token offset
	seg  uint32 // token segment
	n    uint32 // token length
	ref  uint64 // arena offset << 8 | kind
}

func (s *slot) kind() byte    { return byte(s.ref) }
func (s *slot) token() Token  { return Token{Seg: s.seg, Off: s.off, Len: s.n} }
func (s *slot) arenaOff() int { return int(s.ref >> 8) }
func (t *table) id(s *slot) []byte {
	o := s.arenaOff()
	return t.arena[o+1 : o+1+int(t.arena[o])]
}

func newTable(seed maphash.Seed, capacity int) *table {
	n := 64
	for n*7/10 < capacity {
		n *= 2
	}
	return &table{seed: seed, slots: make([]slot, n)}
}

func (t *table) hash(msgid string) uint64 {
	h := maphash.String(t.seed, msgid)
	if h == 0 {
		h = 1
	}
	return h
}

// get returns the entry for msgid, or nil.
func (t *table) get(msgid string) *slot {
	h := t.hash(msgid)
	mask := uint64(len(t.slots) - 1)
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

// insert adds an entry for msgid, which must not be present.
func (t *table) insert(msgid string, e slot, kind byte) {
	if (t.count+1)*10 > len(t.slots)*7 {
		t.grow()
	}
	e.hash = t.hash(msgid)
	e.ref = uint64(len(t.arena))<<8 | uint64(kind)
	t.arena = append(t.arena, byte(len(msgid)))
	t.arena = append(t.arena, msgid...)
	t.place(e)
	t.count++
}

// add inserts an entry for msgid unless one exists, with a single probe
// sequence, and reports whether it did.
func (t *table) add(msgid string, e slot, kind byte) bool {
	if (t.count+1)*10 > len(t.slots)*7 {
		t.grow()
	}
	h := t.hash(msgid)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.hash == 0 {
			e.hash = h
			e.ref = uint64(len(t.arena))<<8 | uint64(kind)
			t.arena = append(t.arena, byte(len(msgid)))
			t.arena = append(t.arena, msgid...)
			*s = e
			t.count++
			return true
		}
		if s.hash == h && string(t.id(s)) == msgid {
			return false
		}
	}
}

// place puts e in the first free slot of its probe sequence.
func (t *table) place(e slot) {
	mask := uint64(len(t.slots) - 1)
	for i := e.hash & mask; ; i = (i + 1) & mask {
		if t.slots[i].hash == 0 {
			t.slots[i] = e
			return
		}
	}
}

// grow doubles the slot array; the stored hashes make rehashing cheap.
func (t *table) grow() {
	old := t.slots
	t.slots = make([]slot, 2*len(old))
	for i := range old {
		if old[i].hash != 0 {
			t.place(old[i])
		}
	}
}

// each calls fn for every entry, in no particular order.
func (t *table) each(fn func(msgid []byte, s *slot)) {
	for i := range t.slots {
		if s := &t.slots[i]; s.hash != 0 {
			fn(t.id(s), s)
		}
	}
}
