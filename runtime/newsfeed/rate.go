package newsfeed

import (
	"sync"
	"time"
)

// rateWindow is how far back the status page's rates look.
const rateWindow = 60

// rateRing counts events per second over the last rateWindow seconds, for
// the current rates of /status and the stats lines (a lifetime average
// hides a peer that stopped an hour ago). It takes the time as an input and
// reads no clock. The zero value is ready; it is safe for concurrent use.
type rateRing struct {
	mu     sync.Mutex
	counts [rateWindow]int64
	secs   [rateWindow]int64 // the Unix second each slot counts; a stale slot is ignored
}

// add counts n events at now.
func (r *rateRing) add(now time.Time, n int64) {
	sec := now.Unix()
	i := sec % rateWindow
	r.mu.Lock()
	if r.secs[i] != sec {
		r.secs[i], r.counts[i] = sec, 0
	}
	r.counts[i] += n
	r.mu.Unlock()
}

// perSecond is the mean rate over the rateWindow whole seconds before now
// (the current, partial second left out).
func (r *rateRing) perSecond(now time.Time) float64 {
	sec := now.Unix()
	var sum int64
	r.mu.Lock()
	for i := range r.secs {
		if age := sec - r.secs[i]; age >= 1 && age <= rateWindow {
			sum += r.counts[i]
		}
	}
	r.mu.Unlock()
	return float64(sum) / rateWindow
}
