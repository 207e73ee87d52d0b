package transcript

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The transcript tests of the machine packages (handshake, feed, ingest,
// download, reader) all do the same: read testdata/*.txt, read each file's
// header comments, replay the file against fresh machines with its input
// whole, line by line, byte by byte and cut at every offset, and compare
// what the machines did. Run is that loop; each package says, per file, how
// to replay it (Case).

// A Case is the test of one transcript file, as its package sets it up
// from the file's header comments.
type Case struct {
	// Replay replays the transcript against fresh machines with the input
	// cut by split (nil: one transcript line per Receive) and returns what
	// the test compares, a summary of the machines' events, or the first
	// divergence.
	Replay func(split func(run []byte) [][]byte) (string, error)

	// Want is what Replay must return under every split. When it is
	// empty, every split must return what the first ("lines") did, unless
	// Varies says the events may depend on how the input is cut.
	Want   string
	Varies bool

	// Limit bounds the "cut at k" splits to k < Limit (0: every offset of
	// the longest run of input). WholeOnly leaves out "lines": a recorded
	// session, where one read may hold several lines. Extra splits run
	// after the standard ones.
	Limit     int
	WholeOnly bool
	Extra     []Split
}

// Run runs a subtest per file of fsys matching pattern (named for the file without
// ".txt"): setup reads the file's header into a Case, and Check replays it
// under every split. input is the side whose Data the machine receives:
// Server for a client machine, Client for the ingest machine. No file
// matching is a failure, so a test cannot pass by finding nothing.
func Run(t *testing.T, fsys fs.FS, pattern string, input Side, setup func(File) (Case, error)) {
	t.Helper()
	files, err := ReadFiles(fsys, pattern)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(path.Base(f.Path), ".txt"), func(t *testing.T) {
			c, err := setup(f)
			if err == nil {
				err = c.Check(f.Transcript, input)
			}
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
		})
	}
}

// Check runs Replay under every split of Splits(t, input, c.Limit) (but
// "lines" when WholeOnly) and the Extra ones, in that order, and returns
// the first failure: a divergence, or a result other than Want (or, with no
// Want, other than the first split's).
func (c Case) Check(t Transcript, input Side) error {
	ref, haveRef, refName := c.Want, c.Want != "", ""
	for _, split := range append(Splits(t, input, c.Limit), c.Extra...) {
		if c.WholeOnly && split.Name == "lines" {
			continue
		}
		got, err := c.Replay(split.Fn)
		if err != nil {
			return fmt.Errorf("split %s: %w", split.Name, err)
		}
		if !haveRef {
			if !c.Varies {
				ref, haveRef, refName = got, true, split.Name
			}
			continue
		}
		if d := cmp.Diff(ref, got); d != "" {
			if refName != "" {
				return fmt.Errorf("split %s: events differ from split %s's (-%s +%s):\n%s", split.Name, refName, refName, split.Name, d)
			}
			return fmt.Errorf("split %s: events (-want +got):\n%s", split.Name, d)
		}
	}
	return nil
}
