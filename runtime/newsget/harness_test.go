package newsget

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// testGroup is the group fixtures are posted to.
const testGroup = "alt.binaries.newsflow"

// posting returns a posting of size bytes in parts of partSize.
func newPosting(name string, seed uint64, size, partSize int) poster.Posting {
	return poster.Posting{Name: name, Data: poster.RandomData(seed, size), PartSize: partSize, Group: testGroup,
		IDPrefix: fmt.Sprintf("%s-%d", strings.ReplaceAll(name, ".", "-"), seed)}
}

// serve puts the postings' parts on s, except those skip names.
func serve(t *testing.T, s *nntptest.Server, skip func(p poster.Posting, n int) bool, ps ...poster.Posting) {
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

// server is a ServerConfig for an nntptest server.
func server(s *nntptest.Server, name string) ServerConfig {
	return ServerConfig{Name: name, Host: "127.0.0.1", Port: s.Port(), Connections: 2}
}

// testRun is one engine run's setup.
type testRun struct {
	cfg  Config
	opts Options
	log  bytes.Buffer
}

// newRun returns a run into a fresh directory with quick timeouts.
func newRun(t *testing.T, servers ...ServerConfig) *testRun {
	dir := t.TempDir()
	r := &testRun{cfg: Config{DownloadDir: filepath.Join(dir, "out"), QueueDir: filepath.Join(dir, "state"),
		Servers: servers, ArticleTimeout: tomlconf.Duration(5 * time.Second), ConnectTimeout: tomlconf.Duration(5 * time.Second)}}
	r.opts = Options{BackoffBase: 20 * time.Millisecond, BackoffMax: 80 * time.Millisecond, SyncInterval: 10 * time.Millisecond}
	return r
}

// engine checks the configuration and returns a new Engine logging to
// r.log; the caller closes it.
func (r *testRun) engine(t *testing.T) *Engine {
	t.Helper()
	if err := r.cfg.Check(); err != nil {
		t.Fatal(err)
	}
	if err := r.cfg.ResolveDirs(); err != nil {
		t.Fatal(err)
	}
	r.opts.Log = slog.New(slog.NewTextHandler(&r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := New(&r.cfg, r.opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// run downloads the NZBs and returns the summary.
func (r *testRun) run(t *testing.T, nzbs ...[]byte) *Summary {
	t.Helper()
	e := r.engine(t)
	defer e.Close()
	var list []Job
	for i, n := range nzbs {
		list = append(list, Job{Name: fmt.Sprintf("job%d.nzb", i+1), NZB: n})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := e.Download(ctx, list)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("engine log:\n%s", r.log.String())
		}
	})
	return sum
}

// outputs lists the files in the download directory with their sha256
// (first 8 bytes, hex), state files excluded.
func (r *testRun) outputs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	des, err := os.ReadDir(r.cfg.DownloadDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if de.Name() == ".newsget" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(r.cfg.DownloadDir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[de.Name()] = digest(data)
	}
	return out
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return fmt.Sprintf("%x", h[:8])
}

// bodyCounts counts BODY commands per message-id.
func bodyCounts(s *nntptest.Server) map[string]int {
	n := map[string]int{}
	for _, c := range s.Commands() {
		if c.Cmd.Verb == "BODY" && len(c.Cmd.Args) > 0 {
			n[c.Cmd.Args[0]]++
		}
	}
	return n
}

// results summarises file results as "name complete" / "name: err".
func results(s *Summary) []string {
	var out []string
	for _, f := range s.Files {
		if f.Complete {
			out = append(out, f.Name+" complete")
		} else {
			out = append(out, f.Name+" incomplete: "+strings.TrimSpace(FormatMissing(f.Missing)))
		}
	}
	sort.Strings(out)
	return out
}
