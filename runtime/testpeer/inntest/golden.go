package inntest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
)

// A Golden is a transcript of a session with a live INN kept as testdata:
// tests replay it without INN, a run with the update flag rewrites it from
// INN, and every other run with INN holds INN's side to it, so a new INN
// that answers differently is noticed.
type Golden struct {
	Path   string // the golden file
	Update bool   // rewrite Path from the live recording instead of comparing
	Flag   string // the flag that sets Update, named in messages ("-update")

	// Skeleton is what is compared of a transcript: the parts a live INN
	// gives the same on every run and every host. Nil means Skeleton.
	Skeleton func(transcript.Transcript) []string
}

// MustRecord fails t when update is set and INN is not installed: a run
// asked to rewrite goldens from INN must not pass by being skipped.
func MustRecord(t testing.TB, update bool, flag string) {
	t.Helper()
	if err := Available(); err != nil && update {
		t.Fatalf("%s needs INN: %v", flag, err)
	}
}

// Check holds text, the live session formatted as a transcript (header
// comments included), to the golden file. With Update it writes text to
// Path and returns false: the caller stops there. Otherwise it fails t when
// the golden cannot be read, reports with t.Errorf how the skeletons differ
// (naming the file and the flag that rewrites it), and returns true.
func (g Golden) Check(t testing.TB, text []byte) bool {
	t.Helper()
	if g.Update {
		if err := os.WriteFile(g.Path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", g.Path)
		return false
	}
	live, err := transcript.Parse(text)
	if err != nil {
		t.Fatalf("the live session: %v", err)
	}
	raw, err := os.ReadFile(g.Path)
	if err != nil {
		t.Fatalf("%v (run with %s to record it)", err, g.Flag)
	}
	golden, err := transcript.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", g.Path, err)
	}
	skeleton := g.Skeleton
	if skeleton == nil {
		skeleton = Skeleton
	}
	if d := cmp.Diff(skeleton(golden), skeleton(live)); d != "" {
		t.Errorf("the session differs from %s (-golden +live); rerun with %s if INN changed:\n%s", g.Path, g.Flag, d)
	}
	return true
}

// Skeleton is the usual comparison of a session with INN: every line the
// client sent ("C " and the line), and every line INN sent ("S " and the
// line) with what names the host or the build dropped: a response of 200 or
// above keeps only its code (greetings and MODE READER answers name the
// host) and a capability line "IMPLEMENTATION ..." only its keyword.
func Skeleton(tr transcript.Transcript) []string {
	var s []string
	for _, e := range tr {
		if e.Kind != transcript.Data {
			continue
		}
		line := strings.TrimRight(string(e.Data), "\r\n")
		if e.Side == transcript.Server {
			if r, err := proto.ParseResponse([]byte(line)); err == nil && line[0] >= '2' {
				line = fmt.Sprint(r.Code)
			}
			if strings.HasPrefix(line, "IMPLEMENTATION ") {
				line = "IMPLEMENTATION"
			}
		}
		s = append(s, e.Side.String()+" "+line)
	}
	return s
}

// BySide returns skeleton's lines with the client's first and INN's after,
// each side in its own order: the comparison for a session whose two
// directions interleave differently from run to run (pipelined commands,
// reads split by timing).
func BySide(skeleton func(transcript.Transcript) []string) func(transcript.Transcript) []string {
	return func(tr transcript.Transcript) []string {
		var client, server []string
		for _, l := range skeleton(tr) {
			if strings.HasPrefix(l, transcript.Client.String()+" ") {
				client = append(client, l)
			} else {
				server = append(server, l)
			}
		}
		return append(client, server...)
	}
}
