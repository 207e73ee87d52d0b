package volumes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// par2cmdline's layout for 100 blocks of 1 MB: 1, 2, 4, ... doubling.
var doubling = []Volume{
	{"s.vol00+01.par2", 1, 1 << 20}, {"s.vol01+02.par2", 2, 2 << 20}, {"s.vol03+04.par2", 4, 4 << 20},
	{"s.vol07+08.par2", 8, 8 << 20}, {"s.vol15+16.par2", 16, 16 << 20}, {"s.vol31+32.par2", 32, 32 << 20},
	{"s.vol63+37.par2", 37, 37 << 20},
}

func names(vs []Volume) []string {
	var n []string
	for _, v := range vs {
		n = append(n, v.Name)
	}
	return n
}

func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		name string
		need int
		vols []Volume
		want []string
	}{
		{"nothing needed", 0, doubling, nil},
		{"one block: the smallest volume", 1, doubling, []string{"s.vol00+01.par2"}},
		{"three blocks: 1+2, not the 4", 3, doubling, []string{"s.vol00+01.par2", "s.vol01+02.par2"}},
		{"five blocks: 1+4", 5, doubling, []string{"s.vol00+01.par2", "s.vol03+04.par2"}},
		{"seven blocks: 1+2+4 (7 MB) beats the 8 (8 MB)", 7, doubling, []string{"s.vol00+01.par2", "s.vol01+02.par2", "s.vol03+04.par2"}},
		{"33 blocks: 1+32", 33, doubling, []string{"s.vol00+01.par2", "s.vol31+32.par2"}},
		{"ties in bytes go to fewer volumes", 4, []Volume{{"a", 2, 100}, {"b", 2, 100}, {"c", 4, 200}}, []string{"c"}},
		{"one big volume is cheaper than many headers", 3, []Volume{{"a", 1, 150}, {"b", 1, 150}, {"c", 1, 150}, {"d", 3, 400}}, []string{"d"}},
		{"overshoot when it is cheaper", 2, []Volume{{"a", 1, 100}, {"b", 5, 150}, {"c", 1, 100}}, []string{"b"}},
	} {
		got, err := Choose(tc.need, tc.vols)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, names(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestChooseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		need       int
		vols       []Volume
	}{
		{"not enough", "100 blocks needed, the volumes hold 2: 98 short", 100, []Volume{{"a", 2, 1}}},
		{"absurd need", "more than a PAR2 set can have", 1 << 20, nil},
		{"negative blocks", "negative", 1, []Volume{{"a", -1, 1}, {"b", 5, 1}}},
	} {
		if _, err := Choose(tc.need, tc.vols); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}
