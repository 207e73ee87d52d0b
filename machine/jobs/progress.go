package jobs

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// MaxFiles bounds the file index of a progress record: far above any real
// NZB, low enough that a wrong index cannot make Apply allocate much.
const MaxFiles = 1 << 16

// RecordKind says what a progress record reports.
type RecordKind uint8

// The kinds of progress records; the values are their on-disk codes.
const (
	SegmentDone    RecordKind = 'D' // the segment's bytes are durable in the output file
	SegmentMissing RecordKind = 'M' // no server has the segment (430 everywhere)
)

// Record is one fact about a download's progress. The downloader records a
// segment Done only after its decoded bytes are durable in the output file
// (written and fdatasynced): the record is the promise that a rerun need not
// fetch it again.
type Record struct {
	Kind    RecordKind
	File    int // the file's index in the NZB, from 0
	Segment int // the segment's number attribute in the NZB, from 1
	// SegmentMissing: the bytes [Begin, End) of the output file the segment
	// would have filled, when known (both zero when not).
	Begin, End int64
}

// Check reports whether r is well formed.
func (r Record) Check() error {
	switch {
	case r.Kind != SegmentDone && r.Kind != SegmentMissing:
		return fmt.Errorf("jobs: record kind %q", rune(r.Kind))
	case r.File < 0 || r.File >= MaxFiles:
		return fmt.Errorf("jobs: record file index %d not in 0..%d", r.File, MaxFiles-1)
	case r.Segment < 1 || r.Segment > MaxSegment:
		return fmt.Errorf("jobs: record segment %d not in 1..%d", r.Segment, MaxSegment)
	case r.Begin < 0 || r.End < r.Begin:
		return fmt.Errorf("jobs: record byte range [%d, %d)", r.Begin, r.End)
	case r.Kind == SegmentDone && (r.Begin != 0 || r.End != 0):
		return fmt.Errorf("jobs: done record with a byte range")
	}
	return nil
}

// Metadata is an entry's durable description:
// what to download where, and how far the download got. spoolfs stores it
// as JSON in data/<job>/<dest>/metadata.
type Metadata struct {
	Name   string          `json:"name,omitempty"`   // for people: the NZB's name
	Target string          `json:"target,omitempty"` // where the files go
	Files  []FileProgress  `json:"files,omitempty"`  // by file index in the NZB
	Extra  json.RawMessage `json:"extra,omitempty"`  // the owner's own data, kept as is
}

// FileProgress is the progress of one file of the NZB.
type FileProgress struct {
	Total   int       `json:"total,omitempty"` // segments in the NZB; 0 if unknown
	Done    Segments  `json:"done"`
	Missing []Missing `json:"missing,omitempty"` // sorted by segment, none of them Done
}

// Missing is a segment no server had, and the byte range it leaves empty.
type Missing struct {
	Segment int   `json:"segment"`
	Begin   int64 `json:"begin,omitempty"`
	End     int64 `json:"end,omitempty"`
}

// Range is a byte range [Begin, End) of an output file.
type Range struct{ Begin, End int64 }

// Apply folds r into m. Applying a record twice, or a log again on top of
// metadata it was already compacted into, changes nothing: Done is final
// for a segment (a later Missing for it is ignored, a Done clears its
// Missing), and a Missing replaces an earlier Missing of the same segment.
func (m *Metadata) Apply(r Record) error {
	if err := r.Check(); err != nil {
		return err
	}
	if r.File >= len(m.Files) {
		m.Files = append(m.Files, make([]FileProgress, r.File+1-len(m.Files))...)
	}
	f := &m.Files[r.File]
	i, found := slices.BinarySearchFunc(f.Missing, r.Segment, func(x Missing, n int) int { return x.Segment - n })
	switch r.Kind {
	case SegmentDone:
		f.Done.Add(r.Segment)
		if found {
			if f.Missing = slices.Delete(f.Missing, i, i+1); len(f.Missing) == 0 {
				f.Missing = nil
			}
		}
	case SegmentMissing:
		if f.Done.Has(r.Segment) {
			return nil
		}
		x := Missing{Segment: r.Segment, Begin: r.Begin, End: r.End}
		if found {
			f.Missing[i] = x
		} else {
			f.Missing = slices.Insert(f.Missing, i, x)
		}
	}
	return nil
}

// Clone returns a copy of m that shares nothing with it.
func (m Metadata) Clone() Metadata {
	c := m
	c.Extra = slices.Clone(m.Extra)
	if m.Files != nil {
		c.Files = make([]FileProgress, len(m.Files))
		for i, f := range m.Files {
			c.Files[i] = FileProgress{Total: f.Total, Done: f.Done.Clone(), Missing: slices.Clone(f.Missing)}
		}
	}
	return c
}

// Complete reports whether every segment of the file is Done (false when
// Total is unknown).
func (f FileProgress) Complete() bool { return f.Total > 0 && f.Done.Len() >= f.Total }

// MissingRanges returns the known byte ranges of the missing segments,
// sorted, with touching and overlapping ranges merged: what a file marked
// incomplete lacks.
func (f FileProgress) MissingRanges() []Range {
	var rs []Range
	for _, x := range f.Missing {
		if x.End > x.Begin {
			rs = append(rs, Range{x.Begin, x.End})
		}
	}
	slices.SortFunc(rs, func(a, b Range) int { return cmp.Compare(a.Begin, b.Begin) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.Begin <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

// Check reports whether m is well formed: what a metadata file must satisfy
// to be read back (JSON decoding checks each Segments set).
func (m Metadata) Check() error {
	if len(m.Files) > MaxFiles {
		return fmt.Errorf("jobs: metadata has %d files, more than %d", len(m.Files), MaxFiles)
	}
	for i, f := range m.Files {
		if f.Total < 0 {
			return fmt.Errorf("jobs: metadata file %d: total %d", i, f.Total)
		}
		for j, x := range f.Missing {
			if x.Segment < 1 || x.Begin < 0 || x.End < x.Begin || j > 0 && x.Segment <= f.Missing[j-1].Segment || f.Done.Has(x.Segment) {
				return fmt.Errorf("jobs: metadata file %d: bad missing segment %+v", i, x)
			}
		}
	}
	return nil
}
