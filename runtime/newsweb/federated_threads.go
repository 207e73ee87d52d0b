package newsweb

// A group's thread list and its threads: fetched from the first server
// that answers, joined with the other servers' articles of the group by
// Message-ID, cached, brought up to date incrementally, and served stale
// while no server answers.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/newsflow/newsflow/proto"
	"golang.org/x/sync/singleflight"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// ThreadList is a group's cached thread list: machine/reader's
// CachedThreads with the server it came from (article numbers are that server's).
type ThreadList struct {
	mreader.CachedThreads
	Server  string    // the server whose numbers HighWater counts
	Fetched time.Time // when the list was fetched or an update last changed it
	// Floor is the lowest article number the list's range covers; More
	// says the group has articles below it (the list was cut at the thread
	// limit), which older pages fetch as archive ranges (Archive).
	Floor int64
	More  bool

	// roots maps every message-id in Threads (articles and placeholders)
	// to its thread's root, made on first use: a list is not changed once
	// made (an update makes a new one), and without the index every view
	// of a thread walked the whole group (mreader.Find) to find its root.
	rootsOnce sync.Once
	roots     map[string]*mreader.Node
	// version is listVersion's answer, made on first use (for the same
	// reason: pages look it up on every view).
	versionOnce sync.Once
	version     string
	// unnumbered is Unnumbered's answer, made on first use (group pages
	// and the group list show it on every view).
	unnumberedOnce sync.Once
	unnumbered     int
}

// root is the root of the thread holding id, nil when no article or
// placeholder of the list has that id: mreader.Find, answered from the
// index (the first node with the id in walk order, as Find takes).
func (tl *ThreadList) root(id string) *mreader.Node {
	tl.rootsOnce.Do(func() {
		tl.roots = make(map[string]*mreader.Node, len(tl.Articles))
		var cur *mreader.Node
		mreader.Walk(tl.Threads, func(n *mreader.Node, depth int) bool {
			if depth == 0 {
				cur = n
			}
			if _, dup := tl.roots[n.ID]; !dup {
				tl.roots[n.ID] = cur
			}
			return true
		})
	})
	return tl.roots[id]
}

// ThreadView is one thread of a group.
type ThreadView struct {
	Group  string
	Root   *mreader.Node
	Server string
}

// Threads returns the group's thread list, newest activity first. A cached
// list is first brought up to date incrementally (debounced, waited for at
// most IncrementalWait); a missing one is fetched whole (up to ThreadLimit
// articles).
func (f *Federated) Threads(ctx context.Context, group string) (*ThreadList, error) {
	if err := validGroup(group); err != nil {
		return nil, err
	}
	f.markActive(group)
	if tl, ok := f.threads.get(mreader.ThreadsKey(group)); ok {
		f.metrics.cacheLookup(mreader.CacheThreads, true)
		return f.update(ctx, group, tl), nil
	}
	f.metrics.cacheLookup(mreader.CacheThreads, false)
	tl, err := f.fetchThreads(ctx, group)
	if err == nil {
		if _, was := f.staleGroups.LoadAndDelete(group); was {
			f.nStale.Add(-1)
			f.log.Info("group list fetched again", "group", group)
		}
		return tl, nil
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		if old, ok := f.threads.stale(mreader.ThreadsKey(group)); ok {
			if _, was := f.staleGroups.LoadOrStore(group, f.now()); !was {
				f.nStale.Add(1)
				f.log.Warn("no server answered: showing the expired group list", "group", group, "fetched", old.Fetched, "err", err)
			}
			return old, nil
		}
	}
	return nil, err
}

// StaleSince says since when group's list is shown expired because no
// server answered.
func (f *Federated) StaleSince(group string) (time.Time, bool) {
	if f.nStale.Load() == 0 {
		return time.Time{}, false
	}
	v, ok := f.staleGroups.Load(group)
	if !ok {
		return time.Time{}, false
	}
	return v.(time.Time), true
}

// fetchThreads fetches a group's thread list whole and caches it.
func (f *Federated) fetchThreads(ctx context.Context, group string) (*ThreadList, error) {
	v, err := f.shared(ctx, "threads:"+group, func(ctx context.Context) (any, error) {
		if tl, ok := f.threads.get(mreader.ThreadsKey(group)); ok {
			return tl, nil
		}
		fetch := func(ctx context.Context) (*ThreadList, error) {
			ev, s, err := f.ask(ctx, "group "+group, mreader.GetThreads{Group: group, Limit: f.opts.ThreadLimit})
			if err != nil {
				return nil, err
			}
			r, ok := ev.(mreader.ThreadsResult)
			if !ok {
				return nil, fmt.Errorf("reader: group %s: unexpected answer %T", group, ev)
			}
			arts := mreader.MergeSummaries(r.Articles, f.othersOf(ctx, s, group, r.Articles))
			return &ThreadList{CachedThreads: mreader.CachedThreads{Group: group, HighWater: r.High, Articles: arts,
				Threads: mreader.Thread(arts)}, Server: s.cfg.Name, Fetched: f.now(), Floor: r.Low, More: r.Truncated}, nil
		}
		var tl *ThreadList
		var err error
		if c := f.opts.Cluster; c != nil {
			tl, err = c.Threads(ctx, group, fetch)
		} else {
			tl, err = fetch(ctx)
		}
		if err != nil {
			return nil, err
		}
		f.putThreads(tl)
		return tl, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*ThreadList), nil
}

// othersOf asks the servers other than s for group's newest articles and
// returns those whose message-ids arts lacks, each once, with number 0
// (their numbers are another server's): a group's list is the union of
// what its servers carry. A server that fails or lacks the group adds
// nothing. The list's incremental updates ask s only; the other servers'
// new articles come with the next whole fetch (the threads TTL).
func (f *Federated) othersOf(ctx context.Context, s *Service, group string, arts []mreader.Summary) []mreader.Summary {
	if len(f.services) < 2 {
		return nil
	}
	results := make([][]mreader.Summary, len(f.services))
	var wg sync.WaitGroup
	for i, o := range f.services {
		if o == s {
			continue
		}
		wg.Go(func() {
			ev, err := f.doBounded(ctx, o, mreader.GetThreads{Group: group, Limit: f.opts.ThreadLimit})
			if r, ok := ev.(mreader.ThreadsResult); ok && err == nil {
				results[i] = r.Articles
			} else if err != nil {
				f.log.Debug("group from another server failed", "group", group, "server", o.cfg.Name, "err", err)
			}
		})
	}
	wg.Wait()
	seen := make(map[string]bool, len(arts))
	for _, a := range arts {
		seen[a.MessageID] = true
	}
	var extra []mreader.Summary
	for _, r := range results {
		for _, a := range r {
			if !seen[a.MessageID] {
				seen[a.MessageID] = true
				a.Number = 0
				extra = append(extra, a)
			}
		}
	}
	return extra
}

// Unnumbered counts the list's articles that its server has not numbered:
// those only other servers carry, and those just posted.
func (tl *ThreadList) Unnumbered() int {
	tl.unnumberedOnce.Do(func() {
		for _, a := range tl.Articles {
			if a.Number == 0 {
				tl.unnumbered++
			}
		}
	})
	return tl.unnumbered
}

// CachedOthers is Unnumbered of group's cached thread list, 0 when none
// is cached.
func (f *Federated) CachedOthers(group string) int {
	tl, ok := f.threads.get(mreader.ThreadsKey(group))
	if !ok {
		return 0
	}
	return tl.Unnumbered()
}

func (f *Federated) putThreads(tl *ThreadList) {
	f.threads.put(mreader.ThreadsKey(tl.Group), tl, int64(len(tl.Articles))+1)
}

// update brings a cached thread list up to date: the incremental update
// (OVER from the high-water mark) on a cache hit, waited for at most IncrementalWait. It returns the
// freshest list it has.
func (f *Federated) update(ctx context.Context, group string, tl *ThreadList) *ThreadList {
	ch, ok := f.incremental(group)
	if !ok {
		return tl
	}
	t := time.NewTimer(f.opts.IncrementalWait)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.Err == nil && r.Val != nil {
			return r.Val.(*ThreadList)
		}
	case <-t.C:
		f.log.Debug("incremental update still running, serving the cached list", "group", group)
	case <-ctx.Done():
	}
	return tl
}

// incremental starts (or joins) the incremental update of group: the new
// articles since the cached high-water mark, fetched at Low priority from
// the server the list came from, merged and cached again. It is debounced
// to once per Debounce per group (false when debounced) and coalesced.
func (f *Federated) incremental(group string) (<-chan singleflight.Result, bool) {
	f.mu.Lock()
	allowed := f.debouncer.Allow(group, f.now())
	f.mu.Unlock()
	if !allowed {
		return nil, false
	}
	ch := f.sf.DoChan("new:"+group, func() (any, error) {
		ctx, cancel := context.WithTimeout(f.ctx, f.opts.FetchTimeout)
		defer cancel()
		tl, ok := f.threads.get(mreader.ThreadsKey(group))
		if !ok {
			return nil, nil // expired meanwhile: the next page load fetches it whole
		}
		s := f.service(tl.Server)
		if s == nil {
			return nil, nil
		}
		ev, err := f.doBounded(ctx, s, tl.Update())
		if err != nil {
			f.log.Debug("incremental update failed", "group", group, "server", tl.Server, "err", err)
			return nil, err
		}
		switch r := ev.(type) {
		case mreader.NotFound:
			f.threads.delete(mreader.ThreadsKey(group))
			return nil, &errNotFound{what: "group " + group}
		case mreader.ThreadsResult:
			f.log.Debug("Found new articles", "group", group, "count", len(r.Articles))
			if len(r.Articles) == 0 && r.High <= tl.HighWater {
				// Nothing new: the same list (and so the same version
				// for the rendered pages cached under it) for another TTL.
				f.putThreads(tl)
				return tl, nil
			}
			next := &ThreadList{CachedThreads: tl.Apply(r), Server: tl.Server, Fetched: f.now(), Floor: tl.Floor, More: tl.More}
			if trimmed, floor := f.trim(next.CachedThreads); floor > 0 {
				next.CachedThreads, next.Floor, next.More = trimmed, floor, true
			}
			f.putThreads(next)
			if c := f.opts.Cluster; c != nil {
				c.PutThreads(ctx, next)
			}
			return next, nil
		}
		return nil, fmt.Errorf("reader: group %s: unexpected answer %T", group, ev)
	})
	return ch, true
}

// trim keeps a list that incremental updates have grown past twice the
// thread limit to its newest ThreadLimit articles; floor is the lowest
// number kept (0 when nothing was cut), the older ones being the archive's.
func (f *Federated) trim(c mreader.CachedThreads) (_ mreader.CachedThreads, floor int64) {
	if len(c.Articles) <= 2*f.opts.ThreadLimit {
		return c, 0
	}
	arts := slices.Clone(c.Articles)
	slices.SortFunc(arts, func(a, b mreader.Summary) int { return cmp.Compare(a.Number, b.Number) })
	arts = arts[len(arts)-f.opts.ThreadLimit:]
	return mreader.CachedThreads{Group: c.Group, HighWater: c.HighWater, Articles: arts, Threads: mreader.Thread(arts)}, max(1, arts[0].Number)
}

// Thread returns the thread of group that holds message-id id. It is served
// from the group's cached thread list when there is one (brought up to
// date first), else from the thread cache, else fetched (High priority).
func (f *Federated) Thread(ctx context.Context, group, id string) (ThreadView, error) {
	if err := validGroup(group); err != nil {
		return ThreadView{}, err
	}
	if err := proto.ValidNNTPMessageID(id); err != nil {
		return ThreadView{}, fmt.Errorf("reader: thread %q: %w: %w", id, ErrBadRequest, err)
	}
	f.markActive(group)
	if tl, ok := f.threads.get(mreader.ThreadsKey(group)); ok {
		tl = f.update(ctx, group, tl)
		if root := tl.root(id); root != nil {
			f.metrics.cacheLookup(mreader.CacheThread, true)
			return ThreadView{Group: group, Root: root, Server: tl.Server}, nil
		}
	}
	key := mreader.ThreadKey(group, id) // made only here: the usual view is served above
	if tv, ok := f.thread.get(key); ok {
		f.metrics.cacheLookup(mreader.CacheThread, true)
		return tv, nil
	}
	f.metrics.cacheLookup(mreader.CacheThread, false)
	v, err := f.shared(ctx, "thread:"+key, func(ctx context.Context) (any, error) {
		if tv, ok := f.thread.get(key); ok {
			return tv, nil
		}
		ev, s, err := f.ask(ctx, "thread "+id+" in "+group, mreader.GetThread{Group: group, MessageID: id, Limit: f.opts.ThreadLimit})
		if errors.Is(err, ErrNotFound) {
			// Older than the thread data covers (ThreadLimit newest
			// articles): the article alone, under placeholders for
			// the ancestors its References name.
			if tv, ok := f.loneThread(ctx, group, id); ok {
				f.thread.put(key, tv, 2)
				return tv, nil
			}
		}
		if err != nil {
			return nil, err
		}
		r, ok := ev.(mreader.ThreadResult)
		if !ok {
			return nil, fmt.Errorf("reader: thread %s: unexpected answer %T", id, ev)
		}
		tv := ThreadView{Group: group, Root: r.Root, Server: s.cfg.Name}
		f.thread.put(key, tv, int64(mreader.Count(r.Root))+1)
		return tv, nil
	})
	if err != nil {
		// No server answers: the expired list of the group still shows
		// the thread (Threads marks the group stale).
		if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			if tl, terr := f.Threads(ctx, group); terr == nil {
				if root := tl.root(id); root != nil {
					return ThreadView{Group: group, Root: root, Server: tl.Server}, nil
				}
			}
		}
		return ThreadView{}, err
	}
	return v.(ThreadView), nil
}

// loneThread is the thread of an article found by message-id but not in its
// group's thread data: the article with its References as placeholders.
func (f *Federated) loneThread(ctx context.Context, group, id string) (ThreadView, bool) {
	a, err := f.Article(ctx, id)
	if err != nil {
		return ThreadView{}, false
	}
	h, _, err := proto.ParseHeaders(a.Raw)
	if err != nil {
		return ThreadView{}, false
	}
	root, _ := mreader.Find(mreader.Thread([]mreader.Summary{mreader.SummaryFromHeader(0, h)}), id)
	if root == nil {
		return ThreadView{}, false
	}
	return ThreadView{Group: group, Root: root, Server: a.Server}, true
}
