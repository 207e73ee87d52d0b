package download

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestMemoryPerSegment: an NZB may hold a million segments, so the
// Scheduler's live heap per segment stays under a generous bound (100
// bytes) while the segments wait, and after they were all fetched or all
// failed. The segments' own data (message-ids, groups) belong to the caller
// and are not counted. No timing: the bound is on bytes.
func TestMemoryPerSegment(t *testing.T) {
	const n = 100_000
	const maxPerSegment = 100
	groups := []string{"alt.binaries.test"}
	posted := epoch.Add(-24 * time.Hour)
	segs := make([]Segment, n)
	for i := range segs {
		segs[i] = Segment{Key: Key{File: 1 + i/50_000, Number: 1 + i%50_000}, MessageID: fmt.Sprintf("<%d@many>", i),
			Bytes: 700_000, Posted: posted, Groups: groups}
	}
	for _, tc := range []struct {
		name    string
		outcome Outcome // every request's outcome; 0 for no request answered
	}{
		{"waiting", 0},
		{"all fetched", OK},
		{"all missing", Missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := []Server{{ID: 1, Active: true, Connections: 4, Pipeline: 20, JoinGroup: true}}
			if tc.outcome == 0 {
				servers[0].Active = false // nothing is assigned: every segment waits
			}
			before := liveHeap()
			s, err := NewScheduler(Config{}, servers)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Add(epoch, segs...); err != nil {
				t.Fatal(err)
			}
			if tc.outcome != 0 {
				runAll(t, s, tc.outcome)
				if !s.Finished() {
					t.Fatalf("not finished: %+v", s.Stats())
				}
			}
			grew := liveHeap() - before
			runtime.KeepAlive(s)
			t.Logf("%d bytes of live heap per segment", grew/n)
			if per := grew / n; per > maxPerSegment {
				t.Errorf("the Scheduler holds %d bytes of live heap per segment (%d MB for %d), want at most %d",
					per, grew>>20, n, maxPerSegment)
			}
		})
	}
	runtime.KeepAlive(segs)
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// runAll connects every dial and answers every request with o, in order,
// until nothing is left to do.
func runAll(t *testing.T, s *Scheduler, o Outcome) {
	t.Helper()
	type req struct {
		c    ConnID
		k    Key
		dial bool
	}
	var queue []req
	for {
		for e, ok := s.NextEvent(); ok; e, ok = s.NextEvent() {
			switch e := e.(type) {
			case Dial:
				queue = append(queue, req{c: e.Conn, dial: true})
			case Assign:
				queue = append(queue, req{c: e.Conn, k: e.Segment})
			}
		}
		if len(queue) == 0 {
			return
		}
		r := queue[0]
		queue = queue[1:]
		var err error
		if r.dial {
			err = s.Connected(epoch, r.c)
		} else {
			err = s.Report(epoch, r.c, r.k, o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
