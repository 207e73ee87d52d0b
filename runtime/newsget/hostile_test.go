package newsget

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

func TestSanitizeName(t *testing.T) {
	long := strings.Repeat("x", 300) + ".rar"
	for _, tc := range []struct{ in, want string }{
		{"file.rar", "file.rar"},
		{"../../etc/passwd", "etc_passwd"},
		{"/etc/passwd", "etc_passwd"},
		{"..", "fallback"},
		{".", "fallback"},
		{"...hidden", "hidden"},
		{"a/../b", "a_.._b"},
		{`C:\Windows\evil.exe`, `C:_Windows_evil.exe`},
		{"nul\x00byte", "nulbyte"},
		{"bell\x07\x1b[31mred", "bell[31mred"},
		{"line\r\nbreak", "linebreak"},
		{"tab\there", "tab here"},
		{"bad\xffutf8", "bad_utf8"},
		{"trailing. . ", "trailing"},
		{"", "fallback"},
		{"\x00\x01", "fallback"},
		{"ünïcödé.txt", "ünïcödé.txt"},
		// Bidi controls and other format characters go.
		{"\u202egpj.exe", "gpj.exe"},
		{"a\u2066b\u2069c\u200bd\u200de\ufefff.bin", "abcdef.bin"},
		{"\u200f\u202a.hidden", "hidden"},
		{"priv\ue000ate", "private"},
		{long, strings.Repeat("x", MaxNameLen-4) + ".rar"},
	} {
		if got := SanitizeName(tc.in, "fallback"); got != tc.want {
			t.Errorf("SanitizeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzSanitizeName: whatever the input, the name is one safe path element.
func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"file.rar", "../../etc/passwd", "/abs", "..", "a\x00b", strings.Repeat("é", 200), "\xff\xfe", " . "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := SanitizeName(in, "fb")
		checkSafeName(t, in, got)
	})
}

// checkSafeName fails t unless name is one safe, visible path element.
func checkSafeName(t *testing.T, in, name string) {
	t.Helper()
	switch {
	case name == "" || name == "." || name == "..":
		t.Fatalf("%q -> %q", in, name)
	case strings.ContainsAny(name, "/\\\x00"):
		t.Fatalf("%q -> %q holds a separator or NUL", in, name)
	case strings.HasPrefix(name, "."):
		t.Fatalf("%q -> %q is hidden", in, name)
	case len(name) > MaxNameLen:
		t.Fatalf("%q -> %q is %d bytes long", in, name, len(name))
	case filepath.Base(name) != name || filepath.IsAbs(name):
		t.Fatalf("%q -> %q is not a single element", in, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == 0xfffd || unicode.Is(unicode.Cf, r) {
			t.Fatalf("%q -> %q holds %U", in, name, r)
		}
	}
}

// hostileNZB wraps file elements in an NZB document.
func hostileNZB(files string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<nzb xmlns="http://www.newzbin.com/DTD/2003/nzb">` + files + `</nzb>`)
}

// TestHostileNZB: names with "../", absolute paths, control characters
// and overlong names, from the NZB subject and from the yEnc header, are
// neutralised (files land inside the download directory under safe
// names); entity expansion, NUL and documents over the limits are refused
// with a clear error; nothing is written outside the download directory.
func TestHostileNZB(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	names := []string{"../../escape.bin", "/etc/passwd", "ctl\x1b[2Jname.bin", strings.Repeat("L", 400) + ".bin"}
	var ps []poster.Posting
	for i, n := range names {
		p := newPosting(fmt.Sprintf("f%d", i), uint64(20+i), 2000, 1500)
		p.Name = n // yEnc name= and subject both carry it
		ps = append(ps, p)
	}
	serve(t, s, nil, ps...)
	r := newRun(t, server(s, "s1"))
	r.opts.NZBLimits = proto.NZBLimits{MaxSegments: 50}
	var many strings.Builder
	many.WriteString(`<file subject="many"><groups><group>a.b</group></groups><segments>`)
	for i := 1; i <= 51; i++ {
		fmt.Fprintf(&many, `<segment number="%d" bytes="1">s%d@x</segment>`, i, i)
	}
	many.WriteString(`</segments></file>`)
	laughs := []byte(`<?xml version="1.0"?>
<!DOCTYPE nzb [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>
<nzb><file subject="&c;"><segments><segment number="1">x@y</segment></segments></file></nzb>`)
	nul := hostileNZB(`<file subject="nul&#0;name"><segments><segment number="1">x@y</segment></segments></file>`)
	sum := r.run(t, poster.NZB(ps...), laughs, nul, hostileNZB(many.String()))

	// The three hostile documents are refused, each with its reason.
	wantErrs := []string{"job2.nzb: nzb:", "job3.nzb: nzb:", "job4.nzb: nzb: more than 50 segments"}
	if len(sum.JobErrs) != 3 {
		t.Fatalf("job errors: %q", sum.JobErrs)
	}
	for i, w := range wantErrs {
		if !strings.HasPrefix(sum.JobErrs[i], w) {
			t.Errorf("job error %d: %q, want prefix %q", i, sum.JobErrs[i], w)
		}
	}
	if !strings.Contains(sum.JobErrs[0], "entity") {
		t.Errorf("billion laughs refused without naming the entity: %q", sum.JobErrs[0])
	}
	// The hostile names are neutralised, the data intact.
	got := r.outputs(t)
	want := map[string]string{}
	for i, p := range ps {
		want[SanitizeName(names[i], "")] = digest(p.Data)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for name := range got {
		checkSafeName(t, name, name)
	}
	// Nothing outside the download and state directories.
	des, err := os.ReadDir(filepath.Dir(r.cfg.DownloadDir))
	if err != nil {
		t.Fatal(err)
	}
	var top []string
	for _, de := range des {
		top = append(top, de.Name())
	}
	sort.Strings(top)
	if diff := cmp.Diff([]string{"out", "state"}, top); diff != "" {
		t.Errorf("files beside the download directory (-want +got):\n%s", diff)
	}
}

// TestNoOverwrite: an existing file is not replaced without Overwrite,
// and nothing is fetched for it; with Overwrite it is.
func TestNoOverwrite(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	p := newPosting("keep.bin", 30, 4000, 2000)
	serve(t, s, nil, p)
	r := newRun(t, server(s, "s1"))
	if err := os.MkdirAll(r.cfg.DownloadDir, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(r.cfg.DownloadDir, "keep.bin")
	if err := os.WriteFile(mine, []byte("my own file"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := r.run(t, poster.NZB(p))
	if sum.Complete() || len(sum.Files) != 1 || !strings.Contains(sum.Files[0].Err, "not overwritten (use -overwrite)") {
		t.Fatalf("want a refusal: %+v", sum.Files)
	}
	if b, _ := os.ReadFile(mine); string(b) != "my own file" {
		t.Fatalf("file replaced")
	}
	if n := s.Count("BODY"); n != 0 {
		t.Errorf("%d BODY commands for a file not to be written", n)
	}
	r2 := newRun(t, server(s, "s1"))
	r2.cfg.DownloadDir, r2.cfg.QueueDir = r.cfg.DownloadDir, r.cfg.QueueDir
	r2.opts.Overwrite = true
	if sum := r2.run(t, poster.NZB(p)); !sum.Complete() {
		t.Fatalf("with Overwrite: %v", results(sum))
	}
	if b, _ := os.ReadFile(mine); digest(b) != digest(p.Data) {
		t.Errorf("not replaced with Overwrite")
	}
}
