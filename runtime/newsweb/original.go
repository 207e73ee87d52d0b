package newsweb

// The original message: an article as the server has it (every header,
// text/plain), and a thread as an mbox file (mboxrd: each article after a
// "From " line, body lines starting with ">*From " quoted with one more
// ">"), gzipped. Abuse reports need Path and Injection-Info as they are.

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"sync"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/proto"
)

// maxMboxArticles bounds the articles of one thread's mbox.
const maxMboxArticles = 1000

// rawArticle is GET /articles/{id}/raw: the article as the server sent
// it, with LF line ends; newsweb's own copy of a post the server does not
// serve yet is not kept by browsers.
func (s *Server) rawArticle(ctx context.Context, id string) (*response, error) {
	a, err := s.fed.Original(ctx, id)
	if err != nil {
		return nil, err
	}
	cache := cacheArticle
	if a.Posted {
		cache = cacheError
	}
	return &response{status: http.StatusOK, ctype: "text/plain; charset=utf-8", cache: cache,
		body: bytes.ReplaceAll(a.Raw, []byte("\r\n"), []byte("\n"))}, nil
}

// threadMbox is GET /groups/{group}/threads/{id}/mbox.gz: the thread's
// articles (at most maxMboxArticles, in thread order) as a gzipped mbox.
func (s *Server) threadMbox(ctx context.Context, group, id string) (*response, error) {
	tv, err := s.fed.Thread(ctx, group, id)
	if err != nil {
		return nil, err
	}
	var ids []string
	mreader.Walk([]*mreader.Node{tv.Root}, func(n *mreader.Node, _ int) bool {
		if n.Article != nil && len(ids) < maxMboxArticles {
			ids = append(ids, n.ID)
		}
		return true
	})
	raws := make([][]byte, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, convFetch)
	for i, aid := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if a, err := s.fed.Article(ctx, aid); err == nil {
				raws[i] = a.Raw
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	for _, raw := range raws {
		if raw != nil {
			zw.Write(mboxEntry(raw))
		}
	}
	zw.Close()
	return &response{status: http.StatusOK, ctype: "application/gzip", cache: cacheThreads, body: b.Bytes(),
		packed: true, attachment: "thread-" + anchor(tv.Root.ID) + ".mbox.gz"}, nil
}

// mboxEntry is one article in mboxrd form: a "From " line, the article
// with LF line ends and its ">*From " lines quoted, a blank line.
func mboxEntry(raw []byte) []byte {
	when, err := time.Parse(time.RFC3339, decodeArticle(raw).Date)
	if err != nil {
		when = time.Unix(0, 0)
	}
	var b bytes.Buffer
	b.WriteString("From newsweb@localhost " + when.UTC().Format(time.ANSIC) + "\n")
	for _, line := range bytes.Split(bytes.TrimSuffix(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")), []byte("\n")), []byte("\n")) {
		if bytes.HasPrefix(bytes.TrimLeft(line, ">"), []byte("From ")) {
			b.WriteByte('>')
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// headerLine is one header field for the full-headers view.
type headerLine struct{ Name, Value string }

// allHeaders lists the article's header fields in order, encoded words
// decoded.
func allHeaders(raw []byte) []headerLine {
	h, _, err := proto.ParseHeaders(raw)
	if err != nil {
		return nil
	}
	out := make([]headerLine, 0, len(h.Fields))
	for _, f := range h.Fields {
		out = append(out, headerLine{Name: string(f.Name), Value: decodeHeader(f.Value())})
	}
	return out
}
