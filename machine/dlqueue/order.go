package dlqueue

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Priority is a job's priority, with SABnzbd's numbers (the *arr apps
// send and read them): Force 2, High 1, Normal 0, Low -1. SABnzbd's
// Paused (-2) is not a priority here but a flag on the entry; Default
// (-100) means "the category's".
type Priority int

// The priorities, SABnzbd's numbers.
const (
	Default Priority = -100
	Paused  Priority = -2
	Low     Priority = -1
	Normal  Priority = 0
	High    Priority = 1
	Force   Priority = 2
)

// String is SABnzbd's word for the priority, as its queue slots show it.
func (p Priority) String() string {
	switch p {
	case Force:
		return "Force"
	case High:
		return "High"
	case Normal:
		return "Normal"
	case Low:
		return "Low"
	case Paused:
		return "Paused"
	case Default:
		return "Default"
	}
	return strconv.Itoa(int(p))
}

// ParsePriority reads a priority as a number ("-1", "2", "-100") or a word
// ("force", "High", "normal", "low", "paused", "default"). The empty
// string is Default.
func ParsePriority(s string) (Priority, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Default, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		switch p := Priority(n); p {
		case Default, Paused, Low, Normal, High, Force:
			return p, nil
		}
		return 0, fmt.Errorf("priority %d: want -100, -2, -1, 0, 1 or 2", n)
	}
	for _, p := range []Priority{Default, Paused, Low, Normal, High, Force} {
		if strings.EqualFold(s, p.String()) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("priority %q: want force, high, normal, low, paused or default", s)
}

// Entry is a job in the daemon's queue as far as ordering cares.
type Entry struct {
	ID       string
	Priority Priority // Force, High, Normal or Low
	Seq      uint64   // arrival order: smaller came first
	Paused   bool     // paused by the user: never runs until resumed
}

// Sort orders entries as the queue shows and runs them: higher priority
// first, then earlier arrival. It sorts in place and is stable for equal
// keys (Seq is unique in practice).
func Sort(es []Entry) {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Priority != es[j].Priority {
			return es[i].Priority > es[j].Priority
		}
		return es[i].Seq < es[j].Seq
	})
}

// Next returns the entry to run now: the first in Sort order that is not
// paused. When the whole queue is paused (globalPause), only Force jobs
// run, as in SABnzbd. ok is false when nothing may run.
func Next(es []Entry, globalPause bool) (Entry, bool) {
	sorted := append([]Entry(nil), es...)
	Sort(sorted)
	for _, e := range sorted {
		if e.Paused {
			continue
		}
		if globalPause && e.Priority != Force {
			continue
		}
		return e, true
	}
	return Entry{}, false
}
