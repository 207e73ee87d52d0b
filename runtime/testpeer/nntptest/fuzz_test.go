package nntptest

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var rangeRE = regexp.MustCompile(`^([0-9]{1,18})(-([0-9]{1,18})?)?$`)

// rangeReference parses an article range with a regular expression.
func rangeReference(s string) (lo, hi int64, ok bool) {
	m := rangeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, false
	}
	lo, _ = strconv.ParseInt(m[1], 10, 64)
	switch {
	case m[2] == "":
		return lo, lo, true
	case m[3] == "":
		return lo, math.MaxInt64, true
	}
	hi, _ = strconv.ParseInt(m[3], 10, 64)
	return lo, hi, true
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		in     string
		lo, hi int64
		ok     bool
	}{
		{"5", 5, 5, true}, {"5-", 5, math.MaxInt64, true}, {"5-9", 5, 9, true}, {"9-5", 9, 5, true},
		{"", 0, 0, false}, {"-5", 0, 0, false}, {"5-x", 0, 0, false}, {"1-2-3", 0, 0, false},
		{"1234567890123456789", 0, 0, false}, {" 5", 0, 0, false},
	}
	for _, tt := range tests {
		lo, hi, ok := parseRange(tt.in)
		if diff := cmp.Diff([]any{tt.lo, tt.hi, tt.ok}, []any{lo, hi, ok}); diff != "" {
			t.Errorf("parseRange(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// FuzzParseRange checks the range parser against the regexp reference.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"1", "1-", "1-100", "3000234-3000300", "-", "x-1", "12-34-56"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lo, hi, ok := parseRange(s)
		rlo, rhi, rok := rangeReference(s)
		if lo != rlo || hi != rhi || ok != rok {
			t.Errorf("parseRange(%q) = %d, %d, %v; reference %d, %d, %v", s, lo, hi, ok, rlo, rhi, rok)
		}
	})
}

// FuzzParseFault checks that any fault ParseFault accepts prints back to a
// spec that parses to the same fault.
func FuzzParseFault(f *testing.F) {
	for _, s := range []string{
		`cmd=TAKETHIS nth=2 code=400 text="going down" close`,
		`cmd=GREETING garbage=hello`,
		`cmd=BODY conn=2 times=3 delay=15ms closeafter=100 rate=500`,
		`garbage="\x00\xff\r\n" hang drop`,
		`cmd=mode_stream code=501`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		a, err := ParseFault(spec)
		if err != nil {
			return
		}
		b, err := ParseFault(a.String())
		if err != nil {
			t.Fatalf("ParseFault(%q) (printed from %q): %v", a.String(), spec, err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("round trip of %q via %q (-first +second):\n%s", spec, a.String(), diff)
		}
	})
}
