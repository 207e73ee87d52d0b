package main

// newsbench web: newsweb on loopback. It has no
// competitor to compare with; it measures
//
//  1. cached pages of each kind (article, group, thread, thread-list API,
//     group list): wrk, a separate process (web_wrk.go), loads each kind
//     with C keep-alive connections for a fixed time, -runs times, every
//     page read once before; requests per second, p50/p99 latency (the
//     runs' medians, and each run's p99: one 5 s p99 is a coin toss), the
//     server's CPU time a request, the garbage collections meanwhile, how
//     long the server and wrk waited for a CPU (run-queue delay), the NNTP
//     commands the phase cost, and the load average after it (the
//     machine is shared). By default the server and wrk run on CPUs of
//     their own (-pin, web_pin.go);
//  2. search latency: p50/p95 of reader-like queries over an index of
//     100,000 articles (spoolfs/searchindex, in this process);
//  3. NNTP commands per 1,000 page views of a reader-like mix (5% group
//     list, 15% group pages, 30% thread pages, 50% article pages, threads
//     and articles drawn with Zipf popularity), by one client, with the
//     caches as configured (cold start, then a second 1,000 views, whose
//     articles are partly new to the cache), warm (on the stack of phase
//     1, where every page was read before: what is left is keeping lists
//     up to date), and with
//     every cache TTL at 1 ns (no caching; coalescing cannot help a single
//     client either).
//
// The news server is runtime/testpeer/nntptest on loopback holding generated
// threaded articles; it counts every command it receives, handshakes
// included. Lines "result web <metric> <value>" follow the table.

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/runtime/newsweb"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/spoolfs/searchindex"
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

// webStack is newsweb (service layer and HTTP) serving on loopback, as
// cmd/newsweb serves: NewHTTPServer's http.Server behind a Front.
type webStack struct {
	url   string
	fed   *newsweb.Federated
	front *newsweb.Front
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
	front := newsweb.NewFront(newsweb.NewHTTPServer("", newsweb.New(fed, newsweb.Options{Logger: log})), ln)
	go front.Serve()
	return &webStack{url: "http://" + ln.Addr().String(), fed: fed, front: front}, nil
}

func (w *webStack) close() {
	w.front.Close()
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

// pageKinds are the page kinds loaded by wrk, with their paths.
func pageKinds(b webBench) [][2]any {
	var arts, groups, threads, api []string
	for _, id := range b.articles {
		arts = append(arts, articlePath(id))
	}
	for _, g := range b.groups {
		groups = append(groups, "/groups/"+g)
		api = append(api, "/api/groups/"+g+"/threads")
	}
	for _, r := range b.roots[:min(len(b.roots), 500)] {
		threads = append(threads, "/groups/"+r[0]+"/threads/"+r[1][1:len(r[1])-1])
	}
	return [][2]any{{"article", arts}, {"group", groups}, {"thread", threads}, {"thread-list API", api}, {"group list", []string{"/"}}}
}

// kindResult is one page kind's load: runs wrk runs, one after another.
type kindResult struct {
	kind string
	runs []wrkResult
	// rps, p50 and p99 are the medians of the runs'.
	rps      float64
	p50, p99 time.Duration
	commands int
	// cpu is this process's CPU time (user + system) a request during the
	// load: the server's (nntptest, also here, is idle but for the few
	// update commands), a figure other work on the machine moves much
	// less than req/s or latency.
	cpu time.Duration
	// gcs is the garbage collections during the load, gcCPU their CPU
	// time (runtime/metrics: mark assists, workers and pauses).
	gcs   uint64
	gcCPU time.Duration
	// waited is the time this process's threads were ready to run but
	// waited for a CPU (other work on the machine, or wrk when shared),
	// summed over the threads, as a share of the load's length: a p99
	// with much of it measures the machine more than newsweb. Pinned,
	// with GOMAXPROCS=1, it is about the one running thread's.
	waited float64
	// wrkWaited is the same of wrk's threads (at least: read every
	// 100 ms while wrk runs): a client that waits for a CPU adds to the
	// latency it measures.
	wrkWaited float64
	load      string // the load average when it ended
}

// runDelay is the time the threads of process pid ("self" for this one)
// have waited on a run queue (field 2 of /proc/<pid>/task/*/schedstat);
// 0 when unknown.
func runDelay(pid string) time.Duration {
	tasks, _ := os.ReadDir("/proc/" + pid + "/task")
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + pid + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			sum += time.Duration(n)
		}
	}
	return sum
}

// gcStats reads the GC cycles so far and the CPU time they took.
func gcStats() (cycles uint64, cpu time.Duration) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		cpu = time.Duration(s[1].Value.Float64() * float64(time.Second))
	}
	return cycles, cpu
}

// medianRuns fills k's medians from its runs.
func (k *kindResult) medianRuns() {
	var rps []float64
	var p50, p99 []time.Duration
	for _, r := range k.runs {
		rps = append(rps, r.rps)
		p50 = append(p50, r.p50)
		p99 = append(p99, r.p99)
	}
	slices.Sort(p50)
	slices.Sort(p99)
	k.rps, k.p50, k.p99 = Median(rps), p50[len(p50)/2], p99[len(p99)/2]
}

// loadKinds warms every page once, then runs wrk over each kind in turn,
// runs times.
func loadKinds(setup webSetup, st *webStack, news *nntptest.Server, b webBench, conns, runs int, d time.Duration) ([]kindResult, error) {
	dir, err := os.MkdirTemp("", "newsbench-web")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	client := &http.Client{}
	var out []kindResult
	for _, k := range pageKinds(b) {
		paths := k[1].([]string)
		for _, p := range paths { // warm: every page read once, gzipped as wrk asks
			req, _ := http.NewRequest("GET", st.url+p, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("GET %s: %s", p, resp.Status)
			}
		}
		kr := kindResult{kind: k[0].(string)}
		before, cpu := len(news.Commands()), selfCPU()
		gcs, gcCPU := gcStats()
		delay, start := runDelay("self"), time.Now()
		requests := 0
		for range runs {
			r, err := runWrk(setup, dir, st.url, paths, conns, d)
			if err != nil {
				return nil, fmt.Errorf("%s pages: %w", k[0], err)
			}
			if r.bad > 0 {
				return nil, fmt.Errorf("%s pages: %d failed requests under load", k[0], r.bad)
			}
			kr.runs = append(kr.runs, r)
			requests += r.requests
		}
		cpu = selfCPU() - cpu
		gcsAfter, gcCPUAfter := gcStats()
		elapsed := time.Since(start)
		kr.waited = float64(runDelay("self")-delay) / float64(elapsed)
		var wrkWaited time.Duration
		for _, r := range kr.runs {
			wrkWaited += r.waited
		}
		kr.wrkWaited = float64(wrkWaited) / float64(elapsed)
		kr.medianRuns()
		kr.commands = len(news.Commands()) - before
		kr.cpu = cpu / time.Duration(max(1, requests))
		kr.gcs, kr.gcCPU = gcsAfter-gcs, gcCPUAfter-gcCPU
		kr.load = loadAverage()
		out = append(out, kr)
	}
	return out, nil
}

// loadAverage is the first three fields of /proc/loadavg ("" when unknown).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// searchLatency builds a search index of n articles in one group and
// times reader-like queries over it: p50 and p95.
func searchLatency(n, queries int) (p50, p95 time.Duration, err error) {
	dir, err := os.MkdirTemp("", "newsbench-search")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	ix, err := searchindex.Open(dir, 0)
	if err != nil {
		return 0, 0, err
	}
	r := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields("generics channels release question help linux kernel compiler performance memory network error patch review proposal bug test build")
	es := make([]searchindex.Entry, n)
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range es {
		var subj []string
		for range 3 + r.IntN(5) {
			subj = append(subj, vocab[r.IntN(len(vocab))])
		}
		es[i] = searchindex.Entry{Number: int64(i + 1), Date: day.Add(time.Duration(i) * time.Minute),
			MessageID: fmt.Sprintf("<%d@bench.test>", i), Subject: strings.Join(subj, " "),
			From: fmt.Sprintf("Poster %d <p%d@example.org>", r.IntN(5000), r.IntN(5000))}
	}
	if err := ix.Append("bench.search", es); err != nil {
		return 0, 0, err
	}
	qs := []searchindex.Query{
		{Groups: []string{"bench.search"}, Text: "kernel"},
		{Groups: []string{"bench.search"}, Text: "memory patch"},
		{Groups: []string{"bench.search"}, Author: "poster 42"},
		{Groups: []string{"bench.search"}, Text: "nothingmatches"},
		{Text: "review", Since: day.Add(10 * 24 * time.Hour), Until: day.Add(20 * 24 * time.Hour)},
	}
	lat := make([]time.Duration, 0, queries)
	for i := range queries {
		t := time.Now()
		ix.Search(qs[i%len(qs)])
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*95/100], nil
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
// the news server received meanwhile, and how many of each.
func commandsFor(st *webStack, news *nntptest.Server, paths []string) (int, string, error) {
	before := len(news.Commands())
	client := &http.Client{}
	for _, p := range paths {
		if err := webFetch(client, st.url+p); err != nil {
			return 0, "", err
		}
	}
	cmds := news.Commands()[before:]
	byName := map[string]int{}
	for _, c := range cmds {
		byName[c.Cmd.Name()]++
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, byName[name]))
	}
	return len(cmds), strings.Join(parts, ", "), nil
}

// writeHeapProfile writes the live heap, after a collection, to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}

func benchWeb(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("newsbench web", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nArticles := fs.Int("articles", 2000, "articles on the news server")
	nGroups := fs.Int("groups", 4, "groups they are spread over")
	size := fs.Int("size", 2048, "article body `bytes`")
	conns := fs.Int("conns", 32, "concurrent HTTP clients for the cached-page load")
	dur := fs.Duration("duration", 5*time.Second, "length of one run of the cached-page load")
	runs := fs.Int("runs", 3, "runs of the cached-page load per page kind (medians reported)")
	pin := fs.Bool("pin", true, "run the server on one CPU (GOMAXPROCS=1) and wrk -t1 on another (web_pin.go); false: both share every CPU")
	wrkCPU := fs.String("wrk-cpu", "", "run wrk -t1 on this CPU (set by -pin when it re-executes newsbench pinned)")
	memProfile := fs.String("memprofile", "", "write a heap profile after the cached-page load to `file`")
	traceFile := fs.String("trace", "", "write an execution trace of the cached-page load to `file` (large: use a short -duration)")
	nViews := fs.Int("views", 1000, "page views per command count")
	nntpConns := fs.Int("nntp-conns", 4, "NNTP connections of newsweb")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the cached-page load to `file`")
	searchN := fs.Int("search-articles", 100_000, "articles in the search index timed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *runs < 1 {
		return fmt.Errorf("-runs %d: at least 1", *runs)
	}
	var setup webSetup
	switch {
	case *wrkCPU != "":
		setup = pinnedSetup(*wrkCPU)
	case *pin:
		server, wrk, why := pinCPUs()
		if why == "" {
			return runPinned(server, wrk, args, stdout, stderr)
		}
		setup = sharedSetup(why)
	default:
		setup = sharedSetup("")
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
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
	}
	kinds, err := loadKinds(setup, cached, news, b, *conns, *runs, *dur)
	pprof.StopCPUProfile()
	trace.Stop()
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			return err
		}
	}
	sp50, sp95, err := searchLatency(*searchN, 200)
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}

	// Warm: the stack the load ran on has read every page once.
	warm, warmBy, err := commandsFor(cached, news, views(b, *nViews, 3))
	if err != nil {
		return err
	}
	paths := views(b, *nViews, 1)
	fresh, err := startWebStack(news.HostPort(), mreader.DefaultCacheConfig(), *nntpConns)
	if err != nil {
		return err
	}
	defer fresh.close()
	cold, _, err := commandsFor(fresh, news, paths)
	if err != nil {
		return err
	}
	again, againBy, err := commandsFor(fresh, news, views(b, *nViews, 2))
	if err != nil {
		return err
	}
	off := mreader.CacheConfig{Article: 1, ArticleNotFound: 1, Threads: 1, Thread: 1, Groups: 1, GroupStats: 1}
	nocache, err := startWebStack(news.HostPort(), off, *nntpConns)
	if err != nil {
		return err
	}
	defer nocache.close()
	uncached, _, err := commandsFor(nocache, news, paths)
	if err != nil {
		return err
	}

	per := func(n int) float64 { return float64(n) * 1000 / float64(*nViews) }
	fmt.Fprintf(stdout, "newsweb on loopback: %d articles of %d bytes in %d groups (%d threads) on nntptest; %d NNTP connections\n",
		len(b.articles), *size, len(b.groups), len(b.roots), *nntpConns)
	fmt.Fprintf(stdout, "setup: %s\n", setup.desc)
	fmt.Fprintf(stdout, "cached pages: wrk -t%d -c%d, %d runs of %v per kind (medians; p99 of each run listed), gzip, every page read once before\n\n",
		setup.wrkThreads(), *conns, *runs, *dur)
	kt := Table{Header: []string{"page kind", "req/s", "p50", "p99", "p99 of each run", "server CPU a request", "GCs (CPU)", "waited for a CPU: server, wrk", "NNTP commands", "load average after"}}
	for _, k := range kinds {
		var each []string
		for _, r := range k.runs {
			each = append(each, r.p99.String())
		}
		kt.Add(k.kind, fmt.Sprintf("%.0f", k.rps), k.p50.String(), k.p99.String(), strings.Join(each, " "), k.cpu.Round(100*time.Nanosecond).String(),
			fmt.Sprintf("%d (%v)", k.gcs, k.gcCPU.Round(time.Millisecond)), fmt.Sprintf("%.1f%%, %.1f%%", 100*k.waited, 100*k.wrkWaited), strconv.Itoa(k.commands), k.load)
	}
	kt.Print(stdout)
	fmt.Fprintln(stdout)
	t := Table{Header: []string{"measure", "value"}}
	t.Add(fmt.Sprintf("search, %d articles indexed, 200 queries: p50 / p95", *searchN), fmt.Sprintf("%v / %v", sp50.Round(time.Microsecond), sp95.Round(time.Microsecond)))
	t.Add(fmt.Sprintf("NNTP commands per 1,000 views, cache, cold start (%d views)", *nViews), fmt.Sprintf("%.0f", per(cold)))
	t.Add("NNTP commands per 1,000 views, cache, next 1,000", fmt.Sprintf("%.0f (%s)", per(again), againBy))
	t.Add("NNTP commands per 1,000 views, warm (every page read before)", fmt.Sprintf("%.0f (%s)", per(warm), warmBy))
	t.Add("NNTP commands per 1,000 views, no cache", fmt.Sprintf("%.0f", per(uncached)))
	t.Print(stdout)
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "result web setup %q\n", strings.SplitN(setup.desc, ":", 2)[0])
	for _, k := range kinds {
		name := strings.ReplaceAll(strings.ReplaceAll(k.kind, " ", "_"), "-", "_")
		worst := slices.MaxFunc(k.runs, func(a, b wrkResult) int { return cmp.Compare(a.p99, b.p99) })
		fmt.Fprintf(stdout, "result web %s_rps %.0f\n", name, k.rps)
		fmt.Fprintf(stdout, "result web %s_p50_us %d\n", name, k.p50.Microseconds())
		fmt.Fprintf(stdout, "result web %s_p99_us %d\n", name, k.p99.Microseconds())
		fmt.Fprintf(stdout, "result web %s_p99_max_us %d\n", name, worst.p99.Microseconds())
		fmt.Fprintf(stdout, "result web %s_server_cpu_ns %d\n", name, k.cpu.Nanoseconds())
		fmt.Fprintf(stdout, "result web %s_gcs %d\n", name, k.gcs)
		fmt.Fprintf(stdout, "result web %s_server_waited_pct %.1f\n", name, 100*k.waited)
		fmt.Fprintf(stdout, "result web %s_wrk_waited_pct %.1f\n", name, 100*k.wrkWaited)
	}
	fmt.Fprintf(stdout, "result web search_p95_us %d\n", sp95.Microseconds())
	fmt.Fprintf(stdout, "result web load_average %q\n", loadAverage())
	fmt.Fprintf(stdout, "result web commands_per_1000_views_cached_cold %.0f\n", per(cold))
	fmt.Fprintf(stdout, "result web commands_per_1000_views_cached_warm %.0f\n", per(again))
	fmt.Fprintf(stdout, "result web commands_per_1000_views_warm %.0f\n", per(warm))
	fmt.Fprintf(stdout, "result web commands_per_1000_views_uncached %.0f\n", per(uncached))
	return nil
}
