package par2

import (
	"cmp"
	"hash/crc32"
	"slices"

	"github.com/newsflow/newsflow/proto"
)

// A RangeCRC is the CRC-32 of bytes [Offset, Offset+Length) of a file,
// known without reading it: the yEnc part CRCs computed while it was
// downloaded (=ypart begin=B end=E is Offset B-1, Length E-B+1; only parts
// whose CRC matched the poster's pcrc32 should be given).
type RangeCRC struct {
	Offset, Length int64
	CRC32          uint32
}

// CheckRanges compares CRCs known for ranges of a file with the set's
// slice CRCs, without the file's bytes (NZBGet's quick check). CRC-32 is
// linear, so CRC32Combine gives the CRC of any run of ranges and of any
// run of slices; the two are compared wherever a range boundary and a
// slice boundary coincide, and always at the end of the file (the last
// slice's CRC covers its zero padding, so the ranges' side is extended
// with the CRC of as many zeros).
//
// It returns the indices (within f) of the slices it could not confirm:
// those in a stretch whose CRCs disagree, or not fully covered by the
// ranges (gaps, overlaps, ranges past the end). Those need reading; the
// others are as good as their CRC-32 says, which is the confidence the
// download's own yEnc check had.
func CheckRanges(f *File, sliceSize uint64, known []RangeCRC) (unconfirmed []int) {
	n := len(f.Slices)
	length := int64(f.Length)
	ss := int64(sliceSize)
	rs := slices.Clone(known)
	slices.SortFunc(rs, func(a, b RangeCRC) int {
		if a.Offset != b.Offset {
			return cmp.Compare(a.Offset, b.Offset)
		}
		return cmp.Compare(a.Length, b.Length)
	})

	bad := make([]bool, n)
	markBad := func(from, to int64) { // slices overlapping [from, to)
		for i := from / ss; i < int64(n) && i*ss < to; i++ {
			bad[i] = true
		}
	}
	// Walk the ranges and the slices together. start is the last common
	// boundary; rEnd and sEnd how far each side has accumulated; ok stays
	// true while the ranges side is contiguous.
	var start, rEnd, sEnd int64
	var rCRC, sCRC uint32
	ok := true
	ri, si := 0, 0
	for {
		if rEnd == sEnd && rEnd > start {
			// Slice ends are slice boundaries, so this is a common one.
			if rEnd == length {
				// The last slice's CRC covers its zero padding: pad the
				// ranges' side the same way.
				pad := int64(n)*ss - length
				rCRC = proto.CRC32Combine(rCRC, zeroCRC(pad), pad)
			}
			if !ok || rCRC != sCRC {
				markBad(start, rEnd)
			}
			start, rCRC, sCRC, ok = rEnd, 0, 0, true
		}
		if start >= length {
			break
		}
		if rEnd <= sEnd && rEnd < length {
			if ri == len(rs) {
				markBad(start, length) // not covered to the end
				break
			}
			r := rs[ri]
			ri++
			if r.Length <= 0 {
				continue
			}
			if r.Offset != rEnd || r.Offset+r.Length > length {
				ok = false // gap, overlap or past the end: this stretch is unknown
			}
			rCRC = proto.CRC32Combine(rCRC, r.CRC32, r.Length)
			rEnd = min(max(rEnd, r.Offset+r.Length), length)
			continue
		}
		if si == n {
			markBad(start, length)
			break
		}
		sCRC = proto.CRC32Combine(sCRC, f.Slices[si].CRC32, ss) // covers ss bytes, padding included
		si++
		sEnd = min(sEnd+ss, length)
	}
	for i, b := range bad {
		if b {
			unconfirmed = append(unconfirmed, i)
		}
	}
	return unconfirmed
}

// zeroCRC returns the CRC-32 of n zero bytes.
func zeroCRC(n int64) uint32 {
	var zeros [4096]byte
	var c uint32
	for n > 0 {
		k := min(n, int64(len(zeros)))
		c = crc32.Update(c, crc32.IEEETable, zeros[:k])
		n -= k
	}
	return c
}
