package dlqueue

import (
	"fmt"

	"github.com/newsflow/newsflow/machine/volumes"
)

// FileDamage is one NZB file as the fail-fast rule sees it.
type FileDamage struct {
	Name    string // the file's name (from the NZB subject or yEnc name=)
	Bytes   int64  // the NZB's article bytes for the file
	Missing int64  // article bytes of the segments no server had
}

// Verdict is Assess's answer.
type Verdict struct {
	Fail   bool
	Reason string // why it fails, for the history's fail_message
	// Needed is a lower bound of the recovery blocks the damage needs;
	// Available an upper bound of the recovery blocks left.
	Needed, Available int
}

// Assess decides whether a job must fail now because its damage cannot be
// repaired, whatever the rest of the download brings.
//
// The NZB tells how many recovery blocks the set has (the volume names)
// but not the block size; the volumes tell it approximately: a volume of
// B article bytes with N blocks has blocks of at most B/N bytes (article
// bytes include yEnc and packet overhead, so the estimate is high). With
// that size S:
//
//   - Needed, a lower bound: ceil(missing bytes of the data files / S).
//     A real block is smaller than S, so the real need is at least this.
//   - Available, an upper bound: each volume's blocks less
//     floor(its missing bytes / S) (a lost article takes at least that
//     many whole blocks with it).
//
// The job fails when Needed > Available: then no outcome of the rest of
// the download can make it repairable. A job with damaged data files and
// no PAR2 volume at all fails at once. Files that are neither data nor
// PAR2 do not exist here: every non-.par2 file counts as data.
func Assess(files []FileDamage) Verdict {
	var volBytes, dataMissing int64
	blocks := 0
	type vol struct {
		blocks         int
		bytes, missing int64
	}
	var vols []vol
	for _, f := range files {
		p, ok := volumes.ParsePar2Name(f.Name)
		switch {
		case ok && !p.Index:
			vols = append(vols, vol{p.Blocks, f.Bytes, f.Missing})
			volBytes += f.Bytes
			blocks += p.Blocks
		case ok && p.Index:
			// The index holds no recovery blocks; its loss does not
			// change what can be repaired (every volume repeats it).
		default:
			dataMissing += f.Missing
		}
	}
	if dataMissing == 0 {
		return Verdict{Available: blocks}
	}
	if blocks == 0 || volBytes <= 0 {
		return Verdict{Fail: true, Needed: 1, Reason: fmt.Sprintf("%d bytes of articles missing and no PAR2 recovery blocks to repair them", dataMissing)}
	}
	size := (volBytes + int64(blocks) - 1) / int64(blocks) // S, rounded up
	needed := int((dataMissing + size - 1) / size)
	avail := 0
	for _, v := range vols {
		lost := int(v.missing / size)
		if lost < v.blocks {
			avail += v.blocks - lost
		}
	}
	vd := Verdict{Needed: needed, Available: avail}
	if needed > avail {
		vd.Fail = true
		vd.Reason = fmt.Sprintf("too many articles missing: repair needs at least %d PAR2 blocks, at most %d are available", needed, avail)
	}
	return vd
}
