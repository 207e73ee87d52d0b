package spoolfs

import (
	"fmt"
	"unsafe"
)

// index is the history's in-memory index, after INN's dbz: an
// open-addressing hash table with linear probing whose 8-byte slots hold a
// 24-bit fragment of the message-id's hash and the offset of the id's
// record in the history log. Nothing else of the entry is kept in memory:
// a probe whose fragment matches reads the record (History.readEntry)
// and compares the id, so a fragment collision costs a read, never a
// wrong answer. A miss, the usual case for an article being offered, is
// answered from the slots alone: a stranger's fragment matches one probe
// in 16 million.
//
// At 2 million ids that is 8 bytes a slot in a table 72% to 88% full,
// where a table holding each entry in a 32-byte slot plus the id itself
// would cost about 270 MB of RSS with a peer down and 1,000,000 articles
// queued for it. The page cache holds the log;
// that does not count in the process's RSS.
//
// Slots live outside the Go heap (allocTable), so they neither count
// toward the collector's heap goal nor cost it a scan. The table never
// grows in place: History rebuilds a bigger one from the log after freeing
// the old one (History.rebuildLocked), so a growing history never holds
// two slot arrays. Deletion leaves a tombstone (removeAt).
type index struct {
	slots []uint64 // 0 marks an empty slot
	mem   []byte   // the memory behind slots
	count int      // entries
	dead  int      // tombstones (see removeAt)
}

const (
	idxOffBits  = 40 // log offsets below 1 TiB
	idxOffMask  = 1<<idxOffBits - 1
	idxFragMask = 1<<(64-idxOffBits) - 1
	// maxHistLog bounds the history log, whose offsets the index keeps in
	// idxOffBits bits: about 15 billion records of 72 bytes.
	maxHistLog = 1 << idxOffBits
	// idxTombstone marks a removed entry: fragment 0, which no hash has,
	// so no probe stops at it or matches it.
	idxTombstone = 1
)

// Load: the table is rebuilt bigger when an insert would take it over
// idxMaxLoadNum/idxMaxLoadDen full, at about idxTargetLoad percent: 9 to
// 11 bytes an id. Linear probing at 88% costs a miss about 35 slots on
// average (280 bytes, five cache lines; the bottom of the range, 72%, 7
// slots); each rebuild reads the whole log, so they come no more often
// than every 22% of growth.
const (
	idxMaxLoadNum = 22
	idxMaxLoadDen = 25
	idxTargetLoad = 72
)

// indexSize is the number of slots for n entries at the target load.
func indexSize(n int) int {
	return max(64, n*100/idxTargetLoad+1)
}

// idxRoomySlots: an index of up to this many slots (16 MB) grows to half
// full rather than to the target load, so that a history growing from
// nothing is rebuilt fewer times (each rebuild reads the whole log, and
// the last few cost the most); above it, memory counts more.
const idxRoomySlots = 2 << 20

// growSize is the number of slots for the index that replaces a full one
// of n entries.
func growSize(n int) int {
	if s := 2 * n; s <= idxRoomySlots {
		return max(s, indexSize(n))
	}
	return indexSize(n)
}

// newIndex returns an empty index of size slots (at least 2).
func newIndex(size int) *index {
	x := &index{}
	x.reset(size)
	return x
}

// reset frees the slots, then makes size empty ones (at least 2).
func (x *index) reset(size int) {
	x.free()
	size = max(size, 2)
	x.mem = allocTable(size * 8)
	x.slots = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(x.mem))), size)
}

// free returns the slots to the kernel and empties the index.
func (x *index) free() {
	freeTable(x.mem)
	x.slots, x.mem, x.count, x.dead = nil, nil, 0, 0
}

// fits reports whether n more entries fit without passing the maximum
// load.
func (x *index) fits(n int) bool {
	return (x.count+x.dead+n)*idxMaxLoadDen <= len(x.slots)*idxMaxLoadNum
}

// home is the first slot of the probe run for hash hv: the high 32 bits
// scaled to the table size (any size, not only powers of two).
func (x *index) home(hv uint64) int {
	return int((hv >> 32) * uint64(len(x.slots)) >> 32)
}

// fragment is the part of hash hv a slot keeps: the low 24 bits, never 0.
func fragment(hv uint64) uint64 {
	if f := hv & idxFragMask; f != 0 {
		return f
	}
	return 1
}

// probe walks the slots of hash hv whose fragment matches.
type probe struct {
	x    *index
	frag uint64
	i    int
}

// probe starts a walk over the candidates for hash hv.
func (x *index) probe(hv uint64) probe {
	return probe{x: x, frag: fragment(hv), i: x.home(hv)}
}

// next returns the next candidate's slot number and log offset, or false
// at the end of the run.
func (p *probe) next() (pos int, off int64, ok bool) {
	slots := p.x.slots
	for {
		s := slots[p.i]
		if s == 0 {
			return 0, 0, false
		}
		pos = p.i
		if p.i++; p.i == len(slots) {
			p.i = 0
		}
		if s>>idxOffBits == p.frag {
			return pos, int64(s & idxOffMask), true
		}
	}
}

// insert adds an entry for hash hv at log offset off. The caller has made
// room (fits) and checked that the id is not there.
func (x *index) insert(hv uint64, off int64) {
	if off < 0 || off >= maxHistLog {
		panic(fmt.Sprintf("spoolfs: history: log offset %d beyond %d", off, int64(maxHistLog)))
	}
	i := x.home(hv)
	for x.slots[i] != 0 && x.slots[i] != idxTombstone {
		if i++; i == len(x.slots) {
			i = 0
		}
	}
	if x.slots[i] == idxTombstone {
		x.dead--
	}
	x.slots[i] = fragment(hv)<<idxOffBits | uint64(off)
	x.count++
}

// removeAt empties slot i, leaving a tombstone: a slot keeps a fragment
// of the hash, not the home slot that a backward shift would need.
// Removals are rare (an article found lost); the next rebuild clears the
// tombstones, and they count toward the load until then.
func (x *index) removeAt(i int) {
	x.slots[i] = idxTombstone
	x.count--
	x.dead++
}
