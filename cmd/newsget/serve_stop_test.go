package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestServeStopLog stops newsget serve with SIGTERM in the middle of a
// download: the log says why it stops, what it saved (the jobs queued,
// the job interrupted and where it resumes) and, last, that it stopped.
func TestServeStopLog(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	s.AddGroup(nntptest.Group{Name: "alt.binaries.newsflow"})
	// 250 articles at 20 ms each over two connections: the stop, sent
	// after the fifth, lands seconds before the download could end.
	p := poster.Posting{Name: "slow.bin", Data: poster.RandomData(7, 1_000_000), PartSize: 4000,
		Group: "alt.binaries.newsflow", IDPrefix: "serve-stop"}
	for n := 1; n <= p.Parts(); n++ {
		if err := s.AddArticle(nntptest.Article{MessageID: p.MessageID(n), Raw: p.Article(n)}); err != nil {
			t.Fatal(err)
		}
	}
	s.AddFault(nntptest.Fault{Cmd: "BODY", Delay: 20 * time.Millisecond})
	dir := t.TempDir()
	config := filepath.Join(dir, "newsget.toml")
	os.WriteFile(config, []byte(fmt.Sprintf("download_dir = %q\n[serve]\napi_key = %q\nlisten = \"127.0.0.1:0\"\n", filepath.Join(dir, "dl"), serveKey)), 0o644)
	sc := startServe(t, "-config", config, "-server", fmt.Sprintf("nntp://%s?connections=2", s.HostPort()))
	defer sc.kill()
	id := sc.addFile(t, poster.NZB(p), "Slow.nzb", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Await(ctx, func() bool { return s.Count("BODY") >= 5 }); err != nil {
		t.Fatal(err)
	}
	sc.cmd.Process.Signal(syscall.SIGTERM)
	if err := sc.cmd.Wait(); err != nil {
		t.Fatalf("newsget serve after SIGTERM: %v\n%s", err, sc.stderr.String())
	}
	log := sc.stderr.String()
	for _, want := range []string{
		`msg="stopping: saving the queue" why=SIGTERM`,
		`msg="queue saved; the next start goes on from here" jobs_queued=1 interrupted=` + id + ` name=Slow resumes="the download, at [0-9.]+ [KMG]?i?B of [0-9.]+ [KMG]?i?B \([0-9]+%\)"`,
		`msg="newsget serve stopped"\n$`,
	} {
		if !regexp.MustCompile(want).MatchString(log) {
			t.Errorf("the log lacks %s:\n%s", want, log)
		}
	}
}
