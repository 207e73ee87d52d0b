package download

// Theory of operation
//
// Quota keeps the daily and monthly download quotas: bytes counted per local
// calendar day and per monthly period, the period starting on QuotaDay of
// each month. Days and months are those of the wall clock in Loc, so a day is
// 23 or 25 hours long across a DST change, and midnight is midnight.
//
// The state is two counters, each labelled with the local date it belongs
// to ("2025-03-14" for the day, the period's first day for the month).
// Add and Reached look at now's labels: a counter whose label is older
// counts as zero (the roll-over), so nothing happens at midnight and no
// timer is needed. A label newer than now's (the clock or the time zone
// went back) keeps counting: a quota is never reset by a clock going back.
//
// QuotaDay beyond the length of a month (29-31) means that month's last
// day, so a period always starts in every month.
//
// The state is plain JSON (QuotaState) so that the runtime persists it
// across runs; Restore validates what it reads.

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// dateLayout labels the counters.
const dateLayout = "2006-01-02"

// QuotaKind says which quota is meant.
type QuotaKind uint8

// Quotas.
const (
	QuotaNone    QuotaKind = iota // no quota is reached
	QuotaDaily                    // the daily quota
	QuotaMonthly                  // the monthly quota
)

var quotaNames = [...]string{"none", "daily", "monthly"}

// String returns "none", "daily" or "monthly".
func (k QuotaKind) String() string {
	if int(k) < len(quotaNames) {
		return quotaNames[k]
	}
	return fmt.Sprintf("quota(%d)", uint8(k))
}

// Quota counts downloaded bytes against a daily and a monthly quota. Set
// the exported fields; the zero value has no quota and counts in UTC.
type Quota struct {
	Daily    int64          // bytes per day; 0 = unlimited
	Monthly  int64          // bytes per monthly period; 0 = unlimited
	QuotaDay int            // day of the month a period starts, 1-31; 0 means 1
	Loc      *time.Location // the time zone days are counted in; nil = UTC

	st QuotaState
}

// QuotaState is what a Quota has counted, as persisted between runs.
type QuotaState struct {
	Day         string `json:"day"`          // local date DayBytes belong to, "2006-01-02"; "" = nothing counted
	DayBytes    int64  `json:"day_bytes"`    // bytes on that day
	Period      string `json:"period_start"` // first local date of the period PeriodBytes belong to
	PeriodBytes int64  `json:"period_bytes"` // bytes in that period
}

// ParseQuotaState reads a persisted state and validates it: dates in
// "2006-01-02" form (or empty with zero bytes), byte counts not negative.
func ParseQuotaState(data []byte) (QuotaState, error) {
	var s QuotaState
	if err := json.Unmarshal(data, &s); err != nil {
		return QuotaState{}, fmt.Errorf("download: quota state: %w", err)
	}
	if err := s.validate(); err != nil {
		return QuotaState{}, err
	}
	return s, nil
}

func (s QuotaState) validate() error {
	for _, c := range []struct {
		name, date string
		n          int64
	}{{"day", s.Day, s.DayBytes}, {"period_start", s.Period, s.PeriodBytes}} {
		if c.n < 0 {
			return fmt.Errorf("download: quota state: %s has negative bytes %d", c.name, c.n)
		}
		if c.date == "" {
			if c.n != 0 {
				return fmt.Errorf("download: quota state: %s bytes %d without a date", c.name, c.n)
			}
			continue
		}
		t, err := time.Parse(dateLayout, c.date)
		if err != nil || t.Format(dateLayout) != c.date {
			return fmt.Errorf("download: quota state: %s %q is not a date like 2006-01-02", c.name, c.date)
		}
	}
	return nil
}

// State returns the counters, for persisting (json.Marshal it).
func (q *Quota) State() QuotaState { return q.st }

// Restore sets the counters from a persisted state.
func (q *Quota) Restore(s QuotaState) error {
	if err := s.validate(); err != nil {
		return err
	}
	q.st = s
	return nil
}

func (q *Quota) loc() *time.Location {
	if q.Loc == nil {
		return time.UTC
	}
	return q.Loc
}

// startDay is the first day of a period in the given month: QuotaDay, or
// the month's last day when QuotaDay is beyond it.
func (q *Quota) startDay(y int, m time.Month) int {
	d := q.QuotaDay
	if d < 1 {
		d = 1
	}
	last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	return min(d, last)
}

// labels returns the local date and the period start for now, as labels.
func (q *Quota) labels(now time.Time) (day, period string) {
	t := now.In(q.loc())
	y, m, d := t.Date()
	day = t.Format(dateLayout)
	s := q.startDay(y, m)
	if d < s {
		py, pm := y, m-1
		if pm < time.January {
			py, pm = y-1, time.December
		}
		return day, time.Date(py, pm, q.startDay(py, pm), 0, 0, 0, 0, time.UTC).Format(dateLayout)
	}
	return day, time.Date(y, m, s, 0, 0, 0, 0, time.UTC).Format(dateLayout)
}

// Used returns the bytes counted today and in the current period at now.
func (q *Quota) Used(now time.Time) (day, period int64) {
	dl, pl := q.labels(now)
	if q.st.Day >= dl { // same day, or the clock went back
		day = q.st.DayBytes
	}
	if q.st.Period >= pl {
		period = q.st.PeriodBytes
	}
	return day, period
}

// Add counts n downloaded bytes at now (n <= 0 counts nothing).
func (q *Quota) Add(now time.Time, n int64) {
	dl, pl := q.labels(now)
	if q.st.Day < dl {
		q.st.Day, q.st.DayBytes = dl, 0
	}
	if q.st.Period < pl {
		q.st.Period, q.st.PeriodBytes = pl, 0
	}
	q.st.DayBytes = addSat(q.st.DayBytes, n)
	q.st.PeriodBytes = addSat(q.st.PeriodBytes, n)
}

// addSat adds a non-negative n to a non-negative counter, stopping at the
// largest int64 instead of wrapping.
func addSat(a, n int64) int64 {
	if n <= 0 {
		return a
	}
	if a > math.MaxInt64-n {
		return math.MaxInt64
	}
	return a + n
}

// Reached reports whether a quota is used up at now, and which. When both
// are, it names the monthly one: waiting for the next day does not help.
func (q *Quota) Reached(now time.Time) (bool, QuotaKind) {
	day, period := q.Used(now)
	switch {
	case q.Monthly > 0 && period >= q.Monthly:
		return true, QuotaMonthly
	case q.Daily > 0 && day >= q.Daily:
		return true, QuotaDaily
	}
	return false, QuotaNone
}

// Left returns how many bytes may still be downloaded at now before a
// quota is reached (0 when one is); false when there is no quota.
func (q *Quota) Left(now time.Time) (int64, bool) {
	day, period := q.Used(now)
	left, ok := int64(0), false
	if q.Daily > 0 {
		left, ok = max(q.Daily-day, 0), true
	}
	if q.Monthly > 0 {
		m := max(q.Monthly-period, 0)
		if !ok || m < left {
			left = m
		}
		ok = true
	}
	return left, ok
}

// ResetAt returns when the given quota next starts afresh after now: the
// next local midnight, or the start of the next monthly period.
func (q *Quota) ResetAt(now time.Time, k QuotaKind) time.Time {
	loc := q.loc()
	t := now.In(loc)
	y, m, d := t.Date()
	if k == QuotaDaily {
		return time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	}
	if s := q.startDay(y, m); d < s {
		return time.Date(y, m, s, 0, 0, 0, 0, loc)
	}
	ny, nm := y, m+1
	if nm > time.December {
		ny, nm = y+1, time.January
	}
	return time.Date(ny, nm, q.startDay(ny, nm), 0, 0, 0, 0, loc)
}
