package newsweb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/spoolfs/searchindex"
)

// Search: subject, author and date over a group's whole overview.
//
// A group is indexed when it is first searched: a background job asks the
// group's stats (Low priority) and indexes its newest SearchChunk articles
// first, so that a search finds recent posts at once; then it extends the
// range indexed upward to the group's high mark (new articles) and
// downward, SearchChunk articles at a time, to its low mark. Each range is
// one GetNewArticles (Low priority, so readers' pages go first) and is
// appended to the index on disk (spoolfs/searchindex) with the range it
// covers before the next is asked, so a restart goes on where the job
// stopped. A later search of the group starts the same job once
// SearchRefresh has passed, so the index follows new articles. Until a
// job has covered the whole group, results cover the range indexed so
// far, and the page says which. Searching across groups (no group named)
// covers the groups indexed, and first starts the jobs of the groups read
// here (their pages served, the most recently read first, at most
// maxVisitedGroups remembered) that have nothing indexed yet, at most
// maxWideStarts a search, waiting for their newest ranges as the first
// search of a group does. Article numbers are those of the server whose
// stats named it (the first by priority that carries the group). The
// bodies of the groups named by SearchOptions.Bodies are indexed after
// the overview's first range: search_body.go.

// Defaults for SearchOptions fields left zero.
const (
	DefaultSearchChunk   = 5000
	DefaultSearchRefresh = time.Minute
	DefaultSearchBytes   = 1 << 30
	maxSearchHits        = 100
	maxSearchPages       = 100 // pages of hits a search goes to
	maxQuery             = 200
	// searchJobs is how many groups are indexed at once, and
	// maxSearchPending how many may be under way or waiting: a search of
	// yet another group past that is answered from what is indexed, and
	// starts its job on a later search.
	searchJobs       = 2
	maxSearchPending = 64
	// firstRangeWait bounds how long the first search of a group with
	// nothing indexed waits for the newest range, so that it answers from
	// that range rather than with nothing.
	firstRangeWait = 5 * time.Second
	// maxVisitedGroups is how many groups read here are remembered for a
	// search across groups, and maxWideStarts how many jobs of them one
	// such search starts.
	maxVisitedGroups = 32
	maxWideStarts    = 4
)

// SearchOptions configure search.
type SearchOptions struct {
	Dir      string        // where the index lives (required)
	MaxBytes int64         // bound on the index files; DefaultSearchBytes when 0
	Chunk    int           // articles fetched per command; DefaultSearchChunk when 0
	Refresh  time.Duration // least time between two updates of a group; DefaultSearchRefresh when 0
	// Bodies names the groups whose bodies are indexed too, as a list of
	// wildmats in newsfeeds form ("comp.*,!*.binaries.*"); none when
	// empty.
	Bodies string
	Logger *slog.Logger
}

// Search indexes groups in the background and answers queries.
type Search struct {
	fed  *Federated
	ix   *searchindex.Index
	opts SearchOptions
	log  *slog.Logger

	mu       sync.Mutex
	running  map[string]bool          // groups with a job under way
	last     map[string]time.Time     // when each group's last job started
	complete map[string]bool          // groups a job brought up to date
	lows     map[string]int64         // each group's low mark, from its last job's stats
	first    map[string]chan struct{} // groups with nothing indexed yet: closed when the newest range is in or the job ends
	slots    chan struct{}            // searchJobs tokens: the jobs indexing now
	visited  []string                 // groups whose pages were served, most recent first (maxVisitedGroups)

	bodies        proto.GroupPatterns
	bodySlots     chan struct{}   // bodyJobs tokens: the groups whose bodies are read now
	bodyRunning   map[string]bool // groups with a body pass under way or waiting (at most maxSearchPending)
	bodyAgain     map[string]bool // groups whose running pass goes round again: their overview grew meanwhile
	bodiesCached  int             // bodies read from the article cache
	bodiesFetched int             // bodies fetched in the background
	loaded        chan struct{}   // closed once the body files are read
	ctx           context.Context
	cancel        context.CancelFunc
	wg            sync.WaitGroup
}

// NewSearch opens the index in opts.Dir over fed.
func NewSearch(fed *Federated, opts SearchOptions) (*Search, error) {
	if opts.Dir == "" {
		return nil, errors.New("newsweb: search: no index directory")
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultSearchBytes
	}
	if opts.Chunk <= 0 {
		opts.Chunk = DefaultSearchChunk
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultSearchRefresh
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	var bodies proto.GroupPatterns
	if opts.Bodies != "" {
		var err error
		if bodies, err = proto.ParseGroupPatterns([]string{opts.Bodies}); err != nil {
			return nil, fmt.Errorf("newsweb: search bodies: %w", err)
		}
	}
	ix, err := searchindex.Open(opts.Dir, opts.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("newsweb: search: %w", err)
	}
	s := &Search{fed: fed, ix: ix, opts: opts, log: opts.Logger, running: map[string]bool{},
		last: map[string]time.Time{}, complete: map[string]bool{}, lows: map[string]int64{}, first: map[string]chan struct{}{}, slots: make(chan struct{}, searchJobs),
		bodies: bodies, bodySlots: make(chan struct{}, bodyJobs), bodyRunning: map[string]bool{}, bodyAgain: map[string]bool{}, loaded: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.load()
	return s, nil
}

// load reads the body files in the background (searches meanwhile find
// no body words) and logs what the index found damaged.
func (s *Search) load() {
	defer s.wg.Done()
	t0 := time.Now()
	err := s.ix.LoadBodies(s.ctx)
	for _, d := range s.ix.Damage() {
		s.log.Warn("search: index damaged", "what", d)
	}
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Error("search: loading the body index", "err", err)
		}
		return // loaded stays open: no body is indexed meanwhile
	}
	s.log.Debug("search: body index loaded", "took", time.Since(t0).Round(time.Millisecond))
	close(s.loaded)
}

// Close stops the indexing jobs, waits for them and closes the index.
func (s *Search) Close() {
	s.cancel()
	s.wg.Wait()
	if err := s.ix.Close(); err != nil {
		s.log.Warn("search: closing the index", "err", err)
	}
}

// Index starts the indexing job of group unless one is under way or the
// last started less than Refresh ago. It reports whether a job has brought
// the group's index up to the group's high mark since newsweb started.
func (s *Search) Index(group string) (complete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	complete = s.complete[group]
	now := s.fed.now()
	if s.running[group] || (!s.last[group].IsZero() && now.Sub(s.last[group]) < s.opts.Refresh) || len(s.running) >= maxSearchPending {
		return complete
	}
	s.running[group], s.last[group] = true, now
	if _, hi := s.ix.Range(group); hi == 0 {
		s.first[group] = make(chan struct{})
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := s.withSlot(s.slots, func() error { return s.build(group) })
		s.mu.Lock()
		delete(s.running, group)
		s.firstInLocked(group)
		if err == nil {
			s.complete[group] = true
		}
		s.startBodiesLocked(group)
		s.mu.Unlock()
		if err != nil && s.ctx.Err() == nil {
			s.log.Warn("search: indexing failed", "group", group, "err", err)
		}
	}()
	return complete
}

// Visited records that a page of group was served, for searches across
// groups (IndexVisited).
func (s *Search) Visited(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The list moves in place, without an allocation a page: group comes
	// first and those read before it move down one, the least recently
	// read dropping out when the list is full.
	i := slices.Index(s.visited, group)
	if i < 0 {
		if len(s.visited) < maxVisitedGroups {
			s.visited = append(s.visited, "")
		}
		i = len(s.visited) - 1
	}
	copy(s.visited[1:i+1], s.visited[:i])
	s.visited[0] = group
}

// IndexVisited starts the jobs of the groups read here that have nothing
// indexed, the most recently read first, at most maxWideStarts, and waits,
// up to firstRangeWait in all or the end of ctx, for their newest ranges.
func (s *Search) IndexVisited(ctx context.Context) {
	s.mu.Lock()
	var todo []string
	now := s.fed.now()
	for _, g := range s.visited {
		if len(todo) == maxWideStarts {
			break
		}
		// A group with no article, or whose job failed a moment ago, is
		// passed over, so that it does not hold back the next ones.
		again := s.last[g].IsZero() || now.Sub(s.last[g]) >= s.opts.Refresh
		if _, hi := s.ix.Range(g); hi == 0 && !s.running[g] && !s.complete[g] && again {
			todo = append(todo, g)
		}
	}
	s.mu.Unlock()
	var waits []chan struct{}
	for _, g := range todo {
		s.Index(g)
		s.mu.Lock()
		if ch := s.first[g]; ch != nil {
			waits = append(waits, ch)
		}
		s.mu.Unlock()
	}
	if len(waits) == 0 {
		return
	}
	t := time.NewTimer(firstRangeWait)
	defer t.Stop()
	for _, ch := range waits {
		select {
		case <-ch:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// firstInLocked ends the wait of first searches of group: its newest range
// is in, or its job ended. s.mu is held.
func (s *Search) firstInLocked(group string) {
	if ch := s.first[group]; ch != nil {
		close(ch)
		delete(s.first, group)
	}
}

// waitFirst waits, up to firstRangeWait or the end of ctx, until the
// newest range of group is indexed when a job indexing it from nothing
// runs.
func (s *Search) waitFirst(ctx context.Context, group string) {
	s.mu.Lock()
	ch := s.first[group]
	s.mu.Unlock()
	if ch == nil {
		return
	}
	t := time.NewTimer(firstRangeWait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// olderPending reports whether group's articles below lo are still to be
// indexed: lo is above the group's low mark, or that is not known yet and
// lo is above 1, the lowest article number there is.
func (s *Search) olderPending(group string, lo int64) bool {
	if lo <= 1 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	low, ok := s.lows[group]
	return !ok || lo > low
}

// startBodies starts the body pass of group (search_body.go) when its
// bodies are indexed and no pass of it runs; when one runs, it goes round
// again once done, for the articles the overview took meanwhile. The pass
// runs apart from the overview's jobs: it may take long (an ARTICLE an
// article), and the overview goes on being extended meanwhile, the pass
// following it. Past maxSearchPending passes, a group's starts after a
// later overview job of it.
func (s *Search) startBodies(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startBodiesLocked(group)
}

// startBodiesLocked is startBodies with s.mu held.
func (s *Search) startBodiesLocked(group string) {
	if !s.wantBodies(group) {
		return
	}
	if s.bodyRunning[group] {
		s.bodyAgain[group] = true
		return
	}
	if len(s.bodyRunning) >= maxSearchPending {
		return
	}
	s.bodyRunning[group] = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			err := s.afterLoad(func() error {
				return s.withSlot(s.bodySlots, func() error { return s.buildBodies(group) })
			})
			if err != nil && s.ctx.Err() == nil {
				s.log.Warn("search: indexing bodies failed", "group", group, "err", err)
			}
			s.mu.Lock()
			again := s.bodyAgain[group] && err == nil
			delete(s.bodyAgain, group)
			if !again {
				delete(s.bodyRunning, group)
			}
			s.mu.Unlock()
			if !again {
				return
			}
		}
	}()
}

// afterLoad runs job once the body files are read (or not at all when
// Close is called first).
func (s *Search) afterLoad(job func() error) error {
	select {
	case <-s.loaded:
		return job()
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// withSlot runs job once it holds a token of slots (or not at all when
// Close is called first).
func (s *Search) withSlot(slots chan struct{}, job func() error) error {
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
		return job()
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// Wait blocks until no indexing job runs (tests).
func (s *Search) Wait() {
	for {
		s.mu.Lock()
		n := len(s.running) + len(s.bodyRunning)
		s.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// build brings group's index to cover the whole group: its newest range
// first when none is indexed, then up to the group's high mark, then down
// to its low mark (see the top of the file). The body pass starts once
// the first range is in.
func (s *Search) build(group string) error {
	ctx := s.ctx
	st, err := s.fed.GroupStats(ctx, group)
	if err != nil {
		return err
	}
	svc := s.fed.service(st.Server)
	if svc == nil {
		return fmt.Errorf("newsweb: search: server %q gone", st.Server)
	}
	chunk := int64(s.opts.Chunk)
	fetch := func(lo, hi int64) error {
		ev, err := svc.Do(ctx, mreader.GetNewArticles{Group: group, Since: lo - 1, Until: hi, Limit: s.opts.Chunk})
		if err != nil {
			return err
		}
		r, ok := ev.(mreader.ThreadsResult)
		if !ok {
			return fmt.Errorf("newsweb: search: %s %d-%d: answer %T", group, lo, hi, ev)
		}
		entries := make([]searchindex.Entry, 0, len(r.Articles))
		for _, a := range r.Articles {
			entries = append(entries, searchindex.Entry{Number: a.Number, Date: a.Date, MessageID: a.MessageID,
				Subject: decodeHeader(a.Subject), From: decodeHeader(a.From)})
		}
		return s.ix.AppendRange(group, lo, hi, entries)
	}
	low := max(st.Low, 1)
	s.mu.Lock()
	s.lows[group] = low
	s.mu.Unlock()
	if st.High < low {
		return nil // no article
	}
	lo, hi := s.ix.Range(group)
	if hi == 0 || hi < low-1 {
		// Nothing indexed, or nothing of what is still there: the newest
		// range first.
		hi = st.High
		lo = max(low, hi-chunk+1)
		if err := fetch(lo, hi); err != nil {
			return err
		}
		s.mu.Lock()
		s.firstInLocked(group)
		s.mu.Unlock()
		s.startBodies(group)
	}
	for hi < st.High {
		until := min(hi+chunk, st.High)
		if err := fetch(hi+1, until); err != nil {
			return err
		}
		hi = until
	}
	s.startBodies(group)
	for lo > low {
		from := max(low, lo-chunk)
		if err := fetch(from, lo-1); err != nil {
			return err
		}
		lo = from
	}
	s.log.Debug("search: group indexed", "group", group, "articles", s.ix.Len(group), "low", st.Low, "high", st.High)
	return nil
}

// searchQuery reads /search and /api/search parameters: q (words and
// "phrases" of the subject, author or indexed body), author, group, since
// and until (YYYY-MM-DD, until inclusive).
func searchQuery(r *http.Request) (searchindex.Query, string, error) {
	v := r.URL.Query()
	q := searchindex.Query{Text: v.Get("q"), Author: v.Get("author"), Limit: maxSearchHits}
	if len(q.Text) > maxQuery || len(q.Author) > maxQuery {
		return q, "", errBad
	}
	group := v.Get("group")
	if group != "" {
		if proto.ValidGroupName(group) != nil {
			return q, "", errBad
		}
		q.Groups = []string{group}
	}
	if p := v.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > maxSearchPages {
			return q, "", errBad
		}
		q.Offset = (n - 1) * maxSearchHits
	}
	for _, d := range []struct {
		name string
		to   *time.Time
		add  int
	}{{"since", &q.Since, 0}, {"until", &q.Until, 1}} {
		if s := v.Get(d.name); s != "" {
			t, err := time.Parse(time.DateOnly, s)
			if err != nil {
				return q, "", errBad
			}
			*d.to = t.AddDate(0, 0, d.add)
		}
	}
	return q, group, nil
}

// searchHit is one result for the page and the API.
type searchHit struct {
	Group    string `json:"group"`
	Number   int64  `json:"number"`
	ID       string `json:"message_id"`
	Subject  string `json:"subject"`
	From     string `json:"from"`
	Date     string `json:"date,omitempty"`
	DateText string `json:"-"`
	Link     string `json:"-"`
	// Snippet is the stretch of the body around the first match, when a
	// word matched only there: plain text pieces, the matches marked.
	Snippet []searchindex.Fragment `json:"snippet,omitempty"`
	// Thread is the subject of the hit's thread: its subject less the
	// "Re:" prefixes.
	Thread string `json:"thread"`
}

// searchThread is the hits of one thread on a page of results.
type searchThread struct {
	Subject string
	Group   string
	Hits    []searchHit
}

// threadHits groups hits (newest first) by thread: the hits of one group
// whose subjects are the same less their "Re:" prefixes and case are one
// thread (the index keeps no References). A thread comes where its newest
// hit came, and keeps its hits in their order, so threads are newest
// first and so are the posts of each.
func threadHits(hits []searchHit) []searchThread {
	var out []searchThread
	at := map[[2]string]int{}
	for _, h := range hits {
		k := [2]string{h.Group, strings.ToLower(h.Thread)}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, searchThread{Subject: h.Thread, Group: h.Group})
		}
		out[i].Hits = append(out[i].Hits, h)
	}
	return out
}

type searchView struct {
	base
	Query, Author, Since, Until string
	Groups                      string // the group searched, "" for every indexed one
	Total                       int
	Approx                      bool // Total is a lower bound
	Hits                        []searchHit
	Threads                     []searchThread // Hits by thread
	Partial                     bool           // the group's index is still being built
	Indexed                     int
	IndexedLow, IndexedHigh     int64 // the range of article numbers indexed
	Older                       bool  // a partial index: articles below IndexedLow are still to come
	Bodies                      bool  // the group's bodies are indexed (search_bodies)
	BodiesIndexed               int   // articles whose bodies are
	IndexedGroups               int   // groups indexed so far (a search of them all says so)
	Pager                       pager
}

// runSearch answers a search request: the hits and whether the index is
// complete.
func (s *Server) runSearch(ctx context.Context, r *http.Request) (searchView, error) {
	q, group, err := searchQuery(r)
	if err != nil {
		return searchView{}, err
	}
	v := searchView{base: s.base("Search", group), Query: q.Text, Author: q.Author, Groups: group,
		Since: r.URL.Query().Get("since"), Until: r.URL.Query().Get("until")}
	if group != "" {
		v.Partial = !s.search.Index(group)
		if v.Partial {
			s.search.waitFirst(ctx, group)
			v.Partial = !s.search.Index(group)
		}
		v.Indexed = s.search.ix.Len(group)
		v.IndexedLow, v.IndexedHigh = s.search.ix.Range(group)
		v.Older = v.Partial && s.search.olderPending(group, v.IndexedLow)
		v.Bodies = s.search.wantBodies(group)
		v.BodiesIndexed = s.search.ix.BodyLen(group)
	} else {
		if q.Offset == 0 {
			s.search.IndexVisited(ctx)
		}
		v.IndexedGroups = len(s.search.ix.Groups())
	}
	if strings.TrimSpace(q.Text+q.Author) == "" && q.Since.IsZero() && q.Until.IsZero() {
		return v, nil // an empty form
	}
	res := s.search.ix.Search(q)
	v.Total, v.Approx = res.Total, res.Approx
	page := q.Offset/maxSearchHits + 1
	pages := min(maxSearchPages, max(1, (res.Total+maxSearchHits-1)/maxSearchHits))
	v.Pager = pager{Page: page, Pages: pages, PrevLabel: "← Newer hits", NextLabel: "Older hits →"}
	at := func(n int) string {
		u := *r.URL
		qv := u.Query()
		qv.Set("page", strconv.Itoa(n))
		u.RawQuery = qv.Encode()
		return u.Path + "?" + u.RawQuery
	}
	if page > 1 {
		v.Pager.Prev = at(page - 1)
	}
	if page < pages {
		v.Pager.Next = at(page + 1)
	}
	for _, h := range res.Hits {
		v.Hits = append(v.Hits, searchHit{Group: h.Group, Number: h.Number, ID: h.MessageID, Subject: orNoSubject(h.Subject),
			From: displayName(h.From), Date: apiTime(h.Date), DateText: fmtTime(h.Date), Link: articleURL(h.MessageID, h.Group),
			Snippet: h.Snippet, Thread: orNoSubject(baseSubject(h.Subject))})
	}
	v.Threads = threadHits(v.Hits)
	return v, nil
}

func (s *Server) searchPage(ctx context.Context, r *http.Request) (*response, error) {
	v, err := s.runSearch(ctx, r)
	if err != nil {
		return nil, err
	}
	resp, err := s.render("search", v, cacheError)
	return resp, err
}

func (s *Server) apiSearch(ctx context.Context, r *http.Request) (*response, error) {
	v, err := s.runSearch(ctx, r)
	if err != nil {
		return nil, err
	}
	hits := v.Hits
	if hits == nil {
		hits = []searchHit{}
	}
	a := map[string]any{"query": v.Query, "author": v.Author, "group": v.Groups, "total": v.Total,
		"hits": hits, "complete": !v.Partial, "indexed": v.Indexed}
	if v.Groups != "" && v.IndexedHigh > 0 {
		a["indexed_range"] = []int64{v.IndexedLow, v.IndexedHigh}
	}
	if v.Groups == "" {
		a["indexed_groups"] = v.IndexedGroups
	}
	if v.Approx {
		a["total_at_least"] = true
	}
	if v.Bodies {
		a["bodies_indexed"] = v.BodiesIndexed
	}
	return renderJSON(a, cacheError)
}
