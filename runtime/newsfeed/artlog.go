package newsfeed

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The article log (article_log = "FILE"), like INN's news log: one line
// per article, written once every peer it was queued for has answered,
// with the answers on it. `newsfeed trace` reads it to say where an
// article went, `newsfeed report` to sum up a day.
//
//	* 2026-11-24 peers=inn1,inn2,sink
//	01:06:45.123 <id@host> news1 + 2013 +=-
//	01:06:45.130 <id2@host> 192.0.2.7 - reason="Bad Path"
//	01:06:45.131 <id3@host> news1 =
//	01:07:15.200 <id4@host> news1 + 512 +q
//	02:10:00.002 <id4@host> >inn2 + code=239
//	01:07:45.000 * stats peer=inn1 run=1764363600 offered=10 accepted=9 ...
//
// A header line ("*", the UTC date, the peer table) starts each file and
// comes again when the date or the table changes; the other lines start
// with the time of day (UTC, milliseconds). An article line gives the
// time the article arrived, its message-id, the feeder (its [[incoming]]
// name, else its address; "inject" for newsfeed inject with no relay
// running, the address it connects from with one), its verdict
// (+ stored, = refused, - rejected, d deferred), and for a stored article
// its size and one answer per peer of the table: + accepted, = refused,
// - rejected, d deferred (still queued), m missing, o too old, q not yet
// answered, . not queued for it (trailing dots are left out). An article
// not answered by every peer within a minute is written with q for the
// rest, and each later answer gets a line of its own (">PEER VERDICT").
// A peer's rejection also gets such a line, with its code and reason.
// Stats lines ("* stats") carry every peer's counters since the start
// of the run (run = its start, Unix milliseconds) at each stats_interval and
// at the stop, so that a report spans restarts. Values with a space or a
// quote are quoted (strconv.Quote).
//
// Lines go through a buffer flushed every second and at close, never
// fsynced: the log records, it does not carry, articles, and it stays off
// the group commit's path. The file is rotated when it passes
// article_log_max: FILE becomes FILE.1, FILE.1 becomes FILE.2, and so on
// up to article_log_keep old files.

// Defaults of the article log.
const (
	DefaultArticleLogMax  = 100 << 20
	DefaultArticleLogKeep = 5
)

func (c *Config) articleLogDefaults() {
	if !c.Has("article_log_max") {
		c.ArticleLogMax = DefaultArticleLogMax
	}
	if !c.Has("article_log_keep") {
		c.ArticleLogKeep = DefaultArticleLogKeep
	}
}

func (c *Config) checkArticleLog() error {
	if c.ArticleLogKeep < 0 {
		return c.errAt("article_log_keep", "must not be negative")
	}
	if c.ArticleLog != "" && c.ArticleLogMax > 0 && c.ArticleLogMax < 4096 {
		return c.errAt("article_log_max", "%d octets is too small for a log (at least 4K, or 0 for no rotation)", c.ArticleLogMax)
	}
	return nil
}

// ArticleLogPath is the article log's file ("" when there is none).
func (c *Config) ArticleLogPath() string {
	if c.ArticleLog == "" || filepath.IsAbs(c.ArticleLog) {
		return c.ArticleLog
	}
	return filepath.Join(c.Spool, c.ArticleLog)
}

// articleLog writes the article log. Articles wait in pending until every
// peer they were queued for has answered, or pendingWait has passed.
type articleLog struct {
	path string
	max  int64
	keep int
	log  *slog.Logger
	now  func() time.Time // the relay's clock, for pendingWait

	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	size int64
	buf  []byte
	err  error // the first write error, logged once

	day     string         // the date of the last header; "" writes one first
	peers   []string       // the peer table of the headers
	pos     map[string]int // a peer's place in peers
	pending map[string]*logPending
	fifo    []logRef // pending articles in arrival order
	early   map[string][]earlyAnswer
	efifo   []string // ids with early answers, in order
	lat     map[string]*latency

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// logPending is an article waiting for its peers' answers.
type logPending struct {
	arrived time.Time
	from    string
	size    string
	ans     []byte // one answer character per place in the peer table
	left    int    // answers still to come
}

type logRef struct {
	id string
	p  *logPending
}

// earlyAnswer is an answer that came before its article's arrival was
// recorded: a peer may answer before the commit round that stored the
// article is logged. It waits earlyWait for the arrival.
type earlyAnswer struct {
	at                          time.Time
	peer, verdict, code, reason string
}

// latency sums the time from arrival to a peer's final answer.
type latency struct{ ms, n int64 }

// Limits of the pending articles: one is written after pendingWait even
// when answers are missing, and the oldest are written first beyond
// maxPending.
const (
	pendingWait = time.Minute
	maxPending  = 200000
	earlyWait   = 2 * time.Second
)

// openArticleLog opens (appends to) the log at path and starts its
// once-a-second flush.
func openArticleLog(path string, max int64, keep int, log *slog.Logger) (*articleLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("article log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("article log: %w", err)
	}
	a := &articleLog{path: path, max: max, keep: keep, log: log, now: time.Now, f: f, w: bufio.NewWriterSize(f, 64<<10),
		size: st.Size(), pos: map[string]int{}, pending: map[string]*logPending{}, lat: map[string]*latency{},
		early: map[string][]earlyAnswer{},
		stop:  make(chan struct{}), done: make(chan struct{})}
	go a.flushLoop()
	return a, nil
}

// add records an event (any goroutine): an arrival (who "ingest" or
// "inject", with from, size and peers, the comma-separated peers it is
// queued for), or a peer's answer (who "peer=NAME", with code and, for a
// rejection, reason).
func (a *articleLog) add(now time.Time, id, who, verdict string, kv ...string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return
	}
	field := func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
	if peer, ok := strings.CutPrefix(who, "peer="); ok {
		a.answerLocked(now, id, peer, verdict, field("code"), field("reason"))
		return
	}
	from := field("from")
	if who == "inject" || from == "" {
		from = who
	}
	if verdict != "accepted" {
		a.writeLocked(now, appendEventLine(a.buf[:0], now, id, from, verdictChar(verdict), "reason", field("reason")))
		return
	}
	p := &logPending{arrived: now, from: from, size: field("size")}
	if peers := field("peers"); peers != "" {
		for _, name := range strings.Split(peers, ",") {
			i, ok := a.pos[name]
			if !ok {
				i = len(a.peers)
				a.peers = append(a.peers, name)
				a.pos[name] = i
				a.day = "" // a new header with the new table
			}
			for len(p.ans) <= i {
				p.ans = append(p.ans, '.')
			}
			if p.ans[i] == '.' {
				p.ans[i] = 'q'
				p.left++
			}
		}
	}
	if p.left == 0 {
		a.writeArticleLocked(id, p)
		return
	}
	a.pending[id] = p
	a.fifo = append(a.fifo, logRef{id, p})
	if ea, ok := a.early[id]; ok {
		delete(a.early, id)
		for _, e := range ea {
			a.answerLocked(e.at, id, e.peer, e.verdict, e.code, e.reason)
		}
	}
	if len(a.pending) > maxPending {
		a.writePendingLocked(time.Time{}, maxPending)
	}
}

// answerLocked puts a peer's answer on its article's line, or writes it
// on a line of its own when the article's line is written already.
func (a *articleLog) answerLocked(now time.Time, id, peer, verdict, code, reason string) {
	a.answerAt(now, id, peer, verdict, code, reason, false)
}

// answerAt records an answer; early is set when the answer is written out
// rather than held for its article's arrival.
func (a *articleLog) answerAt(now time.Time, id, peer, verdict, code, reason string, early bool) {
	c := verdictChar(verdict)
	p := a.pending[id]
	if p == nil && !early && len(a.early) < maxPending {
		if _, ok := a.early[id]; !ok {
			a.efifo = append(a.efifo, id)
		}
		a.early[id] = append(a.early[id], earlyAnswer{now, peer, verdict, code, reason})
		return
	}
	if verdict == "rejected" {
		a.writeLocked(now, appendEventLine(a.buf[:0], now, id, ">"+peer, c, "code", code, "reason", reason))
	}
	i, known := a.pos[peer]
	if p == nil || !known || i >= len(p.ans) || (p.ans[i] != 'q' && p.ans[i] != 'd') {
		if verdict != "rejected" {
			a.writeLocked(now, appendEventLine(a.buf[:0], now, id, ">"+peer, c, "code", code))
		}
		return
	}
	p.ans[i] = c
	if verdict == "deferred" {
		return
	}
	l := a.lat[peer]
	if l == nil {
		l = &latency{}
		a.lat[peer] = l
	}
	l.ms += max(0, now.Sub(p.arrived).Milliseconds())
	l.n++
	if p.left--; p.left == 0 {
		delete(a.pending, id)
		a.writeArticleLocked(id, p)
	}
}

// writePendingLocked writes the articles that arrived before cutoff, and
// the oldest beyond keep, with the answers they have.
func (a *articleLog) writePendingLocked(cutoff time.Time, keep int) {
	n := 0
	for ; n < len(a.fifo); n++ {
		r := a.fifo[n]
		if a.pending[r.id] != r.p {
			continue // written already
		}
		if !r.p.arrived.Before(cutoff) && len(a.pending) <= keep {
			break
		}
		delete(a.pending, r.id)
		a.writeArticleLocked(r.id, r.p)
	}
	a.fifo = a.fifo[:copy(a.fifo, a.fifo[n:])]
}

// writeEarlyLocked writes, each on a line of its own, the answers whose
// article's arrival has not come within earlyWait of the first (an
// article of an earlier run, fed from the backlog), or all of them.
func (a *articleLog) writeEarlyLocked(now time.Time, all bool) {
	n := 0
	for ; n < len(a.efifo); n++ {
		id := a.efifo[n]
		ea, ok := a.early[id]
		if !ok {
			continue // its arrival came
		}
		if !all && now.Sub(ea[0].at) < earlyWait {
			break
		}
		delete(a.early, id)
		for _, e := range ea {
			a.answerAt(e.at, id, e.peer, e.verdict, e.code, e.reason, true)
		}
	}
	a.efifo = a.efifo[:copy(a.efifo, a.efifo[n:])]
}

func (a *articleLog) writeArticleLocked(id string, p *logPending) {
	a.writeLocked(p.arrived, appendArticleLine(a.buf[:0], p.arrived, id, p.from, p.size, p.ans))
}

// statsLine writes a stats line: kind "peer" or "relay", then counters.
func (a *articleLog) statsLine(now time.Time, kind string, kv ...string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f != nil {
		a.writeLocked(now, appendEventLine(a.buf[:0], now, "*", "stats", kind, kv...))
	}
}

// latency returns the sum of a peer's answer times and their number.
func (a *articleLog) latency(peer string) (ms, n int64) {
	if a == nil {
		return 0, 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.lat[peer]; l != nil {
		return l.ms, l.n
	}
	return 0, 0
}

// pendingEvents returns the events of id while its line waits for
// answers.
func (a *articleLog) pendingEvents(id string) []ArticleLogLine {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pending[id]
	if p == nil {
		return nil
	}
	day := p.arrived.UTC().Truncate(24 * time.Hour)
	rd := ArticleLogReader{day: day, dayOK: true, peers: a.peers}
	evs, _ := rd.Line(string(appendArticleLine(nil, p.arrived, id, p.from, p.size, p.ans)))
	return evs
}

// writeLocked writes one line, after a header when the line's date or
// the peer table differs from the last header's, and rotates past max.
func (a *articleLog) writeLocked(at time.Time, line []byte) {
	a.buf = line[:0]
	if d := at.UTC().Format("2006-01-02"); d != a.day {
		a.day = d
		hdr := appendHeader(nil, d, a.peers)
		n, err := a.w.Write(hdr)
		a.size += int64(n)
		a.failed(err)
	}
	n, err := a.w.Write(line)
	a.size += int64(n)
	a.failed(err)
	if a.max > 0 && a.size >= a.max {
		a.failed(a.rotateLocked())
	}
}

func (a *articleLog) failed(err error) {
	if err != nil && a.err == nil {
		a.err = err
		a.log.Error("article log: write failed; lines are being lost", "file", a.path, "err", err)
	}
}

// rotateLocked moves FILE to FILE.1 (FILE.1 to FILE.2, ...; the oldest
// beyond keep is removed) and starts a new FILE.
func (a *articleLog) rotateLocked() error {
	if err := a.w.Flush(); err != nil {
		return err
	}
	a.f.Close()
	a.f = nil
	if a.keep <= 0 {
		os.Remove(a.path)
	} else {
		os.Remove(fmt.Sprintf("%s.%d", a.path, a.keep))
		for i := a.keep - 1; i >= 1; i-- {
			os.Rename(fmt.Sprintf("%s.%d", a.path, i), fmt.Sprintf("%s.%d", a.path, i+1))
		}
		if err := os.Rename(a.path, a.path+".1"); err != nil {
			return fmt.Errorf("article log: rotate: %w", err)
		}
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("article log: rotate: %w", err)
	}
	a.f, a.size, a.day = f, 0, ""
	a.w.Reset(f)
	return nil
}

// reopen writes what is buffered and opens the file by its name again,
// for a logrotate that moved it.
func (a *articleLog) reopen() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return a.err
	}
	if err := a.w.Flush(); err != nil {
		return err
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("article log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("article log: %w", err)
	}
	a.f.Close()
	a.f, a.size, a.day = f, st.Size(), ""
	a.w.Reset(f)
	return nil
}

func (a *articleLog) flushLoop() {
	defer close(a.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.mu.Lock()
			if a.f != nil {
				now := a.now()
				a.writeEarlyLocked(now, false)
				a.writePendingLocked(now.Add(-pendingWait), maxPending)
			}
			a.mu.Unlock()
			a.flush()
		}
	}
}

// flush writes the buffered lines to the file (not fsynced).
func (a *articleLog) flush() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f != nil {
		a.failed(a.w.Flush())
	}
}

// close flushes and closes the log.
func (a *articleLog) close() error {
	if a == nil {
		return nil
	}
	a.stopOnce.Do(func() { close(a.stop) })
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return a.err
	}
	a.writeEarlyLocked(time.Time{}, true)
	a.writePendingLocked(time.Time{}, 0)
	err := errors.Join(a.w.Flush(), a.f.Close())
	a.f = nil
	return err
}

// articleLogFiles lists the log's files, newest first: FILE, FILE.1, ...
// (those that exist).
func articleLogFiles(path string, keep int) []string {
	var out []string
	for i := 0; i <= max(keep, 0)+1; i++ {
		name := path
		if i > 0 {
			name = fmt.Sprintf("%s.%d", path, i)
		}
		if _, err := os.Stat(name); err == nil {
			out = append(out, name)
		}
	}
	return out
}
