package handshake

import "strings"

// capList is a capability list (RFC 3977 §5.2) as lines, with the lookups
// the handshake needs. Keywords are case-insensitive (RFC 3977 §3.3.2).
type capList []string

// has reports whether the list holds keyword, and, when args are given,
// whether its line lists every one of them.
func (c capList) has(keyword string, args ...string) bool {
	for _, line := range c {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.EqualFold(f[0], keyword) {
			continue
		}
		ok := true
		for _, a := range args {
			found := false
			for _, g := range f[1:] {
				if strings.EqualFold(g, a) {
					found = true
					break
				}
			}
			ok = ok && found
		}
		if ok {
			return true
		}
	}
	return false
}
