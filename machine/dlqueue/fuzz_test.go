package dlqueue

import (
	"strings"
	"testing"
)

// FuzzParsePar2Name: never panics; a volume's numbers are in range and its
// name rebuilds from the parts (the parse is faithful to the input).
func FuzzParsePar2Name(f *testing.F) {
	for _, s := range []string{"x.par2", "x.vol00+01.par2", "a.b.VOL127+128.PAR2", "x.vol+.par2", ".par2", "vol1+2.par2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p, ok := ParsePar2Name(name)
		if !ok {
			return
		}
		if !strings.HasSuffix(strings.ToLower(name), ".par2") {
			t.Fatalf("%q accepted without .par2", name)
		}
		if p.Index {
			if p.Blocks != 0 || p.Base+".par2" != name[:len(p.Base)]+".par2" {
				t.Fatalf("%q: index %+v", name, p)
			}
			return
		}
		if p.Blocks < 1 || p.Blocks > MaxPar2Blocks || p.First < 0 || p.First > MaxPar2Blocks {
			t.Fatalf("%q: numbers out of range: %+v", name, p)
		}
		if !strings.HasPrefix(name, p.Base+".") {
			t.Fatalf("%q: base %q is not its prefix", name, p.Base)
		}
		Assess([]FileDamage{{Name: name, Bytes: 1000, Missing: 10}, {Name: "d", Bytes: 10, Missing: 10}})
	})
}
