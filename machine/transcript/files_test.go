package transcript

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFields(t *testing.T) {
	tr := mustParse(t, `# config: window=2  user=U
# a comment without a colon
S: 200 ready
#
# want: Failed greeting: 400 (400)
# events depend on splits:
#want:tight
C: QUIT
# want: second
`)
	var got [][2]string
	for k, v := range tr.Fields() {
		got = append(got, [2]string{k, v})
	}
	want := [][2]string{
		{"config", "window=2  user=U"},
		{"want", "Failed greeting: 400 (400)"}, // only the first colon separates
		{"events depend on splits", ""},
		{"want", "tight"},
		{"want", "second"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Fields (-want +got):\n%s", d)
	}
	// Stopping early stops the walk.
	n := 0
	for range tr.Fields() {
		n++
		break
	}
	if n != 1 {
		t.Errorf("break after the first field: %d iterations", n)
	}
}

func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ReadFiles(os.DirFS(dir), "*.txt"); err == nil || !strings.Contains(err.Error(), "no files match") {
		t.Errorf("ReadFiles of nothing: %v, want a no-files error", err)
	}
	write("b.txt", "S: two\n")
	write("a.txt", "# config: x\nS: one\n")
	write("c.md", "not a transcript\n")
	files, err := ReadFiles(os.DirFS(dir), "*.txt")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, filepath.Base(f.Path)+" "+strings.TrimSpace(f.Transcript.String()))
	}
	if d := cmp.Diff([]string{"a.txt # config: x\nS: one", "b.txt S: two"}, got); d != "" {
		t.Errorf("ReadFiles (-want +got):\n%s", d)
	}
	write("d.txt", "S: fine\nX: what\n")
	_, err = ReadFiles(os.DirFS(dir), "*.txt")
	if err == nil || !strings.Contains(err.Error(), "d.txt: transcript: line 2") {
		t.Errorf("ReadFiles with a bad file: %v, want an error naming d.txt line 2", err)
	}
	if _, err := ReadFile(os.DirFS(dir), "missing.txt"); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}

func TestSplits(t *testing.T) {
	// Server runs: "ab\r\ncd\r\n" (8 bytes, the comment does not end it),
	// then "xyz\r\n" twice, split by a time step (5 bytes each).
	tr := mustParse(t, "S: ab\n# note\nS: cd\nC: hi\nS: xyz\n@ +1s\nS: xyz\nC~ \"a long client line that is not input\\r\\n\"\n")
	names := func(ss []Split) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	tests := []struct {
		input Side
		limit int
		want  []string
	}{
		{Server, 0, []string{"lines", "whole", "bytes", "cut at 1", "cut at 2", "cut at 3", "cut at 4", "cut at 5", "cut at 6", "cut at 7"}},
		{Server, 3, []string{"lines", "whole", "bytes", "cut at 1", "cut at 2"}},
		{Client, 5, []string{"lines", "whole", "bytes", "cut at 1", "cut at 2", "cut at 3", "cut at 4"}},
	}
	for _, tc := range tests {
		if d := cmp.Diff(tc.want, names(Splits(tr, tc.input, tc.limit))); d != "" {
			t.Errorf("Splits(%v, limit %d) (-want +got):\n%s", tc.input, tc.limit, d)
		}
	}
	// The functions are the ones named.
	run := []byte("abcd")
	ss := Splits(tr, Server, 0)
	got := map[string][][]byte{}
	for _, s := range ss[1:4] {
		got[s.Name] = s.Fn(run)
	}
	want := map[string][][]byte{
		"whole":    {[]byte("abcd")},
		"bytes":    {[]byte("a"), []byte("b"), []byte("c"), []byte("d")},
		"cut at 1": {[]byte("a"), []byte("bcd")},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("split functions (-want +got):\n%s", d)
	}
	if ss[0].Fn != nil {
		t.Error(`"lines" has a function; Replay needs nil to give one line per Receive`)
	}
	if got := Splits(nil, Server, 0); len(got) != 3 {
		t.Errorf("Splits of an empty transcript: %v, want lines, whole and bytes", names(got))
	}
}
