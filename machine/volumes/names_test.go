package volumes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePar2Name(t *testing.T) {
	tests := []struct {
		in   string
		want Par2Name
		ok   bool
	}{
		{"show.par2", Par2Name{Base: "show", Index: true}, true},
		{"show.vol00+01.par2", Par2Name{Base: "show", First: 0, Blocks: 1}, true},
		{"Show.S01E01.vol07+08.PAR2", Par2Name{Base: "Show.S01E01", First: 7, Blocks: 8}, true},
		{"X.VOL127+73.PAR2", Par2Name{Base: "X", First: 127, Blocks: 73}, true},
		{"show.vol+8.par2", Par2Name{}, false},
		{"show.vol1-2.par2", Par2Name{}, false},
		{"show.vol01+-2.par2", Par2Name{}, false},
		{"show.vol01+99999.par2", Par2Name{}, false},
		{"show.vol99999999999999999999+1.par2", Par2Name{}, false},
		{"show.vol01+00.par2", Par2Name{}, false},
		{"x.vol1+2.par2.1", Par2Name{}, false},
		{"show.rar", Par2Name{}, false},
		{"show.part01.rar", Par2Name{}, false},
	}
	for _, tc := range tests {
		got, ok := ParsePar2Name(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParsePar2Name(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParsePar2Name: never panics; a volume's numbers are in range and its
// name rebuilds from the parts (the parse is faithful to the input).
func FuzzParsePar2Name(f *testing.F) {
	for _, s := range []string{"x.par2", "x.vol00+01.par2", "a.b.VOL127+128.PAR2", "x.vol+.par2", ".par2", "vol1+2.par2",
		"x.vol99999999999999999999+1.par2"} {
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
	})
}

func TestHold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
		want  []bool
	}{
		{"volumes of a set with its index", []string{"x.rar", "x.par2", "x.vol00+01.par2", "X.VOL01+02.PAR2"}, []bool{false, false, true, true}},
		{"no index: volumes fetched", []string{"x.rar", "x.vol00+01.par2"}, []bool{false, false}},
		{"another set's index", []string{"y.par2", "x.vol00+01.par2", "y.vol0+1.par2"}, []bool{false, false, true}},
		{"not volumes", []string{"x.par2", "x.vol.par2", "x.vol1+2.par2.1"}, []bool{false, false, false}},
		{"empty", nil, []bool{}},
	} {
		if d := cmp.Diff(tc.want, Hold(tc.names)); d != "" {
			t.Errorf("%s: Hold(%q) (-want +got):\n%s", tc.name, tc.names, d)
		}
	}
}
