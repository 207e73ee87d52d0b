package newsfeed

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/runtime/newsfeed/peerconn"
)

// PeerStats is one peer's counters, the source of its stats line, its
// metrics and its status entry. The article counts add up:
//
//	Offered = Accepted + Refused + Rejected + Dropped + Missing + TooOld + Lost + Queued
//
// where Offered counts every copy the masterfeed gave the peer plus those
// found in backlog files at start, and Queued every copy not settled yet
// (memory queue, in flight, .B/.D files, replay file).
//
// Refused counts articles the peer already holds, Rejected those it
// refused for what they are. A 439 to TAKETHIS is both (INN answers a
// duplicate with it too), so it (or a 437) counts as refused when the
// relay offered the article to the peer before (queue.Entry.Resend): it
// was in flight on a connection that went down or at a stop, the peer
// deferred it, or it came from a journal a crash left behind; the mark
// survives backlog files and restarts. Any other 439 or 437 counts as
// rejected.
type PeerStats struct {
	Name     string `json:"name"`
	Offered  int64  `json:"offered"`
	Accepted int64  `json:"accepted"`
	Refused  int64  `json:"refused"`
	Rejected int64  `json:"rejected"`
	Dropped  int64  `json:"dropped"`
	Missing  int64  `json:"missing"`
	Queued   int64  `json:"queued"`
	// TooOld counts articles not offered because they arrived longer
	// than max_age before their turn; settled, apart from Missing.
	TooOld int64 `json:"too_old"`
	// DroppedBy splits Dropped since the start by reason: "backlog-bytes"
	// (over backlog_max_bytes), "backlog-age" (over backlog_max_age),
	// "defer-attempts" (max_defers), and I/O failures.
	DroppedBy map[string]int64 `json:"dropped_by,omitempty"`

	// Deferred counts "try later" answers (431/436); each such article is
	// retried from a .D file, so it is also in Queued until settled.
	Deferred int64 `json:"deferred"`
	// Resent counts copies recovered from journals after a crash: possible
	// duplicates at the peer.
	Resent int64 `json:"resent"`
	// LostFiles counts backlog files the queue's state named that were
	// gone at start (deleted under the relay).
	LostFiles int64 `json:"lost_files"`
	// Lost counts the acknowledged articles those files held (for a
	// replay file, those not yet sent at its last checkpoint; for a file
	// still taking lines when last listed, at least that many). They are
	// in Offered, as found at start, and settled here.
	Lost int64 `json:"lost_backlog_articles"`
	// Recovered counts the copies found in backlog files at start (Resent
	// and Lost included): the part of Offered a stop carried over from the
	// run before, which newsfeed report counts once.
	Recovered int64 `json:"recovered"`

	Memory         int64 `json:"memory"`           // in the memory queue
	InFlight       int64 `json:"in_flight"`        // sent, not answered
	BacklogFiles   int64 `json:"backlog_files"`    // .B and .D files
	BacklogArticle int64 `json:"backlog_articles"` // in .B, .D and .P files
	BacklogBytes   int64 `json:"backlog_bytes"`

	SkippedGroups int64 `json:"skipped_groups"` // not offered: patterns
	SkippedPath   int64 `json:"skipped_path"`   // not offered: pathname in Path
	SkippedSize   int64 `json:"skipped_size"`   // not offered: over max_size
	SkippedHash   int64 `json:"skipped_hash"`   // not offered: outside its hashfeed

	AcceptedBytes int64   `json:"accepted_bytes"`
	Seconds       float64 `json:"seconds"` // since the relay started
	Rate          float64 `json:"rate"`    // accepted articles per second over the last minute

	Paused      bool         `json:"paused,omitempty"` // newsfeed ctl pause
	ConnsUp     int          `json:"conns_up"`         // connections past the handshake, feeding or idle
	Connections []ConnStatus `json:"connections"`

	// Removed: a reload removed the peer; its queue is kept until the
	// stop, which writes it to backlog files (newsfeed ctl drop removes
	// them after a restart).
	Removed bool `json:"removed,omitempty"`
}

// ConnStatus is the state of one of a peer's connections. Error is set
// only while the connection is down because of it (waiting to reconnect,
// or reconnecting); once the connection feeds again the error is history,
// kept in LastErr with its time.
type ConnStatus struct {
	ID        int    `json:"id"`
	State     string `json:"state"` // starting, connecting, feeding, waiting, stopped
	Mode      string `json:"mode,omitempty"`
	Error     string `json:"error,omitempty"`
	LastErr   string `json:"last_error,omitempty"`
	LastErrAt string `json:"last_error_at,omitempty"` // RFC 3339
	Since     string `json:"since"`
	// RetryAt is when a waiting connection connects again, from its
	// backoff (RFC 3339, in milliseconds); ctl kick, or another
	// connection to the peer completing its handshake, may bring it
	// sooner.
	RetryAt string `json:"retry_at,omitempty"`
}

// retryAtLayout is RFC 3339 in milliseconds: a backoff starts at 250 ms.
const retryAtLayout = "2006-01-02T15:04:05.000Z07:00"

// ConnStatusOf is the status entry of a connection whose state is cs.
func ConnStatusOf(cs peerconn.Status) ConnStatus {
	st := ConnStatus{ID: cs.ID, State: cs.State, Mode: cs.Mode, LastErr: cs.LastErr, Since: cs.Since.UTC().Format(time.RFC3339)}
	if cs.LastErr != "" {
		st.LastErrAt = cs.LastErrAt.UTC().Format(time.RFC3339)
		if cs.State == "waiting" || cs.State == "connecting" {
			st.Error = cs.LastErr
		}
	}
	if cs.State == "waiting" && !cs.RetryAt.IsZero() {
		st.RetryAt = cs.RetryAt.UTC().Format(retryAtLayout)
	}
	return st
}

// Check verifies that the counts add up.
func (s PeerStats) Check() error {
	sum := s.Accepted + s.Refused + s.Rejected + s.Dropped + s.Missing + s.TooOld + s.Lost + s.Queued
	if s.Offered != sum {
		return fmt.Errorf("peer %s: offered %d != accepted %d + refused %d + rejected %d + dropped %d + missing %d + too old %d + lost %d + queued %d = %d",
			s.Name, s.Offered, s.Accepted, s.Refused, s.Rejected, s.Dropped, s.Missing, s.TooOld, s.Lost, s.Queued, sum)
	}
	return nil
}

// Line formats the stats line, innfeed style: name, then counters.
func (s PeerStats) Line() string {
	return fmt.Sprintf("%s seconds %.0f offered %d accepted %d refused %d rejected %d deferred %d dropped %d missing %d queued %d backlog %d/%dB rate %.1f/s",
		s.Name, s.Seconds, s.Offered, s.Accepted, s.Refused, s.Rejected, s.Deferred, s.Dropped, s.Missing,
		s.Queued, s.BacklogArticle, s.BacklogBytes, s.Rate)
}

// IngestStats counts the ingest side.
type IngestStats struct {
	Connections int64 `json:"connections"` // accepted since start
	Open        int64 `json:"open"`
	Accepted    int64 `json:"accepted"`
	Refused     int64 `json:"refused"` // not wanted (history), or stored by another connection first
	Deferred    int64 `json:"deferred"`
	Rejected    int64 `json:"rejected"`
	Denied      int64 `json:"denied"` // connections refused by allow

	// Limited counts connections refused (400) by max_connections or
	// max_connections_per_host; Held, times a connection stopped being
	// read because the buffered article bytes passed max_buffered_bytes;
	// TimedOut, connections closed for a stalled command or article, an
	// article slower than min_transfer_rate, or answers not read
	// (write_timeout). Buffered is the article bytes held now.
	Limited  int64 `json:"limited"`
	Held     int64 `json:"held"`
	TimedOut int64 `json:"timed_out"`
	Buffered int64 `json:"buffered_bytes"`

	// AuthFailed counts AUTHINFO logins refused for bad credentials,
	// AuthBlocked those refused because the address failed too often, and
	// GroupsRefused articles an [[incoming]] feeder may not send us.
	AuthFailed    int64 `json:"auth_failed"`
	AuthBlocked   int64 `json:"auth_blocked"`
	GroupsRefused int64 `json:"groups_refused"`

	// Checks and TakeThis count the CHECK commands and TAKETHIS articles
	// received (RFC 4644): how much of a feeder's traffic asks before it
	// sends.
	Checks   int64 `json:"checks"`
	TakeThis int64 `json:"takethis"`
	// CommitRounds counts the group commit's successful rounds,
	// CommitArticles the articles they made durable, and CommitSeconds
	// the time they took, from taking the batch to answering it: the
	// latency every answer waits for; CommitSyncSeconds is the part of it
	// spent in the spool's Sync (its fdatasync).
	CommitRounds      int64   `json:"commit_rounds"`
	CommitArticles    int64   `json:"commit_articles"`
	CommitSeconds     float64 `json:"commit_seconds"`
	CommitSyncSeconds float64 `json:"commit_sync_seconds"`
}

// Status is the relay's state for the status page and `newsfeed status`.
type Status struct {
	PathHost   string      `json:"pathhost"`
	Listen     string      `json:"listen"`
	Started    time.Time   `json:"started"`
	Accepting  bool        `json:"accepting"`
	NotReason  string      `json:"not_accepting_reason,omitempty"`
	SpoolBytes int64       `json:"spool_bytes"`
	History    int         `json:"history_entries"`
	Ingest     IngestStats `json:"ingest"`
	// IngestRate is the articles accepted per second over the last minute.
	IngestRate float64     `json:"ingest_rate"`
	Peers      []PeerStats `json:"peers"`

	// LostArticles counts every acknowledged article the spool lost,
	// whatever the cause: found at start (its data cut off, its segment
	// missing) or when read to be sent (CRC mismatch). Each was forgotten
	// by the history so that upstream may offer it again.
	LostArticles int64 `json:"lost_articles"`
}

// ingestStats returns the ingest counters now.
func (r *Relay) ingestStats() IngestStats {
	in := IngestStats{
		Connections: r.ingest.conns.Load(), Open: r.ingest.open.Load(),
		Accepted: r.ingest.accepted.Load(),
		Refused:  r.ingest.refused.Load(), Deferred: r.ingest.deferred.Load(), Rejected: r.ingest.rejected.Load(),
		Denied: r.ingest.denied.Load(), Limited: r.ingest.limited.Load(), Held: r.ingest.held.Load(),
		TimedOut: r.ingest.timedOut.Load(), Buffered: r.limits.buffered.Load(),
		AuthFailed: r.auth.failed.Load(), AuthBlocked: r.auth.blocked.Load(), GroupsRefused: r.auth.groups.Load(),
	}
	in.Checks, in.TakeThis = r.ingest.checks.Load(), r.ingest.takethis.Load()
	in.CommitRounds, in.CommitArticles, in.CommitSeconds, in.CommitSyncSeconds = r.com.counts()
	return in
}

// Status returns the relay's counters now.
func (r *Relay) Status() Status {
	now := r.now()
	st := Status{
		PathHost:   r.cfg.PathHost,
		Started:    r.started,
		Accepting:  r.accepting.Load(),
		NotReason:  r.notAccepting(),
		SpoolBytes: r.spool.Bytes(),
		History:    r.spool.History().Len(),
		Ingest:     r.ingestStats(),
	}
	st.IngestRate = r.rates.perSecond(now)
	st.LostArticles = r.lostArticles.Load()
	if a := r.Addr(); a != nil {
		st.Listen = a.String()
	}
	for _, p := range r.peerList() {
		st.Peers = append(st.Peers, p.stats(now))
	}
	// Peers a reload removed follow, while their queues are held: what
	// they hold is not lost from sight.
	r.mu.Lock()
	retired := slices.Collect(maps.Values(r.retired))
	r.mu.Unlock()
	slices.SortFunc(retired, func(a, b *peer) int { return cmp.Compare(a.cfg.Name, b.cfg.Name) })
	for _, p := range retired {
		s := p.stats(now)
		s.Removed = true
		st.Peers = append(st.Peers, s)
	}
	return st
}

// PeerStats returns one peer's counters; false if there is no such peer.
func (r *Relay) PeerStats(name string) (PeerStats, bool) {
	for _, p := range r.peerList() {
		if p.cfg.Name == name {
			return p.stats(r.now()), true
		}
	}
	return PeerStats{}, false
}

func (p *peer) stats(now time.Time) PeerStats {
	q := p.q.stats()
	s := PeerStats{
		Name:           p.cfg.Name,
		Offered:        q.Offered + q.Recovered,
		Accepted:       q.Accepted,
		Refused:        q.Refused,
		Rejected:       q.Rejected,
		Dropped:        q.Dropped,
		Missing:        q.Missing - p.tooOldCount.Load(),
		TooOld:         p.tooOldCount.Load(),
		Lost:           q.Lost,
		Queued:         q.Queued + q.InFlight + q.Backlog + q.Deferred + q.Replay,
		Deferred:       p.deferrals.Load(),
		Resent:         q.Resent,
		Recovered:      q.Recovered,
		LostFiles:      int64(p.q.lostFiles()),
		Memory:         q.Queued,
		InFlight:       q.InFlight,
		BacklogFiles:   int64(q.BacklogFiles),
		BacklogArticle: q.Backlog + q.Deferred + q.Replay,
		BacklogBytes:   q.BacklogBytes,
		SkippedGroups:  p.skips.Groups.Load(),
		SkippedPath:    p.skips.Path.Load(),
		SkippedSize:    p.skips.Size.Load(),
		SkippedHash:    p.skips.Hash.Load(),
		AcceptedBytes:  p.acceptedBytes.Load(),
		Seconds:        now.Sub(p.r.started).Seconds(),
		ConnsUp:        p.q.connsUp(),
		Paused:         p.q.isPaused(),
	}
	s.Rate = p.rates.perSecond(now)
	for reason, n := range p.q.drops() {
		if s.DroppedBy == nil {
			s.DroppedBy = map[string]int64{}
		}
		s.DroppedBy[string(reason)] = n
	}
	p.mu.Lock()
	for _, c := range p.conns {
		s.Connections = append(s.Connections, ConnStatusOf(c.pc.Status()))
	}
	p.mu.Unlock()
	return s
}

// statsSnap is what the previous periodic line reported, for rates.
type statsSnap struct {
	at       time.Time
	accepted int64
	bytes    int64
}

// statsLoop logs the stats lines every stats_interval until ctx ends.
func (r *Relay) statsLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(r.cfg.StatsInterval.D())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.logStats(false)
		}
	}
}

// logStats logs one line per peer, and one for ingest.
func (r *Relay) logStats(final bool) {
	now := r.now()
	what := "stats"
	if final {
		what = "final stats"
	}
	in := r.ingestStats()
	r.log.Info(what+" (ingest)", "connections", in.Connections, "accepted", in.Accepted,
		"refused", in.Refused, "deferred", in.Deferred, "rejected", in.Rejected, "denied", in.Denied,
		"limited", in.Limited, "held", in.Held, "timed_out", in.TimedOut, "lost_articles", r.lostArticles.Load(),
		"checks", in.Checks, "takethis", in.TakeThis, "commit_rounds", in.CommitRounds,
		"articles_per_round", fmt.Sprintf("%.1f", ratio(float64(in.CommitArticles), float64(in.CommitRounds))),
		"round_ms", fmt.Sprintf("%.3f", ratio(1000*in.CommitSeconds, float64(in.CommitRounds))),
		"sync_ms", fmt.Sprintf("%.3f", ratio(1000*in.CommitSyncSeconds, float64(in.CommitRounds))))
	r.logStatsRecords(now)
	for _, p := range r.peerList() {
		s := p.stats(now)
		rate, mbs := 0.0, 0.0
		if !p.last.at.IsZero() {
			if sec := now.Sub(p.last.at).Seconds(); sec > 0 {
				rate = float64(s.Accepted-p.last.accepted) / sec
				mbs = float64(s.AcceptedBytes-p.last.bytes) / sec / 1e6
			}
		} else if s.Seconds > 0 {
			rate = float64(s.Accepted) / s.Seconds
			mbs = float64(s.AcceptedBytes) / s.Seconds / 1e6
		}
		p.last = statsSnap{at: now, accepted: s.Accepted, bytes: s.AcceptedBytes}
		r.log.Info(what, "peer", s.Name, "offered", s.Offered, "accepted", s.Accepted, "refused", s.Refused,
			"rejected", s.Rejected, "deferred", s.Deferred, "dropped", s.Dropped, "missing", s.Missing, "too_old", s.TooOld,
			"queued", s.Queued, "backlog", s.BacklogArticle, "backlog_bytes", s.BacklogBytes,
			"rate", fmt.Sprintf("%.1f/s", rate), "mbytes_per_s", fmt.Sprintf("%.2f", mbs), "lost_files", s.LostFiles, "lost_backlog_articles", s.Lost)
	}
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// StatsLines returns every peer's stats line, one per line.
func (r *Relay) StatsLines() string {
	var b strings.Builder
	for _, s := range r.Status().Peers {
		b.WriteString(s.Line())
		b.WriteByte('\n')
	}
	return b.String()
}

// drops is the queue's dropped entries by reason since the start.
func (p *peerQueue) drops() map[queue.Reason]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.q.Drops()
}

// logStatsRecords writes the counters since the start to the article log,
// one stats line per peer and one for the relay, each naming the run (its
// start), so that `newsfeed report` can add up runs across restarts.
func (r *Relay) logStatsRecords(now time.Time) {
	if r.alog == nil {
		return
	}
	run := strconv.FormatInt(r.started.UnixMilli(), 10)
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	st := r.Status()
	for _, s := range st.Peers {
		ms, cnt := r.alog.latency(s.Name)
		r.alog.statsLine(now, "peer", "name", s.Name, "run", run, "offered", n(s.Offered), "accepted", n(s.Accepted),
			"refused", n(s.Refused), "rejected", n(s.Rejected), "deferred", n(s.Deferred), "dropped", n(s.Dropped),
			"missing", n(s.Missing), "too_old", n(s.TooOld), "lost", n(s.Lost), "bytes", n(s.AcceptedBytes),
			"queued", n(s.Queued), "backlog", n(s.BacklogArticle), "lat_ms", n(ms), "lat_n", n(cnt), "recovered", n(s.Recovered))
	}
	in := st.Ingest
	r.alog.statsLine(now, "relay", "run", run, "lost", n(st.LostArticles), "accepted", n(in.Accepted),
		"refused", n(in.Refused), "rejected", n(in.Rejected), "deferred", n(in.Deferred))
}
