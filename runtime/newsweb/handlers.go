package newsweb

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/proto"
)

// statsWait bounds how long a group page waits for the group's stats (a
// Low-priority request that may queue behind page loads); without them the
// page still shows everything else.
const statsWait = 300 * time.Millisecond

func (s *Server) groupsPage(ctx context.Context, r *http.Request) (*response, error) {
	f, err := parseGroupFilter(r)
	if err != nil {
		return nil, err
	}
	l, err := s.fed.GroupList(ctx)
	if err != nil {
		return nil, err
	}
	groups := l.Groups
	if len(l.Missing) > 0 {
		// Not kept, here or by browsers: the next view asks the servers
		// that did not answer again.
		return s.render("groups", s.groupList(s.visible(groups), f, l.Missing), cacheError)
	}
	// Kept under the filter, the list's identity (a new list is a new
	// slice) and the counts' generation.
	var list uintptr
	if len(groups) > 0 {
		list = reflect.ValueOf(&groups[0]).Pointer()
	}
	var kb [keyBuffer]byte
	key := append(kb[:0], "groups "...)
	key = append(append(append(append(key, f.q...), 0), f.h...), 0)
	key = append(strconv.AppendInt(key, int64(f.page), 10), ' ')
	key = append(strconv.AppendUint(key, uint64(list), 16), ' ')
	key = append(strconv.AppendInt(key, int64(len(groups)), 10), ' ')
	key = strconv.AppendUint(key, s.fed.statsGen.Load(), 10)
	if resp, ok := s.pages.get(key); ok {
		return resp, nil
	}
	resp, err := s.render("groups", s.groupList(s.visible(groups), f, nil), cacheGroups)
	if err != nil {
		return nil, err
	}
	resp.pin = groups
	s.pages.put(string(key), resp)
	return resp, nil
}

// displayGroups returns a copy of the (shared, cached) list with the
// descriptions decoded for display: LIST NEWSGROUPS text may be Latin-1,
// UTF-8 or carry encoded-words.
func displayGroups(groups []Group) []Group {
	out := make([]Group, len(groups))
	for i, g := range groups {
		g.Description = decodeHeader(g.Description)
		out[i] = g
	}
	return out
}

// threadPage is one page of a group's threads, newest activity first.
type threadPage struct {
	list  *ThreadList
	rows  []threadRow
	roots []*mreader.Node // the threads of rows
	page  int
	pages int
}

// threadsOf is page of tl.
func (s *Server) threadsOf(tl *ThreadList, group string, page int) threadPage {
	per := s.opts.PerPage
	pages := max(1, (len(tl.Threads)+per-1)/per)
	page = min(page, pages)
	lo, hi := (page-1)*per, min(page*per, len(tl.Threads))
	tp := threadPage{list: tl, page: page, pages: pages}
	tp.roots = tl.Threads[lo:hi]
	for _, root := range tp.roots {
		tp.rows = append(tp.rows, row(group, root))
	}
	return tp
}

func (s *Server) groupPage(ctx context.Context, r *http.Request) (*response, error) {
	group, err := groupParam(r)
	if err != nil {
		return nil, err
	}
	page, err := pageParam(r)
	if err != nil {
		return nil, err
	}
	user, reader := s.reader(r)
	// A rendered page is kept under the version of what it shows: the
	// thread list (listVersion) and the group's cached stats. Nothing
	// changed, nothing is rebuilt.
	tl, newest, before, err := s.listPage(ctx, r, group)
	if err != nil {
		return nil, err
	}
	if s.search != nil {
		s.search.Visited(group)
	}
	staleSince, stale := s.fed.StaleSince(group)
	st, haveStats := s.fed.CachedStats(group)
	if haveStats && !stale && !reader {
		var kb [keyBuffer]byte
		if resp, ok := s.pages.get(appendGroupPageKey(kb[:0], group, before, page, tl, newest, &st)); ok {
			return resp, nil
		}
	}
	statsCh := make(chan *GroupStats, 1)
	if haveStats {
		cached := st // a copy, so that st stays on the stack for the usual view, served above
		statsCh <- &cached
	} else {
		go func() {
			sctx, cancel := context.WithTimeout(ctx, statsWait)
			defer cancel()
			st, err := s.fed.GroupStats(sctx, group)
			if err != nil {
				statsCh <- nil
				return
			}
			statsCh <- &st
		}()
	}
	tp := s.threadsOf(tl, group, page)
	stats := <-statsCh
	v := groupView{base: s.base(group, group), Articles: len(tp.list.Articles), Others: tp.list.Unnumbered(), ThreadCount: len(tp.list.Threads),
		Stats: stats, Newest: newestDated(newest, stats, s.fed.now()), Threads: tp.rows, Pager: pagerOf(group, before, tl, tp.page, tp.pages), Feed: groupFeedURL(group)}
	v.FeedLink = v.Feed
	if s.posting != nil {
		v.NewThread = newThreadURL(group)
	}
	if s.search != nil {
		v.Search = "/search?group=" + url.QueryEscape(group)
	}
	cache := cacheThreads
	if stale {
		v.Stale, cache = staleNote(staleSince, tl.Fetched), cacheError
	}
	if reader {
		s.markNew(&v, user, group, tp.roots)
		cache = cacheError
	}
	resp, err := s.render("group", v, cache)
	if err != nil {
		return nil, err
	}
	if stats != nil && !stale && !reader {
		resp.etag = etagOf(resp.body)
		s.pages.put(string(appendGroupPageKey(nil, group, before, page, tl, newest, stats)), resp)
	}
	return resp, nil
}

// maxDateAhead is how far in the future an article's Date may be and
// still count as the newest of a group: a poster's clock set wrong does
// not make the group look newer than it is.
const maxDateAhead = 24 * time.Hour

// newestDated says when the group's newest article was written: the
// newest Date among the articles of its newest list (the overview the
// page has; the highest-numbered article is not always the newest) and
// of its highest-numbered article (stats). Without a dated article in the
// list it names only the highest-numbered one's date, as that; "" when
// no date is known.
func newestDated(tl *ThreadList, st *GroupStats, now time.Time) string {
	var newest time.Time
	for i := range tl.Articles {
		if d := tl.Articles[i].Date; d.After(newest) && !d.After(now.Add(maxDateAhead)) {
			newest = d
		}
	}
	var last time.Time
	if st != nil && !st.LastDate.After(now.Add(maxDateAhead)) {
		last = st.LastDate
	}
	switch {
	case !newest.IsZero():
		if last.After(newest) {
			newest = last
		}
		return "the newest dated " + fmtTime(newest)
	case !last.IsZero():
		return "the highest-numbered one dated " + fmtTime(last)
	}
	return ""
}

// staleNote tells a reader that a list is shown from the cache because no
// server has answered since since.
func staleNote(since, fetched time.Time) string {
	return "The news servers are not answering (since " + fmtTime(since) + " UTC): this is the list as it was at " +
		fmtTime(fetched) + " UTC."
}

// listOf is the group's thread list and its version (nil and "" when it
// cannot be had).
func (s *Server) listOf(ctx context.Context, group string) (*ThreadList, string) {
	tl, err := s.fed.Threads(ctx, group)
	if err != nil {
		return nil, ""
	}
	return tl, listVersion(tl)
}

// listVersion names the state of a thread list: it changes with every
// update (Fetched), new articles (HighWater) and posts (the count). Each
// of those makes a new list, so the name is made once per list.
func listVersion(tl *ThreadList) string {
	tl.versionOnce.Do(func() {
		tl.version = strconv.FormatInt(tl.HighWater, 10) + "/" + strconv.Itoa(len(tl.Articles)) + "/" + strconv.FormatInt(tl.Fetched.UnixNano(), 10)
	})
	return tl.version
}

// appendGroupPageKey appends the page cache key of a group page: the
// group, the range and page, and the versions of the list, of the newest
// list (on an archive range's page, whose newest date it shows) and of
// the stats.
func appendGroupPageKey(dst []byte, group string, before int64, page int, tl, newest *ThreadList, st *GroupStats) []byte {
	dst = append(append(append(dst, "group "...), group...), ' ')
	dst = append(strconv.AppendInt(dst, before, 10), ' ')
	dst = append(strconv.AppendInt(dst, int64(page), 10), ' ')
	dst = append(append(dst, listVersion(tl)...), ' ')
	if newest != tl {
		dst = append(append(dst, listVersion(newest)...), ' ')
	}
	dst = append(strconv.AppendInt(dst, st.Count, 10), '/')
	return strconv.AppendInt(dst, st.LastDate.Unix(), 10)
}

// keyBuffer is the size of the buffer on the stack a page cache key is
// built in: a hit then costs no allocation (pageCache.get); longer keys
// are built on the heap.
const keyBuffer = 192

func (s *Server) threadPage(ctx context.Context, r *http.Request) (*response, error) {
	group, err := groupParam(r)
	if err != nil {
		return nil, err
	}
	if feed, ok := strings.CutSuffix(r.PathValue("msgid"), "/feed.atom"); ok {
		id := bracketID(feed)
		if proto.ValidNNTPMessageID(id) != nil {
			return nil, errBad
		}
		return s.threadFeed(ctx, r, group, id)
	}
	if mbox, ok := strings.CutSuffix(r.PathValue("msgid"), "/mbox.gz"); ok {
		id := bracketID(mbox)
		if proto.ValidNNTPMessageID(id) != nil {
			return nil, errBad
		}
		return s.threadMbox(ctx, group, id)
	}
	id, err := msgidParam(r)
	if err != nil {
		return nil, err
	}
	user, reader := s.reader(r)
	tv, err := s.fed.Thread(ctx, group, id)
	if err != nil {
		return nil, err
	}
	byDate := queryValue(r, "view") == "date"
	var nodes []*mreader.Node
	var depths []int
	count, at := 0, -1
	if byDate {
		nodes, depths = byDateOrder(tv.Root)
		count = len(nodes)
		for i, n := range nodes {
			if n.ID == id {
				at = i
				break
			}
		}
	} else {
		count, at = position(tv.Root, id)
	}
	page, pages, err := convPage(r, count, at)
	if err != nil {
		return nil, err
	}
	// The page is kept under the version of the thread (its root node is
	// new whenever the thread is threaded again) and of the group's list
	// (for the newer and older links); article bodies never change.
	tl, version := s.listOf(ctx, group)
	var kb [keyBuffer]byte
	key := append(append(append(append(append(kb[:0], "thread "...), group...), ' '), id...), ' ')
	key = append(strconv.AppendInt(key, int64(page), 10), ' ')
	if byDate {
		key = append(key, "date "...)
	}
	key = append(strconv.AppendUint(key, uint64(reflect.ValueOf(tv.Root).Pointer()), 16), ' ')
	key = append(strconv.AppendInt(key, int64(count), 10), ' ')
	key = append(strconv.AppendInt(key, tv.Root.Latest.UnixNano(), 10), ' ')
	key = append(key, version...)
	staleSince, stale := s.fed.StaleSince(group)
	if resp, ok := s.pages.get(key); ok && !stale && !reader {
		return resp, nil
	}
	if !byDate {
		nodes, depths = flatten(tv.Root)
	}
	newer, older := neighbours(tl, group, tv.Root)
	root := tree(group, tv.Root, id)
	self := threadURL(group, id)
	view := ""
	if byDate {
		view = "view=date&"
	}
	newest := outlineJumps(root, nodes, page, threadURL(group, tv.Root.ID)+"?"+view)
	subject := "(no subject)"
	if a := firstArticle(tv.Root); a != nil && a.Article.Subject != "" {
		subject = decodeHeader(a.Article.Subject)
	}
	lo, hi := (page-1)*convPerPage, min(page*convPerPage, len(nodes))
	posts, err := s.posts(ctx, group, subject, nodes[lo:hi], depths[lo:hi])
	if err != nil {
		return nil, err
	}
	v := threadView{base: s.base(subject, group), Subject: subject, Count: mreader.Count(tv.Root), Root: root,
		Posts: posts, Feed: threadFeedURL(group, tv.Root.ID), OutlineOpen: count <= outlineOpen, ByDate: byDate,
		Threaded: self, DateView: self + "?view=date", Newest: newest, Mbox: threadURL(group, tv.Root.ID) + "/mbox.gz",
		Pager: pager{Page: page, Pages: pages, PrevLabel: "← Earlier", NextLabel: "Later →"}}
	v.FeedLink = v.Feed
	if page > 1 {
		v.Pager.Prev = self + "?" + view + "page=" + strconv.Itoa(page-1)
	}
	if page < pages {
		v.Pager.Next = self + "?" + view + "page=" + strconv.Itoa(page+1)
	}
	v.Newer, v.Older = newer, older
	cache := cacheThreads
	if stale && tl != nil {
		v.Stale, cache = staleNote(staleSince, tl.Fetched), cacheError
	}
	if reader {
		s.markUnread(&v, user, tv.Root, nodes, page, threadURL(group, tv.Root.ID)+"?"+view)
		cache = cacheError
	}
	resp, err := s.render("thread", v, cache)
	if err != nil || stale || reader {
		return resp, err
	}
	for _, p := range posts {
		if p.Problem != "" && !p.Missing {
			return resp, nil // a body did not come: try again next time
		}
	}
	resp.etag = etagOf(resp.body)
	resp.pin = tv.Root
	s.pages.put(string(key), resp)
	return resp, nil
}

// articleGroup is the group an article is shown in: ?group= when valid,
// else the first of its Newsgroups.
func articleGroup(r *http.Request, d *Display) string {
	if g := queryValue(r, "group"); g != "" && proto.ValidGroupName(g) == nil {
		return g
	}
	if len(d.Newsgroups) > 0 {
		return d.Newsgroups[0]
	}
	return ""
}

func (s *Server) articlePage(ctx context.Context, r *http.Request) (*response, error) {
	if raw, ok := strings.CutSuffix(r.PathValue("msgid"), "/raw"); ok {
		id := bracketID(raw)
		if proto.ValidNNTPMessageID(id) != nil {
			return nil, errBad
		}
		return s.rawArticle(ctx, id)
	}
	id, err := msgidParam(r)
	if err != nil {
		return nil, err
	}
	var kb [keyBuffer]byte
	key := append(append(append(append(kb[:0], "html "...), id...), ' '), queryValue(r, "group")...)
	if resp, ok := s.pages.get(key); ok {
		return resp, nil
	}
	a, err := s.fed.Original(ctx, id)
	if err != nil {
		return nil, err
	}
	d := decodeArticle(a.Raw)
	group := articleGroup(r, d)
	v := articleView{base: s.base(orNoSubject(d.Subject), group), Article: d, Headers: allHeaders(a.Raw),
		Raw: "/articles/" + url.PathEscape(stripID(id)) + "/raw"}
	if group != "" {
		v.ThreadLink = threadURL(group, id) + "#" + postAnchor(id)
		if s.posting != nil {
			v.Reply = replyURL(group, id)
		}
	}
	for _, p := range d.Parts {
		v.Parts = append(v.Parts, partView{Note: p.Note, Blocks: blocks(p.Lines)})
	}
	if a.Posted { // newsweb's copy: the server's full header is still to come
		return s.render("article", v, cacheError)
	}
	resp, err := s.render("article", v, cacheArticle)
	if err != nil {
		return nil, err
	}
	resp.etag = etagOf(resp.body)
	s.pages.put(string(key), resp)
	return resp, nil
}

func orNoSubject(s string) string {
	if s == "" {
		return "(no subject)"
	}
	return s
}

// JSON API.

func (s *Server) apiGroups(ctx context.Context, r *http.Request) (*response, error) {
	groups, err := s.fed.Groups(ctx)
	if err != nil {
		return nil, err
	}
	return renderJSON(map[string]any{"groups": displayGroups(s.visible(groups))}, cacheGroups)
}

func (s *Server) apiThreads(ctx context.Context, r *http.Request) (*response, error) {
	group, err := groupParam(r)
	if err != nil {
		return nil, err
	}
	page, err := pageParam(r)
	if err != nil {
		return nil, err
	}
	tl, _, before, err := s.listPage(ctx, r, group)
	if err != nil {
		return nil, err
	}
	var kb [keyBuffer]byte
	key := append(append(append(kb[:0], "api threads "...), group...), ' ')
	key = append(strconv.AppendInt(key, before, 10), ' ')
	key = append(strconv.AppendInt(key, int64(page), 10), ' ')
	key = append(key, listVersion(tl)...)
	if resp, ok := s.pages.get(key); ok {
		return resp, nil
	}
	tp := s.threadsOf(tl, group, page)
	rows := tp.rows
	if rows == nil {
		rows = []threadRow{}
	}
	out := map[string]any{
		"group": group, "server": tp.list.Server, "high_water": tp.list.HighWater, "from_other_servers": tp.list.Unnumbered(),
		"articles": len(tp.list.Articles), "total_threads": len(tp.list.Threads),
		"page": tp.page, "pages": tp.pages, "per_page": s.opts.PerPage, "threads": rows,
		"low": tp.list.Floor,
	}
	if tl.More && tl.Floor > 1 {
		out["older_before"] = tl.Floor // ?before= of the range below this list
	}
	resp, err := renderJSON(out, cacheThreads)
	if err != nil {
		return nil, err
	}
	resp.etag = etagOf(resp.body)
	s.pages.put(string(key), resp)
	return resp, nil
}

func (s *Server) apiThread(ctx context.Context, r *http.Request) (*response, error) {
	id, err := msgidParam(r)
	if err != nil {
		return nil, err
	}
	group := queryValue(r, "group")
	if group == "" {
		// The group is the first of the article's Newsgroups.
		a, err := s.fed.Article(ctx, id)
		if err != nil {
			return nil, err
		}
		group = articleGroup(r, decodeArticle(a.Raw))
	}
	if proto.ValidGroupName(group) != nil {
		return nil, errBad
	}
	tv, err := s.fed.Thread(ctx, group, id)
	if err != nil {
		return nil, err
	}
	return renderJSON(map[string]any{"group": group, "server": tv.Server, "articles": mreader.Count(tv.Root),
		"root": tree(group, tv.Root, id)}, cacheThreads)
}

func (s *Server) apiArticle(ctx context.Context, r *http.Request) (*response, error) {
	id, err := msgidParam(r)
	if err != nil {
		return nil, err
	}
	var kb [keyBuffer]byte
	key := append(append(kb[:0], "json "...), id...)
	if resp, ok := s.pages.get(key); ok {
		return resp, nil
	}
	a, err := s.fed.Article(ctx, id)
	if err != nil {
		return nil, err
	}
	d := decodeArticle(a.Raw)
	if d.Parts == nil {
		d.Parts = []Part{}
	}
	resp, err := renderJSON(struct {
		*Display
		Server string `json:"server"`
		Text   string `json:"text"`
	}{d, a.Server, d.Text()}, cacheArticle)
	if err != nil {
		return nil, err
	}
	resp.etag = etagOf(resp.body)
	s.pages.put(string(key), resp)
	return resp, nil
}
