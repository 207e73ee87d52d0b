package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/jobs"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/spoolfs"
)

// The test binary plays newsget when NEWSGET_TEST_ARGS holds its
// arguments (JSON), so tests can run it as a child process and kill it.
func TestMain(m *testing.M) {
	if a := os.Getenv("NEWSGET_TEST_ARGS"); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(Main(args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// child returns a command running newsget with args.
func child(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NEWSGET_TEST_ARGS="+string(a))
	return cmd
}

// doneSegments reads, from the job queue in dir, the segments recorded
// done for every file of every job, as "job/file/segment" keys. It runs
// recovery as the next newsget would, and leaves the entries queued.
func doneSegments(t *testing.T, dir string) map[string]bool {
	t.Helper()
	q, err := spoolfs.OpenJobQueue(dir, spoolfs.JobQueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := q.Recover(); err != nil {
		t.Fatal(err)
	}
	list, err := q.ListQueue()
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for _, j := range list {
		in, err := q.SendStart(j)
		if err != nil {
			t.Fatal(err)
		}
		meta, f, err := q.ReadInflight(in)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		for fi, fp := range meta.Files {
			for n := 1; n <= fp.Total; n++ {
				if fp.Done.Has(n) {
					done[fmt.Sprintf("%d/%d", fi, n)] = true
				}
			}
		}
		if _, err := q.SendCancel(in); err != nil {
			t.Fatal(err)
		}
	}
	_ = jobs.SegmentDone
	return done
}

// TestKill9Resume runs newsget as a child process against a slow test
// server, kills it with SIGKILL at random moments, runs it again each
// time, and finally lets it finish: the files are identical to the posted
// ones, and no segment recorded done before a kill is fetched again after
// it (the server counts BODY commands per message-id).
func TestKill9Resume(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	var ps []poster.Posting
	for i, size := range []int{120_000, 64_000} {
		p := poster.Posting{Name: fmt.Sprintf("k%d.bin", i), Data: poster.RandomData(uint64(90+i), size),
			PartSize: 4000, Group: "alt.binaries.newsflow", IDPrefix: fmt.Sprintf("kill%d", i)}
		ps = append(ps, p)
	}
	s.AddGroup(nntptest.Group{Name: "alt.binaries.newsflow"})
	idOf := map[string]string{} // message-id -> "file/segment"
	for fi, p := range ps {
		for n := 1; n <= p.Parts(); n++ {
			if err := s.AddArticle(nntptest.Article{MessageID: p.MessageID(n), Raw: p.Article(n)}); err != nil {
				t.Fatal(err)
			}
			idOf[p.MessageID(n)] = fmt.Sprintf("%d/%d", fi, n)
		}
	}
	// Slow enough that kills land mid-download.
	s.AddFault(nntptest.Fault{Cmd: "BODY", Delay: 8 * time.Millisecond})
	dir := t.TempDir()
	nzb := filepath.Join(dir, "k.nzb")
	if err := os.WriteFile(nzb, poster.NZB(ps...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	queueDir := filepath.Join(out, ".newsget", "jobs")
	args := []string{"-q", "-server", fmt.Sprintf("nntp://%s?connections=3&pipeline=2", s.HostPort()), "-o", out, nzb}
	total := 0
	for _, p := range ps {
		total += p.Parts()
	}

	rng := rand.New(rand.NewPCG(7, 7))
	rounds := 5
	if testing.Short() {
		rounds = 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bodiesBefore := 0
	var lastDone map[string]bool
	for round := 0; round < rounds; round++ {
		cmd := child(t, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of further BODY commands.
		k := bodiesBefore + 6 + rng.IntN(10)
		if err := s.Await(ctx, func() bool { return s.Count("BODY") >= k }); err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		// The server may still read commands the killed process had sent:
		// count them with this round once its connections are closed.
		if err := s.Await(ctx, func() bool { return s.OpenConns() == 0 }); err != nil {
			t.Fatal(err)
		}
		done := doneSegments(t, queueDir)
		lastDone = done
		mark := len(s.Commands())
		bodiesBefore = s.Count("BODY")
		t.Logf("round %d: killed after %d BODY commands; %d segments recorded done", round, bodiesBefore, len(done))

		// The next run must not fetch a segment recorded done.
		defer func(done map[string]bool, mark int) {
			for _, c := range s.Commands()[mark:] {
				if c.Cmd.Verb == "BODY" && done[idOf[c.Cmd.Args[0]]] {
					t.Errorf("segment %s (%s) recorded done before kill %d was fetched again", idOf[c.Cmd.Args[0]], c.Cmd.Args[0], round)
				}
			}
		}(done, mark)
	}
	cmd := child(t, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("final run: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	for _, p := range ps {
		got, err := os.ReadFile(filepath.Join(out, p.Name))
		if err != nil {
			t.Fatalf("%v\n%s", err, stdout.String())
		}
		if sha256.Sum256(got) != sha256.Sum256(p.Data) {
			t.Errorf("%s differs from the posted file", p.Name)
		}
	}
	// The final run fetches each segment not recorded done exactly once:
	// how many the killed runs sent depends on the machine's load (how far
	// their records got before each kill), what the last run sends does not.
	if final, want := s.Count("BODY")-bodiesBefore, total-len(lastDone); final != want {
		t.Errorf("the final run sent %d BODY commands; %d segments were not recorded done", final, want)
	}
	t.Logf("%d BODY commands for %d segments over %d kills", s.Count("BODY"), total, rounds)
}
