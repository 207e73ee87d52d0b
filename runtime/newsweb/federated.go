package newsweb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/newsflow/newsflow/machine"
	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/proto"
)

// ErrBadRequest is wrapped when a group name or message-id is not valid.
var ErrBadRequest = errors.New("bad request")

// Defaults for FederatedOptions fields left zero.
const (
	DefaultArticleCacheBytes = 256 << 20 // total size of cached articles
	DefaultListCacheArticles = 2_000_000 // total summaries held by the thread-list and thread caches
	DefaultIncrementalWait   = 2 * time.Second
	// staleGrace is how long an expired thread list is kept to be shown,
	// with a note, while no server answers for its group.
	staleGrace = 24 * time.Hour
	// DefaultServerTimeout is how long a server may stay silent with a
	// request of ours before the request moves on to the next server.
	DefaultServerTimeout = 5 * time.Second
)

// FederatedOptions tune a Federated service.
type FederatedOptions struct {
	// Cache holds the TTL of each cache (machine/reader's defaults for
	// zero fields).
	Cache mreader.CacheConfig
	// ArticleCacheBytes bounds the article cache (DefaultArticleCacheBytes
	// when 0); ListCacheArticles bounds the thread-list and thread caches in
	// article summaries (DefaultListCacheArticles when 0).
	ArticleCacheBytes int64
	ListCacheArticles int64
	// ThreadLimit is how many of a group's newest articles a thread list
	// covers (machine/reader's DefaultThreadLimit when 0).
	ThreadLimit int
	// IncrementalWait bounds how long a page waits for the incremental
	// update of a cached thread list (or for group stats) before it is served
	// what the cache holds; the update still lands in the cache.
	// DefaultIncrementalWait when 0.
	IncrementalWait time.Duration
	// Debounce is the least time between two incremental updates of a group
	// (machine/reader's DefaultIncrementalDebounce when 0).
	Debounce time.Duration
	// FetchTimeout bounds a fetch that callers share (they may each stop
	// waiting earlier); DefaultRequestTimeout when 0.
	FetchTimeout time.Duration
	// ServerTimeout bounds how long a server that sends nothing at all
	// (it accepts and never answers) holds a request: past it the request
	// moves on to the next server, and while the server stays silent with
	// requests pending it is passed over. DefaultServerTimeout when 0.
	ServerTimeout time.Duration
	// Cluster, when set, shares the article and thread-list caches with
	// the other replicas and coalesces fetches across them (NewCluster).
	Cluster *Cluster
	// NoBackground disables the background refresh loop (tests drive
	// refreshes with RunDueRefreshes instead).
	NoBackground bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Logger, Metrics as for ServiceOptions.
	Logger  *slog.Logger
	Metrics *Metrics
}

// Group is one group of the merged group list.
type Group struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Status      string   `json:"status,omitempty"` // LIST ACTIVE flag: y, n, m, ...
	Low         int64    `json:"low"`
	High        int64    `json:"high"`
	Count       int64    `json:"count"`   // estimate from the marks (RFC 3977 §6.1.1.2)
	Servers     []string `json:"servers"` // the servers that carry it, by priority
}

// Article is an article as the server sent it (CRLF lines, dot-unstuffed).
type Article struct {
	MessageID string
	Raw       []byte
	Server    string
	// Posted marks newsweb's own copy of an article it just posted (see
	// Federated.posted): without the fields the server added (Path,
	// Xref, its Injection-Info) until the server's copy replaces it.
	Posted bool
}

// GroupStats is a group's count and newest article date.
type GroupStats struct {
	Group    string
	Count    int64
	Low      int64
	High     int64
	LastDate time.Time
	Server   string
}

// Federated is the reader service over several servers: caches,
// coalescing, failover by priority,
// incremental thread updates and background refresh.
type Federated struct {
	services []*Service // by priority, then configuration order
	opts     FederatedOptions
	log      *slog.Logger
	metrics  *Metrics
	sf       singleflight.Group

	articles *ttlCache[Article]
	notFound *ttlCache[struct{}]
	// tooBig remembers requests whose answer passed the reader's limits on
	// every server (an over-long line, an endless answer) for the
	// not-found TTL: asking again would only cost a connection each time.
	tooBig  *ttlCache[error]
	threads *ttlCache[*ThreadList]
	archive *ttlCache[*ThreadList] // older ranges of groups, by archiveKey
	thread  *ttlCache[ThreadView]
	groups  *ttlCache[[]Group]
	stats   *ttlCache[GroupStats]
	// statsGen counts what was put in the stats cache: the group list page
	// (which shows those counts) is kept under it.
	statsGen atomic.Uint64

	// staleGroups holds the groups whose expired list is being shown
	// because no server answered (group -> since when); nStale counts
	// them, so that the usual page pays one atomic load.
	staleGroups sync.Map
	nStale      atomic.Int32

	mu        sync.Mutex // guards debouncer and refresher
	debouncer *mreader.Debouncer
	refresher *mreader.Refresher
	wake      chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewFederated returns the service over services (which it owns: Close
// closes them) and starts the background refresh loop unless disabled.
func NewFederated(services []*Service, opts FederatedOptions) *Federated {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ArticleCacheBytes == 0 {
		opts.ArticleCacheBytes = DefaultArticleCacheBytes
	}
	if opts.ListCacheArticles == 0 {
		opts.ListCacheArticles = DefaultListCacheArticles
	}
	machine.Default(&opts.ThreadLimit, mreader.DefaultThreadLimit)
	machine.Default(&opts.IncrementalWait, DefaultIncrementalWait)
	machine.Default(&opts.FetchTimeout, DefaultRequestTimeout)
	machine.Default(&opts.ServerTimeout, DefaultServerTimeout)
	opts.Cache = opts.Cache.WithDefaults()
	ordered := slices.Clone(services)
	slices.SortStableFunc(ordered, func(a, b *Service) int { return cmp.Compare(a.cfg.Priority, b.cfg.Priority) })
	now := opts.Now
	f := &Federated{
		services:  ordered,
		opts:      opts,
		log:       opts.Logger,
		metrics:   opts.Metrics,
		articles:  newTTLCache[Article](opts.Cache.Article, opts.ArticleCacheBytes, now),
		notFound:  newTTLCache[struct{}](opts.Cache.ArticleNotFound, 100_000, now),
		tooBig:    newTTLCache[error](opts.Cache.ArticleNotFound, 10_000, now),
		threads:   newTTLCache[*ThreadList](opts.Cache.Threads, opts.ListCacheArticles, now).withGrace(staleGrace),
		archive:   newTTLCache[*ThreadList](opts.Cache.Threads, opts.ListCacheArticles, now),
		thread:    newTTLCache[ThreadView](opts.Cache.Thread, opts.ListCacheArticles, now),
		groups:    newTTLCache[[]Group](opts.Cache.Groups, 0, now),
		stats:     newTTLCache[GroupStats](opts.Cache.GroupStats, 100_000, now),
		debouncer: mreader.NewDebouncer(opts.Debounce),
		refresher: mreader.NewRefresher(now()),
		wake:      make(chan struct{}, 1),
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	if !opts.NoBackground {
		f.wg.Add(1)
		go f.refreshLoop()
	}
	return f
}

// Services returns the servers by priority.
func (f *Federated) Services() []*Service { return slices.Clone(f.services) }

// Close stops the background refresh and every server's workers.
func (f *Federated) Close() {
	f.cancel()
	f.wg.Wait()
	for _, s := range f.services {
		s.Close()
	}
}

func (f *Federated) now() time.Time { return f.opts.Now() }

// service returns the server named name, or nil.
func (f *Federated) service(name string) *Service {
	for _, s := range f.services {
		if s.cfg.Name == name {
			return s
		}
	}
	return nil
}

// shared runs fetch once for every concurrent caller with the same key
// (singleflight) on the service's own context, bounded by FetchTimeout, so
// that a caller who stops waiting does not fail the others. The caller
// waits until the result or its ctx's end.
func (f *Federated) shared(ctx context.Context, key string, fetch func(ctx context.Context) (any, error)) (any, error) {
	ch := f.sf.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(f.ctx, f.opts.FetchTimeout)
		defer cancel()
		return fetch(fctx)
	})
	select {
	case r := <-ch:
		if r.Shared {
			f.metrics.coalesced("federated")
		}
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, fmt.Errorf("reader: %s: %w", key, ctx.Err())
	}
}

// errNotFound carries whether every server said so (only then is a
// negative answer cached).
type errNotFound struct {
	what       string
	definitive bool
}

// Error says what was not found.
func (e *errNotFound) Error() string { return "reader: " + e.what + ": " + ErrNotFound.Error() }

// Unwrap makes errors.Is(err, ErrNotFound) hold.
func (e *errNotFound) Unwrap() error { return ErrNotFound }

// ask tries the servers in priority order until one answers: an error moves
// on (failover), a NotFound too (another server may carry it). It returns
// the first result with its server; ErrNotFound when no server had it (and
// at least one said so); ErrUnavailable with every server's error otherwise.
func (f *Federated) ask(ctx context.Context, what string, req mreader.Request) (mreader.Event, *Service, error) {
	if err, ok := f.tooBig.get(req.Key()); ok {
		return nil, nil, err
	}
	var errs []error
	notFound := 0
	for i, s := range f.services {
		if i < len(f.services)-1 && s.silent(time.Now(), f.opts.ServerTimeout) {
			errs = append(errs, fmt.Errorf("reader: %s: %w: silent for %v with requests pending", s.cfg.Name, ErrUnavailable, f.opts.ServerTimeout))
			continue
		}
		ev, err := f.doBounded(ctx, s, req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, err
			}
			f.log.Debug("server failed, trying the next", "server", s.cfg.Name, "request", req.Key(), "err", err)
			errs = append(errs, err)
			continue
		}
		if _, ok := ev.(mreader.NotFound); ok {
			notFound++
			continue
		}
		return ev, s, nil
	}
	if notFound > 0 {
		return nil, nil, &errNotFound{what: what, definitive: len(errs) == 0}
	}
	if len(f.services) == 0 {
		errs = append(errs, errors.New("no servers configured"))
	}
	err := fmt.Errorf("reader: %s: %w: %w", what, ErrUnavailable, errors.Join(errs...))
	if tooBig(errs) {
		f.log.Debug("answer too large on every server: not asked again for a while", "request", req.Key(), "ttl", f.opts.Cache.ArticleNotFound)
		f.tooBig.put(req.Key(), err, 1)
	}
	return nil, nil, err
}

// errSilent ends a request to a server that sent nothing for the server
// timeout.
var errSilent = errors.New("the server sent nothing")

// doBounded is s.Do, given up when s sends nothing at all for
// ServerTimeout from the request's start (a server that accepts and never
// answers); a server that is busy but answering keeps the request.
func (f *Federated) doBounded(ctx context.Context, s *Service, req mreader.Request) (mreader.Event, error) {
	limit := f.opts.ServerTimeout
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	var mu sync.Mutex
	var t *time.Timer
	mu.Lock()
	t = time.AfterFunc(limit, func() {
		mu.Lock()
		defer mu.Unlock()
		heard := s.heardAt()
		if heard.Before(start) {
			heard = start
		}
		if wait := limit - time.Since(heard); wait > 0 {
			t.Reset(wait)
			return
		}
		cancel(errSilent)
	})
	mu.Unlock()
	defer t.Stop()
	ev, err := s.Do(sctx, req)
	if err != nil && ctx.Err() == nil && context.Cause(sctx) == errSilent {
		f.log.Warn("server silent, trying the next", "server", s.cfg.Name, "request", req.Key(), "after", limit)
		return nil, fmt.Errorf("reader: %s: %w: %w for %v", s.cfg.Name, ErrUnavailable, errSilent, limit)
	}
	return ev, err
}

// tooBig reports whether every server's error is an answer that passed
// the reader's limits (proto.ErrLineTooLong: an over-long line or block).
func tooBig(errs []error) bool {
	for _, err := range errs {
		if !errors.Is(err, proto.ErrLineTooLong) {
			return false
		}
	}
	return len(errs) > 0
}

// Article returns the article with message-id id (with angle brackets).
func (f *Federated) Article(ctx context.Context, id string) (Article, error) {
	if err := proto.ValidNNTPMessageID(id); err != nil {
		return Article{}, fmt.Errorf("reader: article %q: %w: %w", id, ErrBadRequest, err)
	}
	key := mreader.ArticleKey(id)
	if a, ok := f.articles.get(key); ok {
		f.metrics.cacheLookup(mreader.CacheArticle, true)
		return a, nil
	}
	f.metrics.cacheLookup(mreader.CacheArticle, false)
	if _, ok := f.notFound.get(key); ok {
		f.metrics.cacheLookup(mreader.CacheArticleNotFound, true)
		return Article{}, &errNotFound{what: "article " + id, definitive: true}
	}
	f.metrics.cacheLookup(mreader.CacheArticleNotFound, false)
	v, err := f.shared(ctx, "article:"+id, func(ctx context.Context) (any, error) {
		// A fetch that finished between our miss and this call cached it.
		if a, ok := f.articles.get(key); ok {
			return a, nil
		}
		if _, ok := f.notFound.get(key); ok {
			return nil, &errNotFound{what: "article " + id, definitive: true}
		}
		if c := f.opts.Cluster; c != nil {
			a, err := c.Article(ctx, id, func(ctx context.Context) (Article, error) { return f.fetchArticle(ctx, id, key) })
			if err == nil {
				f.articles.put(key, a, int64(len(a.Raw))+int64(len(id)))
				return a, nil
			}
			return nil, err
		}
		return f.fetchArticle(ctx, id, key)
	})
	if err != nil {
		return Article{}, err
	}
	return v.(Article), nil
}

// fetchArticle asks the servers for article id and caches the answer
// (a definitive not-found too).
func (f *Federated) fetchArticle(ctx context.Context, id, key string) (Article, error) {
	a, err := f.askArticle(ctx, mreader.GetArticle{MessageID: id})
	if err != nil {
		var nf *errNotFound
		if errors.As(err, &nf) && nf.definitive {
			f.notFound.put(key, struct{}{}, 1)
		}
		return Article{}, err
	}
	f.articles.put(key, a, int64(len(a.Raw))+int64(len(id)))
	return a, nil
}

// Original returns article id as a server has it, for the views of the
// original message: when the cache holds newsweb's own copy of a post,
// the servers are asked for theirs, which replaces it; while none has it
// yet, newsweb's copy comes back, still marked Posted.
func (f *Federated) Original(ctx context.Context, id string) (Article, error) {
	a, err := f.Article(ctx, id)
	if err != nil || !a.Posted {
		return a, err
	}
	sa, err := f.askArticle(ctx, mreader.GetArticle{MessageID: id})
	if err != nil {
		return a, nil
	}
	f.articles.put(mreader.ArticleKey(id), sa, int64(len(sa.Raw))+int64(len(id)))
	return sa, nil
}

// askArticle asks the servers for the article req names, caching nothing
// (fetchArticle for readers; the search's body pass in the background).
func (f *Federated) askArticle(ctx context.Context, req mreader.GetArticle) (Article, error) {
	ev, s, err := f.ask(ctx, "article "+req.MessageID, req)
	if err != nil {
		return Article{}, err
	}
	r, ok := ev.(mreader.ArticleResult)
	if !ok {
		return Article{}, fmt.Errorf("reader: article %s: unexpected answer %T", req.MessageID, ev)
	}
	return Article{MessageID: req.MessageID, Raw: r.Raw, Server: s.cfg.Name}, nil
}

// Groups returns the group list merged from every server that answered
// (see GroupList).
func (f *Federated) Groups(ctx context.Context) ([]Group, error) {
	l, err := f.GroupList(ctx)
	return l.Groups, err
}

// GroupList is a merged group list and what it lacks.
type GroupList struct {
	// Groups are the groups by name. A group carried by several servers
	// takes its marks from the first by priority, and its description
	// from the first that has one.
	Groups []Group
	// Missing names the servers, by priority, whose lists are not in
	// Groups: they failed or were silent. A list with none missing is
	// cached; one with some is asked again next time.
	Missing []string
}

// GroupList returns the group list merged from every server that answers;
// it fails only when none does.
func (f *Federated) GroupList(ctx context.Context) (GroupList, error) {
	if g, ok := f.groups.get(mreader.GroupsKey); ok {
		f.metrics.cacheLookup(mreader.CacheGroups, true)
		return GroupList{Groups: g}, nil
	}
	f.metrics.cacheLookup(mreader.CacheGroups, false)
	v, err := f.shared(ctx, "groups", func(ctx context.Context) (any, error) {
		if g, ok := f.groups.get(mreader.GroupsKey); ok {
			return GroupList{Groups: g}, nil
		}
		results := make([]mreader.GroupsResult, len(f.services))
		errs := make([]error, len(f.services))
		var wg sync.WaitGroup
		for i, s := range f.services {
			wg.Go(func() {
				ev, err := f.doBounded(ctx, s, mreader.GetGroups{})
				if err != nil {
					errs[i] = err
					return
				}
				if r, ok := ev.(mreader.GroupsResult); ok {
					results[i] = r
				} else {
					errs[i] = fmt.Errorf("reader: %s: LIST: unexpected answer %T", s.cfg.Name, ev)
				}
			})
		}
		wg.Wait()
		var missing []string
		for i, err := range errs {
			if err != nil {
				missing = append(missing, f.services[i].cfg.Name)
			}
		}
		if len(missing) == len(f.services) {
			return nil, fmt.Errorf("reader: group list: %w: %w", ErrUnavailable, errors.Join(errs...))
		}
		merged := mergeGroups(f.services, results, errs)
		if len(missing) == 0 {
			f.groups.put(mreader.GroupsKey, merged, 1)
		} else {
			f.log.Warn("group list incomplete, not cached", "missing", missing, "err", errors.Join(errs...))
		}
		return GroupList{Groups: merged, Missing: missing}, nil
	})
	if err != nil {
		return GroupList{}, err
	}
	return v.(GroupList), nil
}

// mergeGroups merges per-server listings (services in priority order).
func mergeGroups(services []*Service, results []mreader.GroupsResult, errs []error) []Group {
	idx := make(map[string]int)
	var out []Group
	for i, r := range results {
		if errs[i] != nil {
			continue
		}
		for _, g := range r.Groups {
			j, ok := idx[g.Name]
			if !ok {
				count := g.High - g.Low + 1
				if g.High < g.Low || g.High == 0 {
					count = 0
				}
				idx[g.Name] = len(out)
				out = append(out, Group{Name: g.Name, Description: g.Description, Status: g.Status,
					Low: g.Low, High: g.High, Count: count, Servers: []string{services[i].cfg.Name}})
				continue
			}
			out[j].Servers = append(out[j].Servers, services[i].cfg.Name)
			if out[j].Description == "" {
				out[j].Description = g.Description
			}
		}
	}
	slices.SortFunc(out, func(a, b Group) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// validGroup checks a group name from a request.
func validGroup(group string) error {
	if err := proto.ValidGroupName(group); err != nil {
		return fmt.Errorf("reader: group %q: %w: %w", group, ErrBadRequest, err)
	}
	return nil
}

// GroupStats returns a group's count and newest article date (Low priority).
func (f *Federated) GroupStats(ctx context.Context, group string) (GroupStats, error) {
	if err := validGroup(group); err != nil {
		return GroupStats{}, err
	}
	key := mreader.GroupStatsKey(group)
	if st, ok := f.stats.get(key); ok {
		f.metrics.cacheLookup(mreader.CacheGroupStats, true)
		return st, nil
	}
	f.metrics.cacheLookup(mreader.CacheGroupStats, false)
	v, err := f.shared(ctx, "stats:"+group, func(ctx context.Context) (any, error) {
		if st, ok := f.stats.get(key); ok {
			return st, nil
		}
		ev, s, err := f.ask(ctx, "group "+group, mreader.GetGroupStats{Group: group})
		if err != nil {
			return nil, err
		}
		r, ok := ev.(mreader.StatsResult)
		if !ok {
			return nil, fmt.Errorf("reader: group %s: unexpected answer %T", group, ev)
		}
		st := GroupStats{Group: group, Count: r.Count, Low: r.Low, High: r.High, LastDate: r.LastDate, Server: s.cfg.Name}
		f.stats.put(key, st, 1)
		f.statsGen.Add(1)
		return st, nil
	})
	if err != nil {
		return GroupStats{}, err
	}
	return v.(GroupStats), nil
}
