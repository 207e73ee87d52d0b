package reader

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// TestRefreshPeriodExampleTable reproduces a table of example periods
// row by row. The table shows log10 and the ratio to two decimals and the
// period to the precision it was written with (whole seconds, 5.4 s in one
// row): each computed value must round to the table's, and the period must
// be within one unit of the table's precision. (The table's periods were
// evidently computed from the rounded ratio: 30 - 0.85*29 = 5.35 -> "5.4",
// where the exact ratio gives 5.477.) exact pins the formula to the
// millisecond. The last row writes 1/300 as 0.003: its log10 (-2.48) is
// that of 1/300; 0.003 itself is below the clamp and gives 30 s too.
func TestRefreshPeriodExampleTable(t *testing.T) {
	tests := []struct {
		rps       float64
		log10     float64 // table column "log10(rps)"
		ratio     float64 // table column "Ratio"
		period    float64 // table column "Period", seconds
		precision float64 // of the table's period
		exact     time.Duration
	}{
		{10000, 4.0, 1.0, 1, 1, 1 * time.Second},
		{1000, 3.0, 0.85, 5.4, 0.1, 5477 * time.Millisecond},
		{100, 2.0, 0.69, 10, 1, 9955 * time.Millisecond},
		{10, 1.0, 0.54, 14, 1, 14432 * time.Millisecond},
		{1, 0.0, 0.38, 19, 1, 18909 * time.Millisecond},
		{0.1, -1.0, 0.23, 23, 1, 23386 * time.Millisecond},
		{0.01, -2.0, 0.07, 28, 1, 27864 * time.Millisecond},
		{1.0 / 300, -2.48, 0.0, 30, 1, 30 * time.Second},
	}
	round2 := func(x float64) float64 { return math.Round(x*100) / 100 }
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.rps), func(t *testing.T) {
			if got := round2(math.Log10(tc.rps)); got != tc.log10 {
				t.Errorf("log10(%v) = %v, table says %v", tc.rps, got, tc.log10)
			}
			if got := round2(RefreshRatio(tc.rps)); got != tc.ratio {
				t.Errorf("RefreshRatio(%v) = %v (%.4f), table says %v", tc.rps, got, RefreshRatio(tc.rps), tc.ratio)
			}
			p := RefreshPeriod(tc.rps)
			if d := math.Abs(p.Seconds() - tc.period); d > tc.precision+1e-9 {
				t.Errorf("RefreshPeriod(%v) = %v, table says %vs (off by %.3fs, more than %vs)", tc.rps, p, tc.period, d, tc.precision)
			}
			if got := p.Round(time.Millisecond); got != tc.exact {
				t.Errorf("RefreshPeriod(%v) = %v, want %v", tc.rps, got, tc.exact)
			}
		})
	}
}

// TestRefreshPeriodClamp covers the ends: no activity, below one request per
// window, and above ACTIVITY_HIGH_RPS.
func TestRefreshPeriodClamp(t *testing.T) {
	tests := []struct {
		rps  float64
		want time.Duration
	}{
		{0, RefreshMaxPeriod},
		{-1, RefreshMaxPeriod},
		{0.003, RefreshMaxPeriod},
		{1e-9, RefreshMaxPeriod},
		{1e6, RefreshMinPeriod},
		{math.Inf(1), RefreshMinPeriod},
		{math.NaN(), RefreshMaxPeriod},
	}
	for _, tc := range tests {
		if got := RefreshPeriod(tc.rps); got != tc.want {
			t.Errorf("RefreshPeriod(%v) = %v, want %v", tc.rps, got, tc.want)
		}
	}
	// Monotonic: more activity never means a longer period.
	prev := RefreshPeriod(0)
	for rps := 0.001; rps < 20000; rps *= 1.07 {
		p := RefreshPeriod(rps)
		if p > prev {
			t.Fatalf("RefreshPeriod(%v) = %v > %v at a lower rate", rps, p, prev)
		}
		prev = p
	}
}

// TestActivityWindow checks the buckets' edges: a request counts for the
// 150 buckets (300 s) that start with its own 2 s bucket.
func TestActivityWindow(t *testing.T) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tests := []struct {
		name   string
		record []float64 // seconds after the epoch
		query  float64
		want   uint64
	}{
		{"none", nil, 0, 0},
		{"same instant", []float64{0}, 0, 1},
		{"same bucket", []float64{0, 1.9}, 1.9, 2},
		{"last second of the window", []float64{0}, 299.9, 1},
		{"window over", []float64{0}, 300, 0},
		{"bucket start counts whole", []float64{1.9}, 300, 0},
		{"second bucket survives", []float64{1.9, 2}, 300, 1},
		{"long gap clears", []float64{0, 10, 20}, 1000, 0},
		{"gap then new", []float64{0, 1000}, 1000, 1},
		{"spread", []float64{0, 50, 100, 150, 200, 250, 299}, 350, 5}, // buckets 26..175: 52 s on
		{"clock before epoch counts in bucket 0", []float64{-5, 0}, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewActivityTracker(t0)
			for _, s := range tc.record {
				tr.Record("g", at(s))
			}
			if got := tr.Requests("g", at(tc.query)); got != tc.want {
				t.Errorf("Requests at %vs = %d, want %d", tc.query, got, tc.want)
			}
			if got, want := tr.Rate("g", at(tc.query)), float64(tc.want)/300; got != want {
				t.Errorf("Rate = %v, want %v", got, want)
			}
			if got := tr.Active("g", at(tc.query)); got != (tc.want > 0) {
				t.Errorf("Active = %v, want %v", got, tc.want > 0)
			}
		})
	}
}

// TestActivityAgainstModel compares the circular buffer with a list of every
// request's bucket, on seeded random schedules: the running total always
// equals the number of requests in the last 150 buckets.
func TestActivityAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		tr := NewActivityTracker(t0)
		var times []time.Duration // model: offsets of every request
		now := time.Duration(0)
		for step := 0; step < 2000; step++ {
			switch rng.IntN(10) {
			case 0:
				now += time.Duration(rng.IntN(400)) * time.Second // sometimes beyond the window
			default:
				now += time.Duration(rng.IntN(3000)) * time.Millisecond
			}
			for k := rng.IntN(4); k > 0; k-- {
				tr.Record("g", t0.Add(now))
				times = append(times, now)
			}
			cur := int64(now / ActivityBucket)
			var want uint64
			for _, x := range times {
				if int64(x/ActivityBucket) > cur-ActivityBuckets {
					want++
				}
			}
			if got := tr.Requests("g", t0.Add(now)); got != want {
				t.Fatalf("seed %d step %d at %v: Requests = %d, model says %d", seed, step, now, got, want)
			}
		}
	}
}

func TestActiveGroups(t *testing.T) {
	tr := NewActivityTracker(t0)
	tr.Record("b", t0)
	tr.Record("a", t0.Add(100*time.Second))
	tr.Record("c", t0.Add(200*time.Second))
	if d := cmp.Diff([]string{"a", "b", "c"}, tr.ActiveGroups(t0.Add(299*time.Second))); d != "" {
		t.Errorf("at 299s (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"a", "c"}, tr.ActiveGroups(t0.Add(300*time.Second))); d != "" {
		t.Errorf("at 300s (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string(nil), tr.ActiveGroups(t0.Add(600*time.Second))); d != "" {
		t.Errorf("at 600s (-want +got):\n%s", d)
	}
	if len(tr.groups) != 0 {
		t.Errorf("quiet groups kept: %d", len(tr.groups))
	}
}

// TestRefresherLifecycle follows one group's task through its lifecycle:
// spawned by the first request, triggered while active with a period from the
// current rate, stopped once no request is in the window, spawned again by
// the next request.
func TestRefresherLifecycle(t *testing.T) {
	const atDeadline = -1
	type op struct {
		at   time.Duration // after t0, or atDeadline: when the refresher asks
		mark bool          // MarkActive("g"), else Due
		want string        // what happened
	}
	trigger := "g trigger rate=0.00667 period=28.652s" // 2 requests in 300 s
	steps := []op{
		{at: 0, mark: true, want: "spawned at+30s"},   // rate 1/300: 30 s
		{at: time.Second, mark: true, want: "marked"}, // a task exists: no second one
		{at: 29 * time.Second, want: ""},              // early: nothing
		{at: atDeadline, want: trigger + " at 30s"},   // both requests in the window
		{at: atDeadline, want: trigger + " at 58.652s"},
		{at: atDeadline, want: trigger + " at 1m27.304s"},
		{at: atDeadline, want: trigger + " at 1m55.957s"},
		{at: atDeadline, want: trigger + " at 2m24.609s"},
		{at: atDeadline, want: trigger + " at 2m53.261s"},
		{at: atDeadline, want: trigger + " at 3m21.913s"},
		{at: atDeadline, want: trigger + " at 3m50.565s"},
		{at: atDeadline, want: trigger + " at 4m19.218s"},
		{at: atDeadline, want: trigger + " at 4m47.87s"},
		{at: atDeadline, want: "g stop at 5m16.522s"}, // both requests were in bucket 0: gone at 300 s
		{at: 400 * time.Second, want: ""},             // no task, no deadline
		{at: 401 * time.Second, mark: true, want: "spawned at+30s"},
	}
	r := NewRefresher(t0)
	for i, s := range steps {
		now := t0.Add(s.at)
		if s.at == atDeadline {
			d, ok := r.Deadline()
			if !ok {
				t.Fatalf("step %d: no deadline", i)
			}
			now = d
		}
		var got string
		switch {
		case s.mark && r.MarkActive("g", now):
			d, _ := r.Deadline()
			got = fmt.Sprintf("spawned at+%v", d.Sub(now))
		case s.mark:
			got = "marked"
		default:
			var parts []string
			for _, a := range r.Due(now) {
				p := a.Group + " " + a.Kind.String()
				if a.Kind == RefreshTrigger {
					p += fmt.Sprintf(" rate=%.5f period=%v", a.Rate, a.Period.Round(time.Millisecond))
					if !a.Next.Equal(now.Add(a.Period)) {
						t.Errorf("step %d: Next %v, want now+period", i, a.Next)
					}
				}
				parts = append(parts, p+" at "+now.Sub(t0).Round(time.Millisecond).String())
			}
			got = strings.Join(parts, "; ")
		}
		if got != s.want {
			t.Fatalf("step %d: got %q, want %q", i, got, s.want)
		}
	}
	if r.Tasks() != 1 {
		t.Errorf("Tasks() = %d, want 1", r.Tasks())
	}
}

// TestRefresherOrder checks that several groups' tasks fire in due order
// (ties by name) and that a busy group gets a shorter period than a quiet one.
func TestRefresherOrder(t *testing.T) {
	r := NewRefresher(t0)
	for i := 0; i < 3000; i++ { // 3000 requests in the window: 10 requests/s
		r.MarkActive("busy", t0)
	}
	r.MarkActive("quiet", t0) // 1 request: 1/300 per second
	var got []string
	for i := 0; i < 6; i++ {
		d, ok := r.Deadline()
		if !ok {
			t.Fatal("no deadline")
		}
		for _, a := range r.Due(d) {
			got = append(got, fmt.Sprintf("%s@%v+%v", a.Group, d.Sub(t0).Round(time.Millisecond), a.Period.Round(time.Millisecond)))
		}
	}
	// Both tasks were spawned by their first request (rate 1/300: 30 s).
	want := []string{
		"busy@30s+14.432s", "quiet@30s+30s",
		"busy@44.432s+14.432s", "busy@58.864s+14.432s", "quiet@1m0s+30s",
		"busy@1m13.296s+14.432s", "busy@1m27.728s+14.432s",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("refresh order (-want +got):\n%s", d)
	}
}
