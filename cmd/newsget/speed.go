package main

import (
	"time"

	"github.com/newsflow/newsflow/runtime/newsget"
)

// speedWindow is how far back the shown speed looks: long enough to
// smooth reads and the speed limit's waits, short enough to follow a
// change (a server that slows down, a rate that starts to bite).
const speedWindow = 5 * time.Second

// speedSample is the bytes received by a moment of the run.
type speedSample struct {
	at       time.Duration // Progress.Elapsed
	received int64
}

// speedMeter turns progress snapshots into the current speed (over the
// last speedWindow, not the whole run's average, which a fast start or a
// stall distorts for minutes) and the time left at that speed.
type speedMeter struct {
	samples []speedSample // oldest first; the run's start is implicit
}

// add records a snapshot and returns the speed in bytes per second and the
// time left to receive the NZBs' bytes at that speed (0 when unknown).
func (m *speedMeter) add(p newsget.Progress) (float64, time.Duration) {
	if len(m.samples) == 0 {
		m.samples = append(m.samples, speedSample{}) // the start: nothing yet
	}
	m.samples = append(m.samples, speedSample{p.Elapsed, p.Received})
	// The base is the newest sample at or before the window's start (or
	// the run's start); older ones go.
	for len(m.samples) > 2 && m.samples[1].at <= p.Elapsed-speedWindow {
		m.samples = m.samples[1:]
	}
	base := m.samples[0]
	secs := (p.Elapsed - base.at).Seconds()
	if secs <= 0 {
		return 0, 0
	}
	speed := float64(p.Received-base.received) / secs
	if speed <= 0 || p.TotalBytes <= p.Received {
		return max(speed, 0), 0
	}
	return speed, time.Duration(float64(p.TotalBytes-p.Received) / speed * float64(time.Second)).Round(time.Second)
}
