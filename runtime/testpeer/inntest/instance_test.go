package inntest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

// TestStartInstanceInnfeed: an instance started outside a test's
// lifecycle stores articles, and StartInnfeed sends one batch to two
// peers at once, exits, and reports its resource usage.
func TestStartInstanceInnfeed(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping INN-backed test: %v", err)
	}
	base := t.TempDir()
	if err := os.Chmod(filepath.Dir(base), 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := StartInstance(base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}()
	ids := postMany(t, srv, "inst", 20)
	batch, err := srv.BatchLines(ids)
	if err != nil {
		t.Fatal(err)
	}
	var peers []InnfeedPeer
	var sinks []*nullpeer.Sink
	for _, name := range []string{"one", "two"} {
		s, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{RecordIDs: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sinks = append(sinks, s)
		peers = append(peers, InnfeedPeer{Name: name, Addr: s.Addr(), Connections: 2, Batch: batch})
	}
	p, err := srv.StartInnfeed(peers, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"one": 0, "two": 0}, ex.Unsent); diff != "" {
		t.Errorf("unsent (-want +got):\n%s", diff)
	}
	if ex.Usage == nil || ex.Usage.Utime.Nano()+ex.Usage.Stime.Nano() <= 0 {
		t.Errorf("no CPU time in the usage: %+v", ex.Usage)
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for i, s := range sinks {
		got := map[string]bool{}
		for _, id := range s.IDs() {
			got[id] = true
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("peer %d got (-want +got):\n%s", i, diff)
		}
	}
}
