package transcript

import (
	"strings"
	"time"
)

// An owner's action in a transcript is a comment "# do: ACTION": at that
// point of the session the test calls the machine's owner-side method the
// action names ("close", "offer <id>", ...). The words of an action are the
// test's own; this file only finds them.

// Action reports whether e is an owner's action, a "# do: ACTION" comment,
// and returns ACTION with the spaces around it trimmed.
func Action(e Entry) (string, bool) {
	if e.Kind != Comment {
		return "", false
	}
	v, ok := strings.CutPrefix(e.Text, "do:")
	if !ok {
		return "", false
	}
	return strings.TrimSpace(v), true
}

// A Part is a stretch of a transcript between two owner's actions.
type Part struct {
	Transcript Transcript // its entries, without the action's comment
	Start      time.Time  // the clock at its first entry
	End        time.Time  // the clock after its last entry (Start plus its "@" lines)
	Then       string     // the action after it; "" after the last part
	ThenLine   int        // the line of that action's comment; 0 after the last part
}

// SplitActions cuts tr at its "# do: ACTION" comments into the parts
// before, between and after them, with the clock starting at start and
// moved on by every "@" line. There is always at least one part (the last,
// with no action after it), so a transcript with no action is one part.
func SplitActions(tr Transcript, start time.Time) []Part {
	var ps []Part
	cur := Part{Start: start, End: start}
	for _, e := range tr {
		if a, ok := Action(e); ok {
			cur.Then, cur.ThenLine = a, e.Line
			ps = append(ps, cur)
			cur = Part{Start: cur.End, End: cur.End}
			continue
		}
		if e.Kind == Advance {
			cur.End = cur.End.Add(e.D)
		}
		cur.Transcript = append(cur.Transcript, e)
	}
	return append(ps, cur)
}

// FirstAction returns the index in tr of the first owner's action, or
// len(tr) when there is none: where the part of a transcript that sets a
// connection up (a handshake) ends and the owner's work begins.
func FirstAction(tr Transcript) int {
	for i, e := range tr {
		if _, ok := Action(e); ok {
			return i
		}
	}
	return len(tr)
}
