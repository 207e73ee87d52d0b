package spoolfs

import "hash/maphash"

// table is the in-memory history index: an open-addressing hash table with
// linear probing, keyed by a 64-bit hash of the message-id, with the full id
// kept in an arena and compared on every hit so a hash collision can never
// answer for the wrong article. Slots and arena hold no pointers, so a table
// of millions of ids costs the garbage collector nothing to scan.
//
// Expiry builds a new table (see History.Expire), which also compacts the
// arena. The rare single deletion (an article found lost, see
// History.forgetLocked) shifts the probe run back, leaving no tombstone;
// its id stays in the arena until the next expiry.
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

// remove deletes the entry for msgid and reports whether there was one.
// Linear probing without tombstones: every later entry of the run that
// the hole would cut off from its home slot moves back into it.
func (t *table) remove(msgid string) bool {
	h := t.hash(msgid)
	mask := uint64(len(t.slots) - 1)
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
