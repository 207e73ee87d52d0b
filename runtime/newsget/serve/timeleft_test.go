package serve

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestQueueTimeLeft: as SABnzbd's, a queued job's time left runs until it
// is done, after the jobs before it, at the speed of now; a held job has
// none, nor has any job while nothing downloads.
func TestQueueTimeLeft(t *testing.T) {
	d := &Daemon{}
	d.state.Queue = []*Job{
		{ID: "a", Name: "a", Bytes: 4000, Left: 2000, Seq: 1},
		{ID: "b", Name: "b", Bytes: 3000, Left: 3000, Seq: 2},
		{ID: "h", Name: "h", Bytes: 9000, Left: 9000, Seq: 3, Paused: true},
		{ID: "c", Name: "c", Bytes: 5000, Left: 5000, Seq: 4},
	}
	d.speed = 1000
	var got []string
	for _, s := range d.queueSlots() {
		got = append(got, s.ID+" "+s.Timeleft)
	}
	want := []string{"a 0:00:02", "b 0:00:05", "h 0:00:00", "c 0:00:10"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("time left (-want +got):\n%s", diff)
	}
	d.speed = 0
	for _, s := range d.queueSlots() {
		if s.Timeleft != "0:00:00" {
			t.Errorf("%s: time left %s with nothing downloading", s.ID, s.Timeleft)
		}
	}
}

// TestQueueTotalsAreTheSlots: the queue's mb, mbleft and timeleft are its
// slots' summed, the running job's bytes left as it downloads (not as
// last saved), so that a client adding up the slots finds the queue's
// figures.
func TestQueueTotalsAreTheSlots(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	td.api(t, "mode", "pause")
	for i, name := range []string{"a.bin", "b.bin"} {
		p := newPosting(name, uint64(200+i), 3<<20, 1<<20)
		td.addFile(t, poster.NZB(p), name+".nzb", "", "")
	}
	td.d.mu.Lock()
	j, k := td.d.state.Queue[0], td.d.state.Queue[1]
	td.d.run = &active{job: j, baseLeft: j.Left, done: 2 << 20} // 2 MiB of it fetched since the last save
	left, bytes := j.Left-2<<20+k.Left, j.Bytes+k.Bytes
	td.d.mu.Unlock()
	q := td.api(t, "mode", "queue")["queue"].(map[string]any)
	td.d.mu.Lock()
	td.d.run = nil
	td.d.mu.Unlock()
	var sum float64
	for _, sl := range q["slots"].([]any) {
		v, _ := strconv.ParseFloat(sl.(map[string]any)["mbleft"].(string), 64)
		sum += v
	}
	got := []any{q["mbleft"], q["sizeleft"], q["mb"], q["size"]}
	want := []any{mb(left), sizeWords(left), mb(bytes), sizeWords(bytes)}
	if d := cmp.Diff(want, got); d != "" || math.Abs(sum-float64(left)/(1<<20)) > 0.011 {
		t.Errorf("queue mbleft, sizeleft, mb, size (-want +got):\n%s\nits slots' mbleft add up to %.2f", d, sum)
	}
}

// TestHistorySizes: as SABnzbd's, history's total_size is of the whole
// history whatever the filters, month_size and week_size of the jobs
// completed since the first of the month and since Monday.
func TestHistorySizes(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.Local) // a Wednesday
	td := startDaemonWith(t, t.TempDir(), s, nil, func(o *Options) { o.Now = func() time.Time { return now } })
	defer td.stop()
	td.d.mu.Lock()
	for i, at := range []time.Time{
		time.Date(2026, 11, 25, 10, 0, 0, 0, time.Local), // today
		time.Date(2026, 11, 23, 0, 0, 0, 0, time.Local),  // Monday
		time.Date(2026, 11, 22, 23, 0, 0, 0, time.Local), // Sunday before
		time.Date(2026, 10, 31, 23, 0, 0, 0, time.Local), // last month
	} {
		td.d.hist = append(td.d.hist, HistoryEntry{ID: fmt.Sprintf("SABnzbd_nzo_%d", i), Name: fmt.Sprint("job", i),
			Category: []string{"tv", "movies"}[i%2], Status: "Completed", Bytes: 1 << (20 + i), Completed: at})
	}
	td.d.mu.Unlock()
	h := td.api(t, "mode", "history", "cat", "tv")["history"].(map[string]any)
	got := []any{h["total_size"], h["month_size"], h["week_size"], h["noofslots"]}
	if d := cmp.Diff([]any{"15.0 MB", "7.0 MB", "3.0 MB", 2.0}, got); d != "" {
		t.Errorf("history total_size, month_size, week_size, noofslots (-want +got):\n%s", d)
	}
}

// TestPageTimeLeftIdle: while nothing downloads (a paused queue) the
// status line's time left is a dash, as the jobs' rows are, not 0:00:00.
func TestPageTimeLeftIdle(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	td.api(t, "mode", "pause")
	td.addFile(t, poster.NZB(newPosting("a.bin", 300, 5000, 5000)), "a.nzb", "", "")
	if b := td.pageHTML(t); !strings.Contains(b, `Time left <b id="left">–</b>`) {
		t.Errorf("the status line's time left with the queue paused:\n%s", b)
	}
}
