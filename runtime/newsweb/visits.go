package newsweb

import (
	"container/list"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// What a logged-in reader has seen: for each thread the reader opened (or
// marked read with its group), the date of the newest post it had then.
// A thread with a post newer than that is marked new on the group page,
// and its page links to the first such post.
//
// The record lives in memory, kept in a file across restarts when
// Options.VisitsFile says where (visits_file.go), and is bounded: at most maxVisitThreads
// threads a reader (the least recently seen forgotten first) and
// maxVisitReaders readers (the least recently active forgotten first), so
// about maxVisitReaders × maxVisitThreads × 100 bytes at most. A thread
// forgotten, or never opened, is shown as it is to anyone. Anonymous
// readers cost nothing: a request without a Cookie header (or the trusted
// header) is never looked up.
const (
	maxVisitThreads = 1000
	maxVisitReaders = 256
)

// visits is every reader's record.
type visits struct {
	mu      sync.Mutex
	readers map[string]*list.Element // of *readerVisits, most recently active first
	order   *list.List
	changes uint64 // counts the changes, for saving
	saved   uint64 // changes as last loaded or saved
}

// readerVisits is one reader's record: thread root id → the newest date
// seen, with the threads in the order last seen, most recent first.
type readerVisits struct {
	user    string
	threads map[string]*list.Element // of *threadVisit
	order   *list.List
}

type threadVisit struct {
	root string
	seen time.Time
}

func newVisits() *visits {
	return &visits{readers: map[string]*list.Element{}, order: list.New()}
}

// readerLocked is user's record, made when missing; v.mu is held.
func (v *visits) readerLocked(user string) *readerVisits {
	if e, ok := v.readers[user]; ok {
		v.order.MoveToFront(e)
		return e.Value.(*readerVisits)
	}
	rv := &readerVisits{user: user, threads: map[string]*list.Element{}, order: list.New()}
	v.readers[user] = v.order.PushFront(rv)
	for v.order.Len() > maxVisitReaders {
		last := v.order.Back()
		delete(v.readers, last.Value.(*readerVisits).user)
		v.order.Remove(last)
	}
	return rv
}

// seen is the newest date user has seen in the thread rooted at root
// (zero and false when the thread is not in the record).
func (v *visits) seen(user, root string) (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.readers[user]
	if !ok {
		return time.Time{}, false
	}
	t, ok := e.Value.(*readerVisits).threads[root]
	if !ok {
		return time.Time{}, false
	}
	return t.Value.(*threadVisit).seen, true
}

// see records that user has seen the thread rooted at root up to date
// latest (a later date than one recorded is kept).
func (v *visits) see(user string, roots []string, latest []time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.changes++
	rv := v.readerLocked(user)
	// Oldest first, so that the first of roots ends most recently seen.
	for i := len(roots) - 1; i >= 0; i-- {
		if e, ok := rv.threads[roots[i]]; ok {
			t := e.Value.(*threadVisit)
			if latest[i].After(t.seen) {
				t.seen = latest[i]
			}
			rv.order.MoveToFront(e)
			continue
		}
		rv.threads[roots[i]] = rv.order.PushFront(&threadVisit{root: roots[i], seen: latest[i]})
		for rv.order.Len() > maxVisitThreads {
			last := rv.order.Back()
			delete(rv.threads, last.Value.(*threadVisit).root)
			rv.order.Remove(last)
		}
	}
}

// newSince counts the articles of the thread at root dated after seen,
// but for the reader's own (From the address own): what a reader posted
// is not new to them.
func newSince(root *mreader.Node, seen time.Time, own string) int {
	if !root.Latest.After(seen) {
		return 0
	}
	n := 0
	if isNew(root, seen, own) {
		n++
	}
	for _, c := range root.Children {
		n += newSince(c, seen, own)
	}
	return n
}

// isNew reports whether n's article is dated after seen and not from the
// address own.
func isNew(n *mreader.Node, seen time.Time, own string) bool {
	if n.Article == nil || !n.Article.Date.After(seen) {
		return false
	}
	from := n.Article.From
	return !strings.Contains(from, "<"+own+">") && strings.TrimSpace(from) != own
}

// reader is the logged-in reader of r, if any. A request with neither a
// Cookie header nor the trusted header is anonymous without a look.
func (s *Server) reader(r *http.Request) (string, bool) {
	if s.visits == nil || (s.posting.opts.TrustedHeader == "" && len(r.Header["Cookie"]) == 0) {
		return "", false
	}
	return s.posting.user(r)
}

// markNew marks the threads of v (rooted at roots) with the posts newer
// than user's last visit, and adds the "mark group read" form.
func (s *Server) markNew(v *groupView, user, group string, roots []*mreader.Node) {
	own := s.posting.address(user)
	for i, root := range roots {
		if seen, ok := s.visits.seen(user, root.ID); ok && i < len(v.Threads) {
			v.Threads[i].New = newSince(root, seen, own)
		}
	}
	v.MarkRead, v.CSRF = groupURL(group)+"/read", s.posting.csrf(user)
}

// markUnread gives v the link to the first post of nodes (the thread
// rooted at root in page order, convPerPage a page) newer than user's
// last visit, then records this visit. base is the URL of the view's
// pages, to which "page=N" is added.
func (s *Server) markUnread(v *threadView, user string, root *mreader.Node, nodes []*mreader.Node, page int, base string) {
	if seen, ok := s.visits.seen(user, root.ID); ok {
		own := s.posting.address(user)
		v.Unread = newSince(root, seen, own)
		for i, n := range nodes {
			if !isNew(n, seen, own) {
				continue
			}
			v.FirstUnread = "#" + postAnchor(n.ID)
			if p := i/convPerPage + 1; p != page {
				v.FirstUnread = base + "page=" + strconv.Itoa(p) + v.FirstUnread
			}
			break
		}
	}
	s.visits.see(user, []string{root.ID}, []time.Time{root.Latest})
}

// markGroupRead is POST /groups/{group}/read: every thread of the group's
// list (the newest maxVisitThreads) is recorded as seen up to its newest
// post.
func (s *Server) markGroupRead(ctx context.Context, r *http.Request) (*response, error) {
	user, ok := s.posting.user(r)
	if !ok {
		return s.needLogin(r), nil
	}
	group, err := groupParam(r)
	if err != nil {
		return nil, err
	}
	if err := r.ParseForm(); err != nil {
		return nil, errBad
	}
	if !sameOrigin(r) || !s.posting.csrfOK(user, r.PostForm.Get("csrf")) {
		return s.errorPage(http.StatusForbidden, "Form expired", "The form did not come from this page; please go back, reload and try again."), nil
	}
	tl, err := s.fed.Threads(ctx, group)
	if err != nil {
		return nil, err
	}
	threads := tl.Threads[:min(len(tl.Threads), maxVisitThreads)]
	roots, latest := make([]string, len(threads)), make([]time.Time, len(threads))
	for i, t := range threads {
		roots[i], latest[i] = t.ID, t.Latest
	}
	s.visits.see(user, roots, latest)
	return &response{status: http.StatusSeeOther, ctype: "text/plain; charset=utf-8", cache: cacheError, location: groupURL(group)}, nil
}
