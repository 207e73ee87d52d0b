package newsget

// The quota: bytes read are counted against the daily and monthly limits
// of machine/download's Quota after every step; reaching one pauses the
// Scheduler and ends the run once requests in flight are done.

import (
	"fmt"
	"time"

	"github.com/newsflow/newsflow/machine/download"
)

// accountQuota adds the bytes read since the last count to the quota
// and, when one is reached, pauses the Scheduler: requests in flight
// finish, no new ones start. Called with mu held, after every step, so at
// most the requests already in flight pass a quota.
func (e *Engine) accountQuota(now time.Time) {
	got := e.received.Load()
	if got == e.quotaAt {
		return
	}
	e.quota.q.Add(now, got-e.quotaAt)
	e.quotaAt = got
	if e.quotaMsg != "" {
		return
	}
	if reached, kind := e.quota.q.Reached(now); reached {
		e.quotaMsg = e.quotaMessage(kind)
		e.log.Warn("quota reached: stopping", "quota", kind.String())
		e.sched.Pause(now, true)
		e.closing = true
		e.kickLoop()
	}
}

// saveQuota persists the quota counters when they changed.
func (e *Engine) saveQuota() {
	e.mu.Lock()
	e.accountQuota(e.opts.Now())
	st := e.quota.q.State()
	e.mu.Unlock()
	if st == e.quota.saved {
		return
	}
	if err := e.quota.saveState(st); err != nil {
		e.log.Error("quota state", "err", err)
	}
}

// quotaMessage says which quota stopped the download and when it resets.
func (e *Engine) quotaMessage(kind download.QuotaKind) string {
	now := e.opts.Now()
	day, period := e.quota.q.Used(now)
	limit, used := e.quota.q.Daily, day
	if kind == download.QuotaMonthly {
		limit, used = e.quota.q.Monthly, period
	}
	return fmt.Sprintf("%s quota of %s reached (%s used); downloading resumes after %s",
		kind, FormatBytes(limit), FormatBytes(used), e.quota.q.ResetAt(now, kind).Format("2006-01-02 15:04 MST"))
}

// FormatBytes writes a byte count for people: "1.5 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
