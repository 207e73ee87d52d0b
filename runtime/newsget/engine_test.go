package newsget

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// TestDownloadBasic downloads two multi-part files (one with a short last
// part) over two connections with pipelining and checks every byte, the
// names, that each BODY was sent once, and the summary's counters.
func TestDownloadBasic(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	a := newPosting("a.bin", 1, 10000, 3000) // 4 parts, the last 1000 bytes
	b := newPosting("b.dat", 2, 4096, 4096)  // one part
	serve(t, s, nil, a, b)
	r := newRun(t, server(s, "s1"))
	sum := r.run(t, poster.NZB(a, b))
	if !sum.Complete() {
		t.Fatalf("not complete: %v %+v", results(sum), sum)
	}
	want := map[string]string{"a.bin": digest(a.Data), "b.dat": digest(b.Data)}
	if diff := cmp.Diff(want, r.outputs(t)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for id, n := range bodyCounts(s) {
		if n != 1 {
			t.Errorf("BODY %s sent %d times", id, n)
		}
	}
	if sum.Stats.Done != 5 || sum.Stats.Requests != 5 || sum.Decoded != 14096 {
		t.Errorf("stats: done %d requests %d decoded %d; want 5, 5, 14096", sum.Stats.Done, sum.Stats.Requests, sum.Decoded)
	}
	// The job is finished: nothing left in the queue, no file info.
	if des, _ := os.ReadDir(filepath.Join(r.cfg.QueueDir, "jobs", "queue")); len(des) != 0 {
		t.Errorf("queue still holds %d entries", len(des))
	}
}

// TestDownloadMissingSegment: a part on no server leaves the file as
// NAME.part with NAME.incomplete naming the exact byte range missing.
func TestDownloadMissingSegment(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	a := newPosting("a.bin", 3, 10000, 3000)
	serve(t, s, func(p poster.Posting, n int) bool { return n == 2 }, a)
	r := newRun(t, server(s, "s1"))
	sum := r.run(t, poster.NZB(a))
	if sum.Complete() {
		t.Fatal("complete with a part missing")
	}
	if diff := cmp.Diff([]string{"a.bin.part incomplete: missing segment 2 bytes 3000-5999 (3000 bytes)"}, results(sum)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	side, err := os.ReadFile(filepath.Join(r.cfg.DownloadDir, "a.bin.incomplete"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(side), "missing segment 2 bytes 3000-5999 (3000 bytes)") {
		t.Errorf("sidecar:\n%s", side)
	}
	part, err := os.ReadFile(filepath.Join(r.cfg.DownloadDir, "a.bin.part"))
	if err != nil {
		t.Fatal(err)
	}
	// Every byte outside the missing range is right.
	if len(part) != len(a.Data) || string(part[:3000]) != string(a.Data[:3000]) || string(part[6000:]) != string(a.Data[6000:]) {
		t.Errorf("the .part holds wrong bytes outside the missing range")
	}
}

// TestQuota: a daily quota stops the download after the request that
// reaches it (nothing more is asked for), the state persists, a rerun the
// same day asks for nothing, and a rerun with a larger quota resumes with
// only the parts not yet downloaded.
func TestQuota(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("q.bin", 40, 12000, 3000)
	serve(t, s, nil, p)
	c := server(s, "s1")
	c.Connections, c.Pipeline = 1, 1
	r := newRun(t, c)
	r.cfg.DailyQuota = 5000 // two parts of about 3.1 KB on the wire
	sum := r.run(t, poster.NZB(p))
	if sum.Complete() || !strings.Contains(sum.Quota, "daily quota of 4.9 KiB reached") {
		t.Fatalf("quota: %q, results %v", sum.Quota, results(sum))
	}
	if n := s.Count("BODY"); n != 2 {
		t.Errorf("%d BODY commands before the quota stopped it, want 2", n)
	}
	st, err := os.ReadFile(filepath.Join(r.cfg.QueueDir, "quota.json"))
	if err != nil || !strings.Contains(string(st), `"day_bytes"`) {
		t.Fatalf("quota state: %s %v", st, err)
	}

	again := func(quota tomlconf.Size) *Summary {
		r2 := newRun(t, c)
		r2.cfg.DownloadDir, r2.cfg.QueueDir, r2.cfg.DailyQuota = r.cfg.DownloadDir, r.cfg.QueueDir, quota
		return r2.run(t, poster.NZB(p))
	}
	if sum := again(5000); sum.Quota == "" || s.Count("BODY") != 2 {
		t.Fatalf("rerun with the quota used up: quota %q, BODY %d", sum.Quota, s.Count("BODY"))
	}
	if sum := again(1 << 20); !sum.Complete() {
		t.Fatalf("rerun with room: %v %q", results(sum), sum.Quota)
	}
	counts := bodyCounts(s)
	for n := 1; n <= p.Parts(); n++ {
		if counts[p.MessageID(n)] != 1 {
			t.Errorf("part %d fetched %d times", n, counts[p.MessageID(n)])
		}
	}
	if diff := cmp.Diff(map[string]string{"q.bin": digest(p.Data)}, r.outputs(t)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

// TestRerunIncompleteJob: a job with an incomplete file stays queued; when
// the missing part appears and the same command runs again, the file
// already complete is left alone (not fetched, not refused as existing)
// and only the missing part is fetched.
func TestRerunIncompleteJob(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	a := newPosting("done.bin", 70, 6000, 3000)
	b := newPosting("hole.bin", 71, 9000, 3000)
	serve(t, s, func(p poster.Posting, n int) bool { return p.Name == "hole.bin" && n == 2 }, a, b)
	r := newRun(t, server(s, "s1"))
	if sum := r.run(t, poster.NZB(a, b)); sum.Complete() {
		t.Fatal("complete with a part missing")
	}
	if err := s.AddArticle(nntptest.Article{MessageID: b.MessageID(2), Raw: b.Article(2)}); err != nil {
		t.Fatal(err)
	}
	before := len(s.Commands())
	r2 := newRun(t, server(s, "s1"))
	r2.cfg.DownloadDir, r2.cfg.QueueDir = r.cfg.DownloadDir, r.cfg.QueueDir
	sum := r2.run(t, poster.NZB(a, b))
	if diff := cmp.Diff([]string{"done.bin complete", "hole.bin complete"}, results(sum)); diff != "" {
		t.Fatalf("results (-want +got):\n%s", diff)
	}
	var fetched []string
	for _, c := range s.Commands()[before:] {
		if c.Cmd.Verb == "BODY" {
			fetched = append(fetched, c.Cmd.Args[0])
		}
	}
	if diff := cmp.Diff([]string{b.MessageID(2)}, fetched); diff != "" {
		t.Errorf("BODY in the rerun (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"done.bin": digest(a.Data), "hole.bin": digest(b.Data)}, r.outputs(t)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}
