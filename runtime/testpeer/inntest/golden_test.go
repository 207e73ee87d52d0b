package inntest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/transcript"
)

const goldenText = `# a header comment
S: 200 inn.example InterNetNews server INN 2.7.1 ready (transit mode)
C: CAPABILITIES
S: 101 Capability list:
S: VERSION 2
S: IMPLEMENTATION INN 2.7.1
S: .
C: MODE STREAM
S: 203 Streaming permitted
`

func TestSkeleton(t *testing.T) {
	tr, err := transcript.Parse([]byte(goldenText))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"S 200", "C CAPABILITIES", "S 101 Capability list:", "S VERSION 2", "S IMPLEMENTATION", "S .", "C MODE STREAM", "S 203"}
	if d := cmp.Diff(want, Skeleton(tr)); d != "" {
		t.Errorf("Skeleton (-want +got):\n%s", d)
	}
	wantBySide := []string{"C CAPABILITIES", "C MODE STREAM", "S 200", "S 101 Capability list:", "S VERSION 2", "S IMPLEMENTATION", "S .", "S 203"}
	if d := cmp.Diff(wantBySide, BySide(Skeleton)(tr)); d != "" {
		t.Errorf("BySide(Skeleton) (-want +got):\n%s", d)
	}
}

// reporter is a testing.TB that keeps what Errorf reports.
type reporter struct {
	testing.TB
	errors []string
}

func (r *reporter) Helper()             {}
func (r *reporter) Logf(string, ...any) {}
func (r *reporter) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}

func TestGoldenCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inn.txt")
	live := []byte(goldenText)

	if (Golden{Path: path, Update: true, Flag: "-update"}).Check(t, live) {
		t.Error("Check with Update returned true, want false (the caller stops)")
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != goldenText {
		t.Fatalf("Update wrote %q, %v; want the live text", got, err)
	}

	// Another host, another greeting: the skeleton is the same.
	other := strings.Replace(goldenText, "inn.example", "news.example.org", 1)
	r := &reporter{TB: t}
	if !(Golden{Path: path, Flag: "-update"}).Check(r, []byte(other)) {
		t.Error("Check returned false without Update")
	}
	if len(r.errors) > 0 {
		t.Errorf("host names differ only: %v", r.errors)
	}

	// INN answers differently: reported, naming the file and the flag.
	changed := strings.Replace(goldenText, "203 Streaming permitted", "500 Unknown command", 1)
	r = &reporter{TB: t}
	(Golden{Path: path, Flag: "-update-inn"}).Check(r, []byte(changed))
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], path) || !strings.Contains(r.errors[0], "-update-inn") || !strings.Contains(r.errors[0], "S 500") {
		t.Errorf("a changed answer reported as %q, want one error naming %s, -update-inn and the new code", r.errors, path)
	}

	// A skeleton of the caller's own.
	r = &reporter{TB: t}
	none := func(transcript.Transcript) []string { return nil }
	(Golden{Path: path, Flag: "-update", Skeleton: none}).Check(r, []byte(changed))
	if len(r.errors) > 0 {
		t.Errorf("with a skeleton that compares nothing: %v", r.errors)
	}
}
