package serve

import (
	"testing"
	"time"
)

// TestStatsSavedDropsOldDays: a day older than maxDays leaves the file at
// the save that finds it old, not one save later.
func TestStatsSavedDropsOldDays(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	old := now.AddDate(0, 0, -maxDays-1).Format(time.DateOnly)
	today := now.Format(time.DateOnly)
	s := newServerStats()
	s.load([]ServerStat{{Name: "a", Daily: map[string]int64{old: 5, today: 7}}})
	out := s.saved(now)
	if len(out) != 1 || len(out[0].Daily) != 1 || out[0].Daily[today] != 7 {
		t.Errorf("saved %+v, want only today's 7 bytes", out)
	}
}
