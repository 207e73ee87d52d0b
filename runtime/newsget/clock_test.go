package newsget

import (
	"slices"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestBackoffFromClock checks that the engine waits for the Scheduler's
// deadlines on the clock it was given: with Options.Now an hour ahead of
// the wall clock, a server blocked for 20 ms after a 502 serves again 20 ms
// later, not an hour later (the wait once came from time.Until).
func TestBackoffFromClock(t *testing.T) {
	p := newPosting("c.bin", 3, 6000, 3000)
	s := nntptest.Start(t, nntptest.Options{})
	s.AddFault(nntptest.Fault{Cmd: "BODY", Code: 502, Text: "access denied", Times: 1})
	serve(t, s, nil, p)
	sc := server(s, "s1")
	one(&sc)
	r := newRun(t, sc)
	r.opts.Now = func() time.Time { return time.Now().Add(time.Hour) }
	sum := r.run(t, poster.NZB(p))
	if got, want := results(sum), []string{"c.bin complete"}; !slices.Equal(got, want) {
		t.Errorf("results = %q, want %q", got, want)
	}
}
