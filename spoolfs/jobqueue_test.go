package spoolfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/newsflow/newsflow/machine/jobs"
)

// jqScenario is one operation under test, from a state its setup builds.
type jqScenario struct {
	name  string
	setup func(t *testing.T, q *JobQueue)
	op    func(q *JobQueue) error
}

func jqMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func jqEnqueue(t *testing.T, q *JobQueue, job string, n int) []QueuedJob {
	t.Helper()
	var dests []jobs.Metadata
	for range n {
		dests = append(dests, jqMeta(job, 2))
	}
	qs, err := q.Enqueue(job, strings.NewReader("NZB "+job+"\n"), dests...)
	jqMust(t, err)
	return qs
}

func jqStartRead(t *testing.T, q *JobQueue, j QueuedJob) InflightJob {
	t.Helper()
	ij, err := q.SendStart(j)
	jqMust(t, err)
	_, f, err := q.ReadInflight(ij)
	jqMust(t, err)
	f.Close()
	return ij
}

func jqDone(file, seg int) jobs.Record {
	return jobs.Record{Kind: jobs.SegmentDone, File: file, Segment: seg}
}

var jqScenarios = []jqScenario{
	{"enqueue", func(t *testing.T, q *JobQueue) {},
		func(q *JobQueue) error {
			_, err := q.Enqueue("j1", strings.NewReader("NZB j1\n"), jqMeta("j1", 2), jqMeta("j1", 2))
			return err
		}},
	{"send-start", func(t *testing.T, q *JobQueue) { jqEnqueue(t, q, "j1", 1) },
		func(q *JobQueue) error {
			_, err := q.SendStart(QueuedJob{ID: jobs.ID{Job: "j1", Dest: "d1"}})
			return err
		}},
	{"send-cancel", func(t *testing.T, q *JobQueue) {
		ij := jqStartRead(t, q, jqEnqueue(t, q, "j1", 1)[0])
		jqMust(t, q.Record(ij, jqDone(0, 1), jqDone(0, 2)))
		jqMust(t, q.Sync())
		jqMust(t, q.Record(ij, jqDone(1, 1), jobs.Record{Kind: jobs.SegmentMissing, File: 1, Segment: 3, Begin: 10, End: 20}))
	}, func(q *JobQueue) error {
		_, err := q.SendCancel(InflightJob{ID: jobs.ID{Job: "j1", Dest: "d1"}})
		return err
	}},
	{"send-done+cleanup", func(t *testing.T, q *JobQueue) {
		ij := jqStartRead(t, q, jqEnqueue(t, q, "j1", 1)[0])
		jqMust(t, q.Record(ij, jqDone(0, 1)))
		jqMust(t, q.Sync())
	}, func(q *JobQueue) error {
		c, err := q.SendDone(InflightJob{ID: jobs.ID{Job: "j1", Dest: "d1"}})
		if err != nil {
			return err
		}
		return q.Cleanup(c)
	}},
	{"send-done+cleanup, other entry stays", func(t *testing.T, q *JobQueue) {
		qs := jqEnqueue(t, q, "j1", 2)
		jqStartRead(t, q, qs[0])
	}, func(q *JobQueue) error {
		c, err := q.SendDone(InflightJob{ID: jobs.ID{Job: "j1", Dest: "d1"}})
		if err != nil {
			return err
		}
		return q.Cleanup(c)
	}},
	{"drop", func(t *testing.T, q *JobQueue) { jqEnqueue(t, q, "j1", 2) },
		func(q *JobQueue) error { return q.Drop(QueuedJob{ID: jobs.ID{Job: "j1", Dest: "d1"}}) }},
	{"reschedule", func(t *testing.T, q *JobQueue) { jqEnqueue(t, q, "j1", 1) },
		func(q *JobQueue) error {
			j := QueuedJob{ID: jobs.ID{Job: "j1", Dest: "d1"}}
			return q.Reschedule(&j, jobs.Schedule{Attempts: 1, Next: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), LastError: "430"})
		}},
	{"compact", func(t *testing.T, q *JobQueue) {
		ij := jqStartRead(t, q, jqEnqueue(t, q, "j1", 1)[0])
		jqMust(t, q.Record(ij, jqDone(0, 1), jqDone(0, 3)))
		jqMust(t, q.Sync())
		jqMust(t, q.Record(ij, jqDone(0, 2)))
	}, func(q *JobQueue) error { return q.Compact(InflightJob{ID: jobs.ID{Job: "j1", Dest: "d1"}}) }},
}

// jqRun builds a fresh queue in dir with the scenario's setup, runs its
// operation with a crash at the k-th durable step (k 0: none), and
// abandons the queue. It reports whether the operation completed.
func jqRun(t *testing.T, dir string, sc jqScenario, k int) bool {
	t.Helper()
	os.RemoveAll(dir)
	q := jqOpen(t, dir, jqCounterIDs())
	if _, err := q.Recover(); err != nil {
		t.Fatal(err)
	}
	sc.setup(t, q)
	if k > 0 {
		q.crash, q.crashN, q.hits = "*", k, 0
	}
	err := sc.op(q)
	q.abandon()
	if err != nil && !errors.Is(err, errJobCrash) {
		t.Fatalf("%s: %v", sc.name, err)
	}
	return err == nil
}

// jqRecovered reopens dir, runs Recover (stopped at its m-th durable step
// if m > 0, then reopened and run again in full) and summarizes the queue.
func jqRecovered(t *testing.T, dir string, m int) (string, bool) {
	t.Helper()
	completed := true
	if m > 0 {
		q := jqOpen(t, dir, jqCounterIDs())
		q.crash, q.crashN = "*", m
		_, err := q.Recover()
		q.abandon()
		if err != nil && !errors.Is(err, errJobCrash) {
			t.Fatal(err)
		}
		completed = err == nil
	}
	q := jqOpen(t, dir, jqCounterIDs())
	defer q.abandon()
	if _, err := q.Recover(); err != nil {
		t.Fatal(err)
	}
	return jqSummary(t, q), completed
}

// jqSummary describes a recovered queue: its listings and, per queued
// entry, schedule, metadata with the progress log applied, and NZB. It
// fails the test if the directory breaks an invariant of a recovered
// queue: nothing in flight or in cleanup, no temporary file, nothing in
// quarantine, no job directory without entries, no entry without a link.
func jqSummary(t *testing.T, q *JobQueue) string {
	t.Helper()
	var s strings.Builder
	s.WriteString(jqDumpLists(q))
	ql, _ := q.ListQueue()
	for _, j := range ql {
		m, err := q.readMetadata(j.ID)
		jqMust(t, err)
		data, _ := os.ReadFile(q.path(filepath.Join(jqData, j.ID.Job, j.ID.Dest, jqProgress)))
		recs, _, _ := parseProgressLog(data)
		for _, r := range recs {
			m.Apply(r)
		}
		b, _ := json.Marshal(m)
		sb, _ := json.Marshal(j.Schedule)
		nzb, err := os.ReadFile(q.path(filepath.Join(jqData, j.ID.Job, jqContents)))
		jqMust(t, err)
		fmt.Fprintf(&s, "%s schedule %s\n  metadata %s\n  contents %q\n", j.ID, sb, b, nzb)
	}
	if il, _ := q.FindInflight(); len(il) > 0 {
		t.Errorf("in flight after Recover: %v", il)
	}
	if cl, _ := q.FindPendingCleanup(); len(cl) > 0 {
		t.Errorf("in cleanup after Recover: %v", cl)
	}
	tree := jqDumpTree(t, q.dir)
	links := map[string]bool{}
	for name := range tree {
		if strings.HasPrefix(name, "quarantine/") {
			t.Errorf("quarantined: %s", name)
		}
		if strings.Contains(name, jqTmp) {
			t.Errorf("temporary file left: %s", name)
		}
		if _, target, ok := strings.Cut(name, " -> "); ok {
			links[strings.TrimPrefix(target, "../")] = true
		}
	}
	jobDirs, _ := os.ReadDir(q.path(jqData))
	for _, jd := range jobDirs {
		des, _ := os.ReadDir(q.path(filepath.Join(jqData, jd.Name())))
		entries := 0
		for _, de := range des {
			if de.IsDir() {
				entries++
				if rel := filepath.Join(jqData, jd.Name(), de.Name()); !links[rel] {
					t.Errorf("%s has no link", rel)
				}
			}
		}
		if entries == 0 {
			t.Errorf("job directory %s has no entry", jd.Name())
		}
	}
	return s.String()
}

// TestJobQueueCrashAtomicity stops each operation at every one of its
// durable steps, and then Recover at every one of its own, and checks
// that the recovered queue is exactly as if the operation had not started
// or had completed: never anything in between, lost or duplicated.
func TestJobQueueCrashAtomicity(t *testing.T) {
	for _, sc := range jqScenarios {
		t.Run(sc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "q")
			jqRun(t, dir, jqScenario{sc.name, sc.setup, func(*JobQueue) error { return nil }}, 0)
			before, _ := jqRecovered(t, dir, 0)
			if !jqRun(t, dir, sc, 0) {
				t.Fatal("operation did not complete")
			}
			after, _ := jqRecovered(t, dir, 0)
			if before == after && sc.name != "send-start" && sc.name != "compact" {
				t.Fatalf("the operation changed nothing:\n%s", before)
			}
			points := 0
			for k := 1; ; k++ {
				if jqRun(t, dir, sc, k) {
					break // fewer than k steps: every point is done
				}
				points++
				for m := 0; ; m++ {
					got, completed := jqRecovered(t, dir, m)
					if got != before && got != after {
						t.Fatalf("crash at step %d, recovery stopped at step %d: recovered to\n%s\nwant before\n%s\nor after\n%s", k, m, got, before, after)
					}
					if completed {
						break
					}
					jqRun(t, dir, sc, k) // rebuild the crashed state for the next m
				}
			}
			if points == 0 {
				t.Fatal("no crash point")
			}
			t.Logf("%d crash points", points)
		})
	}
}

// TestJobQueueCrashPointsCovered: every crash point the operations pass
// has a golden in testdata/jobqueue that stops there.
func TestJobQueueCrashPointsCovered(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range jqScenarios {
		dir := filepath.Join(t.TempDir(), "q")
		q := jqOpen(t, dir, jqCounterIDs())
		q.Recover()
		sc.setup(t, q)
		q.seen = nil
		jqMust(t, sc.op(q))
		for label := range q.seen {
			seen[label] = true
		}
		q.abandon()
	}
	files, _ := filepath.Glob("testdata/jobqueue/*.txtar")
	covered := map[string]bool{}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		jqMust(t, err)
		for _, f := range ar.Files {
			if f.Name != "cmd" {
				continue
			}
			for _, line := range strings.Split(string(f.Data), "\n") {
				if fs := strings.Fields(line); len(fs) >= 2 && fs[0] == "crash" {
					covered[fs[1]] = true
				}
			}
		}
	}
	for _, label := range slices.Sorted(maps.Keys(seen)) {
		if !covered[label] {
			t.Errorf("crash point %s has no golden", label)
		}
	}
	if len(seen) < 10 {
		t.Errorf("only %d crash points seen: %v", len(seen), seen)
	}
}

// jqCheckDiscipline checks the durable steps of one completed operation
// against the durable-replace rule: a written file is fsynced before it is
// renamed or the operation returns; a name created, renamed or removed is
// made durable by an fsync of its directory (or of the directory that held a
// removed directory) before the operation returns. A log truncated by Compact
// and appended records that Compact folded into the metadata are exempt:
// replaying them is harmless.
func jqCheckDiscipline(ops []string) []string {
	var problems []string
	type need struct {
		what, fsync string
	}
	var needs []need
	for i, op := range ops {
		f := strings.Fields(op)
		if len(f) < 2 {
			continue
		}
		parent := func(p string) string { return filepath.Dir(p) }
		switch f[0] {
		case "write":
			needs = append(needs, need{op, f[1]}, need{op + " (name)", parent(f[1])})
		case "mkdir", "symlink", "create":
			needs = append(needs, need{op, parent(f[1])})
		case "rename":
			needs = append(needs, need{op + " (from)", parent(f[1])}, need{op + " (to)", parent(f[2])})
		case "link":
			needs = append(needs, need{op, parent(f[2])})
		case "remove":
			needs = append(needs, need{op, parent(f[1])})
		case "append":
			later := strings.Join(ops[i+1:], "\n")
			if !strings.Contains(later, "truncate "+f[1]+" 0") {
				needs = append(needs, need{op, f[1]})
			}
		}
	}
	// A need is met by an fsync of the path, or by the removal of the
	// directory itself when that removal is in turn made durable.
	var met func(p string) bool
	met = func(p string) bool {
		if slices.Contains(ops, "fsync "+p) {
			return true
		}
		return p != "." && slices.Contains(ops, "remove "+p) && met(filepath.Dir(p))
	}
	for _, n := range needs {
		if !met(n.fsync) {
			problems = append(problems, fmt.Sprintf("%s: no fsync %s", n.what, n.fsync))
		}
	}
	// Order: a temp is fsynced before its rename.
	for i, op := range ops {
		f := strings.Fields(op)
		if f[0] == "rename" && strings.HasSuffix(f[1], jqTmp) {
			if !slices.Contains(ops[:i], "fsync "+f[1]) {
				problems = append(problems, op+": temp not fsynced before the rename")
			}
		}
	}
	return problems
}

// TestJobQueueDiscipline runs the discipline check on the durable steps of
// every golden command that completed, and of every Recover.
func TestJobQueueDiscipline(t *testing.T) {
	files, _ := filepath.Glob("testdata/jobqueue/*.txtar")
	checked := 0
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		jqMust(t, err)
		for _, f := range ar.Files {
			if f.Name != "output" && f.Name != "recover" {
				continue
			}
			// Split into commands: "> cmd", its "  op" lines, a result.
			var ops []string
			flush := func(result string) {
				if result != "crashed" && len(ops) > 0 {
					checked++
					for _, p := range jqCheckDiscipline(ops) {
						t.Errorf("%s %s: %s", filepath.Base(file), f.Name, p)
					}
				}
				ops = nil
			}
			for _, line := range strings.Split(string(f.Data), "\n") {
				switch {
				case strings.HasPrefix(line, "  "):
					ops = append(ops, strings.TrimSpace(line))
				case strings.HasPrefix(line, "> "):
					ops = nil
				default:
					flush(line)
				}
			}
		}
	}
	if checked < 40 {
		t.Errorf("checked only %d operations", checked)
	}
	// The checker itself notices a missing fsync.
	if p := jqCheckDiscipline([]string{"rename queue/a inflight/a", "fsync inflight"}); len(p) != 1 {
		t.Errorf("missing fsync of queue not noticed: %v", p)
	}
	if p := jqCheckDiscipline([]string{"write x.tmp", "rename x.tmp x", "fsync x.tmp", "fsync ."}); len(p) != 1 {
		t.Errorf("rename before fsync not noticed: %v", p)
	}
}

func TestJobQueueEnqueueAbort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "q")
	q := jqOpen(t, dir, jqCounterIDs())
	defer q.Close()
	q.Recover()
	_, err := q.Enqueue("j1", io.MultiReader(strings.NewReader("half an NZB"), errReader{}), jqMeta("j1", 1))
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Enqueue = %v, want the reader's error", err)
	}
	if tree := jqDumpTree(t, dir); len(tree) != 0 {
		t.Errorf("a failed Enqueue left %v", slices.Sorted(maps.Keys(tree)))
	}
	// The id is free again.
	jqEnqueue(t, q, "j1", 1)
	_, err = q.Enqueue("j1", strings.NewReader("x"), jqMeta("j1", 1))
	if !errors.Is(err, ErrJobExists) {
		t.Errorf("second Enqueue of j1 = %v, want ErrJobExists", err)
	}
	if _, err := q.Enqueue("a/b", strings.NewReader("x"), jqMeta("j", 1)); !errors.Is(err, jobs.ErrBadID) {
		t.Errorf("Enqueue(a/b) = %v, want ErrBadID", err)
	}
	if _, err := q.Enqueue("j2", strings.NewReader("x")); err == nil {
		t.Error("Enqueue with no destination accepted")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestJobQueueDefaultIDsAndLock(t *testing.T) {
	dir := t.TempDir()
	q, err := OpenJobQueue(dir, JobQueueOptions{})
	jqMust(t, err)
	q.Recover()
	qs, err := q.Enqueue("", strings.NewReader("NZB"), jobs.Metadata{})
	jqMust(t, err)
	if err := qs[0].ID.Check(); err != nil || len(qs[0].ID.Job) != 16 {
		t.Errorf("generated id %v: %v", qs[0].ID, err)
	}
	if _, err := OpenJobQueue(dir, JobQueueOptions{}); err == nil {
		t.Error("a second open of a locked queue succeeded")
	}
	jqMust(t, q.Close())
	if _, err := q.SendStart(qs[0]); err == nil {
		t.Error("SendStart on a closed queue succeeded")
	}
	q2, err := OpenJobQueue(dir, JobQueueOptions{})
	jqMust(t, err)
	defer q2.Close()
	q2.Recover()
	if l, _ := q2.ListQueue(); len(l) != 1 || l[0].ID != qs[0].ID {
		t.Errorf("after reopen: %v", l)
	}
}

// TestJobQueueResume: progress synced before Close (or a crash) is there
// after reopen, Recover and SendStart; progress not synced is not.
func TestJobQueueResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "q")
	q := jqOpen(t, dir, jqCounterIDs())
	q.Recover()
	ij := jqStartRead(t, q, jqEnqueue(t, q, "j1", 1)[0])
	jqMust(t, q.Record(ij, jqDone(0, 1), jqDone(0, 2), jqDone(1, 3)))
	jqMust(t, q.Sync())
	jqMust(t, q.Record(ij, jqDone(0, 3))) // never synced
	q.abandon()

	q = jqOpen(t, dir, jqCounterIDs())
	defer q.Close()
	rec, err := q.Recover()
	jqMust(t, err)
	if len(rec.Requeued) != 1 {
		t.Fatalf("Recover: %+v", rec)
	}
	l, _ := q.ListQueue()
	ij, err = q.SendStart(l[0])
	jqMust(t, err)
	m, f, err := q.ReadInflight(ij)
	jqMust(t, err)
	nzb, _ := io.ReadAll(f)
	f.Close()
	if string(nzb) != "NZB j1\n" {
		t.Errorf("contents %q", nzb)
	}
	got := []string{m.Files[0].Done.String(), m.Files[1].Done.String()}
	if diff := cmp.Diff([]string{"1-2", "3"}, got); diff != "" {
		t.Errorf("done after resume (-want +got):\n%s", diff)
	}
}

// TestJobQueueAutoCompact: Sync compacts a log past CompactRecords.
func TestJobQueueAutoCompact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "q")
	q, err := OpenJobQueue(dir, JobQueueOptions{NewID: jqCounterIDs(), CompactRecords: 10})
	jqMust(t, err)
	defer q.Close()
	q.Recover()
	ij := jqStartRead(t, q, jqEnqueue(t, q, "j1", 1)[0])
	logPath := q.path(filepath.Join(jqData, "j1", "d1", jqProgress))
	for s := 1; s <= 25; s++ {
		jqMust(t, q.Record(ij, jqDone(0, s)))
		jqMust(t, q.Sync())
		st, err := os.Stat(logPath)
		jqMust(t, err)
		if st.Size() > 10*progressRecordSize {
			t.Fatalf("after %d records the log holds %d bytes", s, st.Size())
		}
	}
	m, err := q.readMetadata(ij.ID)
	jqMust(t, err)
	data, _ := os.ReadFile(logPath)
	recs, _, _ := parseProgressLog(data)
	for _, r := range recs {
		m.Apply(r)
	}
	if got := m.Files[0].Done.String(); got != "1-25" {
		t.Errorf("metadata+log done %q, want 1-25", got)
	}
	if m2, _ := q.readMetadata(ij.ID); m2.Files[0].Done.Len() < 11 {
		t.Errorf("metadata alone holds %q: never compacted", m2.Files[0].Done)
	}
}

// TestJobQueueConcurrentRecord: goroutines record while others sync; after
// the last Sync every record is in the log (run with -race).
func TestJobQueueConcurrentRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "q")
	q, err := OpenJobQueue(dir, JobQueueOptions{NewID: jqCounterIDs(), CompactRecords: 50})
	jqMust(t, err)
	q.Recover()
	var ijs []InflightJob
	for _, job := range []string{"a", "b", "c"} {
		ijs = append(ijs, jqStartRead(t, q, jqEnqueue(t, q, job, 1)[0]))
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			ij := ijs[w%3]
			for s := range 100 {
				if err := q.Record(ij, jqDone(w/3, 1+s)); err != nil {
					t.Error(err)
					return
				}
				if s%10 == 0 {
					if err := q.Sync(); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	jqMust(t, q.Sync())
	q.abandon()
	q = jqOpen(t, dir, jqCounterIDs())
	defer q.Close()
	q.Recover()
	l, _ := q.ListQueue()
	for _, j := range l {
		ij, err := q.SendStart(j)
		jqMust(t, err)
		m, f, err := q.ReadInflight(ij)
		jqMust(t, err)
		f.Close()
		for file := range 2 {
			if got := m.Files[file].Done.String(); got != "1-100" {
				t.Errorf("%s file %d: done %q, want 1-100", j.ID, file, got)
			}
		}
	}
}

// TestJobQueueProgressTorn cuts the log inside its last record at every
// byte offset, and also overwrites the last record from every offset with
// garbage (a torn sector): the record is absent, the ones before it count,
// and the log takes new records after them.
func TestJobQueueProgressTorn(t *testing.T) {
	var log []byte
	const n = 5
	for s := 1; s <= n; s++ {
		log = appendProgressRecord(log, jqDone(0, s))
	}
	last := len(log) - progressRecordSize
	for cut := last; cut <= len(log); cut++ {
		for _, mode := range []string{"cut", "garbage", "zeros"} {
			if cut == len(log) && mode != "cut" {
				continue
			}
			data := slices.Clone(log[:cut])
			switch mode {
			case "garbage":
				data = append(data, bytes.Repeat([]byte{0xA5}, len(log)-cut)...)
			case "zeros":
				data = append(data, make([]byte, len(log)-cut)...)
			}
			want := "1-4"
			if cut == len(log) {
				want = "1-5"
			}
			name := fmt.Sprintf("%s@%d", mode, cut-last)
			dir := filepath.Join(t.TempDir(), "q")
			jqMakeTree(t, dir, []txtar.File{
				{Name: "data/j1/contents", Data: []byte("NZB\n")},
				{Name: "data/j1/d1/metadata", Data: []byte("{}\n")},
				{Name: "data/j1/d1/schedule", Data: []byte("{}\n")},
				{Name: "inflight/j1_d1 -> ../data/j1/d1"},
			})
			jqMust(t, os.WriteFile(filepath.Join(dir, "data/j1/d1/progress"), data, 0o644))
			q := jqOpen(t, dir, jqCounterIDs())
			if _, err := q.Recover(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ij, err := q.SendStart(QueuedJob{ID: jobs.ID{Job: "j1", Dest: "d1"}})
			jqMust(t, err)
			m, f, err := q.ReadInflight(ij)
			jqMust(t, err)
			f.Close()
			if got := m.Files[0].Done.String(); got != want {
				t.Errorf("%s: done %q, want %q", name, got, want)
			}
			jqMust(t, q.Record(ij, jqDone(0, 9)))
			jqMust(t, q.Sync())
			q.abandon()
			got, _ := os.ReadFile(filepath.Join(dir, "data/j1/d1/progress"))
			recs, end, bad := parseProgressLog(got)
			wantRecs := n // the n-1 before the torn one, and the new one
			if cut == len(log) {
				wantRecs = n + 1
			}
			if end != len(got) || bad != 0 || len(recs) != wantRecs || recs[len(recs)-1] != jqDone(0, 9) {
				t.Errorf("%s: log after a new record: %d records, end %d of %d, %d bad", name, len(recs), end, len(got), bad)
			}
			if entries, _ := os.ReadDir(filepath.Join(dir, jqQuarantine)); len(entries) != 0 {
				t.Errorf("%s: a torn tail was quarantined", name)
			}
		}
	}
}

// FuzzJobProgressLog: the log reader never panics, its end is a record
// boundary within the data, the records it returns are exactly the valid
// slots before end, and encoding them again gives those slots' bytes.
func FuzzJobProgressLog(f *testing.F) {
	var good []byte
	good = appendProgressRecord(good, jqDone(0, 1))
	good = appendProgressRecord(good, jobs.Record{Kind: jobs.SegmentMissing, File: 3, Segment: 7, Begin: 100, End: 900})
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(append(slices.Clone(good), make([]byte, 17)...))
	bad := slices.Clone(good)
	bad[5] = 1
	f.Add(bad)
	f.Add([]byte("NGPR"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, end, badSlots := parseProgressLog(data)
		if end%progressRecordSize != 0 || end > len(data) || end < 0 {
			t.Fatalf("end %d of %d", end, len(data))
		}
		if len(recs)+badSlots != end/progressRecordSize {
			t.Fatalf("%d records + %d bad != %d slots", len(recs), badSlots, end/progressRecordSize)
		}
		var valid []byte
		for off := 0; off < end; off += progressRecordSize {
			if _, ok := parseProgressRecord(data[off:]); ok {
				valid = append(valid, data[off:off+progressRecordSize]...)
			}
		}
		var again []byte
		for _, r := range recs {
			if err := r.Check(); err != nil {
				t.Fatalf("returned a bad record %+v: %v", r, err)
			}
			again = appendProgressRecord(again, r)
		}
		if !bytes.Equal(again, valid) {
			t.Fatalf("re-encoded records differ from the valid slots")
		}
		var m jobs.Metadata
		for _, r := range recs {
			if err := m.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestJobQueueBroken: after a failed fsync every call fails until reopen.
func TestJobQueueBroken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "q")
	q := jqOpen(t, dir, jqCounterIDs())
	defer q.Close()
	q.Recover()
	qs := jqEnqueue(t, q, "j1", 1)
	q.failed("test", &fsyncError{fs.ErrInvalid})
	if _, err := q.SendStart(qs[0]); err == nil || !strings.Contains(err.Error(), "broken by a failed fsync") {
		t.Errorf("SendStart on a broken queue = %v", err)
	}
	if _, err := q.ListQueue(); err == nil {
		t.Error("ListQueue on a broken queue succeeded")
	}
	if err := q.Sync(); err == nil {
		t.Error("Sync on a broken queue succeeded")
	}
}
