package download

// The Scheduler's segments, stored for a bounded cost per segment (an NZB
// may hold a million).
//
// A segment is an index (its seq: the order it was added) into parallel
// arrays holding only what every segment needs (segTable); the fields of
// the Segment that the segments of one NZB file share (File, Posted,
// Groups) are kept once per run of segments that share them (segMeta).
// The message-id is the caller's string, not a copy. What only a segment
// with a history needs (servers that failed it, retry counters, the server
// it wants, its last outcome) lives in a side table (segExt) from its first
// failed request until it finishes; a finished segment keeps only its state
// and attempt count. Lookup by Key goes through byKey, the indexes sorted by
// key, so no map entry is paid per segment.
//
// Live heap per segment: message-id header 16, number 8, bytes 8, meta 4,
// state 1, class 1, attempts 2, ext 4, byKey 4, and 4 in a queue's heap
// while waiting: about 52 bytes.

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
	"sort"
	"time"
)

// segMeta is what a run of segments added together shares.
type segMeta struct {
	file   int
	posted time.Time
	groups []string
}

// segExt is the history of a segment that failed a request and is not
// finished.
type segExt struct {
	failed   uint64    // servers that failed it
	verdicts []Verdict // why each of those failed it, in the order they did
	counts   []count
	want     int     // server index wanted for the retry; -1 for none
	last     Outcome // the outcome of its last failed request
}

// segTable holds every segment added, by seq.
type segTable struct {
	msgID    []string
	number   []int
	bytes    []int64
	meta     []uint32 // index in metas
	state    []segState
	class    []uint8
	attempts []uint16 // requests made so far (saturates at 65535)
	ext      []int32  // index in exts; 0 for none
	metas    []segMeta
	exts     []segExt // exts[0] is unused
	free     []int32  // free slots of exts
	byKey    []int32  // every seq, sorted by key
}

// len is how many segments were added.
func (t *segTable) len() int { return len(t.number) }

// key returns the key of segment i.
func (t *segTable) key(i int32) Key {
	return Key{File: t.metas[t.meta[i]].file, Number: t.number[i]}
}

// compareKey orders keys by file, then number.
func compareKey(a, b Key) int {
	if c := cmp.Compare(a.File, b.File); c != 0 {
		return c
	}
	return cmp.Compare(a.Number, b.Number)
}

// find returns the seq of the segment with key k.
func (t *segTable) find(k Key) (int32, bool) {
	j := sort.Search(len(t.byKey), func(j int) bool { return compareKey(t.key(t.byKey[j]), k) >= 0 })
	if j < len(t.byKey) && t.key(t.byKey[j]) == k {
		return t.byKey[j], true
	}
	return 0, false
}

// add appends the segments of segs (none if a key repeats or is there
// already) and returns the seq of the first. Keys are checked after the
// segments are appended, reading them from the table, so no copy of the
// batch is made.
func (t *segTable) add(segs iter.Seq[Segment]) (int32, error) {
	first, metas := t.len(), len(t.metas)
	for g := range segs {
		m := len(t.metas) - 1
		if m < 0 || !t.metas[m].shares(g) {
			t.metas = append(t.metas, segMeta{file: g.File, posted: g.Posted, groups: g.Groups})
			m++
		}
		t.msgID = append(t.msgID, g.MessageID)
		t.number = append(t.number, g.Number)
		t.bytes = append(t.bytes, g.Bytes)
		t.meta = append(t.meta, uint32(m))
		t.state = append(t.state, segWaiting)
		t.class = append(t.class, 0)
		t.attempts = append(t.attempts, 0)
		t.ext = append(t.ext, 0)
	}
	batch := make([]int32, t.len()-first)
	for j := range batch {
		batch[j] = int32(first + j)
	}
	byKey := func(a, b int32) int { return compareKey(t.key(a), t.key(b)) }
	if !slices.IsSortedFunc(batch, byKey) {
		slices.SortFunc(batch, byKey)
	}
	for j, i := range batch {
		k := t.key(i)
		_, dup := t.find(k)
		if dup || j > 0 && t.key(batch[j-1]) == k {
			t.truncate(first, metas)
			return 0, fmt.Errorf("download: segment %s added twice", k)
		}
	}
	if n := len(t.byKey); n == 0 || len(batch) == 0 || compareKey(t.key(t.byKey[n-1]), t.key(batch[0])) < 0 {
		t.byKey = append(t.byKey, batch...) // the usual case: keys ascending
		return int32(first), nil
	}
	merged := make([]int32, 0, len(t.byKey)+len(batch))
	old := t.byKey
	for _, i := range batch {
		for len(old) > 0 && byKey(old[0], i) < 0 {
			merged = append(merged, old[0])
			old = old[1:]
		}
		merged = append(merged, i)
	}
	t.byKey = append(merged, old...)
	return int32(first), nil
}

// truncate takes back the segments from seq n on and the metas from m
// on (a refused add).
func (t *segTable) truncate(n, m int) {
	t.metas = t.metas[:m]
	t.msgID = t.msgID[:n]
	t.number = t.number[:n]
	t.bytes = t.bytes[:n]
	t.meta = t.meta[:n]
	t.state = t.state[:n]
	t.class = t.class[:n]
	t.attempts = t.attempts[:n]
	t.ext = t.ext[:n]
}

// shares reports whether g has the file, posting date and groups of m.
func (m *segMeta) shares(g Segment) bool {
	return m.file == g.File && m.posted.Equal(g.Posted) && slices.Equal(m.groups, g.Groups)
}

// segment returns segment i as it was added.
func (t *segTable) segment(i int32) Segment {
	m := &t.metas[t.meta[i]]
	return Segment{Key: Key{File: m.file, Number: t.number[i]}, MessageID: t.msgID[i], Bytes: t.bytes[i],
		Posted: m.posted, Groups: m.groups}
}

// posted returns the posting date of segment i.
func (t *segTable) posted(i int32) time.Time { return t.metas[t.meta[i]].posted }

// history returns segment i's history, creating it on first use.
func (t *segTable) history(i int32) *segExt {
	if x := t.ext[i]; x != 0 {
		return &t.exts[x]
	}
	if len(t.exts) == 0 {
		t.exts = append(t.exts, segExt{}) // slot 0 means none
	}
	var x int32
	if n := len(t.free); n > 0 {
		x, t.free = t.free[n-1], t.free[:n-1]
	} else {
		x = int32(len(t.exts))
		t.exts = append(t.exts, segExt{})
	}
	t.exts[x] = segExt{want: -1}
	t.ext[i] = x
	return &t.exts[x]
}

// peek returns segment i's history, or nil when it has none.
func (t *segTable) peek(i int32) *segExt {
	if x := t.ext[i]; x != 0 {
		return &t.exts[x]
	}
	return nil
}

// forget drops segment i's history (it finished).
func (t *segTable) forget(i int32) {
	if x := t.ext[i]; x != 0 {
		t.exts[x] = segExt{}
		t.free = append(t.free, x)
		t.ext[i] = 0
	}
}

// sig returns the signature of waiting segment i.
func (t *segTable) sig(i int32) sig {
	k := sig{class: t.class[i], want: -1}
	if x := t.peek(i); x != nil {
		k.failed, k.want = x.failed, x.want
	}
	return k
}
