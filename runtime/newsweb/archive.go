package newsweb

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// The archive: a group's articles older than its thread list.
//
// A group's thread list covers its newest ThreadLimit articles. The pages
// after its last one reach further back one range at a time: the range
// below number N is the ThreadLimit articles at or below N-1 (GetThreads
// with Until), fetched when first asked for, threaded on its own and kept
// in the archive cache for the thread-list TTL (old articles hardly
// change, so no incremental update). Each range's Floor is where the next
// one starts, so the links walk the whole group down to its low mark. A
// thread whose articles span two ranges shows in each with the articles
// of that range.

// archiveKey names one cached range.
func archiveKey(group, server string, before int64) string {
	return "archive:" + group + ":" + server + ":" + strconv.FormatInt(before, 10)
}

// Archive returns the thread list of group's articles below number before
// (the server's numbering, server being the one the newer list came from;
// "" for the first by priority): the newest ThreadLimit of them.
func (f *Federated) Archive(ctx context.Context, group, server string, before int64) (*ThreadList, error) {
	if err := validGroup(group); err != nil {
		return nil, err
	}
	if before <= 1 {
		return nil, fmt.Errorf("reader: archive of %s below %d: %w", group, before, ErrBadRequest)
	}
	s := f.service(server)
	if s == nil {
		if len(f.services) == 0 {
			return nil, fmt.Errorf("reader: archive of %s: %w: no servers configured", group, ErrUnavailable)
		}
		s = f.services[0]
	}
	key := archiveKey(group, s.cfg.Name, before)
	if tl, ok := f.archive.get(key); ok {
		f.metrics.cacheLookup(mreader.CacheThreads, true)
		return tl, nil
	}
	f.metrics.cacheLookup(mreader.CacheThreads, false)
	v, err := f.shared(ctx, key, func(ctx context.Context) (any, error) {
		if tl, ok := f.archive.get(key); ok {
			return tl, nil
		}
		ev, err := f.doBounded(ctx, s, mreader.GetThreads{Group: group, Until: before - 1, Limit: f.opts.ThreadLimit})
		if err != nil {
			return nil, err
		}
		switch r := ev.(type) {
		case mreader.NotFound:
			return nil, &errNotFound{what: "group " + group, definitive: true}
		case mreader.ThreadsResult:
			tl := &ThreadList{CachedThreads: mreader.CachedThreads{Group: group, HighWater: r.High, Articles: r.Articles,
				Threads: mreader.Thread(r.Articles)}, Server: s.cfg.Name, Fetched: f.now(), Floor: r.Low,
				More: r.Truncated && r.Low > 1}
			f.archive.put(key, tl, int64(len(tl.Articles))+1)
			return tl, nil
		}
		return nil, fmt.Errorf("reader: archive of %s: unexpected answer %T", group, ev)
	})
	if err != nil {
		return nil, err
	}
	return v.(*ThreadList), nil
}

// beforeParam is the ?before= of an archive page: 0 when absent.
func beforeParam(r *http.Request) (int64, error) {
	v := queryValue(r, "before")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 2 {
		return 0, errBad
	}
	return n, nil
}

// olderURL is the first page of the range below tl, "" when there is none.
func olderURL(group string, tl *ThreadList) string {
	if !tl.More || tl.Floor <= 1 {
		return ""
	}
	return groupURL(group) + "?before=" + strconv.FormatInt(tl.Floor, 10)
}

// listPage returns the thread list a group page or API call shows: the
// newest list, or an archive range when the request names one; newest is
// the newest list either way.
func (s *Server) listPage(ctx context.Context, r *http.Request, group string) (tl, newest *ThreadList, before int64, err error) {
	before, err = beforeParam(r)
	if err != nil {
		return nil, nil, 0, err
	}
	newest, err = s.fed.Threads(ctx, group)
	if err != nil || before == 0 {
		return newest, newest, 0, err
	}
	tl, err = s.fed.Archive(ctx, group, newest.Server, before)
	return tl, newest, before, err
}

// pagerOf links the pages of a list: within it by ?page=, after its last
// page to the range below it, and from an archive range's first page back
// to the newest list.
func pagerOf(group string, before int64, tl *ThreadList, page, pages int) pager {
	p := pager{Page: page, Pages: pages}
	at := func(n int) string {
		if before == 0 {
			return pageURL(group, n)
		}
		return groupURL(group) + "?before=" + strconv.FormatInt(before, 10) + "&page=" + strconv.Itoa(n)
	}
	switch {
	case page > 1:
		p.Prev = at(page - 1)
	case before > 0:
		p.Prev, p.PrevLabel = groupURL(group), "← Newest"
	}
	if page < pages {
		p.Next = at(page + 1)
	} else if older := olderURL(group, tl); older != "" {
		p.Next, p.NextLabel = older, "Older articles →"
	}
	return p
}
