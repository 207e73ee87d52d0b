package reader

// Theory of operation: threading (after Jamie Zawinski's algorithm, "message
// threading", without its subject grouping).
//
// Input is a list of Summaries; output is a forest of Nodes. Every input
// article is exactly one Node. A message-id that is referenced but not in
// the input becomes a placeholder Node (Article nil), so a thread with a
// missing middle stays one tree and the display can show the gap.
//
// The result must not depend on the input order (so that Merge, which
// threads old and new articles together, equals threading everything at
// once), so the articles are first sorted into a canonical order (by
// message-id, then number, then the other fields), and every later rule is
// "first in canonical order wins". Then, in passes:
//
//  1. Each article gets a Node, indexed by message-id. A second article with
//     the same message-id (a duplicate) gets a Node of its own that is not
//     indexed: replies attach to the first, the duplicate still threads
//     under its own parent.
//  2. Each article's own claim: its parent is its last reference (References,
//     or In-Reply-To when there are none). A reference to itself is skipped;
//     so is one that would close a loop (the parent descends from the
//     article), and the next earlier reference is tried. A referenced
//     message-id with no Node gets a placeholder.
//  3. The references chains: in "A B C", B's parent is A and C's is B, for
//     Nodes that have no parent yet (placeholders, and articles that claimed
//     none); links that would close a loop or point at themselves are
//     skipped. An existing link is never changed (JWZ's rule), which with
//     the canonical order makes the result deterministic.
//  4. Placeholders left without children are dropped.
//  5. Each Node's Latest (newest Date in its subtree) and Earliest are
//     computed; children are sorted by date, oldest first (a placeholder
//     by its earliest descendant), roots by Latest, newest first. Ties are
//     broken by article number, then message-id.
//
// Loop checks walk up from the would-be parent, so they cost the depth of
// the tree, and only links that are actually made are checked. Nothing
// recurses: every traversal uses an explicit stack, so chains thousands deep
// are fine.
//
// Subject-based grouping (JWZ step 5, gathering articles with the same
// subject under one root) is deliberately not done: it merges unrelated
// threads that share a subject ("Help!") and the References of news
// articles are reliable enough that readers (INN's nnrpd overviews, slrn,
// tin's default) thread by references.

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// A Node is one message in a thread forest: an article, or a placeholder for
// a message-id that articles reference but that is not in the input.
type Node struct {
	ID       string   // message-id ("" for an article that has none)
	Article  *Summary // nil for a placeholder
	Parent   *Node    // nil for a root
	Children []*Node  // sorted by date, oldest first

	Latest   time.Time // newest article Date in the subtree (zero if none is known)
	Earliest time.Time // oldest known article Date in the subtree
}

// Placeholder reports whether n stands for a missing article.
func (n *Node) Placeholder() bool { return n.Article == nil }

// Thread threads articles into a forest, newest activity first. See the
// theory of operation above for the rules.
func Thread(articles []Summary) []*Node {
	// Canonical order over copies: the Nodes point into arts.
	arts := slices.Clone(articles)
	slices.SortFunc(arts, func(a, b Summary) int { return compareSummary(&a, &b) })

	byID := make(map[string]*Node, len(arts))
	all := make([]*Node, 0, len(arts)+len(arts)/4)
	own := make([]*Node, len(arts)) // the Node of arts[i]

	// 1. A Node per article; the first of each message-id is indexed.
	for i := range arts {
		n := &Node{ID: arts[i].MessageID, Article: &arts[i]}
		own[i] = n
		all = append(all, n)
		if n.ID != "" {
			if _, dup := byID[n.ID]; !dup {
				byID[n.ID] = n
			}
		}
	}
	node := func(id string) *Node {
		if n, ok := byID[id]; ok {
			return n
		}
		n := &Node{ID: id}
		byID[id] = n
		all = append(all, n)
		return n
	}

	// 2. Each article's own claim: the last usable reference.
	for i := range arts {
		n := own[i]
		refs := arts[i].Parents()
		for k := len(refs) - 1; k >= 0; k-- {
			if refs[k] == n.ID {
				continue // a reference to itself
			}
			p, exists := byID[refs[k]]
			if exists && descends(p, n) {
				continue // would close a loop
			}
			if !exists {
				p = node(refs[k])
			}
			n.Parent = p
			break
		}
	}

	// 3. The references chains, for Nodes without a parent.
	for i := range arts {
		refs := arts[i].Parents()
		for k := 1; k < len(refs); k++ {
			c, pid := refs[k], refs[k-1]
			if c == pid {
				continue
			}
			child := node(c)
			if child.Parent != nil {
				continue
			}
			p, exists := byID[pid]
			if exists && descends(p, child) {
				continue
			}
			if !exists {
				p = node(pid)
			}
			child.Parent = p
		}
	}

	// Children lists, in creation order (sorted below).
	var roots []*Node
	for _, n := range all {
		if n.Parent == nil {
			roots = append(roots, n)
		} else {
			n.Parent.Children = append(n.Parent.Children, n)
		}
	}

	// 4 and 5, bottom-up over a pre-order listing (children after parents).
	order := preorder(roots)
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		kept := n.Children[:0]
		for _, c := range n.Children {
			if !c.Placeholder() || len(c.Children) > 0 {
				kept = append(kept, c)
			}
		}
		clear(n.Children[len(kept):])
		n.Children = kept
		if len(n.Children) == 0 {
			n.Children = nil
		}
		if n.Article != nil && !n.Article.Date.IsZero() {
			n.Latest, n.Earliest = n.Article.Date, n.Article.Date
		}
		for _, c := range n.Children {
			if c.Latest.After(n.Latest) {
				n.Latest = c.Latest
			}
			if !c.Earliest.IsZero() && (n.Earliest.IsZero() || c.Earliest.Before(n.Earliest)) {
				n.Earliest = c.Earliest
			}
		}
		slices.SortFunc(n.Children, compareSiblings)
	}
	kept := roots[:0]
	for _, r := range roots {
		if !r.Placeholder() || len(r.Children) > 0 {
			kept = append(kept, r)
		}
	}
	roots = kept
	slices.SortFunc(roots, compareRoots)
	return roots
}

// descends reports whether p is n or a descendant of n: walking up from p
// meets n.
func descends(p, n *Node) bool {
	for a := p; a != nil; a = a.Parent {
		if a == n {
			return true
		}
	}
	return false
}

// siblingDate is the date a Node sorts by among its siblings: its article's
// Date, or for a placeholder its earliest descendant's.
func siblingDate(n *Node) time.Time {
	if n.Article != nil {
		return n.Article.Date
	}
	return n.Earliest
}

func number(n *Node) int64 {
	if n.Article != nil {
		return n.Article.Number
	}
	return 0
}

// compareSiblings orders children oldest first, then by number, message-id
// and the remaining fields (duplicates).
func compareSiblings(a, b *Node) int {
	if c := siblingDate(a).Compare(siblingDate(b)); c != 0 {
		return c
	}
	return compareIdentity(a, b)
}

// compareRoots orders roots newest activity first.
func compareRoots(a, b *Node) int {
	if c := b.Latest.Compare(a.Latest); c != 0 {
		return c
	}
	return compareIdentity(a, b)
}

func compareIdentity(a, b *Node) int {
	if c := cmp.Compare(number(a), number(b)); c != 0 {
		return c
	}
	if c := strings.Compare(a.ID, b.ID); c != 0 {
		return c
	}
	switch {
	case a.Article == nil && b.Article == nil:
		return 0
	case a.Article == nil:
		return -1
	case b.Article == nil:
		return 1
	}
	return compareSummary(a.Article, b.Article)
}

// preorder lists the forest's Nodes, each parent before its children,
// without recursion.
func preorder(roots []*Node) []*Node {
	var out []*Node
	stack := slices.Clone(roots)
	slices.Reverse(stack)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, n)
		for i := len(n.Children) - 1; i >= 0; i-- {
			stack = append(stack, n.Children[i])
		}
	}
	return out
}

// Walk calls fn for every Node of the forest in display order (each parent
// before its children, siblings in order) with its depth (0 for roots),
// without recursion. It stops when fn returns false.
func Walk(forest []*Node, fn func(n *Node, depth int) bool) {
	type item struct {
		n     *Node
		depth int
	}
	stack := make([]item, 0, len(forest))
	for i := len(forest) - 1; i >= 0; i-- {
		stack = append(stack, item{forest[i], 0})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !fn(it.n, it.depth) {
			return
		}
		for i := len(it.n.Children) - 1; i >= 0; i-- {
			stack = append(stack, item{it.n.Children[i], it.depth + 1})
		}
	}
}

// Articles returns the summaries of every article in the forest, in display
// order.
func Articles(forest []*Node) []Summary {
	var out []Summary
	Walk(forest, func(n *Node, _ int) bool {
		if n.Article != nil {
			out = append(out, *n.Article)
		}
		return true
	})
	return out
}

// Merge threads newer articles into an existing forest and returns the new
// forest, the same as Thread of all the articles at once (an article of
// newer replaces an existing one with the same number and message-id). The
// existing forest is not modified. It re-threads everything: threading is
// O(n log n) and a cached group holds at most a thread-list limit of
// articles, so this is simpler than, and as fast in practice as, patching
// the trees (see BenchmarkMerge).
func Merge(existing []*Node, newer []Summary) []*Node {
	return Thread(MergeSummaries(Articles(existing), newer))
}

// Find returns the root of the thread holding message-id id and the Node of
// id itself, or
// nils when no article or placeholder has that id.
func Find(forest []*Node, id string) (root, n *Node) {
	var cur *Node
	Walk(forest, func(x *Node, depth int) bool {
		if depth == 0 {
			cur = x
		}
		if x.ID == id {
			root, n = cur, x
			return false
		}
		return true
	})
	return root, n
}

// Count returns the number of articles (not placeholders) under n, n included.
func Count(n *Node) int {
	c := 0
	Walk([]*Node{n}, func(x *Node, _ int) bool {
		if x.Article != nil {
			c++
		}
		return true
	})
	return c
}
