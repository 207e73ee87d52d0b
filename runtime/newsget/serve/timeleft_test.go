package serve

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
