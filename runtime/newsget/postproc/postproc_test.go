package postproc

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/newsget/parity"
	"github.com/newsflow/newsflow/runtime/newsget/serve"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

const testGroup = "alt.binaries.newsflow"

// partSize is the yEnc part size of every posting; sliceSize the PAR2
// slice size: one part spans two slices.
const (
	partSize  = 2000
	sliceSize = 1000
)

// fixture is a posted job: its files, their PAR2 set, and a server.
type fixture struct {
	t        *testing.T
	srv      *nntptest.Server
	src      string            // where the originals are
	orig     map[string][]byte // data file name -> contents
	posts    []poster.Posting
	cfg      newsget.Config
	log      bytes.Buffer
	fetchLog []string // names of the jobs Fetch ran
}

// newFixture writes the data files, makes a PAR2 set "set" over them with
// recovery blocks, and posts everything under postName(name) (the
// obfuscated name of a post, or the name itself); skip drops articles.
func newFixture(t *testing.T, data map[string][]byte, recovery int, postName func(string) string, skip func(name string, part int) bool) *fixture {
	t.Helper()
	f := &fixture{t: t, src: t.TempDir(), orig: data}
	var names []string
	for n, b := range data {
		if err := os.WriteFile(filepath.Join(f.src, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	set, err := parity.Create(context.Background(), f.src, "set", names, sliceSize, recovery, parity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string(nil), names...)
	for _, v := range set.Volumes {
		files = append(files, filepath.Base(v))
	}
	f.srv = nntptest.Start(t, nntptest.Options{})
	f.srv.AddGroup(nntptest.Group{Name: testGroup})
	for i, n := range files {
		b, err := os.ReadFile(filepath.Join(f.src, n))
		if err != nil {
			t.Fatal(err)
		}
		pn := n
		if postName != nil {
			pn = postName(n)
		}
		p := poster.Posting{Name: pn, Data: b, PartSize: partSize, Group: testGroup, IDPrefix: fmt.Sprintf("f%d", i)}
		f.posts = append(f.posts, p)
		for k := 1; k <= p.Parts(); k++ {
			if skip != nil && skip(n, k) {
				continue
			}
			if err := f.srv.AddArticle(nntptest.Article{MessageID: p.MessageID(k), Raw: p.Article(k)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	f.cfg = newsget.Config{DownloadDir: filepath.Join(dir, "out"), QueueDir: filepath.Join(dir, "state"),
		Servers:        []newsget.ServerConfig{{Name: "a", Host: "127.0.0.1", Port: f.srv.Port(), Connections: 2}},
		ArticleTimeout: tomlconf.Duration(5 * time.Second), ConnectTimeout: tomlconf.Duration(5 * time.Second)}
	if err := f.cfg.Check(); err != nil {
		t.Fatal(err)
	}
	if err := f.cfg.ResolveDirs(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("engine log:\n%s", f.log.String())
		}
	})
	return f
}

// download runs an engine over cfg with dir as its download directory.
func (f *fixture) download(ctx context.Context, dir string, j newsget.Job) (*newsget.Summary, error) {
	cfg := f.cfg
	cfg.DownloadDir = dir
	e, err := newsget.New(&cfg, newsget.Options{SyncInterval: 10 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&f.log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	f.fetchLog = append(f.fetchLog, j.Name)
	return e.Download(ctx, []newsget.Job{j})
}

// run downloads the job with the volumes held back, then post-processes it.
func (f *fixture) run(unpack bool) (*newsget.Summary, *Result) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := f.download(ctx, f.cfg.DownloadDir, newsget.Job{Name: "job.nzb", NZB: poster.NZB(f.posts...), HoldRecovery: true})
	if err != nil {
		f.t.Fatal(err)
	}
	res := Run(ctx, Job{Dir: f.cfg.DownloadDir, Name: "job.nzb", Files: sum.Files},
		Options{Fetch: f.download, Unpack: unpack, Cleanup: true, Workers: 1})
	return sum, res
}

// bodies counts the BODY commands for the articles of the posting of name.
func (f *fixture) bodies(name string) int {
	ids := map[string]bool{}
	for _, p := range f.posts {
		if p.Name == name {
			for k := 1; k <= p.Parts(); k++ {
				ids[p.MessageID(k)] = true
			}
		}
	}
	n := 0
	for _, c := range f.srv.Commands() {
		if c.Cmd.Verb == "BODY" && len(c.Cmd.Args) > 0 && ids[c.Cmd.Args[0]] {
			n++
		}
	}
	return n
}

// volumeBodies is BODY commands per recovery volume posted.
func (f *fixture) volumeBodies() map[string]int {
	out := map[string]int{}
	for _, p := range f.posts {
		if strings.Contains(p.Name, ".vol") {
			out[p.Name] = f.bodies(p.Name)
		}
	}
	return out
}

// listing is the download directory's names (state excluded).
func (f *fixture) listing() []string {
	des, err := os.ReadDir(f.cfg.DownloadDir)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if de.Name() != ".newsget" {
			out = append(out, de.Name())
		}
	}
	return out
}

// wantOriginals checks every data file byte for byte.
func (f *fixture) wantOriginals() {
	f.t.Helper()
	for n, b := range f.orig {
		got, err := os.ReadFile(filepath.Join(f.cfg.DownloadDir, n))
		if err != nil {
			f.t.Errorf("%s: %v", n, err)
			continue
		}
		if !bytes.Equal(got, b) {
			f.t.Errorf("%s: contents differ from the original", n)
		}
	}
}

func twoFiles() map[string][]byte {
	return map[string][]byte{"a.bin": poster.RandomData(1, 9000), "b.bin": poster.RandomData(2, 6500)}
}

// TestCleanDownload: a clean download fetches no recovery volume (no BODY
// for their articles), and verify reads no file: every file is confirmed
// from the download's yEnc part CRCs.
func TestCleanDownload(t *testing.T) {
	f := newFixture(t, twoFiles(), 8, nil, nil)
	sum, res := f.run(false)
	if !sum.Complete() || res.Err != nil || res.Settled {
		t.Fatalf("complete %v, err %v, settled %v", sum.Complete(), res.Err, res.Settled)
	}
	for v, n := range f.volumeBodies() {
		if n != 0 {
			t.Errorf("%s: %d BODY commands, want 0", v, n)
		}
	}
	want := []Verified{{Set: "set.par2", Files: 2, Whole: 2, Quick: 2}}
	if d := cmp.Diff(want, res.Verified); d != "" {
		t.Errorf("verified (-want +got):\n%s", d)
	}
	if len(res.Fetched)+len(res.Repaired) != 0 || len(f.fetchLog) != 1 {
		t.Errorf("fetched %v, repaired %v, fetch jobs %v", res.Fetched, res.Repaired, f.fetchLog)
	}
	f.wantOriginals()
}

// TestPlainFilesCleanup: a release of plain files (no archive), verified
// whole, keeps its files and loses its PAR2 files with Cleanup, as with
// SABnzbd.
func TestPlainFilesCleanup(t *testing.T) {
	f := newFixture(t, twoFiles(), 8, nil, nil)
	sum, res := f.run(true)
	if !sum.Complete() || res.Err != nil {
		t.Fatalf("complete %v, err %v", sum.Complete(), res.Err)
	}
	if d := cmp.Diff([]string{"a.bin", "b.bin"}, f.listing()); d != "" {
		t.Errorf("folder after cleanup (-want +got):\n%s", d)
	}
	f.wantOriginals()
}

// TestRepairFetchesJustEnough: with articles missing, the stage fetches
// exactly the volumes Choose picks (counted in BODY commands at the
// server), repairs, and the files match the originals byte for byte.
func TestRepairFetchesJustEnough(t *testing.T) {
	// Part 2 of a.bin (bytes 2000-3999) and part 1 of b.bin: 4 slices.
	skip := func(name string, part int) bool {
		return name == "a.bin" && part == 2 || name == "b.bin" && part == 1
	}
	f := newFixture(t, twoFiles(), 10, nil, skip)
	sum, res := f.run(false)
	if res.Err != nil {
		t.Fatalf("post-processing failed: %v", res.Err)
	}
	// The download left a.bin and b.bin incomplete; Run wrote the repair
	// back into their results.
	if !res.Settled || !sum.Complete() {
		t.Errorf("settled %v, results %+v", res.Settled, sum.Files)
	}
	// Volumes of 1, 2, 4 and 3 blocks (vol00+01, vol01+02, vol03+04,
	// vol07+03): 4 blocks needed, the 4-block volume is the fewest bytes.
	wantBodies := map[string]int{"set.vol00+01.par2": 0, "set.vol01+02.par2": 0, "set.vol03+04.par2": 3, "set.vol07+03.par2": 0}
	if d := cmp.Diff(wantBodies, f.volumeBodies()); d != "" {
		t.Errorf("BODY commands per volume (-want +got):\n%s", d)
	}
	wantRep := []Repaired{{Name: "a.bin", Slices: 2}, {Name: "b.bin", Slices: 2}}
	if d := cmp.Diff(wantRep, res.Repaired); d != "" {
		t.Errorf("repaired (-want +got):\n%s", d)
	}
	if blocks, vols := res.FetchedBlocks(); blocks != 4 || vols != 1 || res.Received == 0 {
		t.Errorf("fetched %d blocks in %d volumes, %d bytes", blocks, vols, res.Received)
	}
	f.wantOriginals()
	if got := f.listing(); slices.ContainsFunc(got, func(n string) bool {
		return strings.HasSuffix(n, ".part") || strings.HasSuffix(n, ".incomplete")
	}) {
		t.Errorf("left behind: %v", got)
	}
}

// TestTooMuchDamage: when the held volumes cannot bring enough blocks the
// stage fails with the reason, fetches nothing and removes nothing: the
// incomplete files are back under NAME.part.
func TestTooMuchDamage(t *testing.T) {
	skip := func(name string, part int) bool { return name == "a.bin" && part <= 3 } // 6 slices
	f := newFixture(t, twoFiles(), 3, nil, skip)
	_, res := f.run(true)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "repair of set.par2 impossible: 6 slices to rebuild, 0 recovery blocks on disk, 3 more in the held volumes: 3 short") {
		t.Fatalf("err = %v", res.Err)
	}
	for v, n := range f.volumeBodies() {
		if n != 0 {
			t.Errorf("%s: %d BODY commands, want 0", v, n)
		}
	}
	want := []string{"a.bin.incomplete", "a.bin.part", "b.bin", "set.par2"}
	if d := cmp.Diff(want, f.listing()); d != "" {
		t.Errorf("folder (-want +got):\n%s", d)
	}
}

// TestObfuscatedRenamed: files posted under random names are found by
// the MD5 of their first 16 KiB, renamed to the set's names, and still
// confirmed from the download's CRCs.
func TestObfuscatedRenamed(t *testing.T) {
	obf := func(n string) string {
		if strings.HasSuffix(n, ".par2") {
			return n
		}
		return map[string]string{"a.bin": "x83f1c0", "b.bin": "q07ab2e"}[n]
	}
	f := newFixture(t, twoFiles(), 4, obf, nil)
	_, res := f.run(false)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := []Rename{{From: "x83f1c0", To: "a.bin"}, {From: "q07ab2e", To: "b.bin"}}
	if d := cmp.Diff(want, res.Renamed); d != "" {
		t.Errorf("renamed (-want +got):\n%s", d)
	}
	if res.Verified[0].Quick != 2 || res.Verified[0].Read != 0 {
		t.Errorf("verify %+v: want both files quick, nothing read", res.Verified[0])
	}
	f.wantOriginals()
}

// TestObfuscatedRepaired: an incomplete file posted under a random name
// is found by its first 16 KiB (intact), renamed to the set's name and
// repaired; its NAME.part and NAME.incomplete are gone.
func TestObfuscatedRepaired(t *testing.T) {
	obf := func(n string) string {
		if strings.HasSuffix(n, ".par2") {
			return n
		}
		return map[string]string{"a.bin": "x83f1c0", "b.bin": "q07ab2e"}[n]
	}
	data := map[string][]byte{"a.bin": poster.RandomData(1, 20000), "b.bin": poster.RandomData(2, 6500)}
	// Part 10 of a.bin: bytes 18000-19999, past its first 16 KiB.
	f := newFixture(t, data, 4, obf, func(name string, part int) bool { return name == "a.bin" && part == 10 })
	_, res := f.run(false)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if d := cmp.Diff([]Repaired{{Name: "a.bin", Slices: 2}}, res.Repaired); d != "" {
		t.Errorf("repaired (-want +got):\n%s", d)
	}
	f.wantOriginals()
	want := []string{"a.bin", "b.bin", "set.par2", "set.vol1+2.par2"}
	if d := cmp.Diff(want, f.listing()); d != "" {
		t.Errorf("folder (-want +got):\n%s", d)
	}
}

// TestRepairThenUnpack: a 7z archive in volumes, damaged in the download,
// is repaired, unpacked and cleaned up (archives and PAR2 files removed).
func TestRepairThenUnpack(t *testing.T) {
	sevenZip := ""
	for _, n := range []string{"7zz", "7z", "7za"} {
		if p, err := exec.LookPath(n); err == nil {
			sevenZip = p
			break
		}
	}
	if sevenZip == "" {
		t.Skip("7zz, 7z or 7za (Debian package 7zip) not installed: apt-get install 7zip")
	}
	work := t.TempDir()
	content := poster.RandomData(7, 20000)
	if err := os.WriteFile(filepath.Join(work, "movie.mkv"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	// Stored (-mx0) in 8000-byte volumes: movie.7z.001, .002, .003.
	cmd := exec.Command(sevenZip, "a", "-mx0", "-v8000b", "movie.7z", "movie.mkv")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", sevenZip, err, out)
	}
	data := map[string][]byte{}
	for _, n := range []string{"movie.7z.001", "movie.7z.002", "movie.7z.003"} {
		b, err := os.ReadFile(filepath.Join(work, n))
		if err != nil {
			t.Fatal(err)
		}
		data[n] = b
	}
	skip := func(name string, part int) bool { return name == "movie.7z.002" && part == 2 }
	f := newFixture(t, data, 6, nil, skip)
	_, res := f.run(true)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if len(res.Repaired) != 1 || res.Repaired[0].Name != "movie.7z.002" {
		t.Errorf("repaired %+v", res.Repaired)
	}
	got, err := os.ReadFile(filepath.Join(f.cfg.DownloadDir, "movie.mkv"))
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("movie.mkv: %v, same contents %v", err, bytes.Equal(got, content))
	}
	if d := cmp.Diff([]string{"movie.mkv"}, f.listing()); d != "" {
		t.Errorf("folder after cleanup (-want +got):\n%s", d)
	}
	if res.Unpack == nil || len(res.Unpack.Removed) == 0 {
		t.Errorf("unpack %+v", res.Unpack)
	}
}

// TestProcessor: as newsget serve's PostProcessor the stage marks a job
// Completed only once repaired (and unpacked), Failed with the reason
// otherwise; its Stages (the history's stage_log) say what was fetched
// and repaired.
func TestProcessor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lost   int // leading parts of a.bin lost
		want   serve.PostStatus
		reason string
	}{
		{"repaired", 1, serve.Completed, ""},
		{"beyond repair", 4, serve.Failed, "repair of set.par2 impossible: 8 slices to rebuild"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, twoFiles(), 4, nil, func(name string, part int) bool { return name == "a.bin" && part <= tc.lost })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sum, err := f.download(ctx, f.cfg.DownloadDir, newsget.Job{Name: "job.nzb", NZB: poster.NZB(f.posts...), HoldRecovery: true})
			if err != nil {
				t.Fatal(err)
			}
			p := &Processor{Options: Options{Fetch: EngineFetch(&f.cfg, newsget.Options{}), Unpack: true, Cleanup: true}}
			got := p.PostProcess(ctx, serve.PostJob{Dir: f.cfg.DownloadDir, Name: "job", Files: sum.Files})
			if got.Status != tc.want || !strings.Contains(got.Reason, tc.reason) {
				t.Fatalf("PostProcess = %+v, want status %v, reason %q", got, tc.want, tc.reason)
			}
			if tc.want == serve.Completed {
				f.wantOriginals()
				var repair []string
				for _, st := range got.Stages {
					if st.Name == "Repair" {
						repair = st.Actions
					}
				}
				if !slices.ContainsFunc(repair, func(l string) bool { return strings.HasPrefix(l, "[a.bin] Repaired (") }) ||
					!slices.ContainsFunc(repair, func(l string) bool { return strings.HasPrefix(l, "Fetched ") }) {
					t.Errorf("stages %+v: want a Repair stage that says a.bin was repaired and what was fetched", got.Stages)
				}
			}
		})
	}
}
