package download

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLimiter runs scripts of Take calls: each step advances the clock,
// takes bytes and must return the given wait.
func TestLimiter(t *testing.T) {
	type step struct {
		at   time.Duration // clock since epoch
		n    int64         // bytes taken; -1: SetRate(rate) instead
		rate int64
		wait time.Duration
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		l     Limiter
		steps []step
	}{{
		name:  "no rate: never waits",
		l:     Limiter{},
		steps: []step{{0, 1 << 40, 0, 0}, {0, 1 << 40, 0, 0}},
	}, {
		name: "the bucket starts empty (no first second's burst), then debt is paid at the rate",
		l:    Limiter{Rate: 1000},
		steps: []step{
			{0, 1000, 0, time.Second},     // nothing saved up at the start
			{0, 500, 0, 1500 * ms},        // 1500 bytes of debt at 1000/s
			{1500 * ms, 0, 0, 0},          // paid exactly
			{1500 * ms, 1, 0, 1 * ms},     // empty again
			{1501 * ms, 250, 0, 250 * ms}, // the millisecond paid the byte
		},
	}, {
		name: "idle time refills only up to the burst",
		l:    Limiter{Rate: 1000, Burst: 2000},
		steps: []step{
			{0, 2000, 0, 2 * time.Second},
			{time.Hour, 2000, 0, 0},
			{time.Hour, 1, 0, ms},
		},
	}, {
		name: "a wait rounds up to the nanosecond",
		l:    Limiter{Rate: 3},
		steps: []step{
			{0, 3, 0, time.Second},
			{time.Second, 1, 0, 333333334}, // 1/3 s, rounded up
		},
	}, {
		name: "a clock that goes back refills nothing",
		l:    Limiter{Rate: 1000},
		steps: []step{
			{time.Second, 1000, 0, time.Second},
			{0, 100, 0, 1100 * ms},
			{2*time.Second + 100*ms, 0, 0, 0},
		},
	}, {
		name: "SetRate settles at the old rate first",
		l:    Limiter{Rate: 1000},
		steps: []step{
			{0, 2000, 0, 2 * time.Second}, // 2000 bytes of debt
			{500 * ms, -1, 100, 0},        // 500 paid at 1000/s; 1500 left
			{500 * ms, 0, 0, 15 * time.Second},
			{15500 * ms, 0, 0, 0},
			{15500 * ms, -1, 0, 0}, // unlimited again
			{15500 * ms, 1 << 30, 0, 0},
		},
	}, {
		name: "a huge take saturates instead of overflowing",
		l:    Limiter{Rate: 1},
		steps: []step{
			{0, 1 << 62, 0, time.Duration(1 << 62)}, // debt clamped to 2^62 nano-bytes: 2^62 ns at 1 byte/s
			{0, -5, 0, time.Duration(1 << 62)},      // negative takes take nothing
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.l
			var got, want []time.Duration
			for _, s := range tc.steps {
				now := epoch.Add(s.at)
				if s.n == -1 {
					l.SetRate(now, s.rate)
					continue
				}
				got = append(got, l.Take(now, s.n))
				want = append(want, s.wait)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLimiterRate checks the long-run promise with random read sizes: an
// owner that reads, takes and waits as told reads at most Burst more than
// Rate allows, and no less than Rate minus one read.
func TestLimiterRate(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		rate := int64(1 + rng.IntN(100<<20))
		l := Limiter{Rate: rate, Burst: int64(rng.IntN(4 << 20))}
		burst := l.burst()
		now := epoch
		var total, last int64
		for range 2000 {
			last = int64(1 + rng.IntN(1<<20))
			total += last
			w := l.Take(now, last)
			now = now.Add(w)
		}
		elapsed := now.Sub(epoch).Seconds()
		allowed := float64(burst) + float64(rate)*elapsed
		if float64(total) > allowed+1 {
			t.Errorf("seed %d: read %d bytes in %.3fs at rate %d burst %d: more than %.0f", seed, total, elapsed, rate, burst, allowed)
		}
		if float64(total) < float64(rate)*elapsed-float64(last)-1 {
			t.Errorf("seed %d: read %d bytes in %.3fs at rate %d: the limiter held back too long", seed, total, elapsed, rate)
		}
	}
}
