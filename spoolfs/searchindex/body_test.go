package searchindex

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// bodyGroup indexes comp.lang.go with overviews 1-5 and the bodies of 1-4.
func bodyGroup(t *testing.T, dir string) *Index {
	t.Helper()
	ix := open(t, dir, 0)
	if err := ix.Append("comp.lang.go", []Entry{
		entry(1, "Generics", "Ann <ann@x>"),
		entry(2, "Re: Generics", "Bob <bob@x>"),
		entry(3, "Channels", "Carl <c@x>"),
		entry(4, "Ünïcode", "Dan <d@x>"),
		entry(5, "Not fetched yet", "Eve <e@x>"),
	}); err != nil {
		t.Fatal(err)
	}
	if err := ix.AppendBodies("comp.lang.go", []Body{
		{2, "I think type parameters are fine.\nThe compiler is fast enough."},
		{1, "Type parameters arrived in Go 1.18: the compiler checks them."},
		{3, "Unbuffered channels <b>block</b> until the receiver is ready; parameters type-checked."},
		{4, "ÜBER große Straße"},
	}); err != nil {
		t.Fatal(err)
	}
	return ix
}

type bodyHit struct {
	ID      string
	Snippet []Fragment
}

func bodyHits(r Result) []bodyHit {
	out := []bodyHit{}
	for _, h := range r.Hits {
		out = append(out, bodyHit{h.MessageID, h.Snippet})
	}
	return out
}

func TestBodySearch(t *testing.T) {
	ix := bodyGroup(t, t.TempDir())
	g := []string{"comp.lang.go"}
	for _, tc := range []struct {
		name string
		q    Query
		want []bodyHit
	}{
		{"a body word, with where it is", Query{Groups: g, Text: "compiler"}, []bodyHit{
			{"<2@t>", []Fragment{{Text: "I think type parameters are fine. The "}, {Text: "compiler", Match: true}, {Text: " is fast enough."}}},
			{"<1@t>", []Fragment{{Text: "Type parameters arrived in Go 1.18: the "}, {Text: "compiler", Match: true}, {Text: " checks them."}}},
		}},
		{"words are whole words, not substrings", Query{Groups: g, Text: "compile"}, []bodyHit{}},
		{"every word, in the subject or the body", Query{Groups: g, Text: "generics compiler checks"}, []bodyHit{
			{"<1@t>", []Fragment{{Text: "Type parameters arrived in Go 1.18: the "}, {Text: "compiler", Match: true}, {Text: " "}, {Text: "checks", Match: true}, {Text: " them."}}},
		}},
		{"a subject match needs no snippet", Query{Groups: g, Text: "channels"}, []bodyHit{{"<3@t>", nil}}},
		{"a phrase: words one after the other", Query{Groups: g, Text: `"type parameters"`}, []bodyHit{
			{"<2@t>", []Fragment{{Text: "I think "}, {Text: "type parameters", Match: true}, {Text: " are fine. The compiler is fast enough."}}},
			{"<1@t>", []Fragment{{Text: "Type parameters", Match: true}, {Text: " arrived in Go 1.18: the compiler checks them."}}},
		}},
		{"the words of a phrase apart do not match it", Query{Groups: g, Text: `"parameters type"`}, []bodyHit{
			{"<3@t>", []Fragment{{Text: "…channels <b>block</b> until the receiver is ready; "}, {Text: "parameters type", Match: true}, {Text: "-checked."}}},
		}},
		{"markup is text (escaped by the page)", Query{Groups: g, Text: "block"}, []bodyHit{
			{"<3@t>", []Fragment{{Text: "Unbuffered channels <b>"}, {Text: "block", Match: true}, {Text: "</b> until the receiver is ready; parameters type-checked."}}},
		}},
		{"folded: ß is ss, ü is u", Query{Groups: g, Text: "uber GROSSE"}, []bodyHit{
			{"<4@t>", []Fragment{{Text: "ÜBER", Match: true}, {Text: " "}, {Text: "große", Match: true}, {Text: " Straße"}}},
		}},
		{"unicode words", Query{Groups: g, Text: "über große"}, []bodyHit{
			{"<4@t>", []Fragment{{Text: "ÜBER", Match: true}, {Text: " "}, {Text: "große", Match: true}, {Text: " Straße"}}},
		}},
		{"with the author filter", Query{Groups: g, Text: "compiler", Author: "bob"}, []bodyHit{
			{"<2@t>", []Fragment{{Text: "I think type parameters are fine. The "}, {Text: "compiler", Match: true}, {Text: " is fast enough."}}},
		}},
		{"with a date range", Query{Groups: g, Text: "compiler", Until: day0.Add(90 * time.Minute)}, []bodyHit{
			{"<1@t>", []Fragment{{Text: "Type parameters arrived in Go 1.18: the "}, {Text: "compiler", Match: true}, {Text: " checks them."}}},
		}},
		{"across groups", Query{Text: "receiver"}, []bodyHit{
			{"<3@t>", []Fragment{{Text: "Unbuffered channels <b>block</b> until the "}, {Text: "receiver", Match: true}, {Text: " is ready; parameters type-checked."}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ix.Search(tc.q)
			if d := cmp.Diff(tc.want, bodyHits(r)); d != "" || r.Total != len(tc.want) || r.Approx {
				t.Errorf("hits (-want +got):\n%s\ntotal %d approx %v", d, r.Total, r.Approx)
			}
		})
	}
	if n := ix.BodyLen("comp.lang.go"); n != 4 {
		t.Errorf("BodyLen = %d, want 4", n)
	}
	if got := ix.BodyTodo("comp.lang.go", 10); len(got) != 1 || got[0].Number != 5 {
		t.Errorf("BodyTodo = %+v, want article 5", got)
	}
	if err := ix.AppendBodies("alt.none", []Body{{1, "x"}}); err == nil {
		t.Error("bodies of a group with no overview were taken")
	}
}

// A snippet of a long body is a stretch around the first match, cut at
// words, with "…" where it is cut.
func TestSnippetCut(t *testing.T) {
	text := strings.Repeat("lorem ipsum ", 20) + "needle in the haystack " + strings.Repeat("dolor sit amet ", 30)
	got := snippet([]byte(text), parseTerms("needle"))
	want := []Fragment{
		{Text: "…ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum "},
		{Text: "needle", Match: true},
		{Text: " in the haystack dolor sit amet dolor sit amet dolor sit amet dolor sit amet dolor sit amet dolor sit amet dolor sit amet dolor sit amet dolor sit amet dolor…"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("snippet (-want +got):\n%s", d)
	}
}

func TestParseQuery(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []term
	}{
		{"Go  Generics", []term{{"go", []string{"go"}}, {"generics", []string{"generics"}}}},
		{`"Type  Parameters" compiler`, []term{{"type parameters", []string{"type", "parameters"}}, {"compiler", []string{"compiler"}}}},
		{`re: "unclosed phrase`, []term{{"re:", []string{"re"}}, {"unclosed phrase", []string{"unclosed", "phrase"}}}},
		{`"" c++ x`, []term{{"c++", nil}, {"x", nil}}},
		{"type-checked", []term{{"type-checked", []string{"type", "checked"}}}},
	} {
		if d := cmp.Diff(tc.want, parseTerms(tc.in), cmp.AllowUnexported(term{})); d != "" {
			t.Errorf("parseTerms(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

// Reopened, the bodies are what was appended.
func TestBodyReopen(t *testing.T) {
	dir := t.TempDir()
	ix := bodyGroup(t, dir)
	want := bodyHits(ix.Search(Query{Text: "parameters"}))
	ix.Close()
	ix = open(t, dir, 0)
	defer ix.Close()
	if d := cmp.Diff(want, bodyHits(ix.Search(Query{Text: "parameters"}))); d != "" {
		t.Errorf("after reopening (-before +after):\n%s", d)
	}
	if n := ix.BodyLen("comp.lang.go"); n != 4 {
		t.Errorf("BodyLen = %d, want 4", n)
	}
	if d := ix.Damage(); d != nil {
		t.Errorf("damage reported in an intact index: %q", d)
	}
	if err := ix.AppendBodies("comp.lang.go", []Body{{5, "fetched later"}}); err != nil {
		t.Fatal(err)
	}
	if r := ix.Search(Query{Text: "later"}); len(r.Hits) != 1 {
		t.Errorf("a body appended after reopening: %v", ids(r))
	}
}

// Until LoadBodies has read a group's body file, its overview is searched
// and its bodies take no appends (they would go past records not read).
func TestBodiesLoading(t *testing.T) {
	dir := t.TempDir()
	bodyGroup(t, dir).Close()
	ix, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if r := ix.Search(Query{Text: "generics"}); len(r.Hits) != 2 {
		t.Errorf("overview before the bodies load: %v", ids(r))
	}
	if r := ix.Search(Query{Text: "compiler"}); len(r.Hits) != 0 {
		t.Errorf("body words before the bodies load: %v", ids(r))
	}
	if err := ix.AppendBodies("comp.lang.go", []Body{{5, "x"}}); !errors.Is(err, ErrBodiesLoading) {
		t.Errorf("AppendBodies before the bodies load: %v, want ErrBodiesLoading", err)
	}
	size := ix.Size()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ix.LoadBodies(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("LoadBodies with a done context: %v", err)
	}
	if err := ix.LoadBodies(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := ix.Search(Query{Text: "compiler"}); len(r.Hits) != 2 {
		t.Errorf("body words after the bodies load: %v", ids(r))
	}
	if ix.Size() != size {
		t.Errorf("size %d after loading, %d before: the bound counts body files from Open on", ix.Size(), size)
	}
}

// A damaged body file says what it lost and keeps serving the rest.
func TestBodyDamage(t *testing.T) {
	// Record offsets of bodies 1-4 in the file bodyGroup writes.
	lens := []int{61, 62, 86, 20} // text lengths
	off := func(i int) int {
		o := 0
		for _, n := range lens[:i] {
			o += bodyHeader + n + bodyTrailer
		}
		return o
	}
	for _, tc := range []struct {
		name    string
		damage  func(dir string, b []byte) []byte
		found   []string // message-ids found by "parameters"
		todo    []int64  // the bodies to index again, newest first
		reports []string
	}{
		{"a flipped byte in the second record's text", func(_ string, b []byte) []byte { b[off(1)+bodyHeader+3] ^= 1; return b },
			[]string{"<3@t>", "<1@t>"}, []int64{5, 2},
			[]string{"comp.lang.go.body: bytes 83-167 damaged: the bodies there are indexed again; the rest is kept"}},
		{"a flipped byte in the second record's header", func(_ string, b []byte) []byte { b[off(1)+4] ^= 1; return b },
			[]string{"<3@t>", "<1@t>"}, []int64{5, 2},
			[]string{"comp.lang.go.body: bytes 83-167 damaged: the bodies there are indexed again; the rest is kept"}},
		{"garbage between records", func(_ string, b []byte) []byte {
			return slices.Concat(b[:off(1)], []byte("NBgarbage"), b[off(1):])
		}, []string{"<3@t>", "<2@t>", "<1@t>"}, []int64{5},
			[]string{"comp.lang.go.body: bytes 83-92 damaged: the bodies there are indexed again; the rest is kept"}},
		{"the last record cut short", func(_ string, b []byte) []byte { return b[:len(b)-3] },
			[]string{"<3@t>", "<2@t>", "<1@t>"}, []int64{5, 4},
			[]string{"comp.lang.go.body: damaged tail cut at byte 275 (39 bytes): the bodies there are indexed again"}},
		{"a record twice", func(_ string, b []byte) []byte { return slices.Concat(b, b[:off(1)]) },
			[]string{"<3@t>", "<2@t>", "<1@t>"}, []int64{5}, nil},
		{"the overview's tail cut", func(dir string, b []byte) []byte {
			p := filepath.Join(dir, "comp.lang.go.idx")
			o, _ := os.ReadFile(p)
			lines := bytes.SplitAfter(o, []byte("\n"))
			os.WriteFile(p, append(bytes.Join(lines[:2], nil), lines[2][:5]...), 0o644) // the third record cut
			return b
		}, []string{"<2@t>", "<1@t>"}, nil, []string{
			"comp.lang.go.idx: damaged at byte 102: 5 bytes cut; articles outside 1-2 indexed again",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ix := bodyGroup(t, dir)
			ix.Close()
			path := filepath.Join(dir, "comp.lang.go.body")
			b, _ := os.ReadFile(path)
			if len(b) != off(4) {
				t.Fatalf("body file %d bytes, the test expects %d", len(b), off(4))
			}
			os.WriteFile(path, tc.damage(dir, b), 0o644)
			ix = open(t, dir, 0)
			defer ix.Close()
			var reports []string
			for _, r := range ix.Damage() {
				reports = append(reports, strings.TrimPrefix(r, dir+"/"))
			}
			if d := cmp.Diff(tc.reports, reports); d != "" {
				t.Errorf("damage reports (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.found, ids2(ix.Search(Query{Text: "parameters"}))); d != "" {
				t.Errorf("found after the damage (-want +got):\n%s", d)
			}
			var todo []int64
			for _, e := range ix.BodyTodo("comp.lang.go", 10) {
				todo = append(todo, e.Number)
			}
			if d := cmp.Diff(tc.todo, todo, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("bodies to index (-want +got):\n%s", d)
			}
			st, _ := os.Stat(path)
			o, _ := os.Stat(filepath.Join(dir, "comp.lang.go.idx"))
			if st.Size()+o.Size() != ix.Size() {
				t.Errorf("files %d bytes, index counts %d", st.Size()+o.Size(), ix.Size())
			}
			// Indexing goes on with the articles without a body record.
			ix.Append("comp.lang.go", []Entry{entry(3, "Channels", "Carl <c@x>"), entry(4, "Ünïcode", "Dan <d@x>"), entry(5, "x", "y")})
			var bs []Body
			for _, e := range ix.BodyTodo("comp.lang.go", 10) {
				bs = append(bs, Body{e.Number, "parameters"})
			}
			if err := ix.AppendBodies("comp.lang.go", bs); err != nil {
				t.Fatal(err)
			}
			if n := len(ix.Search(Query{Text: "parameters"}).Hits); n != len(tc.found)+len(bs) {
				t.Errorf("after indexing again %d hits, want %d", n, len(tc.found)+len(bs))
			}
		})
	}
}

func ids2(r Result) []string {
	out := []string{}
	for _, h := range r.Hits {
		out = append(out, h.MessageID)
	}
	return out
}

// A body record read back for a snippet that fails its checksum (damage
// after Open) gives no snippet, and a phrase in it no match.
func TestBodyDamagedAfterOpen(t *testing.T) {
	dir := t.TempDir()
	ix := bodyGroup(t, dir)
	defer ix.Close()
	f, err := os.OpenFile(filepath.Join(dir, "comp.lang.go.body"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("X"), bodyHeader+2) // in the first record's text
	f.Close()
	if d := cmp.Diff([]bodyHit{{"<1@t>", nil}}, bodyHits(ix.Search(Query{Text: "arrived"}))); d != "" {
		t.Errorf("word search (-want +got):\n%s", d)
	}
	if r := ix.Search(Query{Text: `"parameters arrived"`}); len(r.Hits) != 0 {
		t.Errorf("a phrase in a damaged record matched: %v", ids(r))
	}
}

// The bound counts bodies; a dropped group loses both files.
func TestBodyEvict(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, 0)
	fill := func(g string) {
		if err := ix.Append(g, []Entry{entry(1, "s", "f")}); err != nil {
			t.Fatal(err)
		}
		if err := ix.AppendBodies(g, []Body{{1, strings.Repeat("word ", 200)}}); err != nil {
			t.Fatal(err)
		}
	}
	fill("a")
	per := ix.Size()
	ix.Close()
	ix = open(t, dir, 2*per+per/2)
	defer ix.Close()
	fill("b")
	fill("c")
	if d := cmp.Diff([]string{"b", "c"}, ix.Groups()); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	for _, name := range []string{"a.idx", "a.body"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", name, err)
		}
	}
}

// FuzzBodyFile reads arbitrary bytes as a body file: no panic, records in
// file order, each one re-encoded as the bytes it was read from, and
// damage spans that do not overlap the records.
func FuzzBodyFile(f *testing.F) {
	good := appendBodyRecord(nil, 1, []byte("hello world"))
	good = appendBodyRecord(good, 7, nil)
	good = appendBodyRecord(good, 9, []byte("große straße"))
	f.Add(good)
	f.Add(append(slices.Clone(good[:30]), good[10:]...))
	f.Add([]byte("NBNBNB"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var last, lastEnd int64
		end, err := scanBody(bytes.NewReader(b), int64(len(b)), func(r bodyRecord) {
			if r.number <= 0 || r.off < lastEnd {
				t.Fatalf("record %d at %d after %d ending at %d", r.number, r.off, last, lastEnd)
			}
			rec := appendBodyRecord(nil, r.number, r.text)
			if !bytes.Equal(rec, b[r.off:r.off+int64(len(rec))]) {
				t.Fatalf("record %d at %d does not re-encode to its bytes", r.number, r.off)
			}
			last, lastEnd = r.number, r.off+int64(len(rec))
		}, func(from, to int64) {
			if from < lastEnd || to <= from {
				t.Fatalf("damage %d-%d after a record ending at %d", from, to, lastEnd)
			}
		})
		if err != nil || end != lastEnd {
			t.Fatalf("end %d, last record ends at %d, err %v", end, lastEnd, err)
		}
		// Whatever was good reads back the same after a good record is
		// appended past the (cut) end.
		more := appendBodyRecord(slices.Clone(b[:end]), last+1, []byte("appended"))
		var n int64
		scanBody(bytes.NewReader(more), int64(len(more)), func(r bodyRecord) { n = r.number }, func(_, _ int64) {})
		if n != last+1 {
			t.Fatalf("the record appended after the good part reads back as %d, want %d", n, last+1)
		}
	})
}

// FuzzParseQuery: terms are lower-case and non-empty, their words those of
// their text, and quoting each term again parses to the same terms.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{`go "type parameters"`, `"`, `a"b"c`, "ÜBER große", "c++ \"\" x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		terms := parseTerms(s)
		var again []string
		for _, tm := range terms {
			if tm.text == "" || tm.text != strings.Join(strings.Fields(tm.text), " ") {
				t.Fatalf("term %q of %q not trimmed", tm.text, s)
			}
			if d := cmp.Diff(wordsOf(tm.text), tm.words); d != "" {
				t.Fatalf("words of %q (-want +got):\n%s", tm.text, d)
			}
			if strings.Contains(tm.text, `"`) {
				return // a quote inside a word cannot be quoted again
			}
			again = append(again, `"`+tm.text+`"`)
		}
		if d := cmp.Diff(terms, parseTerms(strings.Join(again, " ")), cmp.AllowUnexported(term{})); d != "" {
			t.Fatalf("%q quoted again (-first +again):\n%s", s, d)
		}
	})
}

// FuzzSnippet: any text and query give a snippet of valid UTF-8 on one
// line whose marked pieces are the query's words, and none when the text
// holds none of them.
func FuzzSnippet(f *testing.F) {
	f.Add([]byte("The zebrafish regrows its fins."), "zebrafish fins")
	f.Add([]byte("ÜBER große\nStraße \xff\xfe"), `"über große"`)
	f.Add([]byte(strings.Repeat("a bb ", 100)), "bb")
	f.Fuzz(func(t *testing.T, text []byte, q string) {
		terms := parseTerms(q)
		frags := snippet(text, terms)
		want := map[string]bool{}
		for _, tm := range terms {
			want[strings.Join(tm.words, " ")] = true
		}
		for _, fr := range frags {
			if !utf8.ValidString(fr.Text) || strings.ContainsAny(fr.Text, "\n\r") {
				t.Fatalf("fragment %q: not one line of valid UTF-8", fr.Text)
			}
			if fr.Match && !want[strings.Join(wordsOf(fr.Text), " ")] {
				t.Fatalf("marked %q, which is no term of %q", fr.Text, q)
			}
		}
		if len(frags) > 0 && len(findTerms(text, terms, true)) == 0 {
			t.Fatalf("a snippet %+v of a text without the terms", frags)
		}
	})
}

func TestHasPhrase(t *testing.T) {
	for _, tc := range []struct {
		text, phrase string
		want         bool
	}{
		{"bye bye bye now", "bye bye now", true}, // a partial match restarts inside itself
		{"aa bb aa bb aa cc", "aa bb aa cc", true},
		{"the brown dog and the fox", "brown fox", false},
		{"The Brown\nFOX", "brown fox", true},
	} {
		tm := term{text: tc.phrase, words: wordsOf(tc.phrase)}
		if got := hasPhrase([]byte(tc.text), tm); got != tc.want {
			t.Errorf("hasPhrase(%q, %q) = %v, want %v", tc.text, tc.phrase, got, tc.want)
		}
	}
}

// FuzzPhrase: hasPhrase agrees with findTerms, the slower reference that
// keeps the last words seen.
func FuzzPhrase(f *testing.F) {
	f.Add([]byte("aa aa aa bb"), "aa aa bb")
	f.Add([]byte("bye bye bye now"), "bye bye now")
	f.Add([]byte("The Brown FOX, the brown dog"), "brown fox")
	f.Fuzz(func(t *testing.T, text []byte, phrase string) {
		tm := term{text: phrase, words: wordsOf(phrase)}
		want := len(findTerms(text, []term{tm}, true)) > 0
		if got := hasPhrase(text, tm); got != want {
			t.Fatalf("hasPhrase(%q, %q) = %v, findTerms says %v", text, phrase, got, want)
		}
	})
}

// FuzzWords: eachWord agrees with a slow reference, rune by rune: maximal
// runs of letters and digits, folded, kept when 2 to 64 bytes long.
func FuzzWords(f *testing.F) {
	f.Add([]byte("The Brown FOX, ÜBER große\xffStraße a 1.18 " + strings.Repeat("x", 70)))
	f.Add([]byte("İstanbul ǅ ﬁne ab\u0301c"))
	f.Fuzz(func(t *testing.T, text []byte) {
		type word struct {
			start, end int
			w          string
		}
		var want []word
		for i := 0; i < len(text); {
			r, n := utf8.DecodeRune(text[i:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				i += n
				continue
			}
			start, low := i, ""
			for i < len(text) {
				r, n := utf8.DecodeRune(text[i:])
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				low = string(foldRune([]byte(low), r))
				i += n
			}
			if len(low) >= minWord && len(low) <= maxWord {
				want = append(want, word{start, i, low})
			}
		}
		var got []word
		eachWord(text, func(start, end int, w []byte) bool {
			got = append(got, word{start, end, string(w)})
			return true
		})
		if d := cmp.Diff(want, got, cmp.AllowUnexported(word{})); d != "" {
			t.Fatalf("words of %q (-reference +eachWord):\n%s", text, d)
		}
	})
}
