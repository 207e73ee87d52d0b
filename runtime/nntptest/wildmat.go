package nntptest

import (
	"strings"
	"unicode/utf8"
)

// wildmat reports whether name matches the wildmat pat (RFC 3977 §4): a
// comma-separated list of patterns, each optionally negated with "!", where
// "*" matches any run of characters and "?" exactly one (UTF-8) character.
// The last pattern that matches decides (RFC 3977 §4.2); no match is false.
func wildmat(pat, name string) bool {
	result := false
	for _, p := range strings.Split(pat, ",") {
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = p[1:]
		}
		if globMatch(p, name) {
			result = !neg
		}
	}
	return result
}

// globMatch matches one wildmat-pattern against all of s, backtracking only
// to the last "*" (linear in practice, never exponential).
func globMatch(p, s string) bool {
	star, resume := -1, 0 // position after the last '*' in p, and where in s it resumes
	pi, si := 0, 0
	for si < len(s) {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				pi++
				star, resume = pi, si
				continue
			case '?':
				_, w := utf8.DecodeRuneInString(s[si:])
				pi++
				si += w
				continue
			default:
				if p[pi] == s[si] {
					pi++
					si++
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		// Let the last '*' swallow one more character and retry.
		_, w := utf8.DecodeRuneInString(s[resume:])
		resume += w
		pi, si = star, resume
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
