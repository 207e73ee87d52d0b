package nntptest

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// wildmatReference is a slow wildmat built on regexp: each pattern becomes
// an anchored expression, and the last one to match decides.
func wildmatReference(pat, name string) bool {
	result := false
	for _, p := range strings.Split(pat, ",") {
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = p[1:]
		}
		var re strings.Builder
		re.WriteString(`^`)
		for _, r := range p {
			switch r {
			case '*':
				re.WriteString(`(?s:.*)`)
			case '?':
				re.WriteString(`(?s:.)`)
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		re.WriteString(`$`)
		if regexp.MustCompile(re.String()).MatchString(name) {
			result = !neg
		}
	}
	return result
}

func TestWildmat(t *testing.T) {
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"*", "misc.test", true},
		{"misc.*", "misc.test", true},
		{"misc.*", "alt.misc", false},
		{"*,!misc.*", "misc.test", false},
		{"*,!misc.*,misc.test", "misc.test", true},
		{"!misc.*", "alt.test", false}, // a lone negation matches nothing
		{"?isc.test", "misc.test", true},
		{"misc.te?t", "misc.tet", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"", "", true},
		{"", "x", false},
		{"é?", "éü", true},
		{"*.binaries.*", "alt.binaries.test", true},
	}
	for _, tt := range tests {
		if got := wildmat(tt.pat, tt.name); got != tt.want {
			t.Errorf("wildmat(%q, %q) = %v, want %v", tt.pat, tt.name, got, tt.want)
		}
		if ref := wildmatReference(tt.pat, tt.name); ref != tt.want {
			t.Errorf("reference wildmat(%q, %q) = %v, want %v", tt.pat, tt.name, ref, tt.want)
		}
	}
}

// FuzzWildmat checks the matcher against the regexp reference.
func FuzzWildmat(f *testing.F) {
	for _, s := range [][2]string{
		{"*,!misc.*,misc.test", "misc.test"}, {"a*b?c", "aXbYc"}, {"**?*", "é"}, {"comp.lang.*", "comp.lang.go"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, name string) {
		if !utf8.ValidString(pat) || len(pat) > 64 || len(name) > 256 {
			t.Skip()
		}
		if got, want := wildmat(pat, name), wildmatReference(pat, name); got != want {
			t.Errorf("wildmat(%q, %q) = %v, reference says %v", pat, name, got, want)
		}
	})
}

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
