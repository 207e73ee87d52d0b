package reader

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fuzzArticles decodes arbitrary bytes into articles over a small id space,
// so that references hit existing, missing and own ids, duplicates and
// loops often. Each article takes: id byte, date byte, flags byte (low 3
// bits: number of references; bit 3: In-Reply-To instead), then one byte per
// reference.
func fuzzArticles(data []byte) []Summary {
	const ids = 24
	var out []Summary
	for n := int64(1); len(data) >= 3 && len(out) < 200; n++ {
		id, date, flags := data[0], data[1], data[2]
		data = data[3:]
		s := Summary{Number: n, Date: t0.Add(time.Duration(date%32) * time.Minute)}
		if id%ids != 0 {
			s.MessageID = fmt.Sprintf("<m%d@x>", id%ids)
		}
		if date >= 224 {
			s.Date = time.Time{} // undated
		}
		var refs []string
		for k := 0; k < int(flags&7) && len(data) > 0; k++ {
			refs = append(refs, fmt.Sprintf("<m%d@x>", data[0]%(ids+8)))
			data = data[1:]
		}
		if flags&8 != 0 && len(refs) > 0 {
			s.InReplyTo = refs[0]
		} else {
			s.References = refs
		}
		out = append(out, s)
	}
	return out
}

// FuzzThread threads arbitrary reference graphs: no panic, every input
// article appears exactly once in the forest, no cycles, placeholders have
// children, the result does not depend on the input order, and merging a
// split of the input equals threading all of it.
func FuzzThread(f *testing.F) {
	f.Add([]byte{1, 0, 0, 2, 1, 1, 1})                            // a reply
	f.Add([]byte{1, 0, 1, 2, 2, 1, 1, 1})                         // a -> b -> a
	f.Add([]byte{1, 0, 1, 1})                                     // self reference
	f.Add([]byte{1, 0, 0, 1, 5, 0, 3, 9, 2, 1, 2})                // duplicate ids, a missing middle
	f.Add([]byte{0, 0, 1, 5, 30, 250, 9, 1})                      // no message-id, undated, In-Reply-To
	f.Add([]byte{3, 1, 7, 1, 2, 3, 4, 5, 6, 7, 4, 2, 3, 3, 2, 1}) // long chains with loops
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzArticles(data)
		forest := Thread(in)
		checkForest(t, in, forest)
		rev := slices.Clone(in)
		slices.Reverse(rev)
		if d := cmp.Diff(render(forest, true), render(Thread(rev), true)); d != "" {
			t.Fatalf("reversed input threads differently (-forward +reversed):\n%s", d)
		}
		if len(in) > 0 {
			k := int(data[0]) % (len(in) + 1)
			merged := Merge(Thread(in[:k]), in[k:])
			if d := cmp.Diff(render(forest, true), render(merged, true)); d != "" {
				t.Fatalf("Merge at %d differs from Thread (-thread +merge):\n%s", k, d)
			}
		}
	})
}
