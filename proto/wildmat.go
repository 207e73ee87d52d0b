package proto

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Wildmats (RFC 3977 §4) match newsgroup names and other UTF-8 strings:
//
//	*        any sequence of characters, including none
//	?        exactly one character (a UTF-8 character, not an octet)
//	[...]    one character of a set: ranges "a-z", a leading "!" or "^"
//	         negates, a "]" first in the set is literal
//	\x       x literally
//	p1,p2    a list: the LAST pattern that matches decides, and a pattern
//	         starting with "!" makes a match a non-match
//
// "[...]" and "\" are the extensions of RFC 3977 §4.4 that INN implements
// (uwildmat(3)); a "," inside "[...]" is part of the set. A malformed pattern
// (an unclosed "[", a "\" at the end) matches nothing, as in INN.

// MatchWildmat reports whether s matches the wildmat pattern, a comma list
// in which the last matching element decides (RFC 3977 §4.2).
func MatchWildmat(pattern, s string) bool {
	// Walk the elements from the end: the first one that matches decides.
	for end := len(pattern); ; {
		start := wildmatElemStart(pattern, end)
		p := pattern[start:end]
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = p[1:]
		}
		if matchSimple(p, s) {
			return !neg
		}
		if start == 0 {
			return false
		}
		end = start - 1 // skip the comma
	}
}

// wildmatElemStart returns where the list element ending at end starts.
// Scanning backwards cannot tell escapes and sets apart, so it splits the
// pattern forwards once per call; patterns are short.
func wildmatElemStart(pattern string, end int) int {
	start := 0
	for i := 0; i < end; i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '[':
			if j := wildmatSetEnd(pattern, i); j > 0 {
				i = j
			}
		case ',':
			start = i + 1
		}
	}
	return start
}

// splitWildmat splits a comma list into elements, respecting "\," and sets.
func splitWildmat(pattern string) []string {
	var out []string
	start := 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '[':
			if j := wildmatSetEnd(pattern, i); j > 0 {
				i = j
			}
		case ',':
			out = append(out, pattern[start:i])
			start = i + 1
		}
	}
	return append(out, pattern[start:])
}

// wildmatSetEnd returns the index of the "]" closing the set that opens at
// p[i] == '[', or -1 if it is not closed.
func wildmatSetEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++ // a leading ']' is a member
	}
	for ; j < len(p); j++ {
		switch p[j] {
		case '\\':
			j++
		case ']':
			return j
		}
	}
	return -1
}

// ValidWildmat reports a malformed pattern: an unclosed "[", a trailing "\"
// or an empty list element.
func ValidWildmat(pattern string) error {
	for _, e := range splitWildmat(pattern) {
		p := strings.TrimPrefix(e, "!")
		if p == "" {
			return fmt.Errorf("wildmat %q: empty pattern in the list", clipS(pattern))
		}
		for i := 0; i < len(p); i++ {
			switch p[i] {
			case '\\':
				if i+1 == len(p) {
					return fmt.Errorf("wildmat %q: \\ at the end", clipS(pattern))
				}
				i++
			case '[':
				j := wildmatSetEnd(p, i)
				if j < 0 {
					return fmt.Errorf("wildmat %q: [ not closed", clipS(pattern))
				}
				i = j
			}
		}
	}
	return nil
}

// QuoteWildmat returns a pattern that matches exactly s, with every
// character that is special in a wildmat or a newsfeeds list escaped.
func QuoteWildmat(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '*', '?', '[', ']', '\\', ',', '!', '@', '^':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// decodeChar returns the character at s[i:] and its width. An octet that is
// not valid UTF-8 is a character of its own, numbered above the Unicode
// range so that it equals only itself.
func decodeChar(s string, i int) (rune, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && n == 1 {
		return utf8.MaxRune + 1 + rune(c), 1
	}
	return r, n
}

// matchSimple matches one pattern without commas or "!" prefix. It is the
// usual iterative glob match: on a mismatch, retry from the most recent "*"
// with one more character swallowed, which is complete for "*" (each "*"
// only ever needs the latest restart point) and linear in practice.
func matchSimple(p, s string) bool {
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				for pi < len(p) && p[pi] == '*' {
					pi++
				}
				if pi == len(p) {
					return validTail(p) // "*" at the end swallows the rest
				}
				starP, starS = pi, si
				continue
			case '?':
				_, n := decodeChar(s, si)
				pi++
				si += n
				continue
			case '[':
				end := wildmatSetEnd(p, pi)
				if end < 0 {
					return false // malformed: matches nothing
				}
				r, n := decodeChar(s, si)
				if matchSet(p[pi+1:end], r) {
					pi = end + 1
					si += n
					continue
				}
			case '\\':
				if pi+1 == len(p) {
					return false // malformed
				}
				pr, pn := decodeChar(p, pi+1)
				r, n := decodeChar(s, si)
				if pr == r {
					pi += 1 + pn
					si += n
					continue
				}
			default:
				pr, pn := decodeChar(p, pi)
				r, n := decodeChar(s, si)
				if pr == r {
					pi += pn
					si += n
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last "*" swallow one more character and retry.
		_, n := decodeChar(s, starS)
		starS += n
		pi, si = starP, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p) && validTail(p)
}

// validTail reports whether the pattern is well formed, so that a malformed
// pattern matches nothing even when the mismatch point was never reached.
func validTail(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 == len(p) {
				return false
			}
			i++
		case '[':
			j := wildmatSetEnd(p, i)
			if j < 0 {
				return false
			}
			i = j
		}
	}
	return true
}

// matchSet matches r against the inside of "[...]".
func matchSet(set string, r rune) bool {
	neg := false
	if set != "" && (set[0] == '!' || set[0] == '^') {
		neg, set = true, set[1:]
	}
	found := false
	for i := 0; i < len(set); {
		if set[i] == '\\' && i+1 < len(set) {
			i++
		}
		lo, n := decodeChar(set, i)
		i += n
		hi := lo
		if i+1 < len(set) && set[i] == '-' {
			j := i + 1
			if set[j] == '\\' && j+1 < len(set) {
				j++
			}
			var m int
			hi, m = decodeChar(set, j)
			i = j + m
		}
		if lo <= r && r <= hi {
			found = true
		}
	}
	return found != neg
}

// GroupPatterns is a peer's newsgroup subscription in INN newsfeeds(5)
// form: a list of wildmats, each optionally prefixed "!" (negation) or "@"
// (poison), read left to right with the last match deciding for each group.
type GroupPatterns struct {
	elems []groupPattern
}

type groupPattern struct {
	pat  string
	kind byte // 0 want, '!' not wanted, '@' poison
}

// ParseGroupPatterns parses a list such as ["*", "!control.*",
// "@alt.binaries.*"]. Each element may itself be a comma list
// ("*,!junk"), as in a newsfeeds entry; whitespace around elements is
// removed. Empty elements and malformed wildmats are errors.
func ParseGroupPatterns(list []string) (GroupPatterns, error) {
	var g GroupPatterns
	for _, l := range list {
		for _, e := range splitWildmat(l) {
			e = strings.TrimSpace(e)
			var kind byte
			if e != "" && (e[0] == '!' || e[0] == '@') {
				kind, e = e[0], e[1:]
			}
			if e == "" {
				return GroupPatterns{}, fmt.Errorf("newsgroup patterns %q: empty pattern", clipS(l))
			}
			if err := ValidWildmat(e); err != nil || e[0] == '!' {
				return GroupPatterns{}, fmt.Errorf("newsgroup patterns %q: bad pattern %q", clipS(l), clipS(e))
			}
			g.elems = append(g.elems, groupPattern{pat: e, kind: kind})
		}
	}
	return g, nil
}

// GroupMatch is the verdict of GroupPatterns for one group.
type GroupMatch int

// Verdicts of GroupPatterns.Match.
const (
	GroupNoMatch GroupMatch = iota // no pattern matched, or the last was "!pattern"
	GroupWanted                    // the last matching pattern was plain
	GroupPoison                    // the last matching pattern was "@pattern"
)

// Match returns the verdict for one group: the kind of the last pattern
// that matches it (uwildmat_poison(3) semantics).
func (g GroupPatterns) Match(group string) GroupMatch {
	for i := len(g.elems) - 1; i >= 0; i-- {
		e := g.elems[i]
		if matchSimple(e.pat, group) {
			switch e.kind {
			case '@':
				return GroupPoison
			case '!':
				return GroupNoMatch
			}
			return GroupWanted
		}
	}
	return GroupNoMatch
}

// WantsGroups decides whether a peer with these patterns gets an article
// posted to groups, following INN newsfeeds(5): each group is matched on
// its own, the last matching pattern deciding; the article is sent if at
// least one group is wanted and none is poisoned. So "!pattern" only stops
// that group from counting (a crosspost to a wanted group still goes),
// while "@pattern" refuses the article whenever any of its groups ends on
// it. Empty patterns want nothing.
func (g GroupPatterns) WantsGroups(groups []string) bool {
	wanted := false
	for _, grp := range groups {
		switch g.Match(grp) {
		case GroupPoison:
			return false
		case GroupWanted:
			wanted = true
		}
	}
	return wanted
}

// String returns the patterns as one newsfeeds-style comma list.
func (g GroupPatterns) String() string {
	var b strings.Builder
	for i, e := range g.elems {
		if i > 0 {
			b.WriteByte(',')
		}
		if e.kind != 0 {
			b.WriteByte(e.kind)
		}
		b.WriteString(e.pat)
	}
	return b.String()
}
