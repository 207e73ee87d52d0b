package reader

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSchedulerPick runs scripts of pushes and picks against a Scheduler
// with aging 10 s and small queues. Script words: "H:a" pushes a at High
// (N normal, L low), "+5s" moves the clock, "pick" picks one, "full:L:x"
// pushes and expects ErrQueueFull.
func TestSchedulerPick(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   string // the picks, "-" for none
	}{
		{"priority order", "L:l1 N:n1 H:h1 H:h2 pick pick pick pick pick", "h1 h2 n1 l1 -"},
		{"fifo within a priority", "N:a N:b N:c pick pick pick", "a b c"},
		{"low waits under load", "L:l H:h1 H:h2 +5s pick pick", "h1 h2"},
		{"aging lets a low through", "L:l H:h1 H:h2 +10s pick pick pick", "l h1 h2"},
		{"aging needs a waiting low", "H:h1 +20s pick L:l H:h2 pick pick", "h1 l h2"},
		{"aging clock restarts at a low pick", "L:l1 L:l2 H:h1 H:h2 H:h3 +10s pick pick +9s pick pick +1s pick",
			"l1 h1 h2 h3 l2"},
		{"a low picked in order restarts the clock", "L:l1 +20s pick L:l2 H:h1 +9s pick pick", "l1 h1 l2"},
		{"aging beats normal too", "N:n L:l +10s pick pick", "l n"},
		{"queue full", "H:1 H:2 H:3 full:H:4 N:5 pick pick pick pick pick", "1 2 3 5 -"},
		{"full queue frees after a pick", "L:1 L:2 L:3 full:L:4 pick L:4 pick pick pick", "1 2 3 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			s := NewScheduler[string](now, SchedulerConfig{Capacity: [3]int{3, 3, 3}, Aging: 10 * time.Second})
			var got []string
			for _, w := range strings.Fields(tc.script) {
				switch {
				case w == "pick":
					v, p, ok := s.Pick(now)
					if !ok {
						got = append(got, "-")
						continue
					}
					if p > Low {
						t.Fatalf("bad priority %v", p)
					}
					got = append(got, v)
				case strings.HasPrefix(w, "+"):
					d, err := time.ParseDuration(w[1:])
					if err != nil {
						t.Fatal(err)
					}
					now = now.Add(d)
				case strings.HasPrefix(w, "full:"):
					pr, v, _ := strings.Cut(w[5:], ":")
					err := s.Push(prio(pr), v)
					if !errors.Is(err, ErrQueueFull) {
						t.Fatalf("Push(%s) = %v, want ErrQueueFull", w, err)
					}
				default:
					pr, v, _ := strings.Cut(w, ":")
					if err := s.Push(prio(pr), v); err != nil {
						t.Fatalf("Push(%s): %v", w, err)
					}
				}
			}
			if d := cmp.Diff(tc.want, strings.Join(got, " ")); d != "" {
				t.Errorf("picks (-want +got):\n%s", d)
			}
		})
	}
}

func prio(s string) Priority {
	return map[string]Priority{"H": High, "N": Normal, "L": Low}[s]
}

// TestSchedulerAgingBound saturates High and checks that Low requests run
// at least once per aging period: with a pick every second and a steady
// supply of both, Low runs exactly every 10 picks.
func TestSchedulerAgingBound(t *testing.T) {
	s := NewScheduler[int](t0, SchedulerConfig{Aging: DefaultPriorityAging})
	for i := 0; i < 100; i++ {
		if err := s.Push(Low, i); err != nil {
			t.Fatal(err)
		}
	}
	var lows []int
	for sec := 1; sec <= 60; sec++ {
		if err := s.Push(High, -sec); err != nil {
			t.Fatal(err)
		}
		if _, p, _ := s.Pick(t0.Add(time.Duration(sec) * time.Second)); p == Low {
			lows = append(lows, sec)
		}
	}
	if d := cmp.Diff([]int{10, 20, 30, 40, 50, 60}, lows); d != "" {
		t.Errorf("seconds at which Low ran (-want +got):\n%s", d)
	}
}

// TestPickAged: a caller-kept clock (one per worker, say) decides
// alone; the Scheduler's own clock is untouched.
func TestPickAged(t *testing.T) {
	s := NewScheduler[string](t0, SchedulerConfig{})
	s.Push(High, "h")
	s.Push(Low, "l")
	v, p, _ := s.PickAged(t0.Add(time.Second), t0.Add(-time.Hour))
	if v != "l" || p != Low {
		t.Errorf("PickAged with an old clock = %s %v, want l low", v, p)
	}
	if !s.LastLow().Equal(t0) {
		t.Errorf("LastLow moved to %v", s.LastLow())
	}
	if got := s.Len(High); got != 1 {
		t.Errorf("Len(High) = %d", got)
	}
	if got := s.Cap(Normal); got != DefaultQueueCapacity {
		t.Errorf("Cap(Normal) = %d", got)
	}
	if err := s.Push(Priority(7), "x"); err == nil || errors.Is(err, ErrQueueFull) {
		t.Errorf("Push at an unknown priority: %v", err)
	}
}

func TestRequestPriority(t *testing.T) {
	got := map[string]Priority{}
	for _, r := range []Request{GetArticle{}, GetThread{}, GetThreads{}, GetGroups{}, GetGroupStats{}, GetNewArticles{}} {
		got[fmt.Sprintf("%T", r)] = r.Priority()
	}
	got["background GetArticle"] = GetArticle{Background: true}.Priority()
	// User-facing requests first, background work last.
	want := map[string]Priority{
		"reader.GetArticle": High, "reader.GetThread": High,
		"reader.GetThreads": Normal, "reader.GetGroups": Normal,
		"reader.GetGroupStats": Low, "reader.GetNewArticles": Low,
		"background GetArticle": Low, // the search index reading bodies
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("priorities (-want +got):\n%s", d)
	}
}

func TestRequestKeys(t *testing.T) {
	reqs := []Request{
		GetGroups{}, GetGroupStats{Group: "a.b"}, GetThreads{Group: "a.b"}, GetThreads{Group: "a.b", Since: 5},
		GetThreads{Group: "a.b", Limit: 5}, GetThread{Group: "a.b", MessageID: "<x@y>"},
		GetArticle{MessageID: "<x@y>"}, GetArticle{MessageID: "<x@y>", Background: true}, GetNewArticles{Group: "a.b", Since: 5},
	}
	var keys []string
	seen := map[string]bool{}
	for _, r := range reqs {
		k := r.Key()
		if seen[k] {
			t.Errorf("key %q for two different requests", k)
		}
		seen[k] = true
		keys = append(keys, k)
	}
	want := []string{"groups", "stats:a.b", "threads:a.b:0:0", "threads:a.b:5:0", "threads:a.b:0:5",
		"thread:a.b:<x@y>:0", "article:<x@y>", "background-article:<x@y>", "new:a.b:5:0"}
	if d := cmp.Diff(want, keys); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
}

// TestCoalescer runs scripts against a table with a 30 s timeout: "join:k"
// (want L for leader, F for follower), "finish:k" (want the follower count),
// "expire" (want the expired keys), "+Ns".
func TestCoalescer(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   string
	}{
		{"leader then followers", "join:a join:a join:a finish:a join:a", "L F F 2 L"},
		{"keys are separate", "join:a join:b join:a finish:b join:b", "L L F 0 L"},
		{"finish unknown", "finish:a", "0"},
		{"expiry replaces the leader", "join:a +29s join:a +1s join:a", "L F L"},
		{"expire removes old entries", "join:a +10s join:b +20s expire join:a join:b", "L L [a] L F"},
		{"finish after expiry", "join:a +30s expire finish:a", "L [a] 0"},
		{"nothing to expire", "join:a expire", "L []"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			c := NewCoalescer[string](30 * time.Second)
			var got []string
			for _, w := range strings.Fields(tc.script) {
				op, key, _ := strings.Cut(w, ":")
				switch {
				case op == "join":
					if c.Join(key, now) {
						got = append(got, "L")
					} else {
						got = append(got, "F")
					}
				case op == "finish":
					got = append(got, fmt.Sprint(c.Finish(key)))
				case op == "expire":
					ks := c.Expire(now)
					sort.Strings(ks)
					got = append(got, "["+strings.Join(ks, " ")+"]")
				case strings.HasPrefix(op, "+"):
					d, _ := time.ParseDuration(op[1:])
					now = now.Add(d)
				}
			}
			if d := cmp.Diff(tc.want, strings.Join(got, " ")); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestCoalescerDeadline(t *testing.T) {
	c := NewCoalescer[string](0)
	if _, ok := c.Deadline(); ok {
		t.Error("deadline on an empty table")
	}
	c.Join("a", t0.Add(5*time.Second))
	c.Join("b", t0)
	d, ok := c.Deadline()
	if !ok || !d.Equal(t0.Add(DefaultRequestTimeout)) {
		t.Errorf("Deadline = %v %v, want t0+%v", d, ok, DefaultRequestTimeout)
	}
	if !c.Pending("a", t0.Add(30*time.Second)) || c.Pending("b", t0.Add(30*time.Second)) {
		t.Error("Pending disagrees with the timeout")
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d", c.Len())
	}
}
