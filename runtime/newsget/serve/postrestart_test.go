package serve

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// ppFunc is a PostProcessor made of a function.
type ppFunc func(ctx context.Context, job PostJob) PostResult

func (f ppFunc) PostProcess(ctx context.Context, job PostJob) PostResult { return f(ctx, job) }

// TestStopDuringPostProcess: the daemon stops while post-processing has
// already changed the downloaded files (as a PAR2 repair or an unpack
// cleanup does). After the restart the job goes straight to
// post-processing with the first run's results: nothing is fetched again
// and the engine never sees the changed files (it would find a file it
// did not write and refuse it, failing the job).
func TestStopDuringPostProcess(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("Film.mkv", 11, 90_000, 20_000)
	serveArticles(t, s, nil, p)
	dir := t.TempDir()

	entered := make(chan PostJob, 1)
	td := startDaemonWith(t, dir, s, nil, func(o *Options) {
		o.PostProcess = ppFunc(func(ctx context.Context, job PostJob) PostResult {
			// "Repair" the file in place, then be stopped mid-way.
			f, err := os.OpenFile(filepath.Join(job.Dir, "Film.mkv"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Errorf("post-process: %v", err)
			} else {
				f.Write([]byte("repaired"))
				f.Close()
			}
			entered <- job
			<-ctx.Done()
			return PostResult{Status: Failed, Reason: "stopped"}
		})
	})
	id := td.addFile(t, poster.NZB(p), "Film.nzb", "movies", "")["nzo_ids"].([]any)[0].(string)
	first := <-entered
	q := td.api(t, "mode", "queue")["queue"].(map[string]any)["slots"].([]any)
	if len(q) != 1 || q[0].(map[string]any)["status"] != "Verifying" || q[0].(map[string]any)["mbleft"] != "0.00" {
		t.Errorf("queue while post-processing = %v", q)
	}
	td.stop()
	bodies := s.Count("BODY")

	var mu sync.Mutex
	var second []PostJob
	td2 := startDaemonWith(t, dir, s, nil, func(o *Options) {
		o.PostProcess = ppFunc(func(ctx context.Context, job PostJob) PostResult {
			mu.Lock()
			second = append(second, job)
			mu.Unlock()
			return PostResult{Status: Completed}
		})
	})
	defer td2.stop()
	h := td2.waitHistory(t, id)
	if h["status"] != "Completed" {
		t.Fatalf("history = %v", h)
	}
	if n := s.Count("BODY"); n != bodies {
		t.Errorf("%d BODY commands after the restart, want none", n-bodies)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(second) != 1 {
		t.Fatalf("post-processed %d times after the restart, want once", len(second))
	}
	if d := cmp.Diff(first, second[0]); d != "" {
		t.Errorf("post-processing input after the restart (-first run +second):\n%s", d)
	}
	got, err := os.ReadFile(filepath.Join(h["storage"].(string), "Film.mkv"))
	if err != nil || !bytes.Equal(got, append(append([]byte{}, p.Data...), "repaired"...)) {
		t.Errorf("finished file: %v, %d bytes; want the posted file with the repair", err, len(got))
	}
}

// TestDeleteDuringPostProcess: deleting a job while it is post-processed
// cancels post-processing and removes its folder; it never reaches the
// history.
func TestDeleteDuringPostProcess(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("Gone.mkv", 12, 30_000, 20_000)
	serveArticles(t, s, nil, p)
	dir := t.TempDir()
	entered := make(chan string, 1)
	cancelled := make(chan struct{})
	td := startDaemonWith(t, dir, s, nil, func(o *Options) {
		o.PostProcess = ppFunc(func(ctx context.Context, job PostJob) PostResult {
			entered <- job.Dir
			<-ctx.Done()
			close(cancelled)
			return PostResult{Status: Failed, Reason: "cancelled"}
		})
	})
	id := td.addFile(t, poster.NZB(p), "Gone.nzb", "", "")["nzo_ids"].([]any)[0].(string)
	jobDir := <-entered
	if got := td.api(t, "mode", "queue", "name", "delete", "value", id); got["status"] != true {
		t.Fatalf("delete = %v", got)
	}
	<-cancelled
	td.stop()
	if _, err := os.Stat(jobDir); !os.IsNotExist(err) {
		t.Errorf("the deleted job's folder %s is still there: %v", jobDir, err)
	}
	td.d.mu.Lock()
	defer td.d.mu.Unlock()
	if len(td.d.hist) != 0 || len(td.d.state.Queue) != 0 {
		t.Errorf("after delete: history %v, queue %v", td.d.hist, td.d.state.Queue)
	}
}
