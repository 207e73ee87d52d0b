package dlqueue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ids(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestSortAndNext(t *testing.T) {
	queue := []Entry{
		{ID: "low", Priority: Low, Seq: 1},
		{ID: "normal-late", Priority: Normal, Seq: 5},
		{ID: "normal-early", Priority: Normal, Seq: 2},
		{ID: "high-paused", Priority: High, Seq: 3, Paused: true},
		{ID: "force", Priority: Force, Seq: 9},
	}
	tests := []struct {
		name        string
		es          []Entry
		globalPause bool
		want        string // "" for none
	}{
		{"force runs first", queue, false, "force"},
		{"force runs even when the queue is paused", queue, true, "force"},
		{"paused entry skipped, then priority, then arrival", queue[:4], false, "normal-early"},
		{"global pause holds everything but force", queue[:4], true, ""},
		{"empty queue", nil, false, ""},
		{"all paused", []Entry{{ID: "a", Paused: true}}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Next(tc.es, tc.globalPause)
			if !ok {
				got.ID = ""
			}
			if got.ID != tc.want {
				t.Errorf("Next = %q, want %q", got.ID, tc.want)
			}
		})
	}
	es := append([]Entry(nil), queue...)
	Sort(es)
	want := []string{"force", "high-paused", "normal-early", "normal-late", "low"}
	if d := cmp.Diff(want, ids(es)); d != "" {
		t.Errorf("Sort (-want +got):\n%s", d)
	}
}

func TestParsePriority(t *testing.T) {
	tests := []struct {
		in      string
		want    Priority
		wantErr bool
	}{
		{"", Default, false}, {"-100", Default, false}, {"2", Force, false}, {"1", High, false},
		{"0", Normal, false}, {"-1", Low, false}, {"-2", Paused, false}, {"force", Force, false},
		{"High", High, false}, {" normal ", Normal, false}, {"LOW", Low, false}, {"3", 0, true},
		{"urgent", 0, true}, {"+1", High, false},
	}
	for _, tc := range tests {
		got, err := ParsePriority(tc.in)
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("ParsePriority(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestAssess is the fail-fast rule. A set of 10 data files of 1,000,000
// article bytes and volumes whose blocks are about 100,000 article bytes.
func TestAssess(t *testing.T) {
	data := func(missing int64) FileDamage {
		return FileDamage{Name: "x.part01.rar", Bytes: 1_000_000, Missing: missing}
	}
	vol := func(first, blocks int, missing int64) FileDamage {
		return FileDamage{Name: "x.vol" + pad(first) + "+" + pad(blocks) + ".par2", Bytes: int64(blocks) * 100_000, Missing: missing}
	}
	index := FileDamage{Name: "x.par2", Bytes: 40_000}
	tests := []struct {
		name  string
		files []FileDamage
		want  Verdict
	}{
		{"nothing missing, no par2: fine", []FileDamage{data(0)}, Verdict{}},
		{"nothing missing", []FileDamage{data(0), index, vol(0, 4, 0)}, Verdict{Available: 4}},
		{"missing and no par2 at all: fail at once", []FileDamage{data(300_000)},
			Verdict{Fail: true, Needed: 1, Reason: "300000 bytes of articles missing and no PAR2 recovery blocks to repair them"}},
		{"missing and only the index: fail", []FileDamage{data(1), index},
			Verdict{Fail: true, Needed: 1, Reason: "1 bytes of articles missing and no PAR2 recovery blocks to repair them"}},
		{"damage within the blocks", []FileDamage{data(300_000), index, vol(0, 2, 0), vol(2, 4, 0)},
			Verdict{Needed: 3, Available: 6}},
		{"damage exactly the blocks", []FileDamage{data(600_000), vol(0, 2, 0), vol(2, 4, 0)},
			Verdict{Needed: 6, Available: 6}},
		{"damage one block beyond", []FileDamage{data(600_001), vol(0, 2, 0), vol(2, 4, 0)},
			Verdict{Fail: true, Needed: 7, Available: 6, Reason: "too many articles missing: repair needs at least 7 PAR2 blocks, at most 6 are available"}},
		{"a damaged volume loses blocks", []FileDamage{data(300_000), vol(0, 2, 0), vol(2, 4, 250_000)},
			Verdict{Needed: 3, Available: 4}},
		{"a damaged volume tips it over", []FileDamage{data(300_000), vol(0, 2, 100_000), vol(2, 4, 300_000)},
			Verdict{Fail: true, Needed: 3, Available: 2, Reason: "too many articles missing: repair needs at least 3 PAR2 blocks, at most 2 are available"}},
		{"a lost index changes nothing", []FileDamage{data(100_000), {Name: "x.par2", Bytes: 40_000, Missing: 40_000}, vol(0, 1, 0)},
			Verdict{Needed: 1, Available: 1}},
		{"only volumes damaged: nothing to repair yet", []FileDamage{data(0), vol(0, 2, 200_000)}, Verdict{Available: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Assess(tc.files)); d != "" {
				t.Errorf("Assess (-want +got):\n%s", d)
			}
		})
	}
}

func pad(n int) string {
	s := []byte{'0' + byte(n/10%10), '0' + byte(n%10)}
	return string(s)
}

func TestDuplicate(t *testing.T) {
	known := []Known{
		{ID: "a", Name: "Show.S01E01.720p", Hash: "h1"},
		{ID: "b", Name: "Movie (2020)", Hash: "h2"},
	}
	tests := []struct {
		name, nzb, hash string
		wantID, why     string
	}{
		{"same content, other name", "renamed.nzb", "h2", "b", "same NZB content as Movie (2020)"},
		{"same name, other separators", "show_s01e01 720p.nzb", "h9", "a", "same name as Show.S01E01.720p"},
		{"new", "Show.S01E02.720p.nzb", "h3", "", ""},
		{"empty name never matches by name", "", "h4", "", ""},
	}
	for _, tc := range tests {
		k, why, dup := Duplicate(known, tc.nzb, tc.hash)
		if dup != (tc.wantID != "") || k.ID != tc.wantID || why != tc.why {
			t.Errorf("%s: Duplicate = %q %q %v; want %q %q", tc.name, k.ID, why, dup, tc.wantID, tc.why)
		}
	}
}
