package searchindex

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var day0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func entry(n int64, subject, from string) Entry {
	return Entry{Number: n, Date: day0.Add(time.Duration(n) * time.Hour), MessageID: fmt.Sprintf("<%d@t>", n), Subject: subject, From: from}
}

// open opens the index in dir and loads its bodies.
func open(t testing.TB, dir string, max int64) *Index {
	t.Helper()
	ix, err := Open(dir, max)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.LoadBodies(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix
}

func ids(r Result) []string {
	out := []string{}
	for _, h := range r.Hits {
		out = append(out, h.Group+" "+h.MessageID)
	}
	return out
}

func TestSearch(t *testing.T) {
	ix := open(t, t.TempDir(), 0)
	if err := ix.Append("comp.lang.go", []Entry{
		entry(1, "Generics in Go", "Ann <ann@x>"),
		entry(3, "Re: Generics in Go", "Bob <bob@x>"),
		entry(2, "Channels", "Ann <ann@x>"),
		entry(4, "Ünïcode SUBJECTS", "Carl <c@x>"),
		{Number: 5, MessageID: "<5@t>", Subject: "undated generics", From: "Dan"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Append("rec.food", []Entry{entry(10, "Go-to recipes", "Bob <bob@x>")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		q     Query
		want  []string
		total int
	}{
		{"a word in one group, newest first", Query{Groups: []string{"comp.lang.go"}, Text: "generics"},
			[]string{"comp.lang.go <3@t>", "comp.lang.go <1@t>", "comp.lang.go <5@t>"}, 3},
		{"every word must match", Query{Text: "re: GENERICS"}, []string{"comp.lang.go <3@t>"}, 1},
		{"subject or author", Query{Text: "bob"}, []string{"rec.food <10@t>", "comp.lang.go <3@t>"}, 2},
		{"author only", Query{Author: "ann"}, []string{"comp.lang.go <2@t>", "comp.lang.go <1@t>"}, 2},
		{"author does not look at subjects", Query{Author: "generics"}, []string{}, 0},
		{"across groups", Query{Text: "go"}, []string{"rec.food <10@t>", "comp.lang.go <3@t>", "comp.lang.go <1@t>"}, 3},
		{"date range", Query{Since: day0.Add(2 * time.Hour), Until: day0.Add(4 * time.Hour)}, []string{"comp.lang.go <3@t>", "comp.lang.go <2@t>"}, 2},
		{"unicode folded", Query{Text: "ünïcode subjects"}, []string{"comp.lang.go <4@t>"}, 1},
		{"limit keeps the highest numbers, total counts all", Query{Groups: []string{"comp.lang.go"}, Limit: 2}, []string{"comp.lang.go <4@t>", "comp.lang.go <5@t>"}, 5},
		{"a group not indexed", Query{Groups: []string{"alt.none"}}, []string{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ix.Search(tc.q)
			if d := cmp.Diff(tc.want, ids(r)); d != "" || r.Total != tc.total {
				t.Errorf("hits (-want +got):\n%s\ntotal %d, want %d", d, r.Total, tc.total)
			}
		})
	}
	if h := ix.High("comp.lang.go"); h != 5 {
		t.Errorf("High = %d, want 5", h)
	}
}

// Entries indexed already, appended again (an update that overlaps), are
// left out.
func TestAppendOverlap(t *testing.T) {
	ix := open(t, t.TempDir(), 0)
	ix.Append("g", []Entry{entry(1, "a", "x"), entry(2, "b", "x")})
	ix.Append("g", []Entry{entry(2, "b", "x"), entry(3, "c", "x")})
	if n := ix.Len("g"); n != 3 {
		t.Errorf("Len = %d, want 3", n)
	}
	if err := ix.Append("../evil", []Entry{entry(1, "a", "x")}); err == nil {
		t.Error("a group name with a slash was taken")
	}
}

// Reopened, the index is what was appended; a record cut by a crash (or
// damaged) ends the file there: it is truncated after the last whole
// batch (or, in a file without range records, the last good record), and
// indexing goes on from the range before it.
func TestReopenAndDamagedTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		want   int64
	}{
		{"intact", func(b []byte) []byte { return b }, 3},
		{"range record cut", func(b []byte) []byte { return b[:len(b)-5] }, 3},
		{"last record cut", func(b []byte) []byte {
			lines := bytes.SplitAfter(b, []byte("\n"))
			return slices.Concat(lines[0], lines[1], lines[2][:4])
		}, 2},
		{"a flipped byte in the second", func(b []byte) []byte {
			i := slices.Index(b, '\n') + 3
			b[i] ^= 1
			return b
		}, 1},
		{"garbage after", func(b []byte) []byte { return append(b, "junk\tjunk\n"...) }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ix := open(t, dir, 0)
			ix.Append("g", []Entry{entry(1, "tab\tin subject", "x"), entry(2, "b", "line\nbreak"), entry(3, "c", "x")})
			path := filepath.Join(dir, "g.idx")
			b, _ := os.ReadFile(path)
			os.WriteFile(path, tc.damage(b), 0o644)
			ix = open(t, dir, 0)
			if h := ix.High("g"); h != tc.want {
				t.Fatalf("High after reopen = %d, want %d", h, tc.want)
			}
			st, _ := os.Stat(path)
			if st.Size() != ix.Size() {
				t.Errorf("file %d bytes, index counts %d: the damaged tail stayed", st.Size(), ix.Size())
			}
			if r := ix.Search(Query{Text: "tab in"}); len(r.Hits) != 1 {
				t.Errorf("the cleaned subject is not found: %v", ids(r))
			}
			ix.Append("g", []Entry{entry(tc.want+1, "after", "x")})
			ix = open(t, dir, 0)
			if h := ix.High("g"); h != tc.want+1 {
				t.Errorf("appending after the repair: High %d, want %d", h, tc.want+1)
			}
		})
	}
}

// Past MaxBytes the least recently searched group goes, file and all.
func TestEvict(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, 0)
	one := func(g string) {
		if err := ix.Append(g, []Entry{entry(1, "subject", "from")}); err != nil {
			t.Fatal(err)
		}
	}
	one("a")
	per := ix.Size()
	ix = open(t, dir, 3*per)
	one("b")
	one("c")
	ix.Search(Query{Groups: []string{"a"}}) // a is used again: b is the oldest
	one("d")
	got := ix.Groups()
	sort.Strings(got)
	if d := cmp.Diff([]string{"a", "c", "d"}, got); d != "" {
		t.Errorf("groups kept (-want +got):\n%s", d)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.idx")); !os.IsNotExist(err) {
		t.Errorf("b.idx still there: %v", err)
	}
}

func FuzzRecord(f *testing.F) {
	f.Add(int64(1), int64(1700000000), "<a@b>", "Subject", "From <f@x>")
	f.Add(int64(99), int64(0), "<x>", "tab\there", "new\nline")
	f.Fuzz(func(t *testing.T, n, d int64, id, subj, from string) {
		if n <= 0 {
			return
		}
		e := Entry{Number: n, MessageID: id, Subject: subj, From: from}
		if d != 0 {
			e.Date = time.Unix(d, 0).UTC()
		}
		line := appendRecord(nil, e)
		got, ok := parseRecord(line)
		if !ok {
			t.Fatalf("record %q does not read back", line)
		}
		want := Entry{Number: n, Date: e.Date, MessageID: clean(id), Subject: clean(subj), From: clean(from)}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("round trip (-want +got):\n%s", d)
		}
		// Any single flipped byte is noticed (or yields the same record).
		for i := range line[:len(line)-1] {
			bad := slices.Clone(line)
			bad[i] ^= 0x20
			if e2, ok := parseRecord(bad); ok && !cmp.Equal(e2, got) {
				t.Fatalf("flipping byte %d of %q passed as %+v", i, line, e2)
			}
		}
	})
}

// A group indexed newest range first and then downward: its range grows
// both ways, searches find the newest articles from the first batch on
// and list hits newest first whatever order the batches came in, a
// reopened index has the same range, and a batch whose range record never
// got to disk is cut whole.
func TestRangeNewestFirst(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, 0)
	batch := func(lo, hi int64) []Entry {
		var es []Entry
		for n := lo; n <= hi; n++ {
			if n%7 != 0 { // gaps: articles expired or cancelled
				es = append(es, entry(n, fmt.Sprintf("post %d", n), "x"))
			}
		}
		return es
	}
	newest := func(ix *Index) string {
		r := ix.Search(Query{Groups: []string{"g"}, Text: "post", Limit: 1})
		if len(r.Hits) == 0 {
			return ""
		}
		return r.Hits[0].MessageID
	}
	if err := ix.AppendRange("g", 91, 100, batch(91, 100)); err != nil {
		t.Fatal(err)
	}
	if lo, hi := ix.Range("g"); lo != 91 || hi != 100 || newest(ix) != "<100@t>" {
		t.Fatalf("after the newest batch: range %d-%d, newest %s", lo, hi, newest(ix))
	}
	if err := ix.AppendRange("g", 81, 90, batch(81, 90)); err != nil {
		t.Fatal(err)
	}
	if err := ix.AppendRange("g", 101, 103, batch(101, 103)); err != nil {
		t.Fatal(err)
	}
	if err := ix.AppendRange("g", 71, 80, nil); err != nil { // a range with no article
		t.Fatal(err)
	}
	all := func(ix *Index) []string {
		var out []string
		for _, h := range ix.Search(Query{Groups: []string{"g"}, Text: "post"}).Hits {
			out = append(out, h.MessageID)
		}
		return out
	}
	var want []string
	for n := 103; n >= 81; n-- {
		if n%7 != 0 {
			want = append(want, fmt.Sprintf("<%d@t>", n))
		}
	}
	if d := cmp.Diff(want, all(ix)); d != "" {
		t.Errorf("hits (-want +got):\n%s", d)
	}
	if lo, hi := ix.Range("g"); lo != 71 || hi != 103 {
		t.Errorf("range %d-%d, want 71-103", lo, hi)
	}
	ix.Close()
	ix = open(t, dir, 0)
	if lo, hi := ix.Range("g"); lo != 71 || hi != 103 {
		t.Errorf("reopened: range %d-%d, want 71-103", lo, hi)
	}
	if d := cmp.Diff(want, all(ix)); d != "" {
		t.Errorf("reopened: hits (-want +got):\n%s", d)
	}
	if d := ix.Damage(); d != nil {
		t.Errorf("damage in an intact index: %q", d)
	}
	// A torn write of the next batch: its articles are there, its range
	// record only in part.
	ix.AppendRange("g", 61, 70, batch(61, 70))
	ix.Close()
	path := filepath.Join(dir, "g.idx")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)-4], 0o644)
	ix = open(t, dir, 0)
	if lo, hi := ix.Range("g"); lo != 71 || hi != 103 {
		t.Errorf("after a torn batch: range %d-%d, want 71-103", lo, hi)
	}
	if d := cmp.Diff(want, all(ix)); d != "" {
		t.Errorf("after a torn batch: hits (-want +got):\n%s", d)
	}
	if len(ix.Damage()) != 1 {
		t.Errorf("damage reports %q, want one", ix.Damage())
	}
	if err := ix.AppendRange("g", 61, 70, batch(61, 70)); err != nil {
		t.Fatal(err)
	}
	if lo, hi := ix.Range("g"); lo != 61 || hi != 103 || ix.Len("g") != len(want)+len(batch(61, 70)) {
		t.Errorf("indexed again: range %d-%d, %d articles", lo, hi, ix.Len("g"))
	}
}

// FuzzRangeRecord: a range record reads back as written, and a flipped
// byte is noticed; no input panics parseRange or passes with a bad range.
func FuzzRangeRecord(f *testing.F) {
	f.Add(int64(1), int64(5), []byte("R\t1\t5\t00000000\n"))
	f.Add(int64(90001), int64(100000), []byte("R\t\t\t\n"))
	f.Fuzz(func(t *testing.T, lo, hi int64, junk []byte) {
		if lo, hi, ok := parseRange(junk); ok && (lo <= 0 || hi < lo) {
			t.Fatalf("parseRange(%q) = %d-%d", junk, lo, hi)
		}
		if lo <= 0 || hi < lo {
			return
		}
		line := appendRange(nil, lo, hi)
		l, h, ok := parseRange(line)
		if !ok || l != lo || h != hi {
			t.Fatalf("%q reads back as %d-%d %v", line, l, h, ok)
		}
		if _, ok := parseRecord(line); ok {
			t.Fatalf("range record %q reads as an article", line)
		}
		for i := range line[:len(line)-1] {
			bad := slices.Clone(line)
			bad[i] ^= 0x20
			if l2, h2, ok := parseRange(bad); ok && (l2 != lo || h2 != hi) {
				t.Fatalf("flipping byte %d of %q passed as %d-%d", i, line, l2, h2)
			}
		}
	})
}

// FuzzIndexFile reads arbitrary bytes as a group's file: no panic; what
// is kept is whole (every article inside the range, each once, the rows
// sorted) and the file is cut to what was kept.
func FuzzIndexFile(f *testing.F) {
	var good []byte
	for _, n := range []int64{91, 95, 100} {
		good = appendRecord(good, entry(n, "s", "f"))
	}
	good = appendRange(good, 91, 100)
	good = appendRecord(good, entry(85, "s", "f"))
	good = appendRange(good, 81, 100)
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(appendRecord(appendRecord(nil, entry(1, "a", "b")), entry(1, "a", "b")))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "g.idx")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		g, _, err := load(path, "g")
		if err != nil {
			t.Fatal(err)
		}
		if len(g.order) != len(g.nums) {
			t.Fatalf("%d rows, %d in order", len(g.nums), len(g.order))
		}
		for k, r := range g.order {
			n := g.nums[r]
			if n < g.lo || n > g.hi {
				t.Fatalf("article %d outside the range %d-%d", n, g.lo, g.hi)
			}
			if k > 0 && g.nums[g.order[k-1]] >= n {
				t.Fatalf("order not ascending at %d", k)
			}
		}
		if st, err := os.Stat(path); err != nil || st.Size() != g.size || !bytes.Equal(b[:g.size], mustRead(t, path)) {
			t.Fatalf("file not cut to the %d bytes kept", g.size)
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
