package jobs

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func segs(t *testing.T, text string) Segments {
	t.Helper()
	s, err := ParseSegments(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cmpSegments compares Segments by their text form.
var cmpSegments = cmp.Comparer(func(a, b Segments) bool { return a.String() == b.String() })

func TestApply(t *testing.T) {
	done := func(f, s int) Record { return Record{Kind: SegmentDone, File: f, Segment: s} }
	miss := func(f, s int, b, e int64) Record {
		return Record{Kind: SegmentMissing, File: f, Segment: s, Begin: b, End: e}
	}
	tests := []struct {
		name string
		recs []Record
		want []FileProgress
	}{
		{"in order", []Record{done(0, 1), done(0, 2), done(0, 3)}, []FileProgress{{Done: segs(t, "1-3")}}},
		{"out of order, gaps", []Record{done(0, 5), done(0, 1), done(0, 3), done(0, 2)}, []FileProgress{{Done: segs(t, "1-3,5")}}},
		{"a later file grows the list", []Record{done(2, 7)}, []FileProgress{{}, {}, {Done: segs(t, "7")}}},
		{"missing", []Record{miss(0, 4, 300, 400), done(0, 1)}, []FileProgress{{Done: segs(t, "1"), Missing: []Missing{{4, 300, 400}}}}},
		{"missing kept sorted", []Record{miss(0, 9, 0, 0), miss(0, 4, 0, 0)}, []FileProgress{{Missing: []Missing{{4, 0, 0}, {9, 0, 0}}}}},
		{"later missing replaces earlier", []Record{miss(0, 4, 0, 0), miss(0, 4, 300, 400)}, []FileProgress{{Missing: []Missing{{4, 300, 400}}}}},
		{"done clears missing (a retry on another server worked)", []Record{miss(0, 4, 0, 0), done(0, 4)}, []FileProgress{{Done: segs(t, "4")}}},
		{"missing after done is ignored", []Record{done(0, 4), miss(0, 4, 0, 0)}, []FileProgress{{Done: segs(t, "4")}}},
		{"duplicates change nothing", []Record{done(0, 1), done(0, 1), miss(0, 2, 5, 6), miss(0, 2, 5, 6)}, []FileProgress{{Done: segs(t, "1"), Missing: []Missing{{2, 5, 6}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Metadata
			for _, r := range tc.recs {
				if err := m.Apply(r); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, m.Files, cmpSegments); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			// Replaying the whole log on top of its own result (a crash
			// between compaction and the log's truncation) changes nothing.
			again := m.Clone()
			for _, r := range tc.recs {
				if err := again.Apply(r); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(m.Files, again.Files, cmpSegments); diff != "" {
				t.Errorf("replayed twice (-once +twice):\n%s", diff)
			}
		})
	}
}

// TestApplyReplayProperty: for random logs, applying any prefix, then the
// whole log again, gives the same result as applying the log once (what a
// crash between compaction and truncation does).
func TestApplyReplayProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		var log []Record
		for range r.IntN(60) {
			rec := Record{Kind: SegmentDone, File: r.IntN(3), Segment: 1 + r.IntN(20)}
			if r.IntN(3) == 0 {
				rec.Kind = SegmentMissing
				rec.Begin = int64(r.IntN(1000))
				rec.End = rec.Begin + int64(r.IntN(100))
			}
			log = append(log, rec)
		}
		var once Metadata
		for _, rec := range log {
			once.Apply(rec)
		}
		cut := 0
		if len(log) > 0 {
			cut = r.IntN(len(log) + 1)
		}
		var twice Metadata
		for _, rec := range log[:cut] {
			twice.Apply(rec)
		}
		for _, rec := range log {
			twice.Apply(rec)
		}
		if diff := cmp.Diff(once.Files, twice.Files, cmpSegments); diff != "" {
			t.Fatalf("round %d: prefix %d then whole log differs (-once +replayed):\n%s", round, cut, diff)
		}
		for i, f := range once.Files {
			if err := (Metadata{Files: []FileProgress{f}}).Check(); err != nil {
				t.Fatalf("round %d: file %d: %v", round, i, err)
			}
		}
	}
}

func TestRecordCheck(t *testing.T) {
	bad := []Record{
		{Kind: 'X', Segment: 1},
		{Kind: SegmentDone, File: -1, Segment: 1},
		{Kind: SegmentDone, File: MaxFiles, Segment: 1},
		{Kind: SegmentDone, Segment: 0},
		{Kind: SegmentDone, Segment: MaxSegment + 1},
		{Kind: SegmentMissing, Segment: 1, Begin: 5, End: 4},
		{Kind: SegmentMissing, Segment: 1, Begin: -1, End: 4},
		{Kind: SegmentDone, Segment: 1, End: 4},
	}
	for _, r := range bad {
		var m Metadata
		if err := m.Apply(r); err == nil {
			t.Errorf("Apply(%+v) accepted", r)
		}
		if m.Files != nil {
			t.Errorf("Apply(%+v) changed the metadata", r)
		}
	}
}

func TestMissingRanges(t *testing.T) {
	f := FileProgress{Missing: []Missing{{1, 0, 100}, {2, 100, 200}, {4, 300, 400}, {5, 0, 0}, {6, 350, 450}}}
	want := []Range{{0, 200}, {300, 450}}
	if diff := cmp.Diff(want, f.MissingRanges()); diff != "" {
		t.Errorf("MissingRanges (-want +got):\n%s", diff)
	}
	if got := (FileProgress{}).MissingRanges(); len(got) != 0 {
		t.Errorf("no missing: %v", got)
	}
}

func TestComplete(t *testing.T) {
	f := FileProgress{Total: 3, Done: segs(t, "1-2")}
	if f.Complete() {
		t.Error("2 of 3 complete")
	}
	f.Done.Add(3)
	if !f.Complete() {
		t.Error("3 of 3 not complete")
	}
	if (FileProgress{Done: segs(t, "1")}).Complete() {
		t.Error("unknown total complete")
	}
}

// TestMetadataJSON pins the JSON form spoolfs stores, and the round trip.
func TestMetadataJSON(t *testing.T) {
	m := Metadata{Name: "a.nzb", Target: "/dl", Files: []FileProgress{
		{Total: 50, Done: segs(t, "1-40,42"), Missing: []Missing{{Segment: 41, Begin: 29000000, End: 29716800}}},
		{Total: 3},
	}, Extra: json.RawMessage(`{"k":1}`)}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"a.nzb","target":"/dl","files":[{"total":50,"done":"1-40,42","missing":[{"segment":41,"begin":29000000,"end":29716800}]},{"total":3,"done":""}],"extra":{"k":1}}`
	if string(b) != want {
		t.Errorf("JSON:\n got %s\nwant %s", b, want)
	}
	var back Metadata
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, back, cmpSegments); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`{"files":[{"done":"3-1"}]}`), &back); err == nil {
		t.Error("bad done set accepted")
	}
}

func TestMetadataCheck(t *testing.T) {
	bad := []Metadata{
		{Files: []FileProgress{{Total: -1}}},
		{Files: []FileProgress{{Missing: []Missing{{Segment: 0}}}}},
		{Files: []FileProgress{{Missing: []Missing{{Segment: 3}, {Segment: 2}}}}},
		{Files: []FileProgress{{Done: segs(t, "2"), Missing: []Missing{{Segment: 2}}}}},
		{Files: []FileProgress{{Missing: []Missing{{Segment: 2, Begin: 5, End: 1}}}}},
		{Files: make([]FileProgress, MaxFiles+1)},
	}
	for i, m := range bad {
		if m.Check() == nil {
			t.Errorf("case %d accepted", i)
		}
	}
	if err := (Metadata{Files: []FileProgress{{Total: 2, Done: segs(t, "1"), Missing: []Missing{{Segment: 2}}}}}).Check(); err != nil {
		t.Errorf("good metadata: %v", err)
	}
}

func TestClone(t *testing.T) {
	m := Metadata{Files: []FileProgress{{Done: segs(t, "1-3"), Missing: []Missing{{Segment: 5}}}}, Extra: json.RawMessage(`1`)}
	c := m.Clone()
	c.Apply(Record{Kind: SegmentDone, File: 0, Segment: 5})
	c.Apply(Record{Kind: SegmentDone, File: 0, Segment: 4})
	c.Extra[0] = '2'
	if m.Files[0].Done.String() != "1-3" || len(m.Files[0].Missing) != 1 || string(m.Extra) != "1" {
		t.Errorf("Clone shares state: %+v", m)
	}
}

func TestSchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var s Schedule
	if !s.Due(t0) {
		t.Error("zero schedule not due")
	}
	var waits []time.Duration
	for range 6 {
		s = s.Retry(t0, time.Minute, 10*time.Minute, "all servers down")
		waits = append(waits, s.Next.Sub(t0))
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
	if s.Attempts != 6 || s.LastError != "all servers down" {
		t.Errorf("schedule %+v", s)
	}
	if s.Due(t0.Add(9*time.Minute)) || !s.Due(t0.Add(10*time.Minute)) {
		t.Error("Due around Next wrong")
	}
}

func TestIDs(t *testing.T) {
	good := []string{"a", "0-9", "Job-1", string(make([]byte, 0)) + "x"}
	for _, s := range good {
		if err := CheckID(s); err != nil {
			t.Errorf("CheckID(%q): %v", s, err)
		}
	}
	long := make([]byte, MaxIDLen+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, s := range []string{"", "a_b", "a/b", "..", "a.tmp", "a b", string(long), "é"} {
		if err := CheckID(s); err == nil {
			t.Errorf("CheckID(%q) accepted", s)
		}
	}
	id, err := ParseID("j-1_d-2")
	if err != nil || id != (ID{"j-1", "d-2"}) || id.String() != "j-1_d-2" {
		t.Errorf("ParseID = %v, %v", id, err)
	}
	for _, s := range []string{"j", "j_", "_d", "j_d_e", "j_d.tmp"} {
		if _, err := ParseID(s); err == nil {
			t.Errorf("ParseID(%q) accepted", s)
		}
	}
}

// FuzzMetadata: metadata that decodes and passes Check encodes and decodes
// back to the same value, and Apply of any record keeps it passing Check.
func FuzzMetadata(f *testing.F) {
	f.Add([]byte(`{"name":"a.nzb","target":"/dl","files":[{"total":50,"done":"1-40,42","missing":[{"segment":41,"begin":29000000,"end":29716800}]}]}`), 0, 43, false)
	f.Add([]byte(`{"files":[{"done":""},{"done":"7"}],"extra":{"k":[1,2]}}`), 1, 7, true)
	f.Add([]byte(`{}`), 3, 1, true)
	f.Add([]byte(`{"files":[{"done":"1-3","missing":[{"segment":3}]}]}`), 0, 3, false)
	f.Fuzz(func(t *testing.T, data []byte, file, seg int, missing bool) {
		var m Metadata
		if json.Unmarshal(data, &m) != nil || m.Check() != nil {
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back Metadata
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		// Extra is kept as JSON, compacted: compare it by re-encoding.
		if diff := cmp.Diff(m, back, cmpSegments, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Metadata{}, "Extra")); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		if b2, err := json.Marshal(back); err != nil || string(b2) != string(b) {
			t.Fatalf("second encoding %s, %v; first %s", b2, err, b)
		}
		rec := Record{Kind: SegmentDone, File: file, Segment: seg}
		if missing {
			rec.Kind = SegmentMissing
		}
		if m.Apply(rec) == nil {
			if err := m.Check(); err != nil {
				t.Fatalf("after Apply(%+v): %v", rec, err)
			}
			if missing == false && !m.Files[file].Done.Has(seg) {
				t.Fatalf("Apply(%+v) did not mark it done", rec)
			}
		}
	})
}
