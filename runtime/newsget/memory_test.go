package newsget

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestMemoryManyMissing: an NZB of many segments that no server has
// costs a bounded number of bytes per segment. While the last segment of
// such an NZB fails (the most the Engine holds: the parsed NZB, the
// Scheduler and every missing segment recorded), the live heap the run
// added stays under a generous bound per segment: the Scheduler keeps
// about 50 bytes per segment, the missing segments go into a slice (not a
// map) and the parsed segment list is dropped once scheduled. No timing:
// the bound is on bytes.
func TestMemoryManyMissing(t *testing.T) {
	const n = 50_000
	const maxPerSegment = 280
	s := nntptest.Start(t, nntptest.Options{Unrecorded: true}) // empty: every BODY is 430
	var nzb bytes.Buffer
	nzb.WriteString(`<nzb><file subject="&quot;many.bin&quot; yEnc (1/1)" date="1700000000"><groups><group>alt.test</group></groups><segments>`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&nzb, `<segment bytes="700000" number="%d">%d@many</segment>`, i, i)
	}
	nzb.WriteString("</segments></file></nzb>\n")
	r := newRun(t, ServerConfig{Name: "s", Host: "127.0.0.1", Port: s.Port(), Connections: 4, Pipeline: 20})
	if err := r.cfg.Check(); err != nil {
		t.Fatal(err)
	}
	if err := r.cfg.ResolveDirs(); err != nil {
		t.Fatal(err)
	}
	r.opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	failed, wrongBytes, grew := 0, 0, int64(0)
	before := liveHeap()
	r.opts.OnSegment = func(sn SegmentNote) {
		if sn.Bytes != 700_000 { // from the Scheduler now: the parsed list is dropped
			wrongBytes++
		}
		if failed++; failed == n {
			grew = liveHeap() - before
		}
	}
	e, err := New(&r.cfg, r.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := e.Download(ctx, []Job{{Name: "many.nzb", NZB: nzb.Bytes()}})
	if err != nil {
		t.Fatal(err)
	}
	if failed != n || len(sum.Files) != 1 || len(sum.Files[0].Missing) != n {
		t.Fatalf("%d segments failed, want %d; summary %+v", failed, n, sum.Files)
	}
	if wrongBytes > 0 {
		t.Errorf("%d segment notes without the NZB's bytes=", wrongBytes)
	}
	t.Logf("%d bytes of live heap per segment", grew/n)
	if per := grew / n; per > maxPerSegment {
		t.Errorf("the run holds %d bytes of live heap per segment (%d MB for %d), want at most %d", per, grew>>20, n, maxPerSegment)
	}
	runtime.KeepAlive(nzb)
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
