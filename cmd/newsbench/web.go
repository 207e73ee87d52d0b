package main

// newsbench web: newsweb on loopback, for the figures. It has no
// competitor to compare with; it measures
//
//  1. cached article pages: C concurrent keep-alive HTTP clients request
//     /articles/<id> pages (every article read once before, so all are in
//     the article cache) for a fixed time; requests per second and the
//     p50/p99 latency, and the NNTP commands the phase cost (want 0);
//  2. NNTP commands per 1,000 page views of a reader-like mix (5% group
//     list, 15% group pages, 30% thread pages, 50% article pages, threads
//     and articles drawn with Zipf popularity), by one client, with the
//     caches as configured (cold start, then a second 1,000 views) and with
//     every cache TTL at 1 ns (no caching; coalescing cannot help a single
//     client either).
//
// The news server is runtime/testpeer/nntptest on loopback holding generated
// threaded articles; it counts every command it receives, handshakes
// included. Lines "result web <metric> <value>" follow the table.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/runtime/newsweb"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

func init() {
	register("web", "newsweb: cached article pages per second, p99, NNTP commands per 1,000 page views", benchWeb)
}

// webBench is the generated news: groups, thread roots and articles.
type webBench struct {
	groups   []string
	roots    [][2]string // group, message-id of each thread root
	articles []string    // message-ids
}

// webNews fills an nntptest server with n articles over g groups, one
// thread root in four, replies to a random earlier article of the group.
func webNews(s *nntptest.Server, groups, n, size int) (webBench, error) {
	var b webBench
	r := rand.New(rand.NewPCG(1, 2))
	body := make([]byte, 0, size)
	for len(body) < size {
		body = append(body, "The quick brown fox jumps over the lazy dog, again and again.\n"...)
	}
	byGroup := map[string][]string{}
	for i := range groups {
		g := "bench.group" + strconv.Itoa(i)
		b.groups = append(b.groups, g)
		s.AddGroup(nntptest.Group{Name: g, Description: "Benchmark group " + strconv.Itoa(i)})
	}
	for i := range n {
		g := b.groups[i%groups]
		id := fmt.Sprintf("<b%d@bench.test>", i)
		refs := ""
		if prev := byGroup[g]; len(prev) > 0 && r.IntN(4) != 0 {
			refs = "References: " + prev[r.IntN(len(prev))] + "\n"
		} else {
			b.roots = append(b.roots, [2]string{g, id})
		}
		raw := fmt.Sprintf("Path: bench!not-for-mail\nFrom: Bench <bench@bench.test>\nNewsgroups: %s\nSubject: bench %d\nDate: Tue, 02 Jan 2024 03:04:05 +0000\nMessage-ID: %s\n%s\n%s", g, i, id, refs, body)
		if err := s.AddArticle(nntptest.Article{Raw: []byte(raw)}); err != nil {
			return b, err
		}
		byGroup[g] = append(byGroup[g], id)
		b.articles = append(b.articles, id)
	}
	return b, nil
}

// webStack is newsweb (service layer and HTTP) serving on loopback.
type webStack struct {
	url  string
	fed  *newsweb.Federated
	http *http.Server
}

func startWebStack(addr string, cache mreader.CacheConfig, conns int) (*webStack, error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := newsweb.NewService(newsweb.ServerConfig{Addr: addr, Name: "bench", Connections: conns}, newsweb.ServiceOptions{Logger: log})
	fed := newsweb.NewFederated([]*newsweb.Service{svc}, newsweb.FederatedOptions{Cache: cache, Logger: log, NoBackground: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fed.Close()
		return nil, err
	}
	hs := newsweb.NewHTTPServer("", newsweb.New(fed, newsweb.Options{Logger: log}))
	go hs.Serve(ln)
	return &webStack{url: "http://" + ln.Addr().String(), fed: fed, http: hs}, nil
}

func (w *webStack) close() {
	w.http.Close()
	w.fed.Close()
}

// webFetch GETs url and drains the body; any status but 200 is an error.
func webFetch(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

func articlePath(id string) string { return "/articles/" + id[1:len(id)-1] }

// loadResult is phase 1's outcome.
type loadResult struct {
	requests int
	commands int // NNTP commands during the timed phase
	elapsed  time.Duration
	p50, p99 time.Duration
}

// load runs conns clients over the cached article pages for d.
func load(ctx context.Context, st *webStack, news *nntptest.Server, b webBench, conns int, d time.Duration) (loadResult, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, id := range b.articles { // warm the cache
		if err := webFetch(client, st.url+articlePath(id)); err != nil {
			return loadResult{}, err
		}
	}
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	before := len(news.Commands())
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for w := range conns {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []time.Duration
			for time.Now().Before(end) && ctx.Err() == nil {
				t := time.Now()
				if err := webFetch(client, st.url+articlePath(b.articles[r.IntN(len(b.articles))])); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	commands := len(news.Commands()) - before
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	if len(lat) == 0 {
		return loadResult{}, errors.New("no request completed")
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return loadResult{requests: len(lat), commands: commands, elapsed: elapsed, p50: q(0.50), p99: q(0.99)}, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// views is a reader-like sequence of page paths.
func views(b webBench, n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 3))
	zt := rand.NewZipf(r, 1.1, 1, uint64(len(b.roots)-1))
	za := rand.NewZipf(r, 1.1, 1, uint64(len(b.articles)-1))
	out := make([]string, 0, n)
	for range n {
		switch x := r.IntN(100); {
		case x < 5:
			out = append(out, "/")
		case x < 20:
			out = append(out, "/groups/"+b.groups[r.IntN(len(b.groups))])
		case x < 50:
			root := b.roots[zt.Uint64()]
			out = append(out, "/groups/"+root[0]+"/threads/"+root[1][1:len(root[1])-1])
		default:
			out = append(out, articlePath(b.articles[za.Uint64()]))
		}
	}
	return out
}

// commandsFor runs the views one after another and returns the commands
// the news server received meanwhile.
func commandsFor(st *webStack, news *nntptest.Server, paths []string) (int, error) {
	before := len(news.Commands())
	client := &http.Client{}
	for _, p := range paths {
		if err := webFetch(client, st.url+p); err != nil {
			return 0, err
		}
	}
	return len(news.Commands()) - before, nil
}

func benchWeb(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("newsbench web", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nArticles := fs.Int("articles", 2000, "articles on the news server")
	nGroups := fs.Int("groups", 4, "groups they are spread over")
	size := fs.Int("size", 2048, "article body `bytes`")
	conns := fs.Int("conns", 32, "concurrent HTTP clients for the cached-page load")
	dur := fs.Duration("duration", 5*time.Second, "length of the cached-page load")
	nViews := fs.Int("views", 1000, "page views per command count")
	nntpConns := fs.Int("nntp-conns", 4, "NNTP connections of newsweb")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the cached-page load to `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	news, err := nntptest.New(nntptest.Options{})
	if err != nil {
		return err
	}
	defer news.Close()
	b, err := webNews(news, *nGroups, *nArticles, *size)
	if err != nil {
		return err
	}

	cached, err := startWebStack(news.HostPort(), mreader.DefaultCacheConfig(), *nntpConns)
	if err != nil {
		return err
	}
	defer cached.close()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	lr, err := load(context.Background(), cached, news, b, *conns, *dur)
	pprof.StopCPUProfile()
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}

	paths := views(b, *nViews, 1)
	fresh, err := startWebStack(news.HostPort(), mreader.DefaultCacheConfig(), *nntpConns)
	if err != nil {
		return err
	}
	defer fresh.close()
	cold, err := commandsFor(fresh, news, paths)
	if err != nil {
		return err
	}
	again, err := commandsFor(fresh, news, views(b, *nViews, 2))
	if err != nil {
		return err
	}
	off := mreader.CacheConfig{Article: 1, ArticleNotFound: 1, Threads: 1, Thread: 1, Groups: 1, GroupStats: 1}
	nocache, err := startWebStack(news.HostPort(), off, *nntpConns)
	if err != nil {
		return err
	}
	defer nocache.close()
	uncached, err := commandsFor(nocache, news, paths)
	if err != nil {
		return err
	}

	per := func(n int) float64 { return float64(n) * 1000 / float64(*nViews) }
	rps := float64(lr.requests) / lr.elapsed.Seconds()
	fmt.Fprintf(stdout, "newsweb on loopback: %d articles of %d bytes in %d groups (%d threads) on nntptest; %d NNTP connections\n\n",
		len(b.articles), *size, len(b.groups), len(b.roots), *nntpConns)
	t := Table{Header: []string{"measure", "value"}}
	t.Add(fmt.Sprintf("cached article pages, %d clients, %v", *conns, lr.elapsed.Round(time.Millisecond)), fmt.Sprintf("%.0f req/s (%d requests)", rps, lr.requests))
	t.Add("  latency p50 / p99", fmt.Sprintf("%v / %v", lr.p50.Round(time.Microsecond), lr.p99.Round(time.Microsecond)))
	t.Add("  NNTP commands during the load", strconv.Itoa(lr.commands))
	t.Add(fmt.Sprintf("NNTP commands per 1,000 views, cache, cold start (%d views)", *nViews), fmt.Sprintf("%.0f", per(cold)))
	t.Add("NNTP commands per 1,000 views, cache, next 1,000", fmt.Sprintf("%.0f", per(again)))
	t.Add("NNTP commands per 1,000 views, no cache", fmt.Sprintf("%.0f", per(uncached)))
	t.Print(stdout)
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "result web cached_article_rps %.0f\n", rps)
	fmt.Fprintf(stdout, "result web cached_article_p50_us %d\n", lr.p50.Microseconds())
	fmt.Fprintf(stdout, "result web cached_article_p99_us %d\n", lr.p99.Microseconds())
	fmt.Fprintf(stdout, "result web commands_per_1000_views_cached_cold %.0f\n", per(cold))
	fmt.Fprintf(stdout, "result web commands_per_1000_views_cached_warm %.0f\n", per(again))
	fmt.Fprintf(stdout, "result web commands_per_1000_views_uncached %.0f\n", per(uncached))
	return nil
}
