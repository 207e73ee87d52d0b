package newsweb

import (
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// maxTreeDepth is the deepest a thread is shown nested; deeper replies are
// shown at that depth (a chain of thousands would otherwise make pages,
// and the template's recursion, as deep).
const maxTreeDepth = 64

// base is what every page's head and foot need.
type base struct {
	Title string
	Site  string
	CSS   template.CSS
	Group string
	// FeedLink is the page's Atom feed, advertised in its head.
	FeedLink string
	// SearchOn puts search boxes on the group list and group pages.
	SearchOn bool
	// Account puts the account control in the header: "Log in" as
	// rendered, the reader and "Log out" for a request with a session
	// (account.go).
	Account bool
}

// threadRow is a thread of a group page. Dates are RFC 3339 in JSON and
// "2006-01-02 15:04" (UTC) on pages.
type threadRow struct {
	ID         string `json:"message_id"`
	Subject    string `json:"subject"`
	From       string `json:"from"`
	Date       string `json:"date,omitempty"`
	Latest     string `json:"latest,omitempty"`
	Count      int    `json:"articles"`
	DateText   string `json:"-"`
	LatestText string `json:"-"`
	Link       string `json:"-"`
	New        int    `json:"-"` // posts newer than the reader's last visit
}

type pager struct {
	Page, Pages          int
	Prev, Next           string
	PrevLabel, NextLabel string // "← Newer" and "Older →" when ""
}

type groupView struct {
	base
	Articles    int
	Others      int    // articles of the list only other servers carry
	Stale       string // a note when the list is shown expired, no server answering
	ThreadCount int
	Stats       *GroupStats
	Newest      string // when the newest article was written (newestDated)
	Threads     []threadRow
	Pager       pager
	NewThread   string // the new-thread form, when posting is on
	Search      string // the group's search page, when search is on
	Feed        string
	MarkRead    string // the "mark group read" form's action, for a logged-in reader
	CSRF        string // its token
}

// treeNode is a thread node for display and for the JSON API.
type treeNode struct {
	ID       string      `json:"message_id"`
	Number   int64       `json:"number,omitempty"`
	Subject  string      `json:"subject,omitempty"`
	From     string      `json:"from,omitempty"`
	Date     string      `json:"date,omitempty"` // RFC 3339
	DateText string      `json:"-"`
	Depth    int         `json:"-"`
	Missing  bool        `json:"missing,omitempty"`
	Current  bool        `json:"-"`
	Anchor   string      `json:"-"`
	Link     string      `json:"-"`
	Children []*treeNode `json:"children,omitempty"`
	// Jump is the post on the conversation pages: "#anchor" on this
	// page, else the page that holds it. NewSubject says the subject
	// changes here (the outline shows it only then).
	Jump       string `json:"-"`
	NewSubject bool   `json:"-"`
}

type threadView struct {
	base
	Stale        string // a note when the thread is shown from an expired list
	OutlineOpen  bool   // the outline starts open (a short thread)
	ByDate       bool   // the flat view, oldest first, instead of the tree
	Threaded     string // the threaded view of this thread
	DateView     string // the flat by-date view
	Newest       string // the newest post, where it is in this view
	Mbox         string // the thread as a gzipped mbox
	Subject      string
	Count        int
	Root         *treeNode
	Posts        []post
	Pager        pager
	Newer, Older string // neighbouring threads of the group
	Feed         string
	FirstUnread  string // the first post newer than the reader's last visit
	Unread       int    // how many posts are
}

// block is a run of body lines of one quote depth, cut into text and links.
type block struct {
	Quote int
	Sig   bool
	Text  string
	Lines int
	Segs  []segment
}

// Fold reports whether a conversation view folds the block away: quoted
// text of more than foldLines lines (the reader has just read it above).
func (b block) Fold() bool { return b.Quote > 0 && b.Lines > foldLines }

// foldLines is the longest quote a conversation shows unfolded.
const foldLines = 3

type partView struct {
	Note   string
	Blocks []block
}

type articleView struct {
	base
	Article    *Display
	Parts      []partView
	ThreadLink string
	Reply      string       // the reply form, when posting is on
	Headers    []headerLine // every header field, for the full-headers view
	Raw        string       // the original article
}

type errorView struct {
	base
	Message string
}

// stripID removes a message-id's angle brackets for URLs.
func stripID(id string) string {
	return strings.TrimSuffix(strings.TrimPrefix(id, "<"), ">")
}

// bracketID adds angle brackets to a message-id from a URL if it has none.
func bracketID(s string) string {
	if strings.HasPrefix(s, "<") {
		return s
	}
	return "<" + s + ">"
}

func groupURL(g string) string { return "/groups/" + url.PathEscape(g) }

func threadURL(group, id string) string {
	return groupURL(group) + "/threads/" + url.PathEscape(stripID(id))
}

func articleURL(id, group string) string {
	u := "/articles/" + url.PathEscape(stripID(id))
	if group != "" {
		u += "?group=" + url.QueryEscape(group)
	}
	return u
}

func threadFeedURL(group, id string) string { return threadURL(group, id) + "/feed.atom" }

func groupFeedURL(group string) string { return groupURL(group) + "/feed.atom" }

func pageURL(group string, page int) string {
	return groupURL(group) + "?page=" + strconv.Itoa(page)
}

// anchor is a stable HTML id for a message-id.
func anchor(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "m-" + hex.EncodeToString(sum[:6])
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// apiTime is t for the JSON API: RFC 3339 in UTC ("" when unknown).
func apiTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// firstArticle is the first real article of a subtree in display order
// (a root may be a placeholder for a missing article).
func firstArticle(n *mreader.Node) *mreader.Node {
	var found *mreader.Node
	mreader.Walk([]*mreader.Node{n}, func(x *mreader.Node, _ int) bool {
		if x.Article != nil {
			found = x
			return false
		}
		return true
	})
	return found
}

// row summarises a thread for the group page.
func row(group string, root *mreader.Node) threadRow {
	r := threadRow{ID: root.ID, Count: mreader.Count(root), Latest: apiTime(root.Latest), LatestText: fmtTime(root.Latest)}
	if a := firstArticle(root); a != nil {
		r.ID = a.ID
		r.Subject = decodeHeader(a.Article.Subject)
		r.From = displayName(a.Article.From)
		r.Date = apiTime(a.Article.Date)
		r.DateText = fmtTime(a.Article.Date)
	}
	if r.Subject == "" {
		r.Subject = "(no subject)"
	}
	r.Link = threadURL(group, r.ID)
	return r
}

// tree converts a thread for display; current is the message-id to mark.
func tree(group string, root *mreader.Node, current string) *treeNode {
	type item struct {
		n      *mreader.Node
		parent *treeNode
		depth  int // nesting shown, at most maxTreeDepth
		level  int // real depth in the thread
	}
	var out *treeNode
	stack := []item{{n: root}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		t := &treeNode{ID: it.n.ID, Anchor: anchor(it.n.ID), Missing: it.n.Article == nil, Current: it.n.ID == current, Depth: it.level}
		if a := it.n.Article; a != nil {
			t.Number = a.Number
			t.Subject = decodeHeader(a.Subject)
			if t.Subject == "" {
				t.Subject = "(no subject)"
			}
			t.From = displayName(a.From)
			t.Date = apiTime(a.Date)
			t.DateText = fmtTime(a.Date)
			t.Link = articleURL(it.n.ID, group)
		}
		parent, depth := it.parent, it.depth
		if parent == nil {
			out = t
		} else {
			parent.Children = append(parent.Children, t)
		}
		// Children go on the stack in reverse so they come off in order;
		// beyond maxTreeDepth they hang off this node's parent instead.
		holder, d := t, depth+1
		if depth >= maxTreeDepth && parent != nil {
			holder, d = parent, depth
		}
		for i := len(it.n.Children) - 1; i >= 0; i-- {
			stack = append(stack, item{n: it.n.Children[i], parent: holder, depth: d, level: it.level + 1})
		}
	}
	return out
}

// blocks groups a part's lines into runs of equal quote depth, so quoted
// text is set off as one block per run.
func blocks(lines []Line) []block {
	var out []block
	var b strings.Builder
	for i, l := range lines {
		q := min(l.Quote, 3)
		if n := len(out); n > 0 && out[n-1].Quote == q && out[n-1].Sig == l.Sig {
			b.WriteByte('\n')
			b.WriteString(l.Text)
		} else {
			if n > 0 {
				out[n-1].Text = b.String()
			}
			b.Reset()
			b.WriteString(l.Text)
			out = append(out, block{Quote: q, Sig: l.Sig})
		}
		out[len(out)-1].Lines++
		if i == len(lines)-1 {
			out[len(out)-1].Text = b.String()
		}
	}
	for i := range out {
		out[i].Segs = linkify(out[i].Text)
	}
	return out
}
