package newsget

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestFileNotes: OnFile hears of each file of a job once queued (every
// file to download, before any file already settled) and once finished;
// a rerun of the job notes the file finished in the first run as
// finished (complete) after the one it downloads again.
func TestFileNotes(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	a := newPosting("a.bin", 1, 5000, 2000)
	b := newPosting("b.bin", 2, 5000, 2000)
	serve(t, s, func(p poster.Posting, n int) bool { return p.Name == "b.bin" && n == 2 }, a, b)
	nzb := poster.NZB(a, b)
	r := newRun(t, server(s, "s"))
	var notes []string
	r.opts.OnFile = func(n FileNote) {
		state := "queued"
		switch {
		case n.Finished && n.Complete:
			state = "complete " + n.Name
		case n.Finished:
			state = "incomplete " + n.Name
		}
		notes = append(notes, fmt.Sprintf("%d/%d %s %s", n.File, n.Files, n.NZBName, state))
	}
	r.run(t, nzb)
	// The two finish in either order.
	if len(notes) == 4 && notes[2] > notes[3] {
		notes[2], notes[3] = notes[3], notes[2]
	}
	want := []string{"0/2 a.bin queued", "1/2 b.bin queued", "0/2 a.bin complete a.bin", "1/2 b.bin incomplete b.bin.part"}
	if d := cmp.Diff(want, notes); d != "" {
		t.Errorf("first run (-want +got):\n%s", d)
	}
	notes = nil
	r.run(t, nzb)
	want = []string{"1/2 b.bin queued", "0/2 a.bin complete a.bin", "1/2 b.bin incomplete b.bin.part"}
	if d := cmp.Diff(want, notes); d != "" {
		t.Errorf("rerun (-want +got):\n%s", d)
	}
}
