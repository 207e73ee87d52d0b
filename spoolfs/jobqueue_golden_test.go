package spoolfs

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/newsflow/newsflow/machine/jobs"
)

var jobQueueUpdate = flag.Bool("jobqueue-update", false, "rewrite the outputs of spoolfs/testdata/jobqueue/*.txtar")

// TestJobQueueGolden runs the filesystem goldens in testdata/jobqueue.
// Each archive holds a before/ tree (the queue directory), a
// "cmd" section of operations (the last usually stopped at a crash point
// set by "crash"), and what must follow:
//
//	output          each command, the durable steps it took (mkdir, write,
//	                fsync, symlink, rename, remove, ...) and its result
//	after/...       the directory after the commands
//	recover         after a restart (reopen): Recover's steps and report,
//	                and what the queue then lists
//	after-recover/  the directory after Recover, when it changed anything
//
// Tree notation: "path -> target" is a symbolic link, "path/" an empty
// directory (the five layout directories, which OpenJobQueue always makes,
// are not listed when empty), anything else a file. Progress logs (files
// named progress or *.progress*) are shown one record a line, "D file
// segment" or "M file segment begin end", and any 40-byte slot that is not
// a valid record (or a shorter tail) as "raw <hex>". Other file contents
// are literal, except that a last line "\ no newline at end of file"
// removes the LF before it.
func TestJobQueueGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/jobqueue/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			runJobQueueGolden(t, file)
		})
	}
}

// jqCounterIDs returns a NewID that yields d1, d2, ...
func jqCounterIDs() func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("d%d", n)
	}
}

func jqOpen(t *testing.T, dir string, ids func() string) *JobQueue {
	t.Helper()
	q, err := OpenJobQueue(dir, JobQueueOptions{NewID: ids})
	if err != nil {
		t.Fatal(err)
	}
	q.trace = true
	return q
}

func runJobQueueGolden(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "q")
	var cmds string
	want := map[string]string{}
	wantAfter, wantAfterRecover := map[string]string{}, map[string]string{}
	hasAfterRecover := false
	var before []txtar.File
	for _, f := range ar.Files {
		switch {
		case strings.HasPrefix(f.Name, "before/"):
			before = append(before, txtar.File{Name: strings.TrimPrefix(f.Name, "before/"), Data: f.Data})
		case strings.HasPrefix(f.Name, "after/"):
			wantAfter[strings.TrimPrefix(f.Name, "after/")] = string(f.Data)
		case strings.HasPrefix(f.Name, "after-recover/"):
			hasAfterRecover = true
			if name := strings.TrimPrefix(f.Name, "after-recover/"); name != "" {
				wantAfterRecover[name] = string(f.Data)
			}
		case f.Name == "cmd":
			cmds = string(f.Data)
		default:
			want[f.Name] = string(f.Data)
		}
	}
	jqMakeTree(t, dir, before)

	ids := jqCounterIDs()
	q := jqOpen(t, dir, ids)
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(cmds), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		q.ops = nil
		res := jqRunCmd(t, &q, dir, ids, line)
		fmt.Fprintf(&out, "> %s\n", line)
		for _, op := range q.ops {
			fmt.Fprintf(&out, "  %s\n", op)
		}
		fmt.Fprintf(&out, "%s\n", res)
	}
	q.abandon()
	gotAfter := jqDumpTree(t, dir)

	q2 := jqOpen(t, dir, ids)
	rec, err := q2.Recover()
	var rs strings.Builder
	for _, op := range q2.ops {
		fmt.Fprintf(&rs, "  %s\n", op)
	}
	rs.WriteString(jqDumpRecovery(rec, err, dir))
	rs.WriteString(jqDumpLists(q2))
	gotRecover := rs.String()
	q2.abandon()
	gotAfterRecover := jqDumpTree(t, dir)
	changed := !cmp.Equal(gotAfter, gotAfterRecover)

	if *jobQueueUpdate {
		var keep []txtar.File
		for _, f := range ar.Files {
			if strings.HasPrefix(f.Name, "before/") || f.Name == "cmd" {
				keep = append(keep, f)
			}
		}
		keep = append(keep, txtar.File{Name: "output", Data: []byte(out.String())})
		keep = append(keep, jqTreeFiles("after/", gotAfter)...)
		keep = append(keep, txtar.File{Name: "recover", Data: []byte(gotRecover)})
		if changed {
			keep = append(keep, jqTreeFiles("after-recover/", gotAfterRecover)...)
			if len(gotAfterRecover) == 0 {
				keep = append(keep, txtar.File{Name: "after-recover/"})
			}
		}
		ar.Files = keep
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want["output"], out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantAfter, gotAfter); diff != "" {
		t.Errorf("directory after the commands (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want["recover"], gotRecover); diff != "" {
		t.Errorf("recover (-want +got):\n%s", diff)
	}
	if !hasAfterRecover {
		wantAfterRecover = wantAfter
	}
	if diff := cmp.Diff(wantAfterRecover, gotAfterRecover); diff != "" {
		t.Errorf("directory after Recover (-want +got):\n%s", diff)
	}
}

// abandon closes every file without syncing or writing: the process is
// gone.
func (q *JobQueue) abandon() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, l := range q.logs {
		l.close()
		delete(q.logs, id)
	}
	if q.lock != nil {
		q.lock.Close()
		q.lock = nil
	}
}

// jqRunCmd runs one golden command and describes its result.
func jqRunCmd(t *testing.T, qp **JobQueue, dir string, ids func() string, line string) string {
	q := *qp
	f := strings.Fields(line)
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	id := func() jobs.ID {
		id, err := jobs.ParseID(arg(1))
		if err != nil {
			t.Fatalf("command %q: %v", line, err)
		}
		return id
	}
	num := func(i int) int {
		v, err := strconv.Atoi(arg(i))
		if err != nil {
			t.Fatalf("command %q: argument %d: %v", line, i, err)
		}
		return v
	}
	var err error
	switch f[0] {
	case "crash":
		q.crash, q.crashN, q.hits = arg(1), 1, 0
		if arg(2) != "" {
			q.crashN = num(2)
		}
		return "ok"
	case "reopen":
		q.abandon()
		*qp = jqOpen(t, dir, ids)
		return "ok"
	case "recover":
		rec, err := q.Recover()
		return strings.TrimSuffix(jqDumpRecovery(rec, err, dir), "\n")
	case "enqueue":
		var dests []jobs.Metadata
		files := 1
		if strings.HasPrefix(arg(3), "files=") {
			files, _ = strconv.Atoi(strings.TrimPrefix(arg(3), "files="))
		}
		for range num(2) {
			dests = append(dests, jqMeta(arg(1), files))
		}
		qs, err := q.Enqueue(arg(1), strings.NewReader("NZB "+arg(1)+"\n"), dests...)
		if err != nil {
			return jqErrText(err, dir)
		}
		var names []string
		for _, x := range qs {
			names = append(names, x.ID.String())
		}
		return "ok " + strings.Join(names, " ")
	case "start":
		_, err = q.SendStart(QueuedJob{ID: id()})
	case "cancel":
		_, err = q.SendCancel(InflightJob{ID: id()})
	case "done":
		_, err = q.SendDone(InflightJob{ID: id()})
	case "cleanup":
		err = q.Cleanup(CleanupJob{ID: id()})
	case "drop":
		err = q.Drop(QueuedJob{ID: id()})
	case "reschedule":
		at, perr := time.Parse(time.RFC3339, arg(3))
		if perr != nil {
			t.Fatalf("command %q: %v", line, perr)
		}
		j := QueuedJob{ID: id()}
		err = q.Reschedule(&j, jobs.Schedule{Attempts: num(2), Next: at, LastError: strings.Join(f[min(4, len(f)):], " ")})
	case "read":
		m, c, err := q.ReadInflight(InflightJob{ID: id()})
		if err != nil {
			return jqErrText(err, dir)
		}
		nzb, _ := io.ReadAll(c)
		c.Close()
		b, _ := json.Marshal(m)
		return fmt.Sprintf("metadata %s\ncontents %q", b, nzb)
	case "record":
		var recs []jobs.Record
		for _, part := range strings.Split(strings.TrimSpace(strings.TrimPrefix(line, f[0]+" "+f[1])), ";") {
			recs = append(recs, jqParseRecord(t, part))
		}
		err = q.Record(InflightJob{ID: id()}, recs...)
	case "sync":
		err = q.Sync()
	case "compact":
		err = q.Compact(InflightJob{ID: id()})
	case "list", "inflight", "pending":
		return strings.TrimSuffix(jqDumpLists(q), "\n")
	default:
		t.Fatalf("unknown golden command %q", line)
	}
	if err != nil {
		return jqErrText(err, dir)
	}
	return "ok"
}

// jqMeta is the metadata goldens enqueue: n files of 3 segments.
func jqMeta(job string, n int) jobs.Metadata {
	m := jobs.Metadata{Name: job + ".nzb", Target: "/dl/" + job}
	for range n {
		m.Files = append(m.Files, jobs.FileProgress{Total: 3})
	}
	return m
}

// jqParseRecord parses "D file seg" or "M file seg begin end".
func jqParseRecord(t *testing.T, s string) jobs.Record {
	t.Helper()
	f := strings.Fields(s)
	n := func(i int) int64 {
		if i >= len(f) {
			t.Fatalf("record %q: too short", s)
		}
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			t.Fatalf("record %q: %v", s, err)
		}
		return v
	}
	r := jobs.Record{Kind: jobs.RecordKind(f[0][0]), File: int(n(1)), Segment: int(n(2))}
	if r.Kind == jobs.SegmentMissing {
		r.Begin, r.End = n(3), n(4)
	}
	return r
}

func jqErrText(err error, dir string) string {
	if errors.Is(err, errJobCrash) {
		return "crashed"
	}
	return "error: " + strings.ReplaceAll(err.Error(), dir, "$Q")
}

// jqDumpRecovery describes what Recover returned.
func jqDumpRecovery(r JobRecovery, err error, dir string) string {
	if err != nil {
		return jqErrText(err, dir) + "\n"
	}
	var s strings.Builder
	idList := func(ids []jobs.ID) string {
		var n []string
		for _, id := range ids {
			n = append(n, id.String())
		}
		return strings.Join(n, " ")
	}
	for _, x := range []struct {
		name string
		v    string
	}{
		{"swept", strings.Join(r.Swept, " ")},
		{"requeued", idList(r.Requeued)},
		{"cleaned", idList(r.Cleaned)},
		{"rolled-back", idList(r.RolledBack)},
		{"rolled-forward", idList(r.RolledForward)},
		{"orphans", strings.Join(r.Orphans, " ")},
	} {
		if x.v != "" {
			fmt.Fprintf(&s, "%s: %s\n", x.name, x.v)
		}
	}
	for _, qn := range r.Quarantined {
		fmt.Fprintf(&s, "quarantined: %s\n", qn)
	}
	if s.Len() == 0 {
		s.WriteString("nothing to recover\n")
	}
	return s.String()
}

// jqDumpLists shows what the three listing primitives return.
func jqDumpLists(q *JobQueue) string {
	var s strings.Builder
	ql, err := q.ListQueue()
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	s.WriteString("queue:")
	for _, x := range ql {
		fmt.Fprintf(&s, " %s", x.ID)
		if x.Schedule != (jobs.Schedule{}) {
			fmt.Fprintf(&s, "(attempts=%d next=%s)", x.Schedule.Attempts, x.Schedule.Next.UTC().Format(time.RFC3339))
		}
	}
	s.WriteString("\ninflight:")
	il, _ := q.FindInflight()
	for _, x := range il {
		fmt.Fprintf(&s, " %s", x.ID)
	}
	s.WriteString("\ncleanup:")
	cl, _ := q.FindPendingCleanup()
	for _, x := range cl {
		fmt.Fprintf(&s, " %s", x.ID)
	}
	s.WriteString("\n")
	return s.String()
}

// jqLayout are the directories OpenJobQueue makes; empty, they are not
// listed.
var jqLayout = map[string]bool{jqData: true, jqQueue: true, jqInflight: true, jqCleanup: true, jqQuarantine: true}

// jqDumpTree returns the queue directory in the goldens' notation.
func jqDumpTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == "." || rel == "LOCK":
		case de.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			m[rel+" -> "+target] = ""
		case de.IsDir():
			des, err := os.ReadDir(p)
			if err != nil {
				return err
			}
			if len(des) == 0 && !jqLayout[rel] {
				m[rel+"/"] = ""
			}
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if jqIsProgress(rel) {
				m[rel] = jqEncodeProgress(data)
			} else {
				m[rel] = jqEncode(data)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// jqMakeTree builds a queue directory from goldens' notation.
func jqMakeTree(t *testing.T, dir string, files []txtar.File) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		var err error
		switch {
		case strings.Contains(f.Name, " -> "):
			name, target, _ := strings.Cut(f.Name, " -> ")
			p := filepath.Join(dir, name)
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.Symlink(target, p)
			}
		case strings.HasSuffix(f.Name, "/"):
			err = os.MkdirAll(filepath.Join(dir, f.Name), 0o755)
		default:
			p := filepath.Join(dir, f.Name)
			data := jqDecode(f.Data)
			if jqIsProgress(f.Name) {
				data = jqDecodeProgress(t, f.Data)
			}
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.WriteFile(p, data, 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func jqIsProgress(rel string) bool {
	base := filepath.Base(rel)
	return base == jqProgress || strings.Contains(base, ".progress")
}

func jqTreeFiles(prefix string, m map[string]string) []txtar.File {
	var fs []txtar.File
	for _, name := range slices.Sorted(maps.Keys(m)) {
		fs = append(fs, txtar.File{Name: prefix + name, Data: []byte(m[name])})
	}
	return fs
}

const jqNoNL = "\\ no newline at end of file\n"

func jqEncode(data []byte) string {
	s := string(data)
	if len(s) > 0 && !strings.HasSuffix(s, "\n") {
		s += "\n" + jqNoNL
	}
	return s
}

func jqDecode(data []byte) []byte {
	if bytes.HasSuffix(data, []byte("\n"+jqNoNL)) {
		data = data[:len(data)-len(jqNoNL)-1]
	}
	return data
}

// jqEncodeProgress shows a progress log one slot a line.
func jqEncodeProgress(data []byte) string {
	var s strings.Builder
	for off := 0; off < len(data); off += progressRecordSize {
		slot := data[off:min(off+progressRecordSize, len(data))]
		r, ok := parseProgressRecord(slot)
		switch {
		case !ok:
			fmt.Fprintf(&s, "raw %x\n", slot)
		case r.Kind == jobs.SegmentDone:
			fmt.Fprintf(&s, "D %d %d\n", r.File, r.Segment)
		default:
			fmt.Fprintf(&s, "M %d %d %d %d\n", r.File, r.Segment, r.Begin, r.End)
		}
	}
	return s.String()
}

// jqDecodeProgress builds a progress log from its golden lines.
func jqDecodeProgress(t *testing.T, text []byte) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		if line == "" {
			continue
		}
		if h, ok := strings.CutPrefix(line, "raw "); ok {
			b, err := hex.DecodeString(h)
			if err != nil {
				t.Fatalf("progress line %q: %v", line, err)
			}
			out = append(out, b...)
			continue
		}
		out = appendProgressRecord(out, jqParseRecord(t, line))
	}
	return out
}
