package reader

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// mid turns a short name into a message-id: "a" -> "<a@x>".
func mid(name string) string { return "<" + name + "@x>" }

// art is an article named name, number n, dated minute minutes after t0,
// referencing refs (short names).
func art(n int64, name string, minute int, refs ...string) Summary {
	s := Summary{Number: n, MessageID: mid(name), Date: t0.Add(time.Duration(minute) * time.Minute)}
	if name == "" {
		s.MessageID = ""
	}
	for _, r := range refs {
		s.References = append(s.References, mid(r))
	}
	return s
}

// short undoes mid.
func short(id string) string {
	return strings.TrimSuffix(strings.TrimPrefix(id, "<"), "@x>")
}

// render draws a forest one node per line, indented by depth: "a" for an
// article (with "#n" when numbered duplicates make it ambiguous), "[a]" for
// a placeholder, "(no id)" for an article without a message-id.
func render(forest []*Node, numbers bool) []string {
	var out []string
	Walk(forest, func(n *Node, d int) bool {
		s := strings.Repeat("  ", d)
		switch {
		case n.Placeholder():
			s += "[" + short(n.ID) + "]"
		case n.ID == "":
			s += "(no id)"
		default:
			s += short(n.ID)
		}
		if numbers && n.Article != nil {
			s += fmt.Sprintf("#%d", n.Article.Number)
		}
		out = append(out, s)
		return true
	})
	return out
}

func TestThread(t *testing.T) {
	tests := []struct {
		name     string
		articles []Summary
		want     []string
		numbers  bool
	}{
		{"empty", nil, nil, false},
		{"chain", []Summary{art(1, "a", 0), art(2, "b", 1, "a"), art(3, "c", 2, "a", "b")},
			[]string{"a", "  b", "    c"}, false},
		{"roots newest activity first", []Summary{art(1, "a", 1), art(2, "b", 10, "a"), art(3, "x", 5)},
			[]string{"a", "  b", "x"}, false},
		{"children oldest first", []Summary{art(1, "a", 0), art(2, "c", 3, "a"), art(3, "b", 2, "a")},
			[]string{"a", "  b", "  c"}, false},
		{"same date: by number", []Summary{art(1, "a", 0), art(3, "b", 2, "a"), art(2, "c", 2, "a")},
			[]string{"a", "  c", "  b"}, false},
		{"missing parent", []Summary{art(2, "b", 1, "a")},
			[]string{"[a]", "  b"}, false},
		{"missing middle", []Summary{art(1, "a", 0), art(3, "c", 2, "a", "b")},
			[]string{"a", "  [b]", "    c"}, false},
		{"missing root and middle", []Summary{art(3, "c", 2, "a", "b"), art(4, "d", 3, "a")},
			[]string{"[a]", "  [b]", "    c", "  d"}, false},
		{"loop a->b->a", []Summary{art(1, "a", 0, "b"), art(2, "b", 1, "a")},
			[]string{"b", "  a"}, false},
		{"loop of three", []Summary{art(1, "a", 0, "c"), art(2, "b", 1, "a"), art(3, "c", 2, "b")},
			[]string{"c", "  a", "    b"}, false},
		{"self reference", []Summary{art(1, "a", 0, "a")},
			[]string{"a"}, false},
		{"self reference last: earlier one used", []Summary{art(2, "b", 1, "a", "b")},
			[]string{"[a]", "  b"}, false},
		{"repeated id in a chain", []Summary{art(3, "c", 2, "x", "y", "x")},
			[]string{"[x]", "  c"}, false}, // own claim x; y would be x's child and x's parent: dropped
		{"duplicate message-ids", []Summary{art(1, "a", 0), art(2, "a", 5), art(3, "c", 1, "a")},
			[]string{"a#2", "a#1", "  c#3"}, true},
		{"duplicate threads under its own parent", []Summary{art(1, "p", 0), art(2, "a", 1, "p"), art(3, "a", 2, "q")},
			[]string{"[q]", "  a#3", "p#1", "  a#2"}, true},
		{"in-reply-to fallback", []Summary{art(1, "a", 0), {Number: 2, MessageID: mid("b"), InReplyTo: mid("a"), Date: t0.Add(time.Minute)}},
			[]string{"a", "  b"}, false},
		{"references win over in-reply-to", []Summary{art(1, "a", 0), art(2, "x", 0),
			{Number: 3, MessageID: mid("b"), References: []string{mid("a")}, InReplyTo: mid("x"), Date: t0.Add(time.Minute)}},
			[]string{"a", "  b", "x"}, false},
		{"chain gives a parentless article a parent", []Summary{art(1, "b", 0), art(2, "c", 1, "a", "b")},
			[]string{"[a]", "  b", "    c"}, false},
		{"first chain in canonical order wins", []Summary{art(4, "d", 3, "x", "b"), art(3, "c", 2, "a", "b")},
			[]string{"[a]", "  [b]", "    c", "    d"}, false},
		{"own claim beats a chain", []Summary{art(2, "b", 1, "x"), art(3, "c", 2, "a", "b")},
			[]string{"[x]", "  b", "    c"}, false},
		{"no message-id", []Summary{art(1, "a", 0), art(2, "", 1, "a")},
			[]string{"a", "  (no id)"}, false},
		{"placeholder sorts by its earliest descendant", []Summary{art(1, "a", 0), art(2, "b", 2, "a"), art(3, "c", 1, "a", "m")},
			[]string{"a", "  [m]", "    c", "  b"}, false},
		{"undated articles sort first among siblings, roots last", []Summary{
			art(1, "a", 0), {Number: 2, MessageID: mid("b"), References: []string{mid("a")}}, art(3, "c", 1, "a"),
			{Number: 4, MessageID: mid("z")}},
			[]string{"a", "  b", "  c", "z"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := render(Thread(tc.articles), tc.numbers)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Thread (-want +got):\n%s", d)
			}
			// Any input order gives the same forest.
			rev := slices.Clone(tc.articles)
			slices.Reverse(rev)
			if d := cmp.Diff(got, render(Thread(rev), tc.numbers)); d != "" {
				t.Errorf("reversed input gives another forest (-forward +reversed):\n%s", d)
			}
			checkForest(t, tc.articles, Thread(tc.articles))
		})
	}
}

// checkForest asserts the structural properties every forest must have:
// every input article is exactly one Node, parents and children agree, there
// is no cycle, placeholders have children, roots have no parent, and
// Latest/Earliest bound the subtree's dates.
func checkForest(t testing.TB, in []Summary, forest []*Node) {
	t.Helper()
	visited := map[*Node]bool{}
	var arts []Summary
	ok := true
	Walk(forest, func(n *Node, depth int) bool {
		if visited[n] {
			t.Errorf("node %s visited twice (a cycle or a shared child)", n.ID)
			ok = false
			return false
		}
		visited[n] = true
		if depth == 0 && n.Parent != nil {
			t.Errorf("root %s has a parent", n.ID)
		}
		for _, c := range n.Children {
			if c.Parent != n {
				t.Errorf("child %s of %s points to another parent", c.ID, n.ID)
			}
		}
		if n.Placeholder() && len(n.Children) == 0 {
			t.Errorf("placeholder %s without children", n.ID)
		}
		if n.Article != nil {
			arts = append(arts, *n.Article)
			if d := n.Article.Date; !d.IsZero() && (d.After(n.Latest) || d.Before(n.Earliest)) {
				t.Errorf("%s: date %v outside [%v, %v]", n.ID, d, n.Earliest, n.Latest)
			}
		}
		for _, c := range n.Children {
			if c.Latest.After(n.Latest) {
				t.Errorf("%s: child %s is newer (%v) than the subtree's Latest %v", n.ID, c.ID, c.Latest, n.Latest)
			}
		}
		return true
	})
	if !ok {
		return
	}
	for n := range visited {
		for a := n; a != nil; a = a.Parent {
			if !visited[a] {
				t.Errorf("ancestor %s of %s is not in the forest", a.ID, n.ID)
				break
			}
		}
	}
	want := slices.Clone(in)
	slices.SortFunc(want, func(a, b Summary) int { return compareSummary(&a, &b) })
	slices.SortFunc(arts, func(a, b Summary) int { return compareSummary(&a, &b) })
	if len(want) == 0 {
		want = nil
	}
	same := slices.EqualFunc(want, arts, func(a, b Summary) bool { return compareSummary(&a, &b) == 0 })
	if !same {
		t.Errorf("articles in the forest differ from the input (-in +forest):\n%s", cmp.Diff(want, arts))
	}
}

// TestThreadDeep threads 1000-deep chains in which every article lists all
// its ancestors (the worst case for the loop checks), in order and reversed,
// and a chain closed into a loop; nothing recurses.
func TestThreadDeep(t *testing.T) {
	const depth = 1000
	var chain []Summary
	var refs []string
	for i := 0; i < depth; i++ {
		name := fmt.Sprintf("m%04d", i)
		chain = append(chain, art(int64(i+1), name, i, refs...))
		refs = append(refs, name)
	}
	for _, order := range []string{"forward", "reversed"} {
		in := slices.Clone(chain)
		if order == "reversed" {
			slices.Reverse(in)
		}
		forest := Thread(in)
		if len(forest) != 1 {
			t.Fatalf("%s: %d roots, want 1", order, len(forest))
		}
		maxDepth := 0
		Walk(forest, func(n *Node, d int) bool { maxDepth = max(maxDepth, d); return true })
		if maxDepth != depth-1 {
			t.Errorf("%s: depth %d, want %d", order, maxDepth, depth-1)
		}
		if c := Count(forest[0]); c != depth {
			t.Errorf("%s: Count = %d", order, c)
		}
		checkForest(t, in, forest)
	}
	// Close the chain: the root references the last article.
	loop := slices.Clone(chain)
	loop[0].References = []string{mid(fmt.Sprintf("m%04d", depth-1))}
	forest := Thread(loop)
	if len(forest) != 1 {
		t.Fatalf("loop: %d roots", len(forest))
	}
	checkForest(t, loop, forest)
}

// TestMergeEqualsThread is the incremental-merge property: threading new
// articles into an existing forest gives the forest of all the articles at
// once, for random reference graphs split at random points, including
// re-fetched (overlapping) articles.
func TestMergeEqualsThread(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		all := randomArticles(rng, 1+rng.IntN(60))
		k := rng.IntN(len(all) + 1)
		old, newer := all[:k], slices.Clone(all[k:])
		// Sometimes the fetch overlaps: articles already held come again.
		for i := rng.IntN(3); i > 0 && k > 0; i-- {
			newer = append(newer, old[rng.IntN(k)])
		}
		merged := Merge(Thread(old), newer)
		whole := Thread(MergeSummaries(old, newer))
		if d := cmp.Diff(render(whole, true), render(merged, true)); d != "" {
			t.Fatalf("seed %d: Merge differs from Thread of everything (-thread +merge):\n%s", seed, d)
		}
		checkForest(t, MergeSummaries(old, newer), merged)
		// And in one go, in a shuffled order.
		shuffled := MergeSummaries(old, newer)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if d := cmp.Diff(render(whole, true), render(Thread(shuffled), true)); d != "" {
			t.Fatalf("seed %d: shuffled input threads differently:\n%s", seed, d)
		}
	}
}

// randomArticles makes n articles over a small id space, with references
// to earlier, later, missing and own ids, duplicates and equal dates.
func randomArticles(rng *rand.Rand, n int) []Summary {
	var out []Summary
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("i%d", rng.IntN(n+n/4+1))
		var refs []string
		for r := rng.IntN(5); r > 0; r-- {
			refs = append(refs, fmt.Sprintf("i%d", rng.IntN(n+5)))
		}
		out = append(out, art(int64(i+1), name, rng.IntN(20), refs...))
	}
	return out
}

func TestMergeSummaries(t *testing.T) {
	old := []Summary{art(1, "a", 0), art(2, "b", 1)}
	newer := []Summary{art(2, "b", 1, "a"), art(3, "c", 2)}
	got := MergeSummaries(old, newer)
	want := []Summary{art(1, "a", 0), art(2, "b", 1, "a"), art(3, "c", 2)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("MergeSummaries (-want +got):\n%s", d)
	}
	if len(old[1].References) != 0 {
		t.Error("MergeSummaries modified its input")
	}
}

func TestFind(t *testing.T) {
	forest := Thread([]Summary{art(1, "a", 0), art(2, "b", 1, "a"), art(3, "c", 2, "a", "m"), art(4, "x", 3)})
	tests := []struct{ id, root, node string }{
		{"a", "a", "a"}, {"b", "a", "b"}, {"c", "a", "c"}, {"m", "a", "m"}, {"x", "x", "x"}, {"nope", "", ""},
	}
	for _, tc := range tests {
		root, n := Find(forest, mid(tc.id))
		got := [2]string{}
		if root != nil {
			got = [2]string{short(root.ID), short(n.ID)}
		}
		want := [2]string{tc.root, tc.node}
		if tc.root == "" {
			want = [2]string{}
		}
		if got != want {
			t.Errorf("Find(%s) = %v, want %v", tc.id, got, want)
		}
	}
}

// TestMergeDoesNotModify checks that Merge leaves the cached forest alone
// (readers may be rendering it).
func TestMergeDoesNotModify(t *testing.T) {
	old := Thread([]Summary{art(1, "a", 0), art(2, "b", 1, "a")})
	before := render(old, true)
	Merge(old, []Summary{art(3, "c", 2, "b"), art(4, "z", 9)})
	if d := cmp.Diff(before, render(old, true)); d != "" {
		t.Errorf("Merge modified the existing forest:\n%s", d)
	}
}

// BenchmarkThread threads a group-sized set of articles (realistic shape:
// threads of a few to a few dozen articles with full References).
func BenchmarkThread(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		arts := realisticArticles(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				Thread(arts)
			}
		})
	}
}

// BenchmarkMerge is one background refresh of a cached group: a few new
// articles merged into a thread list.
func BenchmarkMerge(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		arts := realisticArticles(n + 5)
		forest := Thread(arts[:n])
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				Merge(forest, arts[n:])
			}
		})
	}
}

func realisticArticles(n int) []Summary {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []Summary
	var starts []int
	for i := 0; i < n; i++ {
		var refs []string
		if len(starts) > 0 && rng.IntN(4) != 0 {
			// A reply to a recent thread: its References are a parent's plus the parent.
			p := out[starts[len(starts)-1-rng.IntN(min(len(starts), 30))]+rng.IntN(3)%max(1, i-starts[len(starts)-1])]
			refs = append(slices.Clone(p.References), p.MessageID)
		} else {
			starts = append(starts, i)
		}
		s := Summary{Number: int64(i + 1), MessageID: fmt.Sprintf("<%d.%d@news.example>", i, rng.Uint32()),
			References: refs, Subject: "Re: subject", From: "someone@example.org", Date: t0.Add(time.Duration(i) * time.Minute)}
		out = append(out, s)
	}
	return out
}

// An article posted through newsweb enters the cached list with number 0;
// when the server's copy arrives with its number, it replaces it.
func TestMergeSummariesPosted(t *testing.T) {
	old := []Summary{{Number: 1, MessageID: "<a@x>"}, {MessageID: "<posted@x>", Subject: "mine"}, {Number: 0, MessageID: "<other@x>"}}
	newer := []Summary{{Number: 2, MessageID: "<posted@x>", Subject: "mine"}}
	want := []Summary{{Number: 1, MessageID: "<a@x>"}, {Number: 0, MessageID: "<other@x>"}, {Number: 2, MessageID: "<posted@x>", Subject: "mine"}}
	if d := cmp.Diff(want, MergeSummaries(old, newer)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
