package newsget

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestRemovedStaysRemoved: a file cleanup removed (MarkRemoved) counts as
// complete on every later run of the NZB, not only the next one: the
// second run's record of the job keeps it marked removed, so a third run
// fetches nothing either.
func TestRemovedStaysRemoved(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	a := newPosting("a.rar", 1, 3000, 1000)
	serve(t, s, nil, a)
	r := newRun(t, server(s, "a"))
	nzb := poster.NZB(a)
	if sum := r.run(t, nzb); !sum.Complete() {
		t.Fatalf("first run: %v", results(sum))
	}
	if err := os.Remove(filepath.Join(r.cfg.DownloadDir, "a.rar")); err != nil {
		t.Fatal(err)
	}
	if err := MarkRemoved(&r.cfg, Job{Name: "job1.nzb", NZB: nzb}, []string{"a.rar"}); err != nil {
		t.Fatal(err)
	}
	for run := 2; run <= 3; run++ {
		sum := r.run(t, nzb)
		if len(sum.Files) != 1 || !sum.Files[0].Already || !sum.Files[0].Removed {
			t.Fatalf("run %d: %+v, want already complete and removed", run, sum.Files[0])
		}
	}
	if n := bodyCounts(s)[a.MessageID(1)]; n != 1 {
		t.Errorf("part 1 fetched %d times in three runs, want 1", n)
	}
}
