package newsfeed

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
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
	// Unpaired counts the peers' answers that are not in the latency
	// (the sum of the peers' Unpaired).
	Unpaired int64 `json:"unpaired_answers"`
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
	// final answer, in seconds, over LatencySamples answers given in the
	// window, however late: those on the article's line come from the
	// runs' stats lines (lat_ms, lat_n), later ones from pairing the
	// answer's own line with the article's line, across restarts.
	AvgLatency     float64 `json:"avg_latency_seconds"`
	LatencySamples int64   `json:"latency_samples"`
	// Unpaired counts the answers in the window that could not be timed:
	// their article's line is not in the log (before its oldest file, or
	// not written by a killed run).
	Unpaired    int64 `json:"unpaired_answers"`
	BacklogPeak int64 `json:"backlog_peak"`
	Queued      int64 `json:"queued"` // at the last stats line
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
	late := newLatePairs(since, until)
	for i := len(files) - 1; i >= 0; i-- {
		if err := readLogFile(files[i], func(l ArticleLogLine) {
			late.line(l)
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
	late.expire(true)
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
		p.latency(delta(rcs, "lat_ms"), delta(rcs, "lat_n"), late)
		rep.Peers = append(rep.Peers, p)
	}
	// A peer answering in the window without a stats line in it (its run
	// was killed before one) still shows its answers' latency and those
	// not timed.
	for _, names := range []map[string]int64{late.n, late.unpaired} {
		for name := range names {
			if !slices.ContainsFunc(rep.Peers, func(p ReportPeer) bool { return p.Name == name }) {
				p := ReportPeer{Name: name}
				p.latency(0, 0, late)
				rep.Peers = append(rep.Peers, p)
			}
		}
	}
	for _, p := range rep.Peers {
		rep.Unpaired += p.Unpaired
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

// latency sets the peer's latency from its runs' timed answers (ms over
// n) and its late answers.
func (p *ReportPeer) latency(ms, n int64, late *latePairs) {
	ms += late.ms[p.Name]
	n += late.n[p.Name]
	if n > 0 {
		p.AvgLatency = float64(ms) / float64(n) / 1000
		p.LatencySamples = n
	}
	p.Unpaired = late.unpaired[p.Name]
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

// answerKey is one peer's answer to one article.
type answerKey struct{ id, peer string }

// lateOrphan is an answer line not yet paired with its article's line.
type lateOrphan struct {
	at       time.Time
	rejected bool
}

// latePairs times the answers the article log writes on lines of their
// own (">PEER VERDICT"): those that came after the article's line was
// written, a minute or more after its arrival, in the same run or a later
// one. An article line with an answer still to come (q, or d) leaves its
// arrival awaiting; the answer's line pairs with it however late it
// comes. An answer line before its article line (a rejection is written
// at once, its article's line up to a minute later) waits orphanHold of
// log time for it. What it holds is bounded by the answers still awaited
// (at most maxAwaiting, the oldest given up first) and the answers of the
// last orphanHold.
type latePairs struct {
	since, until time.Time
	awaiting     map[answerKey]time.Time
	order        []answerKey // awaiting keys in arrival order; stale ones are skipped
	orphans      map[answerKey]lateOrphan
	orphanOrder  []answerKey
	latest       time.Time // the latest time of a line read
	ms, n        map[string]int64
	unpaired     map[string]int64
}

// Limits of the report's pairing of late answers: an answer line is
// given orphanHold of log time to meet its article's line (written at
// most pendingWait after the arrival, flushed a second later), and at
// most maxAwaiting arrivals wait for their answers.
const (
	orphanHold  = 2 * pendingWait
	maxAwaiting = 1 << 20
)

func newLatePairs(since, until time.Time) *latePairs {
	return &latePairs{since: since, until: until, awaiting: map[answerKey]time.Time{},
		orphans: map[answerKey]lateOrphan{}, ms: map[string]int64{}, n: map[string]int64{}, unpaired: map[string]int64{}}
}

func (lp *latePairs) inWindow(t time.Time) bool { return !t.Before(lp.since) && t.Before(lp.until) }

// line takes the next event of the log.
func (lp *latePairs) line(l ArticleLogLine) {
	if l.Time.After(lp.latest) {
		lp.latest = l.Time
		lp.expire(false)
	}
	peer := l.Peer()
	if peer == "" {
		return
	}
	k := answerKey{l.MessageID, peer}
	if l.Untimed {
		// An answer on the article's line: the run timed it (lat_ms) when
		// it is final; q and d leave the arrival awaiting.
		o, held := lp.orphans[k]
		if l.Verdict == "deferred" || l.Verdict == "queued" {
			if held {
				delete(lp.orphans, k)
				lp.pair(peer, l.Time, o.at)
				return
			}
			lp.await(answerKey{strings.Clone(k.id), k.peer}, l.Time)
			return
		}
		if held {
			delete(lp.orphans, k) // the rejection's own line
		}
		return
	}
	if l.Verdict == "deferred" {
		return
	}
	if arrived, ok := lp.awaiting[k]; ok {
		delete(lp.awaiting, k)
		lp.pair(peer, arrived, l.Time)
		return
	}
	k.id = strings.Clone(k.id)
	if _, ok := lp.orphans[k]; !ok {
		lp.orphanOrder = append(lp.orphanOrder, k)
	}
	lp.orphans[k] = lateOrphan{at: l.Time, rejected: l.Verdict == "rejected"}
}

// pair times one answer, in the window of the answer.
func (lp *latePairs) pair(peer string, arrived, answered time.Time) {
	if lp.inWindow(answered) {
		lp.ms[peer] += max(0, answered.Sub(arrived).Milliseconds())
		lp.n[peer]++
	}
}

// await records an arrival whose answer is still to come, giving up the
// oldest beyond maxAwaiting.
func (lp *latePairs) await(k answerKey, arrived time.Time) {
	lp.awaiting[k] = arrived
	lp.order = append(lp.order, k)
	if len(lp.order) > 2*len(lp.awaiting)+1024 {
		n := 0
		for _, k := range lp.order {
			if _, ok := lp.awaiting[k]; ok {
				lp.order[n] = k
				n++
			}
		}
		lp.order = lp.order[:n]
	}
	for len(lp.awaiting) > maxAwaiting {
		delete(lp.awaiting, lp.order[0])
		lp.order = lp.order[1:]
	}
}

// expire counts as unpaired the orphans held past orphanHold, or at the
// end (all) every one, but a rejection of the last orphanHold: its
// article's line may be still to come from a running relay.
func (lp *latePairs) expire(all bool) {
	n := 0
	for ; n < len(lp.orphanOrder); n++ {
		k := lp.orphanOrder[n]
		o, ok := lp.orphans[k]
		if !ok {
			continue
		}
		recent := lp.latest.Sub(o.at) < orphanHold
		if recent && !all {
			break
		}
		delete(lp.orphans, k)
		if recent && o.rejected {
			continue
		}
		if lp.inWindow(o.at) {
			lp.unpaired[k.peer]++
		}
	}
	lp.orphanOrder = lp.orphanOrder[n:]
}
