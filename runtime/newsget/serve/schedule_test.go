package serve

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

func TestScheduleBetween(t *testing.T) {
	loc := time.UTC
	mon := time.Date(2026, 11, 23, 0, 0, 0, 0, loc) // a Monday
	es := []newsget.ScheduleEntry{
		{At: "08:00", Action: "pause"},
		{At: "18:30", Days: "sat,sun", Action: "resume"},
		{At: "01:00", Days: "1,7", Action: "speedlimit", Value: "2M"},
	}
	for _, tc := range []struct {
		from, to time.Time
		want     []string
	}{
		{mon, mon.Add(8 * time.Hour), []string{"Mon 01:00 speedlimit", "Mon 08:00 pause"}},
		{mon.Add(8 * time.Hour), mon.Add(9 * time.Hour), nil}, // 08:00 is not after from
		{mon.Add(5*24*time.Hour + 18*time.Hour), mon.Add(7*24*time.Hour + 2*time.Hour),
			[]string{"Sat 18:30 resume", "Sun 01:00 speedlimit", "Sun 08:00 pause", "Sun 18:30 resume", "Mon 01:00 speedlimit"}},
		{mon.Add(time.Hour), mon, nil},
	} {
		var got []string
		for _, s := range scheduleBetween(es, tc.from, tc.to) {
			got = append(got, fmt.Sprintf("%s %s", s.at.Format("Mon 15:04"), s.e.Action))
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%v..%v (-want +got):\n%s", tc.from, tc.to, d)
		}
	}
}

// clock is a settable Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// TestSchedule: the daemon pauses and sets the speed limit at the
// schedule's times, and after a restart is in the state the latest
// events say.
func TestSchedule(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	dir := t.TempDir()
	mon := time.Date(2026, 11, 23, 7, 59, 0, 0, time.Local)
	c := &clock{t: mon}
	edit := func(cfg *newsget.Config) {
		cfg.Serve.Schedule = []newsget.ScheduleEntry{{At: "08:00", Action: "pause"}, {At: "09:00", Action: "speedlimit", Value: "3M"},
			{At: "07:00", Action: "resume"}, {At: "07:30", Action: "speedlimit", Value: "1M"}}
	}
	opts := func(o *Options) { o.Now = c.now }
	td := startDaemonWith(t, dir, s, edit, opts)
	queue := func(td *testDaemon) string {
		q := td.api(t, "mode", "queue")["queue"].(map[string]any)
		return fmt.Sprint(q["paused"], " ", q["speedlimit_abs"])
	}
	wait := func(td *testDaemon, want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); queue(td) != want; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("queue %s, want %s", queue(td), want)
			}
		}
	}
	wait(td, "false 1048576") // the 07:00 resume and the 07:30 limit, applied at the start
	c.set(mon.Add(2 * time.Minute))
	wait(td, "true 1048576")
	c.set(mon.Add(62 * time.Minute))
	wait(td, "true 3145728")
	td.stop()
	td2 := startDaemonWith(t, dir, s, edit, opts)
	defer td2.stop()
	wait(td2, "true 3145728")
}
