package serve

import (
	"strings"
	"testing"
)

func TestSplitPassword(t *testing.T) {
	for _, tc := range []struct{ in, name, pw string }{
		{"Movie", "Movie", ""},
		{"Movie{{secret}}", "Movie", "secret"},
		{"Movie.{{se}}cr{{et}}", "Movie", "se}}cr{{et"},
		{"Movie {{pw}} 2024", "Movie 2024", "pw"},
		{"Movie{{}}", "Movie", ""},
		{"Movie{{open", "Movie{{open", ""},
		{"}}x{{", "}}x{{", ""},
	} {
		name, pw := SplitPassword(tc.in)
		if name != tc.name || pw != tc.pw {
			t.Errorf("SplitPassword(%q) = %q, %q; want %q, %q", tc.in, name, pw, tc.name, tc.pw)
		}
	}
}

// FuzzSplitPassword: the name left never holds a "{{...}}" pair, and
// name and password come from the input.
func FuzzSplitPassword(f *testing.F) {
	for _, s := range []string{"a{{b}}", "{{", "}}{{}}", "x {{y}} z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, pw := SplitPassword(s)
		if pw != "" && !strings.Contains(s, pw) {
			t.Fatalf("password %q not in %q", pw, s)
		}
		if i := strings.Index(name, "{{"); i >= 0 && strings.Contains(name[i+2:], "}}") && pw != "" {
			t.Fatalf("name %q of %q still holds braces", name, s)
		}
	})
}

func TestParseSpeedLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int64
		want int64
		err  bool
	}{
		{"", 0, 0, false}, {"0", 0, 0, false}, {"2M", 0, 2 << 20, false}, {"500K", 0, 500 << 10, false},
		{"2097152", 0, 2097152, false}, {"50", 10 << 20, 5 << 20, false}, {"50%", 10 << 20, 5 << 20, false},
		{"100", 1000, 1000, false}, {"50", 0, 0, true}, {"150%", 1000, 0, true}, {"fast", 0, 0, true}, {"-1M", 0, 0, true},
	} {
		got, err := ParseSpeedLimit(tc.in, tc.max)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseSpeedLimit(%q, %d) = %d, %v; want %d, error %v", tc.in, tc.max, got, err, tc.want, tc.err)
		}
	}
}

// FuzzParseSpeedLimit: never negative, a percentage never above the
// maximum.
func FuzzParseSpeedLimit(f *testing.F) {
	for _, s := range []string{"2M", "50", "50%", "1.5G", "0", "%", "100%", " 7 "} {
		f.Add(s, int64(10<<20))
	}
	f.Fuzz(func(t *testing.T, s string, max int64) {
		max = min(max&(1<<50-1), 1<<50)
		got, err := ParseSpeedLimit(s, max)
		if err != nil {
			return
		}
		if got < 0 {
			t.Fatalf("ParseSpeedLimit(%q, %d) = %d", s, max, got)
		}
		if strings.HasSuffix(strings.TrimSpace(s), "%") && got > max {
			t.Fatalf("ParseSpeedLimit(%q, %d) = %d: above the maximum", s, max, got)
		}
	})
}
