package main

// newsbench feed: newsfeed against INN's innfeed, pushing the same stored
// articles to the same fast sink over loopback.
//
// What is measured, for each feeder, is a transit feeder's job: articles
// already stored, and queued for the peers, go out to the peers. Both
// feeders start from stored articles:
//
//   - newsfeed: the set is stored with `newsfeed inject` while no relay runs
//     (so every peer's copies sit in its backlog files), once per set; before
//     each round the backlog files are restored, then `newsfeed -config` is
//     started as a child process and replays them to the peers.
//   - innfeed: the set is fed into a private INN (innd stores it in its
//     spool), once per set; each round runs `innfeed -x` (batch mode) with a
//     batch of "@token@ <msgid>" lines per peer as its backlog files.
//
// Each peer is a sink (runtime/testpeer/nullpeer) that holds its greeting
// until every connection the feeder opens has arrived: the clock starts when
// the sinks greet and stops when every sink has taken every article. CPU time
// is the child process's, from wait4, and peak RSS its VmHWM (so both include
// start-up and shutdown, the same way for both). Rounds interleave the
// feeders and the table shows the median of the rounds.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

func init() {
	register("feed", "newsfeed vs innfeed on loopback", runFeed)
}

// feedOptions are newsbench feed's flags.
type feedOptions struct {
	smallN, smallSize int
	largeN, largeSize int
	rounds            int
	conns             int
	fanout            int
	cases             string
	quick             bool
	newsfeed          string
	noINN             bool
	work              string
	keep              bool
	profile           string
	timeout           time.Duration
	innQueue          int
	selfProfile       string
	compare           string
	compareRuntime    string
	idle              int
	backlog           int
	backlogQueue      int
	chain             int
	latency           bool
}

// feeder names, in table order.
const (
	feederCopy     = "loopback copy"
	feederSender   = "go sender"
	feederNFGo     = "newsfeed goroutine"
	feederNFEpoll  = "newsfeed epoll"
	feederCompare  = "newsfeed -compare"
	feederInnfeed  = "innfeed"
	runtimeGo      = "goroutine"
	runtimeEpoll   = "epoll"
	innfeedSkipped = "innfeed: skipped"
)

// feedCase is one comparison: a set and a number of peers.
type feedCase struct {
	name  string
	set   *articleSet
	peers int
}

// measure is one feeder's result in one round.
type measure struct {
	elapsed  time.Duration
	articles int64 // delivered, summed over the peers
	bytes    int64
	cpu      time.Duration // user + system of the child; 0 when not measured
	maxRSS   int64         // octets; 0 when not measured
}

func (m measure) artPerSec() float64 { return float64(m.articles) / m.elapsed.Seconds() }
func (m measure) mbPerSec() float64  { return float64(m.bytes) / 1e6 / m.elapsed.Seconds() }
func (m measure) cpuPer1k() float64 {
	if m.cpu == 0 || m.articles == 0 {
		return 0
	}
	return m.cpu.Seconds() * 1000 / float64(m.articles)
}

func runFeed(args []string, stdout, stderr io.Writer) error {
	var o feedOptions
	fs := flag.NewFlagSet("newsbench feed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.smallN, "small", 20000, "number of small articles")
	fs.IntVar(&o.smallSize, "small-size", 2000, "size of a small article, octets")
	fs.IntVar(&o.largeN, "large", 2000, "number of large articles")
	fs.IntVar(&o.largeSize, "large-size", 500000, "size of a large article, octets")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds per case (the table shows the median)")
	fs.IntVar(&o.conns, "conns", 4, "connections per peer, for every feeder")
	fs.IntVar(&o.fanout, "fanout", 4, "peers of the fan-out cases")
	fs.StringVar(&o.cases, "cases", "small-1,large-1,small-fanout,large-fanout", "cases to run: {small,large}-{1,fanout}")
	fs.BoolVar(&o.quick, "quick", false, "tiny sets and one round (a smoke test of the harness, not a measurement)")
	fs.StringVar(&o.newsfeed, "newsfeed", "", "newsfeed `binary` (built from this module with go build when empty)")
	fs.BoolVar(&o.noINN, "no-inn", false, "leave innfeed out")
	fs.StringVar(&o.work, "work", "", "work `dir` (spools, INN instance, logs); a temporary one when empty")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory")
	fs.StringVar(&o.profile, "profile", "", "write newsfeed's CPU and allocation profiles (pprof) of each case's last round to `dir`")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up on one feeder's run after this long")
	fs.IntVar(&o.innQueue, "innfeed-queue", 0, "innfeed max-queue-size (its window per connection); 0 keeps innfeed's default")
	fs.StringVar(&o.compare, "compare", "", "another newsfeed `binary` (e.g. an older build) run as one more feeder (runtime: -compare-runtime), for before/after figures")
	fs.StringVar(&o.compareRuntime, "compare-runtime", runtimeGo, "the runtime of the -compare feeder: goroutine or epoll")
	fs.IntVar(&o.idle, "idle", 0, "instead of the feed cases, measure newsfeed's memory per idle ingest connection with `n` connections, for each runtime")
	fs.IntVar(&o.backlog, "backlog", 0, "instead of the feed cases, measure newsfeed's memory while `n` articles (of -small-size) are queued for a peer that is down, and the drain rate when it returns, for each runtime")
	fs.IntVar(&o.backlogQueue, "backlog-queue", 0, "the peer's queue_size for -backlog (0 keeps newsfeed's default)")
	fs.IntVar(&o.chain, "chain", 0, "instead of the feed cases, time innfeed feeding `n` articles (of -small-size) through newsfeed to a sink against innfeed feeding the sink directly (needs INN)")
	fs.BoolVar(&o.latency, "latency", false, "instead of the feed cases, time each TAKETHIS's answer (p50, p99) from newsfeed's ingest and from innd under a full-speed stream of -small-size and -large-size articles (at most 10000 and 500 of them; needs INN)")
	fs.StringVar(&o.selfProfile, "selfprofile", "", "write newsbench's own CPU profile (the sinks and the Go sender) to `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.quick {
		o.smallN, o.smallSize, o.largeN, o.largeSize = 300, 2000, 12, 500000
		o.rounds = 1
	}
	if o.compareRuntime != runtimeGo && o.compareRuntime != runtimeEpoll {
		return fmt.Errorf("-compare-runtime %q: goroutine or epoll", o.compareRuntime)
	}
	if o.rounds < 1 || o.conns < 1 || o.fanout < 1 || o.smallN < 1 || o.largeN < 1 {
		return errors.New("-rounds, -conns, -fanout, -small and -large must be at least 1")
	}
	if o.selfProfile != "" {
		f, err := os.Create(o.selfProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	b := &feedBench{o: o, out: stdout, log: stderr}
	defer b.cleanup()
	return b.run(ctx)
}

// feedBench holds one run of newsbench feed.
type feedBench struct {
	o        feedOptions
	out, log io.Writer
	work     string
	bin      string // newsfeed binary
	epoll    bool
	inn      *inntest.Server
	innWhy   string            // why innfeed is skipped
	batches  map[string][]byte // set label -> innfeed batch
	spools   map[string]string // set label -> newsfeed spool dir
	cases    []feedCase
	results  map[string]map[string][]measure // case -> feeder -> rounds
	notes    []string
}

func (b *feedBench) say(format string, args ...any) { fmt.Fprintf(b.log, format+"\n", args...) }

func (b *feedBench) cleanup() {
	if b.inn != nil {
		if err := b.inn.Close(); err != nil {
			b.say("newsbench feed: stopping INN: %v", err)
		}
	}
	if b.work != "" && !b.o.keep && b.o.work == "" {
		os.RemoveAll(b.work)
	}
}

func (b *feedBench) run(ctx context.Context) error {
	o := b.o
	if o.work != "" {
		if err := os.MkdirAll(o.work, 0o755); err != nil {
			return err
		}
		b.work = o.work
	} else {
		dir, err := os.MkdirTemp("", "newsbench-feed-")
		if err != nil {
			return err
		}
		b.work = dir
		// INN runs as news, which must reach its instance inside.
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
	}
	loadBefore := loadAvg()
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	now := time.Now()
	sets := map[string]*articleSet{}
	for _, c := range strings.Split(o.cases, ",") {
		kind, peers, ok := strings.Cut(strings.TrimSpace(c), "-")
		if !ok {
			return fmt.Errorf("bad case %q (want small-1, large-fanout, ...)", c)
		}
		var n, size int
		switch kind {
		case "small":
			n, size = o.smallN, o.smallSize
		case "large":
			n, size = o.largeN, o.largeSize
		default:
			return fmt.Errorf("bad case %q: small or large", c)
		}
		np := 1
		switch peers {
		case "1":
		case "fanout":
			np = o.fanout
		default:
			return fmt.Errorf("bad case %q: 1 or fanout", c)
		}
		if sets[kind] == nil {
			sets[kind] = newArticleSet(n, size, run, now)
		}
		set := sets[kind]
		b.cases = append(b.cases, feedCase{name: fmt.Sprintf("feed-%s-%dpeer", set.label, np), set: set, peers: np})
	}
	maxPeers := 1
	for _, c := range b.cases {
		maxPeers = max(maxPeers, c.peers)
	}

	// newsfeed: the binary, its runtimes, and a spool per set with every
	// peer's copies in backlog.
	bin, err := b.buildNewsfeed(ctx)
	if err != nil {
		return err
	}
	b.bin = bin
	b.epoll = epollAvailable()
	if !b.epoll {
		b.say("epoll: not available in this build (relay refuses runtime = \"epoll\"); newsfeed runs with the goroutine runtime only")
	}
	if o.idle > 0 {
		return b.runIdle(ctx, o.idle)
	}
	if o.backlog > 0 {
		return b.runBacklog(ctx, o.backlog)
	}
	if o.chain > 0 {
		return b.runChain(ctx, o.chain)
	}
	if o.latency {
		return b.runLatency(ctx)
	}
	b.spools = map[string]string{}
	for _, kind := range []string{"small", "large"} {
		set := sets[kind]
		if set == nil {
			continue
		}
		dir, err := b.prepareSpool(ctx, set, maxPeers)
		if err != nil {
			return err
		}
		b.spools[set.label] = dir
	}

	// innfeed: a private INN holding the same sets.
	b.batches = map[string][]byte{}
	switch {
	case o.noINN:
		b.innWhy = "left out (-no-inn)"
	default:
		if err := inntest.Available(); err != nil {
			b.innWhy = err.Error()
			break
		}
		if err := b.startINN(ctx, sets); err != nil {
			return err
		}
	}
	if b.innWhy != "" {
		b.say("%s: %s", innfeedSkipped, b.innWhy)
	}

	b.results = map[string]map[string][]measure{}
	for _, c := range b.cases {
		b.results[c.name] = map[string][]measure{}
		for r := range o.rounds {
			feeders := b.feeders()
			// Interleave: each round starts with a different feeder.
			k := r % len(feeders)
			feeders = append(feeders[k:], feeders[:k]...)
			for _, f := range feeders {
				m, err := b.measure(ctx, c, f, r == o.rounds-1)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", c.name, f, err)
				}
				b.results[c.name][f] = append(b.results[c.name][f], m)
				b.say("round %d/%d %s %-18s %8.3fs %10.0f art/s %8.1f MB/s", r+1, o.rounds, c.name, f,
					m.elapsed.Seconds(), m.artPerSec(), m.mbPerSec())
			}
		}
	}
	b.report(loadBefore, loadAvg())
	return nil
}

// feeders lists what runs in each round.
func (b *feedBench) feeders() []string {
	f := []string{feederCopy, feederSender, feederNFGo}
	if b.epoll {
		f = append(f, feederNFEpoll)
	}
	if b.o.compare != "" {
		f = append(f, feederCompare)
	}
	if b.innWhy == "" {
		f = append(f, feederInnfeed)
	}
	return f
}

// measure runs one feeder once on case c.
func (b *feedBench) measure(ctx context.Context, c feedCase, feeder string, last bool) (measure, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.timeout)
	defer cancel()
	switch feeder {
	case feederCopy:
		res, err := loopbackCopy(ctx, c.set, b.o.conns, c.peers)
		return measure{elapsed: res.elapsed, articles: int64(c.set.len() * c.peers), bytes: res.bytes}, err
	case feederSender:
		return b.runSender(ctx, c)
	case feederNFGo:
		return b.runNewsfeed(ctx, c, b.bin, runtimeGo, last)
	case feederNFEpoll:
		return b.runNewsfeed(ctx, c, b.bin, runtimeEpoll, last)
	case feederCompare:
		return b.runNewsfeed(ctx, c, b.o.compare, b.o.compareRuntime, false)
	case feederInnfeed:
		return b.runInnfeed(ctx, c)
	}
	return measure{}, fmt.Errorf("unknown feeder %q", feeder)
}

// childCPU is a child's CPU time (user + system) from its rusage (wait4).
func childCPU(st *os.ProcessState) time.Duration {
	if st == nil {
		return 0
	}
	return st.UserTime() + st.SystemTime()
}

// rssWatch follows a child's peak RSS, VmHWM in /proc/PID/status. (wait4's
// ru_maxrss cannot be used: Go starts children with vfork, and Linux
// carries the parent's high-water mark over into the child's at exec, so
// a child would report newsbench's own peak whenever that is larger.)
type rssWatch struct {
	pid  int
	peak atomic.Int64
	stop chan struct{}
	done chan struct{}
}

// watchRSS polls the process's VmHWM every 5ms until finish.
func watchRSS(pid int) *rssWatch {
	w := &rssWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			w.sample()
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// sample reads VmHWM once; a process that is gone leaves the peak as is.
func (w *rssWatch) sample() {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(w.pid) + "/status")
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb*1024 > w.peak.Load() {
					w.peak.Store(kb * 1024)
				}
			}
		}
	}
}

// finish samples once more (call it before the process is reaped, if it
// can be) and returns the peak, in octets.
func (w *rssWatch) finish() int64 {
	close(w.stop)
	<-w.done
	w.sample()
	return w.peak.Load()
}

// loadAvg is /proc/loadavg's first three fields ("" where there is none).
func loadAvg() string {
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

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// innVersion is the installed inn2 package's version ("" when unknown).
func innVersion() string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "inn2").Output()
	if err != nil {
		return ""
	}
	return "inn2 " + strings.TrimSpace(string(out))
}

// report prints the table and the ratio lines.
func (b *feedBench) report(loadBefore, loadAfter string) {
	o := b.o
	w := b.out
	fmt.Fprintf(w, "newsbench feed: %s, %d CPUs (%s), %s, load average %s before and %s after\n",
		runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), cpuModel(), runtime.Version(), loadBefore, loadAfter)
	if v := innVersion(); v != "" && b.innWhy == "" {
		fmt.Fprintf(w, "innfeed from %s\n", v)
	}
	fmt.Fprintf(w, "median of %d interleaved rounds; %d connections per peer for every feeder; ", o.rounds, o.conns)
	fmt.Fprintf(w, "time from the sinks' greeting to the last article taken\n")
	fmt.Fprintf(w, "art/s and MB/s count what the sinks took (fan-out: every copy); CPU (wait4) and peak RSS (VmHWM) are the feeder process's, start-up included\n")
	fmt.Fprintf(w, "newsfeed and innfeed both start from stored, queued articles (newsfeed: backlog files written by `newsfeed inject`; innfeed: -x with a batch file per peer)\n")
	if o.quick {
		fmt.Fprintf(w, "-quick: tiny sets, one round: a smoke test, not a measurement\n")
	}
	t := &Table{Header: []string{"case", "feeder", "articles", "art/s", "MB/s", "CPU s/1k art", "peak RSS MB", "time s"}}
	type med struct{ art, mb, cpu, rss, el float64 }
	meds := map[string]map[string]med{}
	for _, c := range b.cases {
		meds[c.name] = map[string]med{}
		for _, f := range []string{feederCopy, feederSender, feederNFGo, feederNFEpoll, feederCompare, feederInnfeed} {
			ms := b.results[c.name][f]
			if len(ms) == 0 {
				continue
			}
			var art, mb, cpu, rss, el []float64
			for _, m := range ms {
				art = append(art, m.artPerSec())
				mb = append(mb, m.mbPerSec())
				cpu = append(cpu, m.cpuPer1k())
				rss = append(rss, float64(m.maxRSS)/1e6)
				el = append(el, m.elapsed.Seconds())
			}
			md := med{Median(art), Median(mb), Median(cpu), Median(rss), Median(el)}
			meds[c.name][f] = md
			cpuS, rssS := "-", "-"
			if md.cpu > 0 {
				cpuS = fmt.Sprintf("%.4f", md.cpu)
			}
			if md.rss > 0 {
				rssS = fmt.Sprintf("%.1f", md.rss)
			}
			name := f
			switch f {
			case feederCopy:
				name = "loopback copy (ceiling)"
			case feederSender:
				name = "go sender -> sink (ceiling)"
			}
			t.Add(c.name, name, strconv.FormatInt(ms[0].articles, 10), fmt.Sprintf("%.0f", md.art), fmt.Sprintf("%.1f", md.mb),
				cpuS, rssS, fmt.Sprintf("%.3f", md.el))
		}
	}
	t.Print(w)
	if !b.epoll {
		fmt.Fprintln(w, "epoll: not available in this build")
	}
	if b.innWhy != "" {
		fmt.Fprintf(w, "%s: %s\n", innfeedSkipped, b.innWhy)
	}
	for _, n := range b.notes {
		fmt.Fprintln(w, "note:", n)
	}
	for _, c := range b.cases {
		m := meds[c.name]
		inn, ok := m[feederInnfeed]
		for _, v := range []struct{ suffix, feeder string }{{"", feederNFGo}, {"-epoll", feederNFEpoll}} {
			nf, have := m[v.feeder]
			if !have {
				continue
			}
			if ok {
				Ratio(w, c.name+v.suffix, "art_per_s", nf.art, inn.art)
				Ratio(w, c.name+v.suffix, "mb_per_s", nf.mb, inn.mb)
				Ratio(w, c.name+v.suffix, "cpu_per_1k", nf.cpu, inn.cpu)
				Ratio(w, c.name+v.suffix, "rss", nf.rss, inn.rss)
			}
			if cp, have := m[feederCopy]; have {
				// newsfeed's MB/s as a fraction of the loopback copy's.
				Ratio(w, c.name+v.suffix+"-vs-loopback", "mb_per_s", nf.mb, cp.mb)
			}
			if cmp, have := m[feederCompare]; have {
				// This build against the -compare build, same run.
				Ratio(w, c.name+v.suffix+"-vs-compare", "art_per_s", nf.art, cmp.art)
				Ratio(w, c.name+v.suffix+"-vs-compare", "cpu_per_1k", nf.cpu, cmp.cpu)
			}
		}
	}
}
