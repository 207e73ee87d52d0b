package newsweb

// The conversation view: a thread page shows its articles' bodies in
// thread order (each parent before its replies, replies oldest first),
// convPerPage to a page, under the thread's outline. Each post has a
// permalink (its article page), a reply link when posting is enabled, and
// links to its parent and to the next post; the page links the newer and
// older threads of the group. Quoted runs longer than foldLines are folded
// into <details>, which needs no script. Indentation stops at
// maxIndent (phones: less, by CSS); deeper posts say their depth instead.

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

const (
	convPerPage = 20 // posts on one page of a conversation
	outlineOpen = 5  // a longer thread's outline starts closed
	maxIndent   = 5  // deepest indentation class (d0..d5)
	convFetch   = 8  // bodies fetched at once for one page
)

// post is one article of a conversation page.
type post struct {
	ID        string
	Anchor    string // the post's HTML id
	Subject   string // shown when it differs from the thread's
	From      string
	Date      string
	Depth     int
	Indent    int
	Missing   bool   // a placeholder: referenced, never seen
	Problem   string // why the body is not shown
	Parts     []partView
	Permalink string
	Reply     string
	Parent    string // anchor of the parent post on this page
	Next      string // anchor of the next post on this page
}

// flatten lists the thread in display order with depths.
func flatten(root *mreader.Node) ([]*mreader.Node, []int) {
	var nodes []*mreader.Node
	var depths []int
	mreader.Walk([]*mreader.Node{root}, func(n *mreader.Node, d int) bool {
		nodes = append(nodes, n)
		depths = append(depths, d)
		return true
	})
	return nodes, depths
}

// byDateOrder lists the thread's articles oldest first (placeholders
// left out), all at depth 0: the flat view.
func byDateOrder(root *mreader.Node) ([]*mreader.Node, []int) {
	var nodes []*mreader.Node
	mreader.Walk([]*mreader.Node{root}, func(n *mreader.Node, _ int) bool {
		if n.Article != nil {
			nodes = append(nodes, n)
		}
		return true
	})
	slices.SortStableFunc(nodes, func(a, b *mreader.Node) int { return a.Article.Date.Compare(b.Article.Date) })
	return nodes, make([]int, len(nodes))
}

// outlineJumps sets each outline node's Jump to its post in the order
// nodes (the view's): an anchor on page, else base+"page=N#anchor"; and
// NewSubject where a node's subject differs from its parent's. It
// returns the jump to the newest post.
func outlineJumps(root *treeNode, nodes []*mreader.Node, page int, base string) string {
	at := make(map[string]int, len(nodes))
	for i, n := range nodes {
		if _, ok := at[n.ID]; !ok {
			at[n.ID] = i
		}
	}
	jump := func(id string) string {
		i, ok := at[id]
		if !ok {
			return ""
		}
		if p := i/convPerPage + 1; p != page {
			return base + "page=" + strconv.Itoa(p) + "#" + postAnchor(id)
		}
		return "#" + postAnchor(id)
	}
	var newest *treeNode
	var walk func(t *treeNode, parentSubject string)
	walk = func(t *treeNode, parentSubject string) {
		t.Jump = jump(t.ID)
		if !t.Missing {
			t.NewSubject = parentSubject != "" && baseSubject(t.Subject) != baseSubject(parentSubject)
			parentSubject = t.Subject
			if newest == nil || t.Date > newest.Date {
				newest = t
			}
		}
		for _, c := range t.Children {
			walk(c, parentSubject)
		}
	}
	walk(root, "")
	if newest == nil {
		return ""
	}
	return jump(newest.ID)
}

// postAnchor is the HTML id of a message-id's post.
func postAnchor(id string) string { return "p" + anchor(id)[1:] }

// position is what a view of a cached thread page needs of flatten's list
// without making it: the thread's length, and the index in it of the
// first node with id (-1 when none).
func position(root *mreader.Node, id string) (count, index int) {
	index = -1
	countTo(root, id, &count, &index)
	return count, index
}

// countTo walks n's subtree in flatten's order (mreader.Walk's: a node,
// then its children's subtrees in order), counting nodes and noting
// where id first is.
func countTo(n *mreader.Node, id string, count, index *int) {
	if *index < 0 && n.ID == id {
		*index = *count
	}
	*count++
	for _, c := range n.Children {
		countTo(c, id, count, index)
	}
}

// convPage picks the page of a thread of count posts: ?page when given,
// else the page holding the post at index, the article the URL names
// (the first page when it is not there, index -1).
func convPage(r *http.Request, count, index int) (page, pages int, err error) {
	pages = max(1, (count+convPerPage-1)/convPerPage)
	if queryValue(r, "page") != "" {
		page, err = pageParam(r)
		return min(page, pages), pages, err
	}
	if index >= 0 {
		return index/convPerPage + 1, pages, nil
	}
	return 1, pages, nil
}

// posts builds one page of the conversation, fetching the bodies (through
// the article cache) a few at a time.
func (s *Server) posts(ctx context.Context, group, threadSubject string, nodes []*mreader.Node, depths []int) ([]post, error) {
	out := make([]post, len(nodes))
	onPage := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		onPage[n.ID] = true
	}
	for i, n := range nodes {
		p := &out[i]
		p.ID, p.Anchor, p.Depth, p.Indent = n.ID, postAnchor(n.ID), depths[i], min(depths[i], maxIndent)
		p.Missing = n.Article == nil
		if n.Parent != nil && onPage[n.Parent.ID] {
			p.Parent = postAnchor(n.Parent.ID)
		}
		if i+1 < len(nodes) {
			p.Next = postAnchor(nodes[i+1].ID)
		}
		if a := n.Article; a != nil {
			p.From = displayName(a.From)
			p.Date = fmtTime(a.Date)
			if subj := decodeHeader(a.Subject); baseSubject(subj) != baseSubject(threadSubject) {
				p.Subject = subj
			}
			p.Permalink = articleURL(n.ID, group)
			if s.posting != nil {
				p.Reply = replyURL(group, n.ID)
			}
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, convFetch)
	for i := range out {
		if out[i].Missing {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(p *post) {
			defer func() { <-sem; wg.Done() }()
			a, err := s.fed.Article(ctx, p.ID)
			switch {
			case errors.Is(err, ErrNotFound):
				p.Problem = "This article is no longer on the news servers."
			case err != nil:
				p.Problem = "The news servers did not send this article; reload to try again."
			default:
				d := decodeArticle(a.Raw)
				if d.Problem != "" {
					p.Problem = d.Problem
				}
				for _, part := range d.Parts {
					p.Parts = append(p.Parts, partView{Note: part.Note, Blocks: blocks(part.Lines)})
				}
			}
		}(&out[i])
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// baseSubject is a subject without its "Re:" prefixes, for comparing
// (RFC 5536 §3.1.4 back-references).
func baseSubject(s string) string {
	for {
		t := strings.TrimSpace(s)
		if len(t) < 3 || !strings.EqualFold(t[:3], "re:") {
			return t
		}
		s = t[3:]
	}
}

// neighbours returns the links to the threads before (newer) and after
// (older) the one rooted at root in tl, the group's list (nil: none).
func neighbours(tl *ThreadList, group string, root *mreader.Node) (newer, older string) {
	if tl == nil {
		return "", ""
	}
	for i, t := range tl.Threads {
		if t.ID != root.ID {
			continue
		}
		if i > 0 {
			newer = row(group, tl.Threads[i-1]).Link
		}
		if i+1 < len(tl.Threads) {
			older = row(group, tl.Threads[i+1]).Link
		}
		break
	}
	return newer, older
}
