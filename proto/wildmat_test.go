package proto

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatchWildmat(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		// Literals and the RFC 3977 §4 wildcards.
		{"misc.test", "misc.test", true},
		{"misc.test", "misc.tests", false},
		{"misc.*", "misc.test", true},
		{"misc.*", "misc.", true},
		{"misc.*", "misc", false},
		{"*", "", true},
		{"*", "anything.at.all", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyyca", false},
		{"*.test", "a.b.test", true},
		{"a**b", "ab", true},
		{"?", "a", true},
		{"?", "", false},
		{"?", "ab", false},
		{"?", "é", true},    // one UTF-8 character, two octets
		{"??", "é", false},  // not two
		{"?", "\xff", true}, // an invalid octet is one character
		{"caf?", "café", true},
		// Sets and escapes (RFC 3977 §4.4, INN uwildmat).
		{"[abc]", "b", true},
		{"[abc]", "d", false},
		{"[a-c]x", "bx", true},
		{"[!a-c]", "d", true},
		{"[!a-c]", "b", false},
		{"[^a-c]", "b", false},
		{"[]]", "]", true},
		{"[!]]", "]", false},
		{"[a-]", "-", true},
		{"[,]", ",", true},   // a comma inside a set is a member
		{"[à-ÿ]", "é", true}, // ranges over characters
		{"\\*", "*", true},
		{"\\*", "a", false},
		{"a\\,b", "a,b", true},
		{"\\!x", "!x", true},
		{"[", "[", false},   // malformed: matches nothing
		{"a\\", "a", false}, // malformed
		{"*[", "x[", false}, // malformed even when * could swallow
		// Lists: the last match wins, "!" negates.
		{"*,!control.*", "misc.test", true},
		{"*,!control.*", "control.cancel", false},
		{"!control.*,*", "control.cancel", true},
		{"comp.*,!comp.lang.*,comp.lang.go", "comp.lang.go", true},
		{"comp.*,!comp.lang.*,comp.lang.go", "comp.lang.c", false},
		{"comp.*,!comp.lang.*,comp.lang.go", "comp.os", true},
		{"!*", "x", false},
		{"a,b", "b", true},
		{"a,b", "c", false},
		{"", "", true},
		{"", "x", false},
	}
	for _, tc := range tests {
		if got := MatchWildmat(tc.pattern, tc.s); got != tc.want {
			t.Errorf("MatchWildmat(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestValidWildmat(t *testing.T) {
	for p, ok := range map[string]bool{
		"*": true, "a,!b": true, "[a-z]*": true, "\\[": true, "[]]": true,
		"": false, "a,,b": false, "!": false, "[abc": false, "a\\": false,
	} {
		if err := ValidWildmat(p); (err == nil) != ok {
			t.Errorf("ValidWildmat(%q) = %v, want ok=%v", p, err, ok)
		}
	}
}

func TestGroupPatterns(t *testing.T) {
	// newsfeeds(5): each group on its own, last match decides; "!" keeps a
	// group from counting; "@" refuses the whole article.
	pats := []string{"*", "!control.*", "!junk", "@alt.binaries.*", "alt.binaries.ok", "@local.*"}
	g, err := ParseGroupPatterns(pats)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		groups []string
		want   bool
	}{
		{"plain group", []string{"misc.test"}, true},
		{"negated group alone", []string{"control.cancel"}, false},
		{"negated group crossposted to a wanted one still goes", []string{"control.cancel", "misc.test"}, true},
		{"poisoned group alone", []string{"alt.binaries.x"}, false},
		{"poison wins over a wanted crosspost", []string{"misc.test", "alt.binaries.x"}, false},
		{"later plain pattern overrides the poison for that group", []string{"alt.binaries.ok", "misc.test"}, true},
		{"poison from the last pattern", []string{"local.stuff", "misc.test"}, false},
		{"junk only", []string{"junk"}, false},
		{"no groups", nil, false},
	}
	for _, tc := range tests {
		if got := g.WantsGroups(tc.groups); got != tc.want {
			t.Errorf("%s: WantsGroups(%q) = %v, want %v", tc.name, tc.groups, got, tc.want)
		}
	}
	verdicts := map[string]GroupMatch{"misc.test": GroupWanted, "control.x": GroupNoMatch, "alt.binaries.x": GroupPoison, "alt.binaries.ok": GroupWanted}
	for grp, want := range verdicts {
		if got := g.Match(grp); got != want {
			t.Errorf("Match(%q) = %v, want %v", grp, got, want)
		}
	}
	if s := g.String(); s != "*,!control.*,!junk,@alt.binaries.*,alt.binaries.ok,@local.*" {
		t.Errorf("String = %q", s)
	}

	// A newsfeeds field given as one comma list parses the same.
	g2, err := ParseGroupPatterns([]string{strings.Join(pats, ",")})
	if err != nil || g2.String() != g.String() {
		t.Errorf("comma list: %q, %v", g2.String(), err)
	}
	// Empty patterns want nothing.
	var empty GroupPatterns
	if empty.WantsGroups([]string{"misc.test"}) {
		t.Errorf("empty patterns want misc.test")
	}
	// Order matters: "!" first is overridden by a later "*".
	g3, _ := ParseGroupPatterns([]string{"!control.*", "*"})
	if !g3.WantsGroups([]string{"control.cancel"}) {
		t.Errorf("later * did not override earlier !control.*")
	}
}

func TestParseGroupPatternsErrors(t *testing.T) {
	for _, list := range [][]string{{""}, {"*", "!"}, {"@"}, {"a,,b"}, {"[abc"}, {"@!x"}, {"!!x"}} {
		if _, err := ParseGroupPatterns(list); err == nil {
			t.Errorf("ParseGroupPatterns(%q) accepted", list)
		}
	}
}

// wildmatRegexp translates one pattern (no list) into an anchored regexp:
// the reference the fuzz target compares with, for valid UTF-8.
func wildmatRegexp(p string) (*regexp.Regexp, bool) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			if i+n >= len(p) {
				return nil, false
			}
			r2, n2 := utf8.DecodeRuneInString(p[i+n:])
			b.WriteString(regexp.QuoteMeta(string(r2)))
			n += n2
		case '[':
			end := wildmatSetEnd(p, i)
			if end < 0 {
				return nil, false
			}
			set := p[i+1 : end]
			neg := strings.HasPrefix(set, "!") || strings.HasPrefix(set, "^")
			if neg {
				set = set[1:]
			}
			var members strings.Builder
			lit := func(r rune) string { return fmt.Sprintf(`\x{%x}`, r) }
			for j := 0; j < len(set); {
				if set[j] == '\\' && j+1 < len(set) {
					j++
				}
				lo, m := utf8.DecodeRuneInString(set[j:])
				j += m
				hi := lo
				if j+1 < len(set) && set[j] == '-' {
					k := j + 1
					if set[k] == '\\' && k+1 < len(set) {
						k++
					}
					var m2 int
					hi, m2 = utf8.DecodeRuneInString(set[k:])
					j = k + m2
				}
				if lo <= hi { // a reversed range holds nothing
					members.WriteString(lit(lo) + "-" + lit(hi))
				}
			}
			switch {
			case members.Len() == 0 && neg:
				b.WriteString(`[\x00-\x{10FFFF}]`)
			case members.Len() == 0:
				b.WriteString(`[^\x00-\x{10FFFF}]`)
			case neg:
				b.WriteString("[^" + members.String() + "]")
			default:
				b.WriteString("[" + members.String() + "]")
			}
			n = end + 1 - i
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
		i += n
	}
	b.WriteString(`)$`)
	re, err := regexp.Compile(b.String())
	return re, err == nil
}

func FuzzWildmat(f *testing.F) {
	for _, s := range [][2]string{
		{"*,!control.*", "control.cancel"}, {"comp.*,!comp.lang.*,comp.lang.go", "comp.lang.go"},
		{"[a-c]x", "bx"}, {"[!]]*", "x]"}, {"a\\,b", "a,b"}, {"?", "é"}, {"a*b*c", "axxbyyc"},
		{"@alt.binaries.*", "alt.binaries.x"}, {"*[", "x["},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		got := MatchWildmat(pattern, s)
		// A quoted literal matches itself and only itself (checked on one
		// other string), also as a newsfeeds pattern.
		q := QuoteWildmat(s)
		if !MatchWildmat(q, s) {
			t.Fatalf("MatchWildmat(Quote(%q)=%q) = false", s, q)
		}
		if s != pattern && MatchWildmat(q, pattern) {
			t.Fatalf("MatchWildmat(Quote(%q), %q) = true", s, pattern)
		}
		if s != "" && s == strings.TrimSpace(s) { // patterns are trimmed
			gp, err := ParseGroupPatterns([]string{q})
			if err != nil || !gp.WantsGroups([]string{s}) {
				t.Fatalf("GroupPatterns(Quote(%q)): %v", s, err)
			}
		}
		// A list element behaves as "last match wins".
		elems := splitWildmat(pattern)
		want := false
		for _, e := range elems {
			neg := strings.HasPrefix(e, "!")
			if matchSimple(strings.TrimPrefix(e, "!"), s) {
				want = !neg
			}
		}
		if got != want {
			t.Fatalf("MatchWildmat(%q, %q) = %v, last-match-wins over %q says %v", pattern, s, got, elems, want)
		}
		// Each element agrees with a regexp translation, for valid UTF-8.
		if !utf8.ValidString(pattern) || !utf8.ValidString(s) {
			return
		}
		for _, e := range elems {
			e = strings.TrimPrefix(e, "!")
			re, ok := wildmatRegexp(e)
			if !ok {
				if ValidWildmat(e) == nil && e != "" {
					t.Fatalf("reference could not translate valid %q", e)
				}
				continue
			}
			if m := matchSimple(e, s); m != re.MatchString(s) {
				t.Fatalf("matchSimple(%q, %q) = %v, regexp %s says %v", e, s, m, re, !m)
			}
		}
	})
}
