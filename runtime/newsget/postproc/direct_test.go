package postproc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/newsget/parity"
	"github.com/newsflow/newsflow/runtime/newsget/unpack"
	"github.com/newsflow/newsflow/runtime/newsget/unpack/rartest"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// rarRelease is a release as posted: a RAR 5 set of six volumes (one
// file spans them all), a PAR2 set over the volumes, and an .nfo posted
// last. Its server answers BODY itself so that a test can hold one
// article back until it says so, and then serve it or answer 430.
type rarRelease struct {
	srv      *nntptest.Server
	posts    []poster.Posting
	unpacked map[string][]byte // the archive's files
	wire     map[string][]byte // message-id -> BODY block
	hold     string            // the message-id held back
	release  chan struct{}
	missing  bool // after the release, hold is answered 430
}

func newRARRelease(t *testing.T, tag string) *rarRelease {
	t.Helper()
	r := &rarRelease{unpacked: map[string][]byte{"show/big.bin": poster.RandomData(21, 100000), "small.txt": poster.RandomData(22, 15000)},
		wire: map[string][]byte{}, release: make(chan struct{})}
	vols := rartest.WriteRAR5([]rartest.Entry{{Name: "show", Dir: true}, {Name: "show/big.bin", Data: r.unpacked["show/big.bin"]},
		{Name: "small.txt", Data: r.unpacked["small.txt"]}}, 20000)
	if len(vols) != 6 {
		t.Fatalf("writer made %d volumes, want 6", len(vols))
	}
	src := t.TempDir()
	var names []string
	for i, v := range vols {
		n := fmt.Sprintf("rel.part%d.rar", i+1)
		if err := os.WriteFile(filepath.Join(src, n), v, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	set, err := parity.Create(context.Background(), src, "rel", names, sliceSize, 12, parity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string(nil), names...)
	for _, v := range set.Volumes {
		files = append(files, filepath.Base(v))
	}
	if err := os.WriteFile(filepath.Join(src, "rel.nfo"), []byte("release notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files = append(files, "rel.nfo")
	r.srv = nntptest.Start(t, nntptest.Options{})
	r.srv.AddGroup(nntptest.Group{Name: testGroup})
	for i, n := range files {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		p := poster.Posting{Name: n, Data: b, PartSize: 5000, Group: testGroup, IDPrefix: fmt.Sprintf("%s%d", tag, i)}
		r.posts = append(r.posts, p)
		for k := 1; k <= p.Parts(); k++ {
			r.wire[p.MessageID(k)] = p.WireBody(k)
		}
	}
	r.srv.SetHandler("BODY", func(_ int, cmd proto.Command) []byte {
		id := ""
		if len(cmd.Args) > 0 {
			id = cmd.Args[0]
		}
		if id == r.hold {
			<-r.release
			if r.missing {
				return proto.AppendResponse(nil, proto.CodeNoSuchID, "No such article")
			}
		}
		w, ok := r.wire[id]
		if !ok {
			return proto.AppendResponse(nil, proto.CodeNoSuchID, "No such article")
		}
		return append(proto.AppendResponse(nil, proto.CodeBodyFollows, "0 "+id), w...)
	})
	t.Cleanup(func() {
		select {
		case <-r.release:
		default:
			close(r.release)
		}
	})
	return r
}

// post returns the posting of the file name.
func (r *rarRelease) post(t *testing.T, name string) poster.Posting {
	for _, p := range r.posts {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no posting %s", name)
	return poster.Posting{}
}

// add adds the release to sd as a job and returns its nzo_id.
func (r *rarRelease) add(t *testing.T, sd *serveDaemon) string {
	t.Helper()
	got := sd.call(t, map[string][]string{"mode": {"addfile"}}, poster.NZB(r.posts...), "Rel.Show.nzb")
	ids, _ := got["nzo_ids"].([]any)
	if len(ids) != 1 {
		t.Fatalf("addfile = %v", got)
	}
	return ids[0].(string)
}

// check says whether the job completed with the archive's files, byte for
// byte, and the archives and PAR2 files cleaned up.
func (r *rarRelease) check(t *testing.T, sd *serveDaemon, id string) {
	t.Helper()
	h := sd.history(t, id)
	if h["status"] != "Completed" {
		t.Fatalf("history: %v (%v)", h["status"], h["fail_message"])
	}
	storage := h["storage"].(string)
	for name, want := range r.unpacked {
		got, err := os.ReadFile(filepath.Join(storage, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v (same contents %v)", name, err, bytes.Equal(got, want))
		}
	}
	var left []string
	filepath.WalkDir(storage, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(storage, p)
			left = append(left, rel)
		}
		return nil
	})
	if want := "rel.nfo show/big.bin small.txt"; strings.Join(left, " ") != want {
		t.Errorf("job folder holds %v, want %s", left, want)
	}
}

// waitLog waits until the daemon's log has a line with s.
func waitLog(t *testing.T, sd *serveDaemon, s string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(sd.log.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// slowTimeout keeps an article held back by a test from timing out.
func slowTimeout(c *newsget.Config) { c.ArticleTimeout = tomlconf.Duration(time.Minute) }

// TestDirectUnpack: with direct unpack on (the default), the RAR set is
// extracted while the job downloads: the .nfo, posted last, is held back
// until the log says the direct unpack finished, so the download cannot
// have ended before it. Post-processing then renames its files into
// place (PAR2 verification still runs) instead of extracting again; the
// files are the archive's, byte for byte.
func TestDirectUnpack(t *testing.T) {
	r := newRARRelease(t, "du")
	r.hold = r.post(t, "rel.nfo").MessageID(1)
	sd := startServeWith(t, r.srv, slowTimeout)
	id := r.add(t, sd)
	waitLog(t, sd, "direct unpack finished")
	if strings.Contains(sd.log.String(), "post-processing") {
		t.Fatal("post-processing began before the held article was served")
	}
	close(r.release)
	r.check(t, sd, id)
	log := sd.log.String()
	if !strings.Contains(log, "direct unpack used") {
		t.Errorf("post-processing did not use the direct unpack:\n%s", log)
	}
	if strings.Index(log, "direct unpack finished") > strings.Index(log, "post-processing") {
		t.Error("the direct unpack finished after the download")
	}
}

// TestDirectUnpackRepair: an article of a late volume goes missing after
// the direct unpack started; it is given up (its staging folder goes)
// and the usual verify, fetch of recovery volumes, repair and unpack
// produce the archive's files.
func TestDirectUnpackRepair(t *testing.T) {
	if testing.Short() {
		t.Skip("repair")
	}
	r := newRARRelease(t, "dr")
	r.hold, r.missing = r.post(t, "rel.part5.rar").MessageID(2), true
	sd := startServeWith(t, r.srv, slowTimeout)
	id := r.add(t, sd)
	waitLog(t, sd, "direct unpack started")
	close(r.release)
	r.check(t, sd, id)
	log := sd.log.String()
	if !strings.Contains(log, "direct unpack given up") || strings.Contains(log, "direct unpack used") {
		t.Errorf("want the direct unpack given up and not used:\n%s", log)
	}
	if !strings.Contains(log, "fetching recovery volumes") {
		t.Errorf("no recovery volumes fetched: was anything repaired?\n%s", log)
	}
}

// TestDirectUnpackOff: direct_unpack = false: no direct unpack starts;
// the set is unpacked after the download, as ever.
func TestDirectUnpackOff(t *testing.T) {
	r := newRARRelease(t, "do")
	sd := startServeWith(t, r.srv, func(c *newsget.Config) {
		off := false
		c.DirectUnpack = &off
	})
	id := r.add(t, sd)
	r.check(t, sd, id)
	if log := sd.log.String(); strings.Contains(log, "direct unpack") {
		t.Errorf("direct unpack ran with direct_unpack = false:\n%s", log)
	}
}

// TestDirectUnpackSetByAPI: with direct_unpack = false in the file,
// set_config's direct_unpack=1 gives the next job a direct unpack, and
// direct_unpack=0 takes it from the one after.
func TestDirectUnpackSetByAPI(t *testing.T) {
	r := newRARRelease(t, "da")
	r.hold = r.post(t, "rel.nfo").MessageID(1)
	sd := startServeWith(t, r.srv, func(c *newsget.Config) {
		off := false
		c.DirectUnpack = &off
		slowTimeout(c)
	})
	set := func(v string) {
		t.Helper()
		got := sd.call(t, map[string][]string{"mode": {"set_config"}, "section": {"misc"}, "keyword": {"direct_unpack"}, "value": {v}}, nil, "")
		if got["config"] == nil {
			t.Fatalf("set_config direct_unpack=%s: %v", v, got)
		}
	}
	set("1")
	id := r.add(t, sd)
	waitLog(t, sd, "direct unpack finished")
	close(r.release)
	r.check(t, sd, id)
	if log := sd.log.String(); !strings.Contains(log, "direct unpack used") {
		t.Fatalf("direct_unpack set to 1, the job was not unpacked directly:\n%s", log)
	}
	set("0")
	id = r.add(t, sd)
	r.check(t, sd, id)
	if log := sd.log.String(); strings.Count(log, "direct unpack started") != 1 {
		t.Errorf("direct_unpack set to 0, the next job was unpacked directly:\n%s", log)
	}
}

// TestDirectUnpackPause: pausing a job during its direct unpack stops it
// and removes its staging folder before the download's run ends; resumed,
// the job's direct unpack starts again from the volumes already there and
// the files come out right.
func TestDirectUnpackPause(t *testing.T) {
	r := newRARRelease(t, "dp")
	r.hold = r.post(t, "rel.part5.rar").MessageID(2)
	sd := startServeWith(t, r.srv, slowTimeout)
	id := r.add(t, sd)
	waitLog(t, sd, "direct unpack started")
	if got := sd.call(t, map[string][]string{"mode": {"queue"}, "name": {"pause"}, "value": {id}}, nil, ""); got["status"] != true {
		t.Fatalf("pause = %v", got)
	}
	waitLog(t, sd, "direct unpack stopped with the download")
	if log := sd.log.String(); strings.Contains(log, "given up") {
		t.Errorf("a pause logged the direct unpack as given up for an unpack after the download:\n%s", log)
	}
	stages, _ := filepath.Glob(filepath.Join(sd.cfg.DownloadDir, "incomplete", id, ".newsget-unpack-*"))
	if len(stages) > 0 {
		t.Fatalf("staging folder left after the pause: %v", stages)
	}
	close(r.release)
	if got := sd.call(t, map[string][]string{"mode": {"queue"}, "name": {"resume"}, "value": {id}}, nil, ""); got["status"] != true {
		t.Fatalf("resume = %v", got)
	}
	r.check(t, sd, id)
	log := sd.log.String()
	if strings.Count(log, "direct unpack started") != 2 || !strings.Contains(log, "direct unpack used") {
		t.Errorf("want the direct unpack started again after the resume and used:\n%s", log)
	}
}

// TestEarlyHearsEveryFile: a job resumed with its volumes complete from
// an earlier run notes them finished one by one; the direct unpack
// starts only once every file of the job is known (else its reader,
// reaching a volume not yet noted, would find it "not there"), and then
// reads the whole set.
func TestEarlyHearsEveryFile(t *testing.T) {
	dir := t.TempDir()
	vols := rartest.WriteRAR5([]rartest.Entry{{Name: "a.bin", Data: poster.RandomData(51, 30000)}}, 10000)
	var notes []newsget.FileNote
	for i, v := range vols {
		n := fmt.Sprintf("x.part%d.rar", i+1)
		if err := os.WriteFile(filepath.Join(dir, n), v, 0o644); err != nil {
			t.Fatal(err)
		}
		notes = append(notes, newsget.FileNote{File: i, Files: len(vols), NZBName: n, Finished: true, Name: n, Size: int64(len(v)), Complete: true})
	}
	w := NewEarly(context.Background(), dir, unpack.Options{}, NewSlots(1), nil)
	w.OnFile(notes[0])
	w.mu.Lock()
	started := w.d != nil
	w.mu.Unlock()
	if started {
		t.Fatal("the direct unpack started before every file of the job was noted")
	}
	for _, n := range notes[1:] {
		w.OnFile(n)
	}
	d := w.Downloaded()
	if d == nil {
		t.Fatal("no direct unpack once every file was noted")
	}
	defer d.Discard()
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, read, ok := d.Result(); !ok || len(read) != len(vols) {
		t.Errorf("read %v, want the %d volumes", read, len(vols))
	}
}
