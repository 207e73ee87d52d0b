package cluster

import "testing"

// FuzzParseParts: a Newsflow-Parts header either fails to parse or parses
// to Parts whose String parses back to the same Parts (heads come from any
// node, or from whoever can publish on the store's subjects).
func FuzzParseParts(f *testing.F) {
	for _, seed := range []string{
		"0a1b2c3d4e5f6071 4 3145728",
		"t 2 2",
		"t 1 10",
		"t  2 10",
		"t.x 2 10",
		"t -2 10",
		"t 2 99999999999999999999",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, err := ParseParts(v)
		if err != nil {
			return
		}
		if p.N < 2 || p.Size < p.N || !validToken(p.Token) {
			t.Fatalf("ParseParts(%q) = %+v: impossible parts accepted", v, p)
		}
		again, err := ParseParts(p.String())
		if err != nil || again != p {
			t.Fatalf("ParseParts(%q) = %+v, but its String %q parses to %+v, %v", v, p, p.String(), again, err)
		}
	})
}
