package newsfeed

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/spoolfs"
)

// Trace answers "where did <id> go?" (`newsfeed trace`), from three
// sources:
//
//   - the history (a running relay's, through the admin listener): stored,
//     rejected or unknown, its arrival time and size;
//   - the article log, newest file first: when it came, from whom, its
//     verdict and the peers it was queued for, and each peer's answer;
//   - the peers' queue files: a copy that is not answered yet waits in a
//     .B (backlog) or .D (deferred) file, the replay file, or, when it is
//     only in a journal, in memory or in flight.

// TraceEvent is one article log line about the article.
type TraceEvent struct {
	Time time.Time `json:"time"`
	// Untimed: the log records the answer but not when it came; Time is
	// the article's arrival.
	Untimed bool              `json:"untimed,omitempty"`
	Who     string            `json:"who"` // ingest, inject, or the peer's name
	Verdict string            `json:"verdict"`
	Fields  map[string]string `json:"fields,omitempty"`
}

// PeerTrace is what became of the article at one peer.
type PeerTrace struct {
	Name    string       `json:"name"`
	Queued  bool         `json:"queued"` // the arrival line names the peer
	Answers []TraceEvent `json:"answers,omitempty"`
	// Waiting says where an unanswered copy is: "backlog file X",
	// "deferred file X (written T)", "replay file X", "memory or in
	// flight (journal X)"; "" when no queue file holds it.
	Waiting string `json:"waiting,omitempty"`
}

// TraceResult is everything known about one message-id.
type TraceResult struct {
	MessageID string `json:"message_id"`
	// History is "stored", "pending", "rejected", "unknown", or "not
	// consulted" (no running relay).
	History string       `json:"history"`
	Arrived time.Time    `json:"arrived,omitzero"`
	Size    int64        `json:"size,omitempty"`
	Log     string       `json:"article_log,omitempty"` // the log read; "" when article_log is not set
	Events  []TraceEvent `json:"events,omitempty"`      // arrival lines (ingest, inject)
	Peers   []PeerTrace  `json:"peers"`
}

// TraceFiles traces id from the files alone: the article log and the
// peers' queue files of cfg. It works whether or not a relay runs.
func TraceFiles(cfg *Config, id string) (TraceResult, error) {
	return traceFiles(cfg, id, nil)
}

// traceFiles is TraceFiles with extra events (a running relay's, not in
// the file yet).
func traceFiles(cfg *Config, id string, extra []ArticleLogLine) (TraceResult, error) {
	res := TraceResult{MessageID: id, History: "not consulted"}
	byPeer := map[string]*PeerTrace{}
	for _, pc := range cfg.Peers {
		res.Peers = append(res.Peers, PeerTrace{Name: pc.Name})
	}
	for i := range res.Peers {
		byPeer[res.Peers[i].Name] = &res.Peers[i]
	}
	if path := cfg.ArticleLogPath(); path != "" {
		res.Log = path
		lines, err := scanArticleLog(path, cfg.ArticleLogKeep, id)
		if err != nil {
			return res, err
		}
		lines = append(lines, extra...)
		slices.SortStableFunc(lines, func(a, b ArticleLogLine) int { return a.Time.Compare(b.Time) })
		for _, l := range lines {
			ev := TraceEvent{Time: l.Time, Untimed: l.Untimed, Who: l.Who, Verdict: l.Verdict, Fields: l.Fields}
			name := l.Peer()
			if name == "" {
				res.Events = append(res.Events, ev)
				for _, p := range strings.Split(l.Fields["peers"], ",") {
					if pt := byPeer[p]; pt != nil {
						pt.Queued = true
					}
				}
				continue
			}
			ev.Who = name
			if pt := byPeer[name]; pt != nil {
				if l.Verdict == "queued" {
					pt.Queued = true // not answered when the line was written
					continue
				}
				pt.Answers = append(pt.Answers, ev)
			}
		}
	}
	dir := filepath.Join(cfg.Spool, "backlog")
	for i := range res.Peers {
		w, err := waitingIn(dir, res.Peers[i].Name, id)
		if err != nil {
			return res, err
		}
		if n := len(res.Peers[i].Answers); n > 0 && res.Peers[i].Answers[n-1].Verdict != "deferred" {
			w = "" // answered for good: a line left in a file being replayed is settled
		}
		res.Peers[i].Waiting = w
	}
	return res, nil
}

// Trace traces id on the running relay: TraceFiles plus the history.
func (r *Relay) Trace(id string) (TraceResult, error) {
	r.alog.flush()
	cfg := *r.cfg
	cfg.Peers = nil
	for _, p := range r.peerList() {
		cfg.Peers = append(cfg.Peers, *p.cfg)
	}
	res, err := traceFiles(&cfg, id, r.alog.pendingEvents(id))
	if err != nil {
		return res, err
	}
	res.History = "unknown"
	if e, ok := r.spool.History().Lookup(id); ok {
		switch e.Status {
		case spoolfs.Stored:
			res.History = "stored"
		case spoolfs.Pending:
			res.History = "pending"
		case spoolfs.Rejected:
			res.History = "rejected"
		}
		res.Arrived = e.Arrived
		res.Size = int64(e.Token.Len)
	}
	return res, nil
}

// scanArticleLog returns the lines about id in the log's files, oldest
// first.
func scanArticleLog(path string, keep int, id string) ([]ArticleLogLine, error) {
	var out []ArticleLogLine
	key := []byte(" " + id + " ")
	for _, name := range articleLogFiles(path, keep) {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var rd ArticleLogReader
		for sc.Scan() {
			if !bytes.HasPrefix(sc.Bytes(), []byte("* ")) && !bytes.Contains(sc.Bytes(), key) {
				continue
			}
			evs, _ := rd.Line(sc.Text())
			for _, l := range evs {
				if l.MessageID == id {
					out = append(out, l)
				}
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("trace: %s: %w", name, err)
		}
	}
	slices.SortStableFunc(out, func(a, b ArticleLogLine) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// waitingIn looks for id in peer's queue files in dir and says where it
// waits; "" when none holds it.
func waitingIn(dir, peer, id string) (string, error) {
	des, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("trace: %w", err)
	}
	var found []string
	for _, de := range des {
		name := de.Name()
		var where string
		if k, _, ok := queue.ParseFileName(peer, name); ok {
			where = "backlog file " + name
			if k == queue.KindDeferred {
				where = "deferred file " + name
				if fi, err := de.Info(); err == nil {
					where += " (written " + fi.ModTime().UTC().Format(time.RFC3339) + ")"
				}
			}
		} else if name == queue.ReplayName(peer) {
			where = "replay file " + name
		} else if _, ok := queue.ParseJournalName(peer, name); ok {
			where = "memory or in flight (journal " + name + ")"
		} else {
			continue
		}
		has, err := fileHasID(filepath.Join(dir, name), id)
		if err != nil {
			return "", err
		}
		if has {
			found = append(found, where)
		}
	}
	return strings.Join(found, "; "), nil
}

// fileHasID reports whether a queue file has a line for id.
func fileHasID(name, id string) (bool, error) {
	f, err := os.Open(name)
	if os.IsNotExist(err) {
		return false, nil // settled meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(id)) {
			continue
		}
		if e, err := queue.ParseLine(append(sc.Bytes(), '\n')); err == nil && e.MessageID == id {
			return true, nil
		}
	}
	return false, sc.Err()
}
