package newsfeed

import (
	"context"
	"strconv"
	"time"

	"github.com/newsflow/newsflow/machine/ingest"
)

// Ingest connections are logged at info when they open and when they
// close, the close line with what the connection did and why it ended, as
// INN's innd logs a feeder's connection. Articles are counted under one
// vocabulary everywhere (logs, stats, /status, inject's summary):
//
//	accepted  stored and acknowledged (239/235)
//	refused   not wanted: the history has it (438/435), or another
//	          connection stored it first
//	rejected  refused for what it is (439/437): invalid, too large, a loop
//	deferred  "try later" (431/436): in transit elsewhere, or disk full

// connCounts are one upstream connection's counts, owned by its driver's
// goroutine.
type connCounts struct {
	accepted, refused, rejected, deferred int64
	reason                                string // the machine's Closed reason, or ours
}

// count adds a store result.
func (n *connCounts) count(res ingest.Result) {
	switch res.Outcome {
	case ingest.StoreAccepted:
		n.accepted++
	case ingest.StoreDuplicate:
		n.refused++
	case ingest.StoreRejected:
		n.rejected++
	default:
		n.deferred++
	}
}

// verdictOf names a store outcome in the vocabulary above.
func verdictOf(o ingest.Outcome) string {
	switch o {
	case ingest.StoreAccepted:
		return "accepted"
	case ingest.StoreDuplicate:
		return "refused"
	case ingest.StoreRejected:
		return "rejected"
	}
	return "deferred"
}

// from names the feeder in the article log and the report: its
// [[incoming]] name, else its address (without the port), with the user
// it authenticated as (AUTHINFO) in front when it did, "user@address".
func (ic *inConn) from() string {
	if ic.feeder != nil {
		return ic.feeder.cfg.Name
	}
	addr := ic.remote
	if ic.addr.IsValid() {
		addr = ic.addr.Unmap().WithZone("").String()
	}
	if ic.user != "" {
		return ic.user + "@" + addr
	}
	return addr
}

func (r *Relay) logConnOpened(ic *inConn) {
	r.log.Info("ingest connection opened", "remote", ic.remote)
}

func (r *Relay) logConnClosed(ctx context.Context, ic *inConn, err error) {
	reason := ic.n.reason
	switch {
	case reason != "":
	case ctx.Err() != nil:
		reason = "shutting down"
	case err != nil:
		reason = err.Error()
	default:
		reason = "closed by the feeder"
	}
	args := []any{"remote", ic.remote, "accepted", ic.n.accepted, "refused", ic.n.refused,
		"rejected", ic.n.rejected, "deferred", ic.n.deferred, "reason", reason}
	if ic.user != "" {
		args = append(args, "user", ic.user)
	}
	r.log.Info("ingest connection closed", args...)
}

// logArrivals writes the article log's arrival lines for a committed batch
// and counts the ingest rate.
func (r *Relay) logArrivals(now time.Time, batch []pendingArt) {
	r.rates.add(now, int64(len(batch)))
	if r.alog == nil {
		return
	}
	var names []byte
	for _, it := range batch {
		names = names[:0]
		for i, p := range it.peers {
			if i > 0 {
				names = append(names, ',')
			}
			names = append(names, p.cfg.Name...)
		}
		who, from := "inject", "inject"
		if it.ic != nil {
			who, from = "ingest", it.ic.from()
		}
		r.alog.add(now, it.entry.MessageID, who, "accepted", "from", from,
			"size", strconv.FormatInt(it.entry.Size, 10), "peers", string(names))
	}
}
