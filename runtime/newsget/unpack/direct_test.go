package unpack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget/unpack/rartest"
)

// directFixture is a RAR 5 set of four volumes, not yet in dir: the test
// "downloads" them one by one.
func directFixture(t *testing.T, old bool) (dir string, names []string, vols [][]byte, big, small []byte) {
	big, small = pattern(7000, 3), pattern(500, 4)
	vols = rartest.WriteRAR5([]rartest.Entry{{Name: "show", Dir: true}, {Name: "show/big.bin", Data: big}, {Name: "small.txt", Data: small}}, 2000)
	if len(vols) != 4 {
		t.Fatalf("writer made %d volumes, want 4", len(vols))
	}
	return t.TempDir(), rarVolumes("job", len(vols), old), vols, big, small
}

// TestDirect: a Direct started with the first volume reads each volume
// as it is reported complete, waiting for the others (and answering
// "does not exist" for names the job does not bring); when the set is
// read, Dir renames the staged files into place without reading the
// volumes again (a volume changed on disk afterwards does not matter),
// and removes volumes and PAR2 files.
func TestDirect(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old_naming=%v", old), func(t *testing.T) {
			dir, names, vols, big, small := directFixture(t, old)
			writeFiles(t, dir, map[string][]byte{names[0]: vols[0], "job.par2": []byte("index")})
			pending := map[string]int64{}
			for i, n := range names[1:] {
				pending[n] = int64(len(vols[i+1]))
			}
			d, err := StartDirect(context.Background(), DirectSpec{Dir: dir, First: names[0],
				Complete: map[string]int64{names[0]: int64(len(vols[0])), "job.par2": 5}, Pending: pending})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(vols); i++ {
				writeFiles(t, dir, map[string][]byte{names[i]: vols[i]})
				d.Complete(names[i], names[i])
			}
			d.DownloadOver()
			if err := d.Wait(); err != nil {
				t.Fatal(err)
			}
			files, read, ok := d.Result()
			if !ok || !cmp.Equal(read, names) || !cmp.Equal(files, []string{"show/big.bin", "small.txt"}) {
				t.Fatalf("result: files %v volumes %v ok %v", files, read, ok)
			}
			// Dir must not extract again: damage a volume now.
			writeFiles(t, dir, map[string][]byte{names[2]: make([]byte, len(vols[2]))})
			res, err := Dir(context.Background(), dir, Options{Cleanup: true, Direct: []*Direct{d}})
			if err != nil || !res.OK() {
				t.Fatalf("Dir: %v %+v", err, res)
			}
			wantFile(t, filepath.Join(dir, "show/big.bin"), big)
			wantFile(t, filepath.Join(dir, "small.txt"), small)
			if diff := cmp.Diff([]string{"show/big.bin 7000", "small.txt 500"}, tree(t, dir)); diff != "" {
				t.Errorf("folder (-want +got):\n%s", diff)
			}
			d.Discard() // after Dir used it: nothing to remove, no error
			if diff := cmp.Diff([]string{"show/big.bin 7000", "small.txt 500"}, tree(t, dir)); diff != "" {
				t.Errorf("folder after Discard (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDirectStop: a Direct waiting for a volume stops at once with Stop,
// leaves no staging folder, and Dir then unpacks the set as usual from
// the volumes on disk.
func TestDirectStop(t *testing.T) {
	dir, names, vols, big, _ := directFixture(t, false)
	writeFiles(t, dir, map[string][]byte{names[0]: vols[0]})
	pending := map[string]int64{names[1]: 1, names[2]: 1, names[3]: 1}
	d, err := StartDirect(context.Background(), DirectSpec{Dir: dir, First: names[0], Pending: pending})
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string][]byte{names[1]: vols[1]})
	d.Complete(names[1], names[1])
	why := errors.New("an article of job.part3.rar is missing")
	d.Stop(why)
	if err := d.Wait(); !errors.Is(err, why) || strings.Count(err.Error(), why.Error()) != 1 {
		t.Fatalf("Wait = %v, want the reason given to Stop, once", err)
	}
	if _, _, ok := d.Result(); ok {
		t.Fatal("a stopped Direct has a result")
	}
	if left := tree(t, dir); strings.Contains(strings.Join(left, " "), stagePrefix) {
		t.Fatalf("staging folder left: %v", left)
	}
	writeFiles(t, dir, map[string][]byte{names[2]: vols[2], names[3]: vols[3]})
	res, err := Dir(context.Background(), dir, Options{Direct: []*Direct{d}})
	if err != nil || !res.OK() {
		t.Fatalf("Dir: %v %+v", err, res)
	}
	wantFile(t, filepath.Join(dir, "show/big.bin"), big)
}

// TestDirectDownloadOver: a volume the download never brought (the
// download ended) ends the Direct with an error; Dir then extracts the
// set from the volumes on disk. A 7z set is never read directly.
func TestDirectDownloadOver(t *testing.T) {
	dir, names, vols, big, _ := directFixture(t, false)
	writeFiles(t, dir, map[string][]byte{names[0]: vols[0]})
	d, err := StartDirect(context.Background(), DirectSpec{Dir: dir, First: names[0], Pending: map[string]int64{names[1]: 1}})
	if err != nil {
		t.Fatal(err)
	}
	d.DownloadOver()
	if err := d.Wait(); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Wait = %v, want the missing volume", err)
	}
	writeFiles(t, dir, map[string][]byte{names[1]: vols[1], names[2]: vols[2], names[3]: vols[3]})
	res, err := Dir(context.Background(), dir, Options{Direct: []*Direct{d}})
	if err != nil || !res.OK() {
		t.Fatalf("Dir: %v %+v", err, res)
	}
	wantFile(t, filepath.Join(dir, "show/big.bin"), big)
	if _, err := StartDirect(context.Background(), DirectSpec{Dir: dir, First: "job.7z.001"}); err == nil {
		t.Error("StartDirect accepted a 7z volume")
	}
}
