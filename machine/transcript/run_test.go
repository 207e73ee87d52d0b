package transcript

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCaseCheck: Check replays under the splits it should, in order, and
// fails where a result is not what it must be.
func TestCaseCheck(t *testing.T) {
	tr := mustParse(t, "S: 200 hi\nC: QUIT\nS: 205 bye\n") // the longest run of S input: 9 bytes
	// pieces names a split by what it does to "200 hi\r\n".
	pieces := func(split func([]byte) [][]byte) string {
		if split == nil {
			return "lines"
		}
		return string(bytes.Join(split([]byte("200 hi\r\n")), []byte("|")))
	}
	for _, tc := range []struct {
		name    string
		c       Case
		replay  func(string) (string, error)
		calls   string // the splits Replay saw
		wantErr string
	}{
		{"every split gives Want", Case{Want: "ok"}, func(string) (string, error) { return "ok", nil },
			"lines 200 hi\r\n 2|0|0| |h|i|\r|\n 2|00 hi\r\n 20|0 hi\r\n 200| hi\r\n 200 |hi\r\n 200 h|i\r\n 200 hi|\r\n 200 hi\r|\n 200 hi\r\n", ""},
		{"Limit bounds the cuts; Extra come last", Case{Want: "ok", Limit: 3, Extra: []Split{{"chunks4", Chunks(4)}}},
			func(string) (string, error) { return "ok", nil },
			"lines 200 hi\r\n 2|0|0| |h|i|\r|\n 2|00 hi\r\n 20|0 hi\r\n 200 |hi\r\n", ""},
		{"WholeOnly leaves out lines", Case{Want: "ok", WholeOnly: true, Limit: 2}, func(string) (string, error) { return "ok", nil },
			"200 hi\r\n 2|0|0| |h|i|\r|\n 2|00 hi\r\n", ""},
		{"a result other than Want", Case{Want: "ok", Limit: 2}, func(s string) (string, error) {
			if s == "2|00 hi\r\n" {
				return "bad", nil
			}
			return "ok", nil
		}, "lines 200 hi\r\n 2|0|0| |h|i|\r|\n 2|00 hi\r\n", "split cut at 1: events (-want +got)"},
		{"no Want: as the first split", Case{Limit: 2}, func(s string) (string, error) {
			if s == "2|0|0| |h|i|\r|\n" {
				return "other", nil
			}
			return "same", nil
		}, "lines 200 hi\r\n 2|0|0| |h|i|\r|\n", "split bytes: events differ from split lines's"},
		{"Varies: nothing compared", Case{Limit: 2, Varies: true}, func(s string) (string, error) { return s, nil },
			"lines 200 hi\r\n 2|0|0| |h|i|\r|\n 2|00 hi\r\n", ""},
		{"a divergence stops the check", Case{Limit: 2}, func(s string) (string, error) {
			if s == "200 hi\r\n" {
				return "", errors.New("transcript line 1: machine wrote nothing")
			}
			return "", nil
		}, "lines 200 hi\r\n", "split whole: transcript line 1: machine wrote nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			tc.c.Replay = func(split func([]byte) [][]byte) (string, error) {
				calls = append(calls, pieces(split))
				return tc.replay(pieces(split))
			}
			err := tc.c.Check(tr, Server)
			if d := cmp.Diff(tc.calls, strings.Join(calls, " ")); d != "" {
				t.Errorf("splits (-want +got):\n%s", d)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Errorf("Check = %v, want an error starting %q", err, tc.wantErr)
			}
		})
	}
}
