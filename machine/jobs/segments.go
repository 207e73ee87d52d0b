package jobs

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxSegment is the largest segment number a set holds (NZB numbers are
// positive 32-bit integers in practice).
const MaxSegment = 1<<31 - 1

// Segments is a set of segment numbers (1..MaxSegment), kept as sorted
// disjoint runs, so a download that finishes segments roughly in order costs
// a few bytes per file however many segments it has. Its text (and JSON)
// form is the runs in ascending order, "1-40,42,45-50"; the zero value is
// the empty set.
type Segments struct {
	runs []run // sorted; runs[i].hi+1 < runs[i+1].lo
}

type run struct{ lo, hi int }

// Add puts n in the set and reports whether it was new. n must be in
// 1..MaxSegment.
func (s *Segments) Add(n int) bool {
	// The first run that ends at or after n-1: the only one n can be in or
	// touch from below; the one before it ends before n-1.
	i := sort.Search(len(s.runs), func(i int) bool { return s.runs[i].hi >= n-1 })
	if i < len(s.runs) && s.runs[i].lo <= n+1 {
		r := &s.runs[i]
		switch {
		case r.lo <= n && n <= r.hi:
			return false
		case n == r.hi+1:
			r.hi = n
			if i+1 < len(s.runs) && s.runs[i+1].lo == n+1 {
				r.hi = s.runs[i+1].hi
				s.runs = append(s.runs[:i+1], s.runs[i+2:]...)
			}
		default: // n == r.lo-1
			r.lo = n
		}
		return true
	}
	s.runs = append(s.runs, run{})
	copy(s.runs[i+1:], s.runs[i:])
	s.runs[i] = run{n, n}
	return true
}

// Has reports whether n is in the set.
func (s Segments) Has(n int) bool {
	i := sort.Search(len(s.runs), func(i int) bool { return s.runs[i].hi >= n })
	return i < len(s.runs) && s.runs[i].lo <= n
}

// Len returns how many numbers the set holds.
func (s Segments) Len() int {
	n := 0
	for _, r := range s.runs {
		n += r.hi - r.lo + 1
	}
	return n
}

// Clone returns a copy that shares nothing with s.
func (s Segments) Clone() Segments {
	if s.runs == nil {
		return Segments{}
	}
	return Segments{runs: append([]run(nil), s.runs...)}
}

// String returns the set's text form, e.g. "1-40,42"; "" when empty.
func (s Segments) String() string {
	var b []byte
	for i, r := range s.runs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(r.lo), 10)
		if r.hi != r.lo {
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(r.hi), 10)
		}
	}
	return string(b)
}

// ParseSegments parses the text form String writes, and only that form:
// ascending runs "a" or "a-b" (a < b) separated by commas, each starting at
// least two past the end of the one before, numbers in 1..MaxSegment
// without signs or leading zeros. So ParseSegments(x).String() == x.
func ParseSegments(text string) (Segments, error) {
	var s Segments
	if text == "" {
		return s, nil
	}
	for part := range strings.SplitSeq(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseSegmentNumber(lo)
		if err != nil {
			return Segments{}, fmt.Errorf("jobs: segments %q: %w", text, err)
		}
		b := a
		if isRange {
			if b, err = parseSegmentNumber(hi); err != nil {
				return Segments{}, fmt.Errorf("jobs: segments %q: %w", text, err)
			}
			if b <= a {
				return Segments{}, fmt.Errorf("jobs: segments %q: run %q does not ascend", text, part)
			}
		}
		if n := len(s.runs); n > 0 && a <= s.runs[n-1].hi+1 {
			return Segments{}, fmt.Errorf("jobs: segments %q: run %q overlaps or touches the one before", text, part)
		}
		s.runs = append(s.runs, run{a, b})
	}
	return s, nil
}

func parseSegmentNumber(t string) (int, error) {
	if t == "" || t[0] == '0' || len(t) > 10 {
		return 0, fmt.Errorf("bad segment number %q", t)
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return 0, fmt.Errorf("bad segment number %q", t)
		}
	}
	n, err := strconv.Atoi(t)
	if err != nil || n > MaxSegment {
		return 0, fmt.Errorf("segment number %q out of range 1..%d", t, MaxSegment)
	}
	return n, nil
}

// MarshalJSON writes the set as its text form, a JSON string.
func (s Segments) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads the set from a JSON string in its text form.
func (s *Segments) UnmarshalJSON(b []byte) error {
	var text string
	if err := json.Unmarshal(b, &text); err != nil {
		return fmt.Errorf("jobs: segments: %w", err)
	}
	v, err := ParseSegments(text)
	if err != nil {
		return err
	}
	*s = v
	return nil
}
