package newsweb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/spoolfs/searchindex"
)

// Body search: the full text of the articles of the groups named by
// SearchOptions.Bodies (search_bodies, a wildmat list), opt-in because
// each body costs an ARTICLE.
//
// When a group's overview job has indexed its first range, and again when
// it ends (search.go), a body pass starts unless one runs (it runs apart,
// so the overview goes on being extended while it reads; one that runs
// goes round again when it ends): it walks the overview's articles that
// have no body record yet, newest first, one article at a time: the
// article cache is looked in first (a body a reader has viewed costs
// nothing), else the article is fetched with a Background GetArticle,
// which waits in the Low queue behind every reader's request and is not
// put in the article cache (it would push readers' articles out). Every
// bodyBatch articles the texts go to the index with one fsync, so an
// interrupted pass goes on from there. One group's bodies are read at a
// time (bodyJobs). An article that is gone (430) or has no text gets an
// empty record, so that it is not asked for again; another error ends the
// pass, which starts again with the articles left on a later search. The body files are
// read in the background when newsweb starts (searchindex.LoadBodies,
// about 0.1 s per 1,000 articles); body passes wait for that.
//
// What is indexed (indexText): the text/plain parts as decoded for display
// (MIME, transfer encodings, charsets), without quoted lines ("> ..."),
// which repeat the article quoted (indexed itself), without the signature
// (after "-- "), and without binaries: yEnc and uuencoded blocks and
// non-text parts are left out, HTML parts too.

const (
	// bodyBatch is the articles whose texts are appended to the index with
	// one fsync.
	bodyBatch = 100
	// bodyJobs is how many groups' bodies are read at once.
	bodyJobs = 1
)

// wantBodies reports whether group's bodies are indexed.
func (s *Search) wantBodies(group string) bool {
	return s.bodies.Match(group) == proto.GroupWanted
}

// buildBodies indexes the bodies of group's articles that have none
// indexed, newest first.
func (s *Search) buildBodies(group string) error {
	ctx := s.ctx
	for {
		es := s.ix.BodyTodo(group, bodyBatch)
		if len(es) == 0 {
			s.mu.Lock()
			cached, fetched := s.bodiesCached, s.bodiesFetched
			s.mu.Unlock()
			s.log.Debug("search: bodies indexed", "group", group, "articles", s.ix.BodyLen(group),
				"from_cache_total", cached, "fetched_total", fetched)
			return nil
		}
		bs := make([]searchindex.Body, 0, len(es))
		var ferr error
		for _, e := range es {
			raw, err := s.body(ctx, e.MessageID)
			if err != nil && !noText(err) {
				ferr = err
				break
			}
			bs = append(bs, searchindex.Body{Number: e.Number, Text: indexText(raw)})
		}
		if err := s.ix.AppendBodies(group, bs); err != nil {
			return fmt.Errorf("newsweb: search: bodies of %s: %w", group, err)
		}
		if ferr != nil {
			return fmt.Errorf("newsweb: search: bodies of %s: %w", group, ferr)
		}
	}
}

// noText reports an error that makes an article one without text to
// index: gone, a bad message-id, an answer over the reader's limits on
// every server.
func noText(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrBadRequest) || errors.Is(err, proto.ErrLineTooLong)
}

// body returns article id as received: from the article cache when a
// reader fetched it, else from the servers in the background.
func (s *Search) body(ctx context.Context, id string) ([]byte, error) {
	if err := proto.ValidNNTPMessageID(id); err != nil {
		return nil, fmt.Errorf("reader: article %q: %w: %w", id, ErrBadRequest, err)
	}
	if a, ok := s.fed.articles.get(mreader.ArticleKey(id)); ok {
		s.bodyStats(true)
		return a.Raw, nil
	}
	a, err := s.fed.askArticle(ctx, mreader.GetArticle{MessageID: id, Background: true})
	if err != nil {
		return nil, err
	}
	s.bodyStats(false)
	return a.Raw, nil
}

// bodyStats counts a body read from the cache or fetched.
func (s *Search) bodyStats(cached bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cached {
		s.bodiesCached++
	} else {
		s.bodiesFetched++
	}
}

// indexText returns the text of raw to index (see the top of the file).
func indexText(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	d := decodeArticle(raw)
	if d.Problem != "" {
		return "" // shown raw for display: header and all
	}
	var b strings.Builder
	for _, p := range d.Parts {
		if p.Type != "text/plain" {
			continue
		}
		inUU, inYEnc := false, false
		for _, l := range p.Lines {
			t := l.Text
			switch {
			case l.Sig || l.Quote > 0:
				continue
			case inYEnc:
				inYEnc = !strings.HasPrefix(t, "=yend")
				continue
			case strings.HasPrefix(t, "=ybegin "):
				inYEnc = true
				continue
			case inUU:
				inUU = t != "end"
				continue
			case uuBegin(t):
				inUU = true
				continue
			}
			b.WriteString(t)
			b.WriteByte('\n')
			if b.Len() >= searchindex.MaxBodyText {
				return b.String()
			}
		}
	}
	return b.String()
}

// uuBegin reports a uuencode "begin MODE NAME" line (MODE octal). It is
// asked of every line indexed, so a line without "begin" costs no split.
func uuBegin(l string) bool {
	if !strings.Contains(l, "begin") {
		return false
	}
	f := strings.Fields(l)
	if len(f) < 3 || f[0] != "begin" || len(f[1]) < 3 || len(f[1]) > 4 {
		return false
	}
	return strings.Trim(f[1], "01234567") == ""
}
