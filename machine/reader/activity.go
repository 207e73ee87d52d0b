package reader

// Theory of operation: activity-proportional background refresh.
//
// Every user request that touches a group's threads calls
// Refresher.MarkActive. The group's GroupActivity counts requests in a
// circular buffer of ActivityBuckets buckets covering ActivityWindow, so
// ActivityWindow/ActivityBuckets = 2 s per bucket. Moving to a later bucket
// clears the buckets that fell out of the window and subtracts their counts
// from a running total, so the request rate (total / window) costs O(1) to
// read; advancing costs one step per elapsed bucket, at most ActivityBuckets,
// after which the buffer is simply cleared.
//
// The refresh period maps the rate to a duration on a log scale
// (RefreshPeriod):
//
//	log_min = log10(1/300)   one request in the 5-minute window
//	log_max = log10(10000)   ActivityHighRPS
//	ratio   = (clamp(log10(rps), log_min, log_max) - log_min) / (log_max - log_min)
//	period  = 30s - ratio * (30s - 1s)
//
// Each active group has one refresh task, a schedule the runtime drives: the
// task is spawned by the first MarkActive of a group that has none, computes
// its period from the rate, and is due one period later. When due
// (Refresher.Due), a group that has had no request within the window stops
// (the task is removed); an active one triggers an incremental update and is
// rescheduled with a period computed from the rate at that moment. Time is an
// input everywhere: the tracker measures it from an epoch given at
// construction.

import (
	"container/heap"
	"math"
	"sort"
	"time"
)

// The activity window and the refresh periods it maps to. The names in
// capitals are the log fields and setting names of the same figures.
const (
	ActivityWindow   = 300 * time.Second                // ACTIVITY_WINDOW_SECS: the moving-average window
	ActivityBuckets  = 150                              // ACTIVITY_BUCKET_COUNT: buckets in the circular buffer
	ActivityBucket   = ActivityWindow / ActivityBuckets // 2 s per bucket
	RefreshMinPeriod = 1 * time.Second                  // BACKGROUND_REFRESH_MIN_PERIOD_SECS: period at maximum activity
	RefreshMaxPeriod = 30 * time.Second                 // BACKGROUND_REFRESH_MAX_PERIOD_SECS: period at minimum activity
	ActivityHighRPS  = 10000.0                          // ACTIVITY_HIGH_RPS: the rate that gets RefreshMinPeriod
)

// activityWindowS is the window in seconds, the divisor of the rate.
const activityWindowS = float64(ActivityWindow / time.Second)

// RefreshRatio is the interpolation ratio for a request rate: 0 at
// one request per ActivityWindow or less, 1 at ActivityHighRPS or more,
// linear in log10(rps) in between.
func RefreshRatio(rps float64) float64 {
	logMin := math.Log10(1 / activityWindowS)
	logMax := math.Log10(ActivityHighRPS)
	l := math.Inf(-1)
	if rps > 0 {
		l = math.Log10(rps)
	}
	l = math.Min(math.Max(l, logMin), logMax)
	return (l - logMin) / (logMax - logMin)
}

// RefreshPeriod is the background refresh period for a request rate:
// RefreshMaxPeriod minus RefreshRatio(rps) of the span down to
// RefreshMinPeriod.
func RefreshPeriod(rps float64) time.Duration {
	span := float64(RefreshMaxPeriod - RefreshMinPeriod)
	return RefreshMaxPeriod - time.Duration(math.Round(RefreshRatio(rps)*span))
}

// GroupActivity is one group's request counts: a circular buffer of
// ActivityBuckets buckets with a running total.
type GroupActivity struct {
	buckets [ActivityBuckets]uint32
	current int   // index of the bucket that holds the current 2 s
	start   int64 // absolute bucket number (since the epoch) of current
	total   uint64
}

// advance moves the buffer to absolute bucket idx, clearing the buckets that
// fall out of the window. A bucket number before the current one (a clock
// that went back) leaves the buffer as it is.
func (g *GroupActivity) advance(idx int64) {
	if idx <= g.start {
		return
	}
	elapsed := idx - g.start
	if elapsed >= ActivityBuckets {
		g.buckets = [ActivityBuckets]uint32{}
		g.total = 0
		g.current = int(idx % ActivityBuckets)
		g.start = idx
		return
	}
	for ; elapsed > 0; elapsed-- {
		g.current = (g.current + 1) % ActivityBuckets
		g.total -= uint64(g.buckets[g.current])
		g.buckets[g.current] = 0
	}
	g.start = idx
}

// record counts one request in absolute bucket idx.
func (g *GroupActivity) record(idx int64) {
	g.advance(idx)
	if g.buckets[g.current] < math.MaxUint32 {
		g.buckets[g.current]++
		g.total++
	}
}

// Total is the number of requests in the window as of the last update.
func (g *GroupActivity) Total() uint64 { return g.total }

// ActivityTracker holds the activity of every group seen, measured in
// buckets since its epoch.
type ActivityTracker struct {
	epoch  time.Time
	groups map[string]*GroupActivity
}

// NewActivityTracker returns a tracker whose bucket 0 starts at epoch
// (typically the service's start time).
func NewActivityTracker(epoch time.Time) *ActivityTracker {
	return &ActivityTracker{epoch: epoch, groups: make(map[string]*GroupActivity)}
}

// bucket is the absolute bucket number of now: seconds since the epoch / 2.
func (t *ActivityTracker) bucket(now time.Time) int64 {
	d := now.Sub(t.epoch)
	if d < 0 {
		return 0
	}
	return int64(d / ActivityBucket)
}

// Record counts one request for group at now.
func (t *ActivityTracker) Record(group string, now time.Time) {
	g := t.groups[group]
	if g == nil {
		g = &GroupActivity{start: t.bucket(now), current: int(t.bucket(now) % ActivityBuckets)}
		t.groups[group] = g
	}
	g.record(t.bucket(now))
}

// Requests is the number of requests for group within the window ending at now.
func (t *ActivityTracker) Requests(group string, now time.Time) uint64 {
	g := t.groups[group]
	if g == nil {
		return 0
	}
	g.advance(t.bucket(now))
	return g.total
}

// Rate is group's request rate at now: requests in the window divided by
// the window's length, O(1) after the
// buffer has been advanced.
func (t *ActivityTracker) Rate(group string, now time.Time) float64 {
	return float64(t.Requests(group, now)) / activityWindowS
}

// Active reports whether group had a request within the window ending at now.
func (t *ActivityTracker) Active(group string, now time.Time) bool {
	return t.Requests(group, now) > 0
}

// ActiveGroups returns the groups with a request within the window ending at
// now, sorted, and forgets the others (their buffers are all zero).
func (t *ActivityTracker) ActiveGroups(now time.Time) []string {
	var out []string
	for name := range t.groups {
		if t.Active(name, now) {
			out = append(out, name)
		} else {
			delete(t.groups, name)
		}
	}
	sort.Strings(out)
	return out
}

// RefreshKind says what a due refresh task does.
type RefreshKind uint8

// Refresh task outcomes.
const (
	RefreshTrigger RefreshKind = iota + 1 // the group is active: run an incremental update (at Low priority)
	RefreshStop                           // no request within the window: the task stopped
)

// String returns "trigger" or "stop".
func (k RefreshKind) String() string {
	switch k {
	case RefreshTrigger:
		return "trigger"
	case RefreshStop:
		return "stop"
	}
	return "refresh-kind(?)"
}

// A RefreshAction is what a due refresh task asks of the runtime, with the
// figures a log line reports (rps and period_secs).
type RefreshAction struct {
	Group  string
	Kind   RefreshKind
	Rate   float64       // requests per second at that moment
	Period time.Duration // the next period (RefreshTrigger only)
	Next   time.Time     // when the task is due again (RefreshTrigger only)
}

// refreshTask is one group's scheduled refresh, an element of a min-heap.
type refreshTask struct {
	group string
	due   time.Time
	index int
}

type taskHeap []*refreshTask

func (h taskHeap) Len() int { return len(h) }
func (h taskHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].group < h[j].group
}
func (h taskHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *taskHeap) Push(x any) {
	t := x.(*refreshTask)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *taskHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// Refresher is the per-group refresh task lifecycle as a pure
// schedule: MarkActive on user requests, Deadline for the runtime's timer,
// Due when it fires. Not safe for concurrent use.
type Refresher struct {
	Tracker *ActivityTracker
	tasks   map[string]*refreshTask
	heap    taskHeap
}

// NewRefresher returns a refresher whose activity tracker starts at epoch.
func NewRefresher(epoch time.Time) *Refresher {
	return &Refresher{Tracker: NewActivityTracker(epoch), tasks: make(map[string]*refreshTask)}
}

// MarkActive records a request for group at now. When the group has no
// refresh task, one is spawned, due one RefreshPeriod of the current rate
// later, and MarkActive reports true.
func (r *Refresher) MarkActive(group string, now time.Time) (spawned bool) {
	r.Tracker.Record(group, now)
	if _, ok := r.tasks[group]; ok {
		return false
	}
	t := &refreshTask{group: group, due: now.Add(RefreshPeriod(r.Tracker.Rate(group, now)))}
	r.tasks[group] = t
	heap.Push(&r.heap, t)
	return true
}

// Scheduled reports when group's task is next due, if it has one.
func (r *Refresher) Scheduled(group string) (time.Time, bool) {
	t, ok := r.tasks[group]
	if !ok {
		return time.Time{}, false
	}
	return t.due, true
}

// Tasks is the number of running refresh tasks.
func (r *Refresher) Tasks() int { return len(r.tasks) }

// Deadline is when Due must next be called; false when no task runs.
func (r *Refresher) Deadline() (time.Time, bool) {
	if len(r.heap) == 0 {
		return time.Time{}, false
	}
	return r.heap[0].due, true
}

// Due runs every task due at now, in due order: a group without a request
// in the window stops; an active one is told to refresh and rescheduled one
// period (from the rate at now) later. An early call returns nothing.
func (r *Refresher) Due(now time.Time) []RefreshAction {
	var out []RefreshAction
	for len(r.heap) > 0 && !r.heap[0].due.After(now) {
		t := r.heap[0]
		rate := r.Tracker.Rate(t.group, now)
		if rate == 0 {
			heap.Pop(&r.heap)
			delete(r.tasks, t.group)
			out = append(out, RefreshAction{Group: t.group, Kind: RefreshStop})
			continue
		}
		p := RefreshPeriod(rate)
		t.due = now.Add(p)
		heap.Fix(&r.heap, t.index)
		out = append(out, RefreshAction{Group: t.group, Kind: RefreshTrigger, Rate: rate, Period: p, Next: t.due})
	}
	return out
}
