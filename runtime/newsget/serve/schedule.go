package serve

import (
	"sort"
	"strings"
	"time"

	"github.com/newsflow/newsflow/runtime/newsget"
)

// The speed schedule ([[serve.schedule]]): at its times of day the queue
// is paused or resumed, or the speed limit set. The sampler looks once a
// second for the events since it last looked; at the start the latest
// event of the past week is applied, so that a restart finds the state
// the schedule says.

// scheduled is one occurrence of a schedule entry.
type scheduled struct {
	at time.Time
	e  newsget.ScheduleEntry
}

// scheduleBetween lists the occurrences in (from, to], oldest first.
func scheduleBetween(entries []newsget.ScheduleEntry, from, to time.Time) []scheduled {
	var out []scheduled
	if !to.After(from) {
		return nil
	}
	for day := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, from.Location()); !day.After(to); day = day.AddDate(0, 0, 1) {
		for _, e := range entries {
			h, m, err := e.Clock()
			if err != nil || !e.OnDay(day.Weekday()) {
				continue
			}
			at := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, day.Location())
			if at.After(from) && !at.After(to) {
				out = append(out, scheduled{at, e})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// runSchedule applies the events in (from, to].
func (d *Daemon) runSchedule(from, to time.Time) {
	for _, s := range scheduleBetween(d.cfg.Serve.Schedule, from, to) {
		d.applySchedule(s.e)
	}
}

// startSchedule applies, at the start, the latest event of each kind
// (pause or resume; speed limit) of the past week.
func (d *Daemon) startSchedule(now time.Time) {
	var pause, limit *newsget.ScheduleEntry
	for _, s := range scheduleBetween(d.cfg.Serve.Schedule, now.AddDate(0, 0, -7), now) {
		if strings.EqualFold(s.e.Action, "speedlimit") {
			limit = &s.e
		} else {
			pause = &s.e
		}
	}
	for _, e := range []*newsget.ScheduleEntry{limit, pause} {
		if e != nil {
			d.applySchedule(*e)
		}
	}
}

func (d *Daemon) applySchedule(e newsget.ScheduleEntry) {
	var err error
	switch strings.ToLower(e.Action) {
	case "pause":
		err = d.PauseAll(true)
	case "resume":
		err = d.PauseAll(false)
	case "speedlimit":
		err = d.SetSpeedLimit(e.Value)
	}
	if err != nil {
		d.log.Warn("schedule", "at", e.At, "action", e.Action, "value", e.Value, "err", err)
		return
	}
	d.log.Info("schedule", "at", e.At, "action", e.Action, "value", e.Value)
}
