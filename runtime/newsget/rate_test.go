package newsget

import (
	"fmt"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/download"
)

// TestRateWindows runs the speed limit as meteredConn applies it (each
// read capped at readCap, charged to the limiter after it, the connection
// waiting as told) on a simulated clock: conns connections whose server
// always has data, every read filling the cap, with an idle spell in the
// middle (a pause) after which all connections read at once. Over every 5 s
// window the bytes read stay within 5 % above the rate, and over the
// busy stretches not more than 5 % below it.
func TestRateWindows(t *testing.T) {
	for _, tc := range []struct {
		rate  int64
		conns int
	}{{2 << 20, 8}, {5 << 20, 8}, {2 << 20, 50}, {100 << 10, 4}, {50 << 20, 20}} {
		t.Run(fmt.Sprintf("%d B/s over %d conns", tc.rate, tc.conns), func(t *testing.T) {
			epoch := time.Unix(1_700_000_000, 0)
			l := download.Limiter{Rate: tc.rate}
			c := readCap(tc.rate, tc.conns)
			// ready[i] is when connection i reads next.
			ready := make([]time.Duration, tc.conns)
			type read struct {
				at time.Duration
				n  int64
			}
			var reads []read
			const end, pauseFrom, pauseTo = 60 * time.Second, 20 * time.Second, 30 * time.Second
			for {
				i := 0
				for k := range ready {
					if ready[k] < ready[i] {
						i = k
					}
				}
				now := ready[i]
				if now >= end {
					break
				}
				if now >= pauseFrom && now < pauseTo {
					ready[i] = pauseTo
					continue
				}
				reads = append(reads, read{now, c})
				ready[i] = now + l.Take(epoch.Add(now), c)
			}
			const window = 5 * time.Second
			want := float64(tc.rate) * window.Seconds()
			for from := time.Duration(0); from+window <= end; from += 100 * time.Millisecond {
				var n int64
				for _, r := range reads {
					if r.at >= from && r.at < from+window {
						n += r.n
					}
				}
				busy := from+window <= pauseFrom || from >= pauseTo
				if got := float64(n) / want; got > 1.05 || (busy && from > 0 && got < 0.95) {
					t.Fatalf("window %v..%v: %d bytes, %.3f of the rate", from, from+window, n, got)
				}
			}
		})
	}
}
