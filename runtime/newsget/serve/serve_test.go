package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

const testGroup = "alt.binaries.newsflow"

const testKey = "0123456789abcdef"

func newPosting(name string, seed uint64, size, partSize int) poster.Posting {
	return poster.Posting{Name: name, Data: poster.RandomData(seed, size), PartSize: partSize, Group: testGroup,
		IDPrefix: fmt.Sprintf("%s-%d", strings.ReplaceAll(name, ".", "-"), seed)}
}

// serveArticles puts the postings' parts on s, except those skip names.
func serveArticles(t *testing.T, s *nntptest.Server, skip func(p poster.Posting, n int) bool, ps ...poster.Posting) {
	t.Helper()
	s.AddGroup(nntptest.Group{Name: testGroup})
	for _, p := range ps {
		for n := 1; n <= p.Parts(); n++ {
			if skip != nil && skip(p, n) {
				continue
			}
			if err := s.AddArticle(nntptest.Article{MessageID: p.MessageID(n), Raw: p.Article(n)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// testDaemon is a daemon on a loopback HTTP listener.
type testDaemon struct {
	d    *Daemon
	cfg  *newsget.Config
	url  string
	stop func()
	log  bytes.Buffer
}

// startDaemon runs a daemon over dir against the nntptest server s.
func startDaemon(t *testing.T, dir string, s *nntptest.Server, edit func(*newsget.Config)) *testDaemon {
	t.Helper()
	return startDaemonWith(t, dir, s, edit, nil)
}

// startDaemonWith is startDaemon with a say in the daemon's Options.
func startDaemonWith(t *testing.T, dir string, s *nntptest.Server, edit func(*newsget.Config), opts func(*Options)) *testDaemon {
	t.Helper()
	cfg := &newsget.Config{DownloadDir: filepath.Join(dir, "dl"), Servers: []newsget.ServerConfig{
		{Name: "main", Host: "127.0.0.1", Port: s.Port(), Connections: 2}},
		ArticleTimeout: tomlconf.Duration(5 * time.Second), ConnectTimeout: tomlconf.Duration(5 * time.Second)}
	cfg.Serve.APIKey = testKey
	cfg.Categories = []newsget.Category{{Name: "tv"}, {Name: "movies", Dir: filepath.Join(dir, "movies"), Priority: "high"}}
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckServe(); err != nil {
		t.Fatal(err)
	}
	if err := cfg.ResolveDirs(); err != nil {
		t.Fatal(err)
	}
	td := &testDaemon{cfg: cfg}
	n := 0
	o := Options{Log: slog.New(slog.NewTextHandler(&td.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		NewID: func() string { n++; return fmt.Sprintf("%04d", n) }, WatchInterval: 20 * time.Millisecond,
		Engine: newsget.Options{BackoffBase: 20 * time.Millisecond, BackoffMax: 80 * time.Millisecond, SyncInterval: 10 * time.Millisecond}}
	if opts != nil {
		opts(&o)
	}
	d, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	td.d = d
	hs := httptest.NewServer(d.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	td.url = hs.URL
	td.stop = func() { cancel(); <-done; hs.Close() }
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", td.log.String())
		}
	})
	return td
}

// api calls /api with the parameters (apikey and output added) and
// decodes the JSON answer.
func (td *testDaemon) api(t *testing.T, params ...string) map[string]any {
	t.Helper()
	v := url.Values{"apikey": {testKey}, "output": {"json"}}
	for i := 0; i+1 < len(params); i += 2 {
		v.Set(params[i], params[i+1])
	}
	return td.get(t, "/api?"+v.Encode())
}

func (td *testDaemon) get(t *testing.T, path string) map[string]any {
	t.Helper()
	resp, err := http.Get(td.url + path)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, resp)
}

// pageHTML is the page at / as the browser gets it.
func (td *testDaemon) pageHTML(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(td.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON (%s): %q", resp.Status, b)
	}
	return m
}

// addFile is Sonarr's DownloadNzb: POST /api?mode=addfile&cat=..&priority=..
// with the NZB as the multipart field "name".
func (td *testDaemon) addFile(t *testing.T, nzb []byte, filename, cat, priority string) map[string]any {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("name", filename)
	fw.Write(nzb)
	mw.Close()
	v := url.Values{"mode": {"addfile"}, "cat": {cat}, "priority": {priority}, "apikey": {testKey}, "output": {"json"}}
	resp, err := http.Post(td.url+"/api?"+v.Encode(), mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, resp)
}

// waitHistory polls the history (as the *arr apps do) until the job is in
// it, and returns its slot.
func (td *testDaemon) waitHistory(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		h := td.api(t, "mode", "history", "start", "0", "limit", "30")
		for _, s := range h["history"].(map[string]any)["slots"].([]any) {
			if s.(map[string]any)["nzo_id"] == id {
				return s.(map[string]any)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s never reached the history", id)
	return nil
}

var timeleftRE = regexp.MustCompile(`^\d+:\d\d:\d\d$`)

// TestSonarrSequence is what Sonarr's SABnzbd client does, in order
// (SabnzbdProxy: GetVersion, GetConfig, GetFullStatus, DownloadNzb,
// GetQueue, GetHistory, RemoveFrom history with del_files), with the
// types its JSON classes need.
func TestSonarrSequence(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("Show.S01E01.mkv", 1, 300_000, 20_000)
	serveArticles(t, s, nil, p)
	dir := t.TempDir()
	td := startDaemon(t, dir, s, nil)
	defer td.stop()

	if v := td.api(t, "mode", "version"); v["version"] != Version {
		t.Errorf("version = %v", v)
	}
	cfg := td.api(t, "mode", "get_config")["config"].(map[string]any)
	misc := cfg["misc"].(map[string]any)
	if misc["complete_dir"] != filepath.Join(td.cfg.DownloadDir, "complete") {
		t.Errorf("misc.complete_dir = %v", misc["complete_dir"])
	}
	if misc["direct_unpack"] != float64(1) || misc["direct_unpack_threads"] != float64(newsget.DefaultDirectMax) {
		t.Errorf("misc.direct_unpack = %v, direct_unpack_threads = %v; want the defaults", misc["direct_unpack"], misc["direct_unpack_threads"])
	}
	var cats []string
	for _, c := range cfg["categories"].([]any) {
		cm := c.(map[string]any)
		cats = append(cats, fmt.Sprintf("%v dir=%v priority=%v", cm["name"], cm["dir"], cm["priority"]))
	}
	want := []string{"* dir= priority=0", "tv dir=tv priority=0", "movies dir=" + filepath.Join(dir, "movies") + " priority=1"}
	if d := cmp.Diff(want, cats); d != "" {
		t.Errorf("categories (-want +got):\n%s", d)
	}
	if st := td.api(t, "mode", "fullstatus", "skip_dashboard", "1")["status"].(map[string]any); st["completedir"] == nil {
		t.Errorf("fullstatus without completedir: %v", st)
	}

	add := td.addFile(t, poster.NZB(p), "Show.S01E01.nzb", "tv", "-100")
	if add["status"] != true || len(add["nzo_ids"].([]any)) != 1 {
		t.Fatalf("addfile = %v", add)
	}
	id := add["nzo_ids"].([]any)[0].(string)

	q := td.api(t, "mode", "queue", "start", "0", "limit", "30")["queue"].(map[string]any)
	if _, ok := q["paused"].(bool); !ok {
		t.Errorf("queue.paused is not a bool: %v", q["paused"])
	}
	for _, sl := range q["slots"].([]any) {
		slot := sl.(map[string]any)
		for _, k := range []string{"nzo_id", "filename", "cat", "priority", "status", "mb", "mbleft", "percentage", "timeleft"} {
			if _, ok := slot[k].(string); !ok {
				t.Errorf("slot %s = %#v, want a string", k, slot[k])
			}
		}
		if !timeleftRE.MatchString(slot["timeleft"].(string)) {
			t.Errorf("timeleft %q is not H:MM:SS", slot["timeleft"])
		}
		if slot["cat"] != "tv" || slot["filename"] != "Show.S01E01" {
			t.Errorf("slot = %v", slot)
		}
	}

	h := td.waitHistory(t, id)
	if h["status"] != "Completed" || h["category"] != "tv" || h["name"] != "Show.S01E01" {
		t.Fatalf("history slot = %v", h)
	}
	if _, ok := h["bytes"].(float64); !ok {
		t.Errorf("history bytes = %#v, want a number", h["bytes"])
	}
	storage := h["storage"].(string)
	if storage != filepath.Join(td.cfg.DownloadDir, "complete", "tv", "Show.S01E01") {
		t.Errorf("storage = %s", storage)
	}
	got, err := os.ReadFile(filepath.Join(storage, "Show.S01E01.mkv"))
	if err != nil || !bytes.Equal(got, p.Data) {
		t.Fatalf("finished file: %v (equal %v)", err, bytes.Equal(got, p.Data))
	}
	if q := td.api(t, "mode", "queue")["queue"].(map[string]any); len(q["slots"].([]any)) != 0 {
		t.Errorf("queue not empty after the job finished: %v", q)
	}
	srv := td.api(t, "mode", "fullstatus")["status"].(map[string]any)["servers"].([]any)
	if len(srv) != 1 || srv[0].(map[string]any)["articles"].(float64) != float64(p.Parts()) {
		t.Errorf("per-server stats = %v, want %d articles", srv, p.Parts())
	}

	del := td.api(t, "mode", "history", "name", "delete", "del_files", "1", "value", id)
	if del["status"] != true {
		t.Errorf("history delete = %v", del)
	}
	if _, err := os.Stat(storage); !os.IsNotExist(err) {
		t.Errorf("del_files=1 left %s: %v", storage, err)
	}
	if h := td.api(t, "mode", "history")["history"].(map[string]any); h["noofslots"].(float64) != 0 {
		t.Errorf("history after delete = %v", h)
	}
}

// TestAPIKey: no key or a wrong one gets SABnzbd's error, never data.
func TestAPIKey(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	tests := []struct{ query, wantErr string }{
		{"mode=queue&output=json", "API Key Required"},
		{"mode=queue&output=json&apikey=wrong", "API Key Incorrect"},
		{"mode=history&apikey=0123456789abcdeX", "API Key Incorrect"},
		{"mode=get_config&apikey=", "API Key Required"},
		{"mode=addurl&name=http://127.0.0.1:1/x.nzb&apikey=nope", "API Key Incorrect"},
	}
	for _, tc := range tests {
		got := td.get(t, "/api?"+tc.query)
		want := map[string]any{"status": false, "error": tc.wantErr}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.query, d)
		}
	}
}

// TestAddURL fetches NZBs from a local indexer, as SABnzbd does: the
// answer comes at once with the nzo_id and the job shows "Grabbing" until
// its NZB is fetched; one that cannot be fetched (a 404, over
// max_nzb_size, not an NZB) goes to the history as Failed with the reason.
// A stop during the fetch leaves the job Grabbing; the next start fetches
// it again.
func TestAddURL(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("movie.mkv", 2, 100_000, 20_000)
	serveArticles(t, s, nil, p)
	nzb := poster.NZB(p)
	release := make(chan struct{})
	var slowHits atomic.Int32
	indexer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/get/1":
			w.Header().Set("Content-Disposition", `attachment; filename="Movie.2020.nzb"`)
			w.Write(nzb)
		case "/slow/2":
			if slowHits.Add(1) == 1 {
				<-r.Context().Done() // the first try never answers: the daemon stops
				return
			}
			<-release
			w.Header().Set("Content-Disposition", `attachment; filename="Slow.Movie.nzb"`)
			w.Write(nzb)
		case "/big.nzb":
			w.Write(bytes.Repeat([]byte("x"), 5000))
		case "/junk.nzb":
			w.Write([]byte("not xml"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer indexer.Close()
	dir := t.TempDir()
	edit := func(c *newsget.Config) {
		c.Serve.MaxNZBSize, c.Serve.AddURLAllowPrivate, c.Serve.NoDupes = 4096, true, "pause"
	}
	td := startDaemon(t, dir, s, edit)
	if got := td.api(t, "mode", "addurl", "name", "ftp://example.org/x.nzb"); got["error"] != `addurl: "ftp://example.org/x.nzb" is not an http(s) URL` {
		t.Errorf("ftp URL: %v", got)
	}
	for _, tc := range []struct{ path, wantErr string }{
		{"/missing.nzb", "addurl: " + strings.TrimPrefix(indexer.URL, "http://") + " answered 404 Not Found"},
		{"/big.nzb", "addurl: the NZB is larger than max_nzb_size (4096 bytes)"},
		{"/junk.nzb", "refused NZB junk.nzb: "},
	} {
		got := td.api(t, "mode", "addurl", "name", indexer.URL+tc.path)
		if got["status"] != true {
			t.Fatalf("%s: %v", tc.path, got)
		}
		h := td.waitHistory(t, got["nzo_ids"].([]any)[0].(string))
		if h["status"] != "Failed" || !strings.HasPrefix(h["fail_message"].(string), tc.wantErr) {
			t.Errorf("%s: history %v, want Failed: %q", tc.path, h, tc.wantErr)
		}
	}

	slow := td.api(t, "mode", "addurl", "name", indexer.URL+"/slow/2", "cat", "movies")["nzo_ids"].([]any)[0].(string)
	q := td.api(t, "mode", "queue")["queue"].(map[string]any)["slots"].([]any)
	if len(q) != 1 || q[0].(map[string]any)["status"] != "Grabbing" || q[0].(map[string]any)["nzo_id"] != slow {
		t.Errorf("queue while grabbing = %v", q)
	}
	// Stop only once the first try has reached the indexer: a request the
	// stop cancels before it is sent would leave the restarted daemon's try
	// as the first, the one that never answers.
	for deadline := time.Now().Add(30 * time.Second); slowHits.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the first grab never reached the indexer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	td.stop()
	td = startDaemon(t, dir, s, edit)
	defer td.stop()
	q = td.api(t, "mode", "queue")["queue"].(map[string]any)["slots"].([]any)
	if len(q) != 1 || q[0].(map[string]any)["status"] != "Grabbing" || q[0].(map[string]any)["nzo_id"] != slow {
		t.Errorf("queue after a restart while grabbing = %v", q)
	}

	got := td.api(t, "mode", "addurl", "name", indexer.URL+"/get/1", "cat", "movies")
	if got["status"] != true {
		t.Fatalf("addurl = %v", got)
	}
	h := td.waitHistory(t, got["nzo_ids"].([]any)[0].(string))
	if h["status"] != "Completed" || h["name"] != "Movie.2020" || h["storage"] != filepath.Join(filepath.Dir(td.cfg.DownloadDir), "movies", "Movie.2020") {
		t.Errorf("history = %v", h)
	}
	// The slow one is the same NZB: fetched, then held as a duplicate.
	close(release)
	q = td.api(t, "mode", "queue")["queue"].(map[string]any)["slots"].([]any)
	for len(q) == 1 && q[0].(map[string]any)["status"] == "Grabbing" {
		time.Sleep(20 * time.Millisecond)
		q = td.api(t, "mode", "queue")["queue"].(map[string]any)["slots"].([]any)
	}
	if len(q) != 1 || q[0].(map[string]any)["nzo_id"] != slow || q[0].(map[string]any)["filename"] != "Slow.Movie" ||
		q[0].(map[string]any)["status"] != "Paused" || q[0].(map[string]any)["duplicate"] != "same NZB content as Movie.2020" {
		t.Errorf("the slow grab after the restart = %v", q)
	}
}

// TestWatchDir: an NZB dropped in watch_dir (in a category's subfolder)
// is queued, moved aside, downloaded.
func TestWatchDir(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("ep.mkv", 3, 60_000, 20_000)
	serveArticles(t, s, nil, p)
	dir := t.TempDir()
	watch := filepath.Join(dir, "watch")
	os.MkdirAll(filepath.Join(watch, "tv"), 0o755)
	td := startDaemon(t, dir, s, func(c *newsget.Config) { c.Serve.WatchDir = watch })
	defer td.stop()
	if err := os.WriteFile(filepath.Join(watch, "tv", "Ep.nzb"), poster.NZB(p), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(watch, "bad.nzb"), []byte("<nzb"), 0o644)
	h := td.waitHistory(t, "SABnzbd_nzo_0001")
	if h["status"] != "Completed" || h["category"] != "tv" {
		t.Errorf("history = %v", h)
	}
	for _, f := range []string{".queued/Ep.nzb", ".refused/bad.nzb", ".refused/bad.nzb.error"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(watch, f)); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Errorf("%s: %v", f, err)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestFailFast: the data file lacks far more articles than the one PAR2
// block can repair; the job fails with the reason, before the end.
func TestFailFast(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	data := newPosting("x.part01.rar", 4, 400_000, 10_000)
	vol := newPosting("x.vol00+01.par2", 5, 10_000, 10_000)
	serveArticles(t, s, func(p poster.Posting, n int) bool { return p.Name == data.Name && n%2 == 0 }, data, vol)
	td := startDaemon(t, t.TempDir(), s, nil)
	defer td.stop()
	add := td.addFile(t, poster.NZB(vol, data), "x.nzb", "", "")
	h := td.waitHistory(t, add["nzo_ids"].([]any)[0].(string))
	// Two or three blocks: yEnc's escapes make each part's article a
	// little longer or shorter than the volume's, and which parts fail
	// first is the connections' race.
	if h["status"] != "Failed" || !regexp.MustCompile(`^too many articles missing: repair needs at least [23] PAR2 blocks, at most 1 are available`).MatchString(h["fail_message"].(string)) {
		t.Errorf("history = %v", h)
	}
}

// TestDuplicateAndRestart: the same NZB twice is flagged and held; the
// queue (with pauses) and the history are as they were after a restart.
func TestDuplicateAndRestart(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("dup.mkv", 6, 40_000, 20_000)
	serveArticles(t, s, nil, p)
	dir := t.TempDir()
	td := startDaemon(t, dir, s, nil)
	first := td.addFile(t, poster.NZB(p), "Dup.nzb", "tv", "")["nzo_ids"].([]any)[0].(string)
	td.waitHistory(t, first)
	td.api(t, "mode", "pause")
	second := td.addFile(t, poster.NZB(p), "Other.Name.nzb", "tv", "")["nzo_ids"].([]any)[0].(string)
	slots := func(td *testDaemon) []string {
		var out []string
		for _, s := range td.api(t, "mode", "queue")["queue"].(map[string]any)["slots"].([]any) {
			sm := s.(map[string]any)
			out = append(out, fmt.Sprintf("%s %s %v %v", sm["nzo_id"], sm["status"], sm["labels"], sm["duplicate"]))
		}
		return out
	}
	want := []string{second + " Paused [DUPLICATE] same NZB content as Dup"}
	if d := cmp.Diff(want, slots(td)); d != "" {
		t.Errorf("queue (-want +got):\n%s", d)
	}
	td.stop()

	td2 := startDaemon(t, dir, s, nil)
	defer td2.stop()
	if d := cmp.Diff(want, slots(td2)); d != "" {
		t.Errorf("queue after restart (-want +got):\n%s", d)
	}
	if q := td2.api(t, "mode", "queue")["queue"].(map[string]any); q["paused"] != true {
		t.Errorf("global pause lost in the restart: %v", q["paused"])
	}
	if h := td2.waitHistory(t, first); h["status"] != "Completed" {
		t.Errorf("history after restart = %v", h)
	}
}
