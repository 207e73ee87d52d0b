package newsweb

// Atom feeds (RFC 4287): a group's newest articles at
// /groups/{group}/feed.atom (titles, authors, links and the first
// feedLines lines of the text, through the article cache, so an article
// costs one ARTICLE however often the feed is read) and a thread's newest
// articles with their text at /groups/{group}/threads/{msgid}/feed.atom.
// The group and thread pages advertise their feeds (rel="alternate"). Entry ids are
// news: URIs of the message-ids (RFC 5538 §2.2), which never change;
// links are absolute, built from the request's Host.

import (
	"context"
	"encoding/xml"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// feedEntries is the most entries a feed carries; feedLines the lines of
// text a group feed's entry carries.
const (
	feedEntries = 50
	feedLines   = 20
)

type atomFeed struct {
	XMLName xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string      `xml:"id"`
	Title   string      `xml:"title"`
	Updated string      `xml:"updated"`
	Links   []atomLink  `xml:"link"`
	Entries []atomEntry `xml:"entry"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr,omitempty"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type atomEntry struct {
	ID      string     `xml:"id"`
	Title   string     `xml:"title"`
	Updated string     `xml:"updated"`
	Author  atomAuthor `xml:"author"`
	Link    atomLink   `xml:"link"`
	Content *atomText  `xml:"content,omitempty"`
}

type atomAuthor struct {
	Name string `xml:"name"`
}

type atomText struct {
	Type string `xml:"type,attr"`
	Body string `xml:",chardata"`
}

// siteURL is the absolute URL of the site as the request reached it.
func siteURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// firstLines is text's first n lines, with "[...]" when there are more.
func firstLines(text string, n int) string {
	i := 0
	for k := 0; k < n; k++ {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			return text
		}
		i += j + 1
	}
	if strings.TrimSpace(text[i:]) == "" {
		return text
	}
	return text[:i] + "[...]\n"
}

// newsURI is the news: URI of a message-id (RFC 5538).
func newsURI(id string) string { return "news:" + stripID(id) }

// feedTime is an Atom date; an article without a date gets the Unix epoch
// (Atom requires one).
func feedTime(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Format(time.RFC3339)
}

// newest returns up to n summaries, newest first.
func newest(arts []mreader.Summary, n int) []mreader.Summary {
	out := slices.Clone(arts)
	slices.SortStableFunc(out, func(a, b mreader.Summary) int { return b.Date.Compare(a.Date) })
	return out[:min(n, len(out))]
}

func entry(site, group string, a mreader.Summary) atomEntry {
	return atomEntry{ID: newsURI(a.MessageID), Title: orNoSubject(decodeHeader(a.Subject)), Updated: feedTime(a.Date),
		Author: atomAuthor{Name: orNoSubject(displayName(a.From))}, Link: atomLink{Rel: "alternate", Type: "text/html", Href: site + articleURL(a.MessageID, group)}}
}

func renderFeed(f atomFeed) (*response, error) {
	if len(f.Entries) > 0 {
		f.Updated = slices.MaxFunc(f.Entries, func(a, b atomEntry) int { return strings.Compare(a.Updated, b.Updated) }).Updated
	} else {
		f.Updated = feedTime(time.Time{})
	}
	body, err := xml.MarshalIndent(f, "", " ")
	if err != nil {
		return nil, err
	}
	body = append([]byte(xml.Header), append(body, '\n')...)
	return &response{status: http.StatusOK, ctype: "application/atom+xml; charset=utf-8", cache: cacheThreads, body: body}, nil
}

func (s *Server) groupFeed(ctx context.Context, r *http.Request) (*response, error) {
	group, err := groupParam(r)
	if err != nil {
		return nil, err
	}
	tl, err := s.fed.Threads(ctx, group)
	if err != nil {
		return nil, err
	}
	site := siteURL(r)
	f := atomFeed{ID: site + groupURL(group), Title: group + " · " + s.opts.Site,
		Links: []atomLink{{Rel: "self", Href: site + groupFeedURL(group)}, {Rel: "alternate", Type: "text/html", Href: site + groupURL(group)}}}
	arts := newest(tl.Articles, feedEntries)
	f.Entries = make([]atomEntry, len(arts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, convFetch)
	for i, a := range arts {
		f.Entries[i] = entry(site, group, a)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if art, err := s.fed.Article(ctx, a.MessageID); err == nil {
				f.Entries[i].Content = &atomText{Type: "text", Body: firstLines(decodeArticle(art.Raw).Text(), feedLines)}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return renderFeed(f)
}

// threadFeed serves /groups/{group}/threads/{msgid}/feed.atom.
func (s *Server) threadFeed(ctx context.Context, r *http.Request, group, id string) (*response, error) {
	tv, err := s.fed.Thread(ctx, group, id)
	if err != nil {
		return nil, err
	}
	var arts []mreader.Summary
	mreader.Walk([]*mreader.Node{tv.Root}, func(n *mreader.Node, _ int) bool {
		if n.Article != nil {
			arts = append(arts, *n.Article)
		}
		return true
	})
	site := siteURL(r)
	subject := "(no subject)"
	if a := firstArticle(tv.Root); a != nil {
		subject = orNoSubject(decodeHeader(a.Article.Subject))
	}
	f := atomFeed{ID: site + threadURL(group, tv.Root.ID), Title: subject,
		Links: []atomLink{{Rel: "self", Href: site + threadFeedURL(group, tv.Root.ID)}, {Rel: "alternate", Type: "text/html", Href: site + threadURL(group, tv.Root.ID)}}}
	for _, a := range newest(arts, feedEntries) {
		e := entry(site, group, a)
		if art, err := s.fed.Article(ctx, a.MessageID); err == nil {
			e.Content = &atomText{Type: "text", Body: decodeArticle(art.Raw).Text()}
		}
		f.Entries = append(f.Entries, e)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return renderFeed(f)
}
