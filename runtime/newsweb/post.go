package newsweb

import (
	"context"
	"errors"
	"fmt"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/proto"
)

// Errors of Post.
var (
	// ErrPostRejected: a server refused the article itself (441); the
	// error's text ends with the server's reason.
	ErrPostRejected = errors.New("the news server refused the article")
	// ErrPostingDenied: no server allows posting (440 everywhere).
	ErrPostingDenied = errors.New("no news server allows posting")
)

// Post posts the article id through the first server by priority that
// takes it: raw (wire form, CRLF; see mreader.PostArticle) is POSTed to a
// server, injected (raw with newsweb's injection fields, compose.go) is
// offered with IHAVE to a server that has newsweb inject (inject.go); nil
// when none does. A server that does not allow posting (440, or no feed
// from this host) or cannot be reached is passed over; one that refuses
// the article (441, 437) ends the attempt, since the next would refuse it
// for the same reason. On success the article goes into the caches at
// once (see posted), so the poster sees it in its thread without waiting
// for a refresh. It returns the server that took it.
func (f *Federated) Post(ctx context.Context, id string, raw, injected []byte) (string, error) {
	req := mreader.PostArticle{MessageID: id, Raw: raw}
	var errs []error
	denied := 0
	for _, s := range f.services {
		if s.cfg.Inject.Addr != "" {
			err := s.inject(ctx, id, injected)
			switch {
			case err == nil:
				f.posted(id, injected, s.cfg.Name)
				return s.cfg.Name, nil
			case ctx.Err() != nil:
				return "", err
			case errors.Is(err, errInjectRefused):
				return "", fmt.Errorf("reader: post %s: %w: %w", id, ErrPostRejected, err)
			case errors.Is(err, errInjectDenied):
				denied++
			}
			f.log.Warn("server did not take the post, trying the next", "server", s.cfg.Name, "id", id, "err", err)
			errs = append(errs, err)
			continue
		}
		ev, err := f.doBounded(ctx, s, req)
		switch {
		case err == nil:
			if _, ok := ev.(mreader.PostResult); !ok {
				return "", fmt.Errorf("reader: post %s: unexpected answer %T", id, ev)
			}
			f.posted(id, raw, s.cfg.Name)
			return s.cfg.Name, nil
		case ctx.Err() != nil:
			return "", err
		case errors.Is(err, mreader.ErrPostFailed):
			return "", fmt.Errorf("reader: post %s: %w: %w", id, ErrPostRejected, err)
		case errors.Is(err, mreader.ErrBadRequest):
			return "", fmt.Errorf("reader: post %s: %w: %w", id, ErrBadRequest, err)
		case errors.Is(err, mreader.ErrPostingDenied):
			denied++
		}
		f.log.Debug("server did not take the post, trying the next", "server", s.cfg.Name, "id", id, "err", err)
		errs = append(errs, err)
	}
	if denied > 0 && denied == len(errs) {
		return "", fmt.Errorf("reader: post %s: %w: %w", id, ErrPostingDenied, errors.Join(errs...))
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("no servers configured"))
	}
	return "", fmt.Errorf("reader: post %s: %w: %w", id, ErrUnavailable, errors.Join(errs...))
}

// injects reports whether a server has newsweb inject its posts.
func (f *Federated) injects() bool {
	for _, s := range f.services {
		if s.cfg.Inject.Addr != "" {
			return true
		}
	}
	return false
}

// posted puts an article just posted through server into the caches: the
// article cache (by its message-id), and the cached thread list of each of
// its groups, where it enters with number 0 until the next incremental
// update brings the server's numbered copy (MergeSummaries replaces it).
// Cached single threads that its References name are dropped, so the next
// view threads it in.
func (f *Federated) posted(id string, raw []byte, server string) {
	key := mreader.ArticleKey(id)
	f.notFound.delete(key)
	f.articles.put(key, Article{MessageID: id, Raw: raw, Server: server, Posted: true}, int64(len(raw))+int64(len(id)))
	h, _, err := proto.ParseHeaders(raw)
	if err != nil {
		return
	}
	sum := mreader.SummaryFromHeader(0, h)
	groups, _ := proto.ParseNewsgroups(h.Get(proto.HeaderNewsgroups))
	for _, g := range groups {
		for _, ref := range sum.Parents() {
			f.thread.delete(mreader.ThreadKey(g, ref))
		}
		f.addToList(g, sum)
	}
}

// addToList merges sum into group's cached thread list, if there is one.
func (f *Federated) addToList(group string, sum mreader.Summary) {
	tl, ok := f.threads.get(mreader.ThreadsKey(group))
	if !ok {
		return
	}
	arts := mreader.MergeSummaries(tl.Articles, []mreader.Summary{sum})
	next := &ThreadList{CachedThreads: mreader.CachedThreads{Group: group, HighWater: tl.HighWater, Articles: arts,
		Threads: mreader.Thread(arts)}, Server: tl.Server, Fetched: tl.Fetched}
	f.putThreads(next)
}

// CachedStats returns a group's stats when the stats cache holds them,
// without asking a server (the group list shows the freshest count it has).
func (f *Federated) CachedStats(group string) (GroupStats, bool) {
	return f.stats.get(mreader.GroupStatsKey(group))
}
