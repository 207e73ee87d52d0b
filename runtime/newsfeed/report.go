package newsfeed

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"
)

// Report is the daily summary `newsfeed report` prints, as innreport and
// news.daily give INN's operators: per peer and per upstream feeder what
// was offered and what came of it, the top rejection reasons, backlog
// peaks and lost articles, over a window of time. It is built from the
// article log: its article lines (feeders, reasons) and its stats lines,
// which carry each run's counters; a run's share of the window is its
// last counters in the window less its last before it, so the report adds
// up across restarts. A run's offered includes what it found in backlog
// files at start (recovered): the run before counted those already, so
// only the earliest run in the window keeps them, and an article carried
// over a restart is offered once. What a run counted after its last stats
// line (at most stats_interval, when it was killed) is not in it.
type Report struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	Log   string    `json:"article_log"`
	// Runs counts the relay runs with stats in the window (each start
	// begins a run).
	Runs    int            `json:"runs"`
	Peers   []ReportPeer   `json:"peers"`
	Feeders []ReportFeeder `json:"feeders"`
	Reasons []ReportReason `json:"top_rejection_reasons"`
	// Lost counts stored articles found damaged or gone in the spool.
	Lost int64 `json:"lost_articles"`
}

// ReportPeer is one peer's share of the window.
type ReportPeer struct {
	Name     string `json:"name"`
	Offered  int64  `json:"offered"`
	Accepted int64  `json:"accepted"`
	Refused  int64  `json:"refused"`
	Rejected int64  `json:"rejected"`
	Deferred int64  `json:"deferred"`
	Dropped  int64  `json:"dropped"`
	Missing  int64  `json:"missing"`
	TooOld   int64  `json:"too_old"`
	Lost     int64  `json:"lost"`
	Bytes    int64  `json:"bytes"`
	// AvgLatency is the mean time from an article's arrival to the peer's
	// final answer, in seconds, over LatencySamples answers: those that
	// came while the article's log line was open (at most a minute after
	// its arrival, in the same run), so answers from backlog are not in it.
	AvgLatency     float64 `json:"avg_latency_seconds"`
	LatencySamples int64   `json:"latency_samples"`
	BacklogPeak    int64   `json:"backlog_peak"`
	Queued         int64   `json:"queued"` // at the last stats line
}

// ReportFeeder is one upstream feeder's share of the window, from the
// arrival lines.
type ReportFeeder struct {
	Name     string `json:"name"`
	Offered  int64  `json:"offered"`
	Accepted int64  `json:"accepted"`
	Refused  int64  `json:"refused"`
	Rejected int64  `json:"rejected"`
	Deferred int64  `json:"deferred"`
	Bytes    int64  `json:"bytes"`
}

// ReportReason is a rejection reason and how often it was given, by
// ingest (Source "ingest") or by a peer.
type ReportReason struct {
	Source string `json:"source"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// runCounters are one run's stats lines for one subject.
type runCounters struct {
	base, last map[string]int64
	in         bool // a line in the window was seen
}

// BuildReport reads the article log of cfg and sums up [since, until).
func BuildReport(cfg *Config, since, until time.Time) (Report, error) {
	rep := Report{Since: since, Until: until, Log: cfg.ArticleLogPath()}
	if rep.Log == "" {
		return rep, fmt.Errorf("no article_log in %s: set article_log (e.g. article_log = \"news\") to keep what the report reads", cfg.Source)
	}
	files := articleLogFiles(rep.Log, cfg.ArticleLogKeep)
	runs := map[string]map[string]*runCounters{} // subject ("peer NAME", "relay") -> run -> counters
	peaks := map[string]int64{}
	queued := map[string]int64{}
	feeders := map[string]*ReportFeeder{}
	reasons := map[[2]string]int64{}
	inRuns := map[string]bool{}
	for i := len(files) - 1; i >= 0; i-- {
		if err := readLogFile(files[i], func(l ArticleLogLine) {
			if l.Who == "stats" {
				subject := "relay"
				if l.Verdict == "peer" {
					subject = "peer " + l.Fields["name"]
				}
				run := l.Fields["run"]
				if runs[subject] == nil {
					runs[subject] = map[string]*runCounters{}
				}
				rc := runs[subject][run]
				if rc == nil {
					rc = &runCounters{}
					runs[subject][run] = rc
				}
				vals := map[string]int64{}
				for k, v := range l.Fields {
					if n, err := strconv.ParseInt(v, 10, 64); err == nil {
						vals[k] = n
					}
				}
				switch {
				case l.Time.Before(since):
					rc.base = vals
				case l.Time.Before(until):
					rc.last, rc.in = vals, true
					inRuns[run] = true
					if l.Verdict == "peer" {
						name := l.Fields["name"]
						peaks[name] = max(peaks[name], vals["backlog"])
						queued[name] = vals["queued"]
					}
				}
				return
			}
			if l.Time.Before(since) || !l.Time.Before(until) {
				return
			}
			if peer := l.Peer(); peer != "" {
				if l.Verdict == "rejected" && l.Fields["reason"] != "" {
					reasons[[2]string{peer, l.Fields["reason"]}]++
				}
				return
			}
			from := l.Fields["from"]
			f := feeders[from]
			if f == nil {
				f = &ReportFeeder{Name: from}
				feeders[from] = f
			}
			f.Offered++
			switch l.Verdict {
			case "accepted":
				f.Accepted++
				n, _ := strconv.ParseInt(l.Fields["size"], 10, 64)
				f.Bytes += n
			case "refused":
				f.Refused++
			case "rejected":
				f.Rejected++
				reasons[[2]string{"ingest", l.Fields["reason"]}]++
			case "deferred":
				f.Deferred++
			}
		}); err != nil {
			return rep, err
		}
	}
	rep.Runs = len(inRuns)
	delta := func(rcs map[string]*runCounters, k string) int64 {
		var sum int64
		for _, rc := range rcs {
			if rc.in {
				sum += rc.last[k] - rc.base[k]
			}
		}
		return sum
	}
	// offered counts every run's share, less what each run found in
	// backlog at start, except the earliest run in the window when it
	// started inside it.
	offered := func(rcs map[string]*runCounters) int64 {
		sum := delta(rcs, "offered")
		first, firstStart := "", int64(0)
		for run, rc := range rcs {
			if !rc.in {
				continue
			}
			start, _ := strconv.ParseInt(run, 10, 64)
			if rc.base != nil {
				first, firstStart = "", -1
				break
			}
			if first == "" || start < firstStart {
				first, firstStart = run, start
			}
		}
		for run, rc := range rcs {
			if rc.in && rc.base == nil && run != first {
				sum -= rc.last["recovered"]
			}
		}
		return sum
	}
	for subject, rcs := range runs {
		if subject == "relay" {
			rep.Lost = delta(rcs, "lost")
			continue
		}
		name := subject[len("peer "):]
		p := ReportPeer{Name: name, Offered: offered(rcs), Accepted: delta(rcs, "accepted"),
			Refused: delta(rcs, "refused"), Rejected: delta(rcs, "rejected"), Deferred: delta(rcs, "deferred"),
			Dropped: delta(rcs, "dropped"), Missing: delta(rcs, "missing"), TooOld: delta(rcs, "too_old"),
			Lost: delta(rcs, "lost"), Bytes: delta(rcs, "bytes"), BacklogPeak: peaks[name], Queued: queued[name]}
		if n := delta(rcs, "lat_n"); n > 0 {
			p.AvgLatency = float64(delta(rcs, "lat_ms")) / float64(n) / 1000
			p.LatencySamples = n
		}
		rep.Peers = append(rep.Peers, p)
	}
	slices.SortFunc(rep.Peers, func(a, b ReportPeer) int { return cmp.Compare(a.Name, b.Name) })
	for _, f := range feeders {
		rep.Feeders = append(rep.Feeders, *f)
	}
	slices.SortFunc(rep.Feeders, func(a, b ReportFeeder) int { return cmp.Compare(a.Name, b.Name) })
	for k, n := range reasons {
		rep.Reasons = append(rep.Reasons, ReportReason{Source: k[0], Reason: k[1], Count: n})
	}
	slices.SortFunc(rep.Reasons, func(a, b ReportReason) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Source, b.Source), cmp.Compare(a.Reason, b.Reason))
	})
	if len(rep.Reasons) > 10 {
		rep.Reasons = rep.Reasons[:10]
	}
	return rep, nil
}

// readLogFile hands each event of one log file to fn; lines it cannot
// read are skipped.
func readLogFile(name string, fn func(ArticleLogLine)) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("article log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var rd ArticleLogReader
	for sc.Scan() {
		evs, err := rd.Line(sc.Text())
		if err != nil {
			continue
		}
		for _, e := range evs {
			fn(e)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("article log %s: %w", name, err)
	}
	return nil
}
