package jobs

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSegmentsAdd(t *testing.T) {
	tests := []struct {
		add  []int
		want string
	}{
		{nil, ""},
		{[]int{1}, "1"},
		{[]int{1, 2, 3}, "1-3"},
		{[]int{3, 2, 1}, "1-3"},
		{[]int{1, 3}, "1,3"},
		{[]int{1, 3, 2}, "1-3"},
		{[]int{5, 1, 9, 3, 7}, "1,3,5,7,9"},
		{[]int{5, 1, 9, 3, 7, 2, 8, 4, 6}, "1-9"},
		{[]int{10, 20, 11, 19, 15}, "10-11,15,19-20"},
		{[]int{MaxSegment, 1}, "1," + strconv.Itoa(MaxSegment)},
	}
	for _, tc := range tests {
		var s Segments
		for _, n := range tc.add {
			s.Add(n)
		}
		if got := s.String(); got != tc.want {
			t.Errorf("add %v: %q, want %q", tc.add, got, tc.want)
		}
	}
	var s Segments
	if !s.Add(4) || s.Add(4) {
		t.Error("Add's newness report wrong")
	}
}

// TestSegmentsReference: random adds agree with a map.
func TestSegmentsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var s Segments
		ref := map[int]bool{}
		for range r.IntN(200) {
			n := 1 + r.IntN(100)
			if s.Add(n) == ref[n] {
				t.Fatalf("round %d: Add(%d) newness disagrees with the map", round, n)
			}
			ref[n] = true
		}
		checkAgainst(t, s, ref)
	}
}

func checkAgainst(t *testing.T, s Segments, ref map[int]bool) {
	t.Helper()
	if s.Len() != len(ref) {
		t.Fatalf("Len %d, map %d (%s)", s.Len(), len(ref), s)
	}
	for n := 0; n <= 102; n++ {
		if s.Has(n) != ref[n] {
			t.Fatalf("Has(%d) = %t, map %t (%s)", n, s.Has(n), ref[n], s)
		}
	}
	back, err := ParseSegments(s.String())
	if err != nil || back.String() != s.String() {
		t.Fatalf("ParseSegments(%q) = %q, %v", s, back, err)
	}
}

func TestParseSegmentsRefuses(t *testing.T) {
	for _, text := range []string{",", "1,", ",1", "0", "-1", "1-1", "3-2", "01", "+1", "1-2,3", "1-3,2", "1,1", "2,1",
		"1 ", " 1", "1--2", "1-2-3", "a", "2147483648", "99999999999", "1,,2"} {
		if s, err := ParseSegments(text); err == nil {
			t.Errorf("ParseSegments(%q) = %q, accepted", text, s)
		}
	}
	var s Segments
	if err := json.Unmarshal([]byte(`5`), &s); err == nil {
		t.Error("JSON number accepted as a set")
	}
}

// FuzzSegments: what ParseSegments accepts prints back exactly (the text
// form is canonical), and it agrees with a simple reference parser that
// expands the runs.
func FuzzSegments(f *testing.F) {
	for _, s := range []string{"", "1", "1-40,42", "1-3,5-9,11", "2147483647", "1,3,5", "1-2,3", "0", "5-5", "1,,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSegments(text)
		ref, refOK, expanded := referenceParse(text)
		if (err == nil) != refOK {
			t.Fatalf("ParseSegments(%q) error %v, reference ok %t", text, err, refOK)
		}
		if err != nil {
			return
		}
		if got := s.String(); got != text {
			t.Fatalf("ParseSegments(%q).String() = %q", text, got)
		}
		if !expanded {
			return
		}
		var built Segments
		for _, n := range ref {
			built.Add(n)
		}
		if built.String() != text {
			t.Fatalf("adding the reference's numbers gives %q, want %q", built, text)
		}
	})
}

// referenceParse expands small sets number by number and applies the
// canonical-form rules directly; a set with a run over 10000 numbers is not
// expanded (expanded false).
func referenceParse(text string) (nums []int, ok, expanded bool) {
	if text == "" {
		return nil, true, true
	}
	expanded = true
	last := -1
	for _, part := range strings.Split(text, ",") {
		ends := strings.Split(part, "-")
		if len(ends) > 2 {
			return nil, false, false
		}
		var ends2 []int
		for _, e := range ends {
			if e == "" || e[0] == '0' || strings.TrimLeft(e, "0123456789") != "" {
				return nil, false, false
			}
			n, err := strconv.ParseInt(e, 10, 64)
			if err != nil || n > MaxSegment {
				return nil, false, false
			}
			ends2 = append(ends2, int(n))
		}
		lo, hi := ends2[0], ends2[len(ends2)-1]
		if len(ends2) == 2 && hi <= lo || last >= 0 && lo <= last+1 {
			return nil, false, false
		}
		if hi-lo > 10000 {
			expanded = false
		} else {
			for n := lo; n <= hi; n++ {
				nums = append(nums, n)
			}
		}
		last = hi
	}
	return nums, slices.IsSorted(nums), expanded
}
