package transcript

import "fmt"

// A Split is a named way to cut a machine's input, for Options.Split.
type Split struct {
	Name string                    // "lines", "whole", "bytes", "cut at 3", ...
	Fn   func(run []byte) [][]byte // nil gives one transcript line per Receive
}

// Splits returns the standard ways to cut the input of t, the Data that
// side input sends, in this order: "lines" (one transcript line per
// Receive), "whole" (each run in one Receive), "bytes" (one byte per
// Receive) and "cut at k" (each run cut in two at k) for every k from 1 up
// to, not including, the length of the longest run of input in t, and below
// limit when limit > 0. A cut at or past a run's end would only repeat
// "whole". A machine that replays a transcript the same way under all of
// them does not depend on how its peer's bytes happen to arrive.
func Splits(t Transcript, input Side, limit int) []Split {
	s := []Split{{"lines", nil}, {"whole", Whole}, {"bytes", Chunks(1)}}
	n := longestRun(t, input)
	if limit > 0 {
		n = min(n, limit)
	}
	for k := 1; k < n; k++ {
		s = append(s, Split{fmt.Sprintf("cut at %d", k), CutAt(k)})
	}
	return s
}

// longestRun is the length in bytes of the longest run of consecutive Data
// from side, as Replay gathers runs: blank lines and comments do not end a
// run, any other entry does.
func longestRun(t Transcript, side Side) int {
	best, cur := 0, 0
	for _, e := range t {
		switch {
		case e.Kind == Data && e.Side == side:
			cur += len(e.Data)
			best = max(best, cur)
		case e.Kind == Blank || e.Kind == Comment:
		default:
			cur = 0
		}
	}
	return best
}
