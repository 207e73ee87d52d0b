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
