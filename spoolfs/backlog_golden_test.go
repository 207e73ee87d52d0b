package spoolfs

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/newsflow/newsflow/machine/queue"
)

var backlogUpdate = flag.Bool("backlog-update", false, "rewrite the outputs of spoolfs/testdata/backlog/*.txtar")

// TestBacklogGolden runs the filesystem goldens in testdata/backlog: each
// archive holds a before/ tree, a "cmd" section of operations on peer "peer"
// (the last one may stop at a crash point set by "crash"), and what must
// follow:
//
//	output          each command and its result (after "trace", also the
//	                durable steps it took: creates, fsyncs, renames, removes)
//	after/...       the directory after the commands (no after/ files: empty)
//	recover         what Recover then lists for queue.New
//	after-recover/  the directory after Recover, when it changed anything
//
// File contents are literal, except that "\x00" stands for a NUL octet and
// a last line "\ no newline at end of file" removes the LF before it (a
// torn line).
func TestBacklogGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/backlog/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			runBacklogGolden(t, file)
		})
	}
}

func runBacklogGolden(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var cmds string
	want := map[string]string{}
	wantAfter, wantAfterRecover := map[string]string{}, map[string]string{}
	hasAfterRecover := false
	for _, f := range ar.Files {
		switch {
		case strings.HasPrefix(f.Name, "before/"):
			if err := os.WriteFile(filepath.Join(dir, strings.TrimPrefix(f.Name, "before/")), backlogDecode(f.Data), 0o644); err != nil {
				t.Fatal(err)
			}
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

	b, err := OpenBacklog(dir, "peer", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(cmds), "\n") {
		b.ops = b.ops[:0]
		res := backlogRunCmd(b, dir, line)
		fmt.Fprintf(&out, "> %s\n", line)
		for _, op := range b.ops {
			fmt.Fprintf(&out, "  %s\n", op)
		}
		fmt.Fprintf(&out, "%s\n", res)
	}
	b.abandon()
	gotAfter := backlogDumpDir(t, dir)

	b2, err := OpenBacklog(dir, "peer", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := b2.Recover()
	gotRecover := backlogDumpRecovered(rec, err, b2.Lost())
	b2.abandon()
	gotAfterRecover := backlogDumpDir(t, dir)
	changed := !cmp.Equal(gotAfter, gotAfterRecover)

	if *backlogUpdate {
		var keep []txtar.File
		for _, f := range ar.Files {
			if strings.HasPrefix(f.Name, "before/") || f.Name == "cmd" {
				keep = append(keep, f)
			}
		}
		keep = append(keep, txtar.File{Name: "output", Data: []byte(out.String())})
		keep = append(keep, backlogTreeFiles("after/", gotAfter)...)
		keep = append(keep, txtar.File{Name: "recover", Data: []byte(gotRecover)})
		if changed {
			keep = append(keep, backlogTreeFiles("after-recover/", gotAfterRecover)...)
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

// abandon closes every file without syncing or writing: the process is gone.
func (b *Backlog) abandon() {
	for name, bf := range b.open {
		bf.f.Close()
		delete(b.open, name)
	}
	b.closeReplay()
	if b.bad != nil {
		b.bad.Close()
		b.bad = nil
	}
}

// backlogRunCmd runs one golden command and describes its result.
func backlogRunCmd(b *Backlog, dir, line string) string {
	f := strings.Fields(line)
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	num := func(i int) int64 {
		v, err := strconv.ParseInt(arg(i), 10, 64)
		if err != nil {
			panic(fmt.Sprintf("command %q: argument %d: %v", line, i, err))
		}
		return v
	}
	var err error
	switch f[0] {
	case "crash":
		b.crash = arg(1)
		return "ok"
	case "trace":
		b.trace = true
		return "ok"
	case "open-journal":
		err = b.OpenJournal(arg(1))
	case "append-journal":
		err = b.AppendJournal(arg(1), backlogGoldenEntries(line))
	case "close-journal":
		err = b.CloseJournal(arg(1))
	case "delete-journal":
		err = b.DeleteJournal(arg(1))
	case "recover":
		rec, err := b.Recover()
		return strings.TrimSuffix(backlogDumpRecovered(rec, err, b.Lost()), "\n")
	case "rotate":
		closed := arg(1)
		if closed == "-" {
			closed = ""
		}
		err = b.Rotate(closed, arg(2))
	case "append":
		err = b.Append(arg(1), backlogGoldenEntries(line))
	case "sync":
		err = b.Sync()
	case "promote":
		err = b.Promote(arg(1))
	case "read":
		batch, err := b.ReadReplay(num(1), int(num(2)))
		if err != nil {
			return backlogErrText(err, dir)
		}
		var lines []string
		for _, e := range batch.Entries {
			lines = append(lines, strings.TrimSuffix(string(queue.AppendLine(nil, e)), "\n"))
		}
		if len(lines) == 0 {
			lines = []string{"(none)"}
		}
		return fmt.Sprintf("entries: %s\noffset %d eof %t bad %d", strings.Join(lines, ", "), batch.Offset, batch.EOF, batch.Bad)
	case "checkpoint":
		left := int64(-1) // "checkpoint <offset> [<left>]"
		if arg(2) != "" {
			left = num(2)
		}
		err = b.Checkpoint(num(1), left)
	case "manifest":
		// "manifest <name>:<entries>:<bytes>[:open] ..."
		var files []queue.ManifestFile
		for _, a := range f[1:] {
			p := strings.Split(a, ":")
			e, _ := strconv.ParseInt(p[1], 10, 64)
			n, _ := strconv.ParseInt(p[2], 10, 64)
			files = append(files, queue.ManifestFile{Name: p[0], Entries: e, Bytes: n, Open: len(p) > 3 && p[3] == "open"})
		}
		err = b.WriteManifest(files)
	case "delete-replay":
		err = b.DeleteReplay()
	case "quarantine":
		err = b.QuarantineReplay(arg(1))
	case "delete":
		err = b.Delete(arg(1))
	default:
		panic(fmt.Sprintf("unknown golden command %q", line))
	}
	if err != nil {
		return backlogErrText(err, dir)
	}
	return "ok"
}

// backlogGoldenEntries parses the entries of "<command> <file> <token>
// <id> [<attempts>]; <token> <id>; ...", as the lines read: an entry with
// attempts (0 included) is a resend.
func backlogGoldenEntries(line string) []queue.Entry {
	f := strings.Fields(line)
	var es []queue.Entry
	for _, part := range strings.Split(strings.TrimSpace(strings.TrimPrefix(line, f[0]+" "+f[1])), ";") {
		p := strings.Fields(part)
		e := queue.Entry{Token: p[0], MessageID: p[1]}
		if len(p) > 2 { // the line's third field: a resend, deferred that often
			a, _ := strconv.Atoi(p[2])
			e.Attempts, e.Resend = a, true
		}
		es = append(es, e)
	}
	return es
}

func backlogErrText(err error, dir string) string {
	s := "error: " + strings.ReplaceAll(err.Error(), dir, "$DIR")
	if errors.Is(err, errBacklogCrash) {
		s = "crashed"
	}
	return s
}

// backlogDumpDir returns every file in dir, encoded as in the goldens.
func backlogDumpDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, de := range des {
		data, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[de.Name()] = backlogEncode(data)
	}
	return m
}

func backlogTreeFiles(prefix string, m map[string]string) []txtar.File {
	var fs []txtar.File
	for _, name := range slices.Sorted(maps.Keys(m)) {
		fs = append(fs, txtar.File{Name: prefix + name, Data: []byte(m[name])})
	}
	return fs
}

const backlogNoNL = "\\ no newline at end of file\n"

// backlogEncode writes file content the way goldens hold it.
func backlogEncode(data []byte) string {
	s := strings.ReplaceAll(string(data), "\x00", `\x00`)
	if len(s) > 0 && !strings.HasSuffix(s, "\n") {
		s += "\n" + backlogNoNL
	}
	return s
}

// backlogDecode reads golden file content back into octets.
func backlogDecode(data []byte) []byte {
	if bytes.HasSuffix(data, []byte("\n"+backlogNoNL)) {
		data = data[:len(data)-len(backlogNoNL)-1]
	}
	return bytes.ReplaceAll(data, []byte(`\x00`), []byte{0})
}

// backlogDumpRecovered describes what Recover returned (without mtimes).
func backlogDumpRecovered(r queue.Recovered, err error, lost []LostFile) string {
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var s strings.Builder
	for _, f := range r.Files {
		journal := ""
		if f.Journal {
			journal = " from-journal"
		}
		fmt.Fprintf(&s, "%s %s ts=%x bytes=%d entries=%d max-attempts=%d%s\n", f.Kind, f.Name, f.TS, f.Bytes, f.Entries, f.MaxAttempts, journal)
	}
	if p := r.Replay; p != nil {
		fmt.Fprintf(&s, "P bytes=%d offset=%d entries=%d\n", p.Bytes, p.Offset, p.Entries)
	}
	for _, l := range lost {
		fmt.Fprintf(&s, "lost %s entries=%d bytes=%d sent=%d open=%t\n", l.Name, l.Entries, l.Bytes, l.Sent, l.Open)
	}
	if s.Len() == 0 {
		return "nothing\n"
	}
	return s.String()
}
