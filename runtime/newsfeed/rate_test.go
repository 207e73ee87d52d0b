package newsfeed

import (
	"testing"
	"time"
)

// TestRateRing: the rate is the last minute's, not the lifetime's; an old
// burst falls out of the window and a slot reused a minute later starts
// from zero.
func TestRateRing(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var r rateRing
	steps := []struct {
		what string
		add  float64 // the second at which n events are added; <0: none
		n    int64
		at   float64 // the second at which the rate is read
		want float64
	}{
		{"nothing yet", -1, 0, 0, 0},
		{"the current second does not count yet", 0.5, 600, 0.9, 0},
		{"600 in one second over a minute", -1, 0, 1, 10},
		{"still in the window at 60s", -1, 0, 60, 10},
		{"out of the window at 61s", -1, 0, 61, 0},
		{"the slot of second 0 reused at 60: old count gone", 60.2, 60, 61, 1},
		{"a second burst adds", 61.5, 120, 62.1, 3},
	}
	for _, s := range steps {
		if s.add >= 0 {
			r.add(at(s.add), s.n)
		}
		if got := r.perSecond(at(s.at)); got != s.want {
			t.Errorf("%s: perSecond = %v, want %v", s.what, got, s.want)
		}
	}
}
