package newsweb

import (
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// Background refresh: machine/reader's Refresher holds each active
// group's activity and task schedule; this file is its runtime. A single
// loop sleeps until the earliest task is due (one timer over the schedule
// rather than a goroutine per group), then runs every due task: a quiet
// group's task stops, an active group's triggers an incremental update at
// Low priority and is rescheduled by the rate at that moment. The refresh
// logs at debug level.

// markActive records a user request for group and spawns its refresh task
// if it has none.
func (f *Federated) markActive(group string) {
	now := f.now()
	f.mu.Lock()
	spawned := f.refresher.MarkActive(group, now)
	due, _ := f.refresher.Scheduled(group)
	rate := f.refresher.Tracker.Rate(group, now)
	f.mu.Unlock()
	if !spawned {
		return
	}
	f.log.Debug("Spawning background refresh task", "group", group)
	f.log.Debug("Group refresh scheduled", "group", group, "rps", round2(rate), "period_secs", round2(due.Sub(now).Seconds()))
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// round2 rounds to two decimals for log lines.
func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// RefreshTasks is the number of groups with a running refresh task.
func (f *Federated) RefreshTasks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refresher.Tasks()
}

// RunDueRefreshes runs the refresh tasks due at the service's clock and
// returns how many incremental updates it started. The background loop
// calls it; tests with a fake clock call it directly. The updates run in
// the background; wait for them with the returned channel, closed when all
// have finished.
func (f *Federated) RunDueRefreshes() (started int, done <-chan struct{}) {
	now := f.now()
	f.mu.Lock()
	actions := f.refresher.Due(now)
	f.mu.Unlock()
	var chans []<-chan struct{}
	for _, a := range actions {
		if a.Kind == mreader.RefreshStop {
			f.log.Debug("Group inactive, stopping refresh task", "group", a.Group)
			continue
		}
		f.log.Debug("Group refresh scheduled", "group", a.Group, "rps", round2(a.Rate), "period_secs", round2(a.Period.Seconds()))
		f.log.Debug("Triggering incremental update", "group", a.Group)
		ch, ok := f.incremental(a.Group)
		if !ok {
			continue // debounced: a page load just did it
		}
		started++
		c := make(chan struct{})
		chans = append(chans, c)
		go func() {
			<-ch
			close(c)
		}()
	}
	all := make(chan struct{})
	go func() {
		for _, c := range chans {
			<-c
		}
		close(all)
	}()
	return started, all
}

// refreshLoop runs due refresh tasks until the service closes.
func (f *Federated) refreshLoop() {
	defer f.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		f.mu.Lock()
		due, ok := f.refresher.Deadline()
		f.mu.Unlock()
		var tc <-chan time.Time
		if ok {
			timer.Reset(max(due.Sub(f.now()), 0))
			tc = timer.C
		}
		select {
		case <-f.ctx.Done():
			return
		case <-f.wake:
		case <-tc:
			f.RunDueRefreshes()
		}
		timer.Stop()
	}
}
