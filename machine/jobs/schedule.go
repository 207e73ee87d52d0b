package jobs

import "time"

// Schedule is an entry's retry bookkeeping, kept beside its metadata: how
// many attempts failed, when the next one may start and why the last one
// failed.
type Schedule struct {
	Attempts  int       `json:"attempts"`
	Next      time.Time `json:"next,omitzero"`        // not before; zero: at once
	LastError string    `json:"last_error,omitempty"` // the last attempt's failure, for people
}

// Due reports whether the entry may start at now.
func (s Schedule) Due(now time.Time) bool { return !now.Before(s.Next) }

// Retry returns the schedule after a failed attempt at now: one more
// attempt, the next one after backoff doubled per failed attempt (first
// wait base, at most max).
func (s Schedule) Retry(now time.Time, base, max time.Duration, reason string) Schedule {
	wait := base
	for i := 0; i < s.Attempts && wait < max; i++ {
		wait *= 2
	}
	if wait > max {
		wait = max
	}
	return Schedule{Attempts: s.Attempts + 1, Next: now.Add(wait), LastError: reason}
}
