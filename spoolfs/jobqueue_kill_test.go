package spoolfs

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/jobs"
)

// The job queue's kill -9 test re-executes the test binary as a child that
// plays a download: it opens the queue, recovers, starts the job, reads
// its progress and "fetches" the segments not yet done, in random batches:
// Record, Sync, then one line "DURABLE <file> <segment>" per record (the
// moment newsget would tell anyone the segment is safe). Some segments are
// recorded missing instead ("MISSING"). Now and then it compacts. The
// parent SIGKILLs it at random moments, reopens the queue and checks that
// every record reported durable is there, and that no child ever fetched a
// segment an earlier round had reported durable: a rerun resumes.

const (
	jqKillChildEnv = "NEWSFLOW_JOBQUEUE_KILL_CHILD" // queue directory, set in the child
	jqKillFiles    = 8
	jqKillSegments = 400
)

// jqKillMissing says which segments no server has.
func jqKillMissing(file, seg int) bool { return file == 7 && seg%37 == 0 }

func jqKillChild(dir string) {
	fail := func(what string, err error) {
		fmt.Println("FAILED", what, err)
		os.Exit(2)
	}
	q, err := OpenJobQueue(dir, JobQueueOptions{CompactRecords: 500})
	if err != nil {
		fail("open", err)
	}
	if _, err := q.Recover(); err != nil {
		fail("recover", err)
	}
	l, err := q.ListQueue()
	if err != nil {
		fail("list", err)
	}
	if len(l) == 0 {
		m := jobs.Metadata{Name: "kill.nzb", Target: "/dl"}
		for range jqKillFiles {
			m.Files = append(m.Files, jobs.FileProgress{Total: jqKillSegments})
		}
		if l, err = q.Enqueue("kill", strings.NewReader("NZB kill\n"), m); err != nil {
			fail("enqueue", err)
		}
	}
	ij, err := q.SendStart(l[0])
	if err != nil {
		fail("start", err)
	}
	m, f, err := q.ReadInflight(ij)
	if err != nil {
		fail("read", err)
	}
	f.Close()
	var todo []jobs.Record
	for file := range jqKillFiles {
		fp := m.Files[file]
		for seg := 1; seg <= jqKillSegments; seg++ {
			if fp.Done.Has(seg) {
				continue
			}
			if jqKillMissing(file, seg) {
				if len(fp.Missing) > 0 && slicesContainsSeg(fp.Missing, seg) {
					continue
				}
				todo = append(todo, jobs.Record{Kind: jobs.SegmentMissing, File: file, Segment: seg, Begin: int64(seg) * 1000, End: int64(seg+1) * 1000})
				continue
			}
			todo = append(todo, jobs.Record{Kind: jobs.SegmentDone, File: file, Segment: seg})
		}
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	r.Shuffle(len(todo), func(i, j int) { todo[i], todo[j] = todo[j], todo[i] })
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "START %d\n", len(todo))
	out.Flush()
	for batchNo := 0; len(todo) > 0; batchNo++ {
		n := min(len(todo), 1+r.IntN(30))
		batch := todo[:n]
		todo = todo[n:]
		if err := q.Record(ij, batch...); err != nil {
			fail("record", err)
		}
		if batchNo%17 == 16 {
			err = q.Compact(ij)
		} else {
			err = q.Sync()
		}
		if err != nil {
			fail("sync", err)
		}
		for _, rec := range batch {
			kind := "DURABLE"
			if rec.Kind == jobs.SegmentMissing {
				kind = "MISSING"
			}
			fmt.Fprintf(out, "%s %d %d\n", kind, rec.File, rec.Segment)
		}
		out.Flush() // the acknowledgement: only after Sync returned
	}
	fmt.Fprintln(out, "ALLDONE")
	out.Flush()
	time.Sleep(time.Minute) // wait for the kill
}

func slicesContainsSeg(ms []jobs.Missing, seg int) bool {
	for _, x := range ms {
		if x.Segment == seg {
			return true
		}
	}
	return false
}

func TestJobQueueKill9(t *testing.T) {
	if dir := os.Getenv(jqKillChildEnv); dir != "" {
		jqKillChild(dir)
		return
	}
	dir := t.TempDir()
	durable := map[[2]int]string{} // (file, segment) -> DURABLE or MISSING
	r := rand.New(rand.NewPCG(5, 6))
	const rounds = 8
	finished := false
	for round := 0; round < rounds && !finished; round++ {
		killAfter := 10 + r.IntN(400)
		cmd := exec.Command(os.Args[0], "-test.run=^TestJobQueueKill9$", "-test.count=1")
		cmd.Env = append(os.Environ(), jqKillChildEnv+"="+dir)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		guard := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
		sc := bufio.NewScanner(stdout)
		n, refetched := 0, 0
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "FAILED") {
				cmd.Process.Kill()
				t.Fatalf("round %d: child: %s", round, line)
			}
			if line == "ALLDONE" {
				finished = true
				cmd.Process.Kill()
				continue
			}
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "DURABLE" && f[0] != "MISSING" {
				continue // START, test framework chatter
			}
			file, _ := strconv.Atoi(f[1])
			seg, _ := strconv.Atoi(f[2])
			key := [2]int{file, seg}
			if _, ok := durable[key]; ok {
				refetched++
			}
			durable[key] = f[0]
			if n++; n == killAfter {
				// Even rounds: at once, right after an acknowledgement.
				// Odd rounds: a random moment later, anywhere in Record,
				// write, fdatasync, compaction.
				var delay time.Duration
				if round%2 == 1 {
					delay = time.Duration(r.IntN(5000)) * time.Microsecond
				}
				time.AfterFunc(delay, func() { cmd.Process.Kill() })
			}
		}
		cmd.Wait()
		guard.Stop()
		if refetched > 0 {
			t.Errorf("round %d: %d segments reported durable in an earlier round were fetched again", round, refetched)
		}
		if n < killAfter && !finished {
			t.Fatalf("round %d: child died after %d acknowledgements, before the kill", round, n)
		}

		// Reopen as the next run would, and check every acknowledged record.
		q, err := OpenJobQueue(dir, JobQueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := q.Recover()
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Quarantined) > 0 {
			t.Errorf("round %d: quarantined %v", round, rec.Quarantined)
		}
		l, _ := q.ListQueue()
		if len(l) != 1 {
			t.Fatalf("round %d: queue holds %v", round, l)
		}
		ij, err := q.SendStart(l[0])
		if err != nil {
			t.Fatal(err)
		}
		m, f, err := q.ReadInflight(ij)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		lost := 0
		doneCount, missCount := 0, 0
		for key, kind := range durable {
			fp := m.Files[key[0]]
			switch {
			case kind == "DURABLE" && !fp.Done.Has(key[1]):
				lost++
			case kind == "MISSING" && !slicesContainsSeg(fp.Missing, key[1]):
				lost++
			}
		}
		for _, fp := range m.Files {
			doneCount += fp.Done.Len()
			missCount += len(fp.Missing)
		}
		if lost > 0 {
			t.Fatalf("round %d: %d acknowledged records lost", round, lost)
		}
		t.Logf("round %d: killed after %d acknowledgements; %d acknowledged in all, all there (queue holds %d done, %d missing)", round, n, len(durable), doneCount, missCount)
		if err := q.Close(); err != nil { // leaves the entry in flight
			t.Fatal(err)
		}
	}
}
