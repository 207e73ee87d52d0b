package newsget

import (
	"context"
	"hash/crc32"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestHoldRecovery: with Job.HoldRecovery the NZB's recovery volumes are
// not fetched (no BODY for their articles) but reported Held with their
// NZB entry; the index .par2 and the data are fetched, and each finished
// file carries its verified parts' ranges and CRCs.
func TestHoldRecovery(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	data := newPosting("data.bin", 1, 5000, 2000)
	index := newPosting("data.par2", 2, 300, 1000)
	vol := newPosting("data.vol0+2.par2", 3, 2500, 1000)
	serve(t, s, nil, data, index, vol)
	r := newRun(t, server(s, "a"))
	sum := downloadHeld(t, r, poster.NZB(data, index, vol))
	if !sum.Complete() {
		t.Fatalf("not complete: %v", results(sum))
	}
	bodies := bodyCounts(s)
	for n := 1; n <= vol.Parts(); n++ {
		if bodies[vol.MessageID(n)] != 0 {
			t.Errorf("BODY for the held volume's part %d", n)
		}
	}
	for n := 1; n <= data.Parts(); n++ {
		if bodies[data.MessageID(n)] != 1 {
			t.Errorf("data part %d: %d BODYs, want 1", n, bodies[data.MessageID(n)])
		}
	}
	var held, got []string
	for _, f := range sum.Files {
		if f.Held {
			held = append(held, f.Name)
			if f.Source == nil || len(f.Source.Segments) != vol.Parts() {
				t.Errorf("held %s: source %+v", f.Name, f.Source)
			}
			continue
		}
		got = append(got, f.Name)
		if f.Name == "data.bin" {
			want := []PartCRC{{0, 2000, crc32.ChecksumIEEE(data.Data[:2000])}, {2000, 2000, crc32.ChecksumIEEE(data.Data[2000:4000])},
				{4000, 1000, crc32.ChecksumIEEE(data.Data[4000:])}}
			if d := cmp.Diff(want, f.Parts); d != "" {
				t.Errorf("data.bin parts (-want +got):\n%s", d)
			}
		}
	}
	if d := cmp.Diff([]string{"data.vol0+2.par2"}, held); d != "" {
		t.Errorf("held (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"data.bin", "data.par2"}, got); d != "" {
		t.Errorf("fetched (-want +got):\n%s", d)
	}
}

// TestHoldNeedsIndex: volumes of a set whose index the NZB does not list
// are the whole set: they are fetched, not held.
func TestHoldNeedsIndex(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	data := newPosting("data.bin", 1, 3000, 1000)
	vol := newPosting("data.vol0+1.par2", 3, 1500, 1000)
	serve(t, s, nil, data, vol)
	r := newRun(t, server(s, "a"))
	sum := downloadHeld(t, r, poster.NZB(data, vol))
	if d := cmp.Diff([]string{"data.bin complete", "data.vol0+1.par2 complete"}, results(sum)); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
}

// downloadHeld runs one job with HoldRecovery.
func downloadHeld(t *testing.T, r *testRun, nzb []byte) *Summary {
	t.Helper()
	if err := r.cfg.Check(); err != nil {
		t.Fatal(err)
	}
	if err := r.cfg.ResolveDirs(); err != nil {
		t.Fatal(err)
	}
	e, err := New(&r.cfg, r.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := e.Download(ctx, []Job{{Name: "j.nzb", NZB: nzb, HoldRecovery: true}})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
