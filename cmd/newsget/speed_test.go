package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget"
)

// TestSpeedMeter: the shown speed is the last speedWindow's, and the ETA
// is computed from it: a fast first second does not keep the shown speed
// high (as a whole-run average would) nor the ETA short.
func TestSpeedMeter(t *testing.T) {
	const total = 100e6
	type shown struct {
		Speed float64 // MB/s
		ETA   time.Duration
	}
	// 10 MB in the first second, then 1 MB/s.
	var m speedMeter
	var got []shown
	received := int64(0)
	for sec := 1; sec <= 12; sec++ {
		if sec == 1 {
			received += 10e6
		} else {
			received += 1e6
		}
		speed, eta := m.add(newsget.Progress{Elapsed: time.Duration(sec) * time.Second, Received: received, TotalBytes: total})
		got = append(got, shown{speed / 1e6, eta})
	}
	want := []shown{
		{10, 9 * time.Second},   // 10 MB in 1 s; 90 MB left
		{5.5, 16 * time.Second}, // 11 MB in 2 s
		{4, 22 * time.Second},
		{3.25, 27 * time.Second},
		{2.8, 31 * time.Second}, // 14 MB in 5 s
		{1, 85 * time.Second},   // the window has left the fast start: 15 - 10 MB in 5 s
		{1, 84 * time.Second},
		{1, 83 * time.Second},
		{1, 82 * time.Second},
		{1, 81 * time.Second},
		{1, 80 * time.Second},
		{1, 79 * time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shown speed and ETA each second (-want +got):\n%s", diff)
	}
	// The whole-run average would still say 21/12 = 1.75 MB/s at the end
	// and an ETA of 45 s; the meter says 1 MB/s and 79 s.
	var fresh speedMeter
	if s, e := fresh.add(newsget.Progress{}); s != 0 || e != 0 {
		t.Errorf("at the start: %v %v, want nothing", s, e)
	}
}
