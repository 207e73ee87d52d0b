package peerconn

import (
	"sync"
	"time"
)

// Dynamic decides when a peer gets a connection beyond its floor, as
// innfeed's dynamic connections do: while the articles waiting for the
// peer (queued, not in flight) are more than its open connections hold in
// their windows at two looks Interval apart, one more opens, up to Max.
// A connection opened so closes itself after a while with nothing to send
// (Options.Extra), which brings the count back towards the floor.
//
// Time is an input: Grow takes the clock's reading.
type Dynamic struct {
	Max      int           // the ceiling on open connections
	Window   int           // articles one connection holds
	Interval time.Duration // between looks

	mu     sync.Mutex
	last   time.Time // the last look
	looked bool
	busy   bool // the last look found more waiting than the connections hold
}

// Grow reports whether to open another connection now, with conns open
// and waiting articles waiting for the peer.
func (d *Dynamic) Grow(now time.Time, conns int, waiting int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.looked && now.Sub(d.last) < d.Interval {
		return false
	}
	busy := waiting > int64(conns)*int64(max(1, d.Window))
	grow := d.looked && d.busy && busy && conns < d.Max
	d.last, d.looked, d.busy = now, true, busy
	if grow {
		d.busy = false // the next opens only after another full interval of work waiting
	}
	return grow
}
