package spoolfs

import "fmt"

// Zeros written ahead: a group commit is one fdatasync of a small append, and an append changes the file's size and
// allocates blocks, so its fdatasync waits for a journal commit (ext4's
// jbd2); an overwrite of blocks already written and durable waits for the
// data alone (on ext4, about half the time of an append's). So a Sync keeps the active segment written with zeros some
// way past its records, and the rounds after it overwrite them. INN's CNFS
// buffers are preallocated files overwritten in place for the same reason.
//
// What it costs: the zeros are written to the disk once more, by the round
// that writes them (its fdatasync takes them and a journal commit with its
// own records), so a Sync's mean falls less than its median (rounds of
// 18 x 2 KB: p50 0.28 -> 0.13-0.15 ms, mean 0.32-0.34 -> 0.21-0.22 ms; the
// mean's excess over the median comes to about 4 ms for each 2-4 MiB of
// zeros). Writing them on a goroutine of its own was not tried: in a
// lock-step relay the next round comes about 0.1 ms after the last, and
// its fdatasync would wait for every dirty or in-flight page of the file,
// the zeros' too. Hiding them takes another file: a next segment written
// ahead whole, in the background, before it becomes the active one.
//
// Crash safety is that of any torn tail (doc.go): open reads records until
// the first that fails, and a tail of zeros is cut without a quarantine
// copy; a torn record followed by zeros is a torn tail like any other.
// Readers never look past a segment's records (written), and a segment
// that takes no more appends (sealed, or the spool closed) has its zeros
// cut off.

// preWriteLocked keeps the active segment seg written ahead of its records
// with zeros, so that the group commits after this one overwrite blocks
// that are allocated and durable, and their fdatasync waits for the data
// alone, not for a journal commit (an append changes the file's size and
// allocates: ext4's jbd2 must commit that first). It is called by Sync
// after the round's records are written and before its fdatasync, which
// makes the zeros durable with them: one journal commit then pays for the
// next PreWrite/2 bytes or more of small rounds.
//
// The zeros go only past both the records (written) and the zeros already
// there (pre), under mu like every write of records, so they never lie over
// data; Put may write records over them at any time after. They are
// written when less than half of PreWrite is left ahead, up to PreWrite
// past the records (at most to SegmentSize), and only after a round of at
// most preWriteRound bytes: a large round gains little from an overwrite
// (its data dominates its fdatasync), and writing zeros ahead of it would
// double what it writes to the disk. Nor are they written while the file
// system has less than preWriteFree left beyond them: as a disk fills, its
// space goes to records and to the files beside the spool (backlogs, the
// history log), not to zeros. A failure to write them is not one of Sync's:
// the zeros written stay (pre), the segment gets no more, and the rounds
// append as they would without.
func (s *Spool) preWriteLocked(seg *segment, round int64) {
	d := s.opts.PreWrite
	if d <= 0 || seg.sealed || seg.preFailed || round <= 0 || round > preWriteRound {
		return
	}
	from := max(seg.written, seg.pre)
	if from-seg.written >= d/2 {
		return
	}
	to := min(seg.written+d, s.opts.SegmentSize)
	if free, ok := freeSpace(seg.f); !ok || free < preWriteFree+(to-from) {
		return
	}
	for from < to {
		n, err := seg.f.WriteAt(zeros[:min(to-from, int64(len(zeros)))], from)
		from += int64(n)
		if n > 0 {
			s.bytes.Add(from - max(seg.written, seg.pre))
			seg.pre = from
		}
		if err != nil {
			seg.preFailed = true
			s.log.Warn("spool: cannot write zeros ahead of the active segment; its commits append instead",
				"segment", seg.path, "offset", from, "err", err)
			return
		}
	}
}

// preWriteRound is the largest group commit (bytes of records) after which
// preWriteLocked writes zeros ahead. Past it the zeros cost about what they
// save: with rounds of 2 KB articles Put then synced, 3,000 rounds or so
// (load 3-4), the mean Sync went 0.34 -> 0.22 ms for rounds of 36 KB, 0.65
// -> 0.58 and 0.43 -> 0.33 ms for 120 KB, but 0.49 -> 0.55 and 0.52 ->
// 0.82 ms for 240 KB.
const preWriteRound = 128 << 10

// preWriteFree is the free space below which preWriteLocked writes no
// zeros.
const preWriteFree = 256 << 20

// zeros is what preWriteLocked writes, a chunk at a time.
var zeros [256 << 10]byte

// cutPreLocked cuts the zeros past seg's records off the file (at seal and
// Close: a segment that takes no more appends ends with its last record).
// The caller fsyncs seg before relying on the cut.
func (s *Spool) cutPreLocked(seg *segment) error {
	if seg.pre <= seg.written {
		seg.pre = 0
		return nil
	}
	if err := seg.f.Truncate(seg.written); err != nil {
		return fmt.Errorf("spool: cut the zeros past %d of %s: %w", seg.written, seg.path, err)
	}
	s.bytes.Add(seg.written - seg.pre)
	seg.pre = 0
	return nil
}

// closeActiveLocked cuts the zeros written ahead off the active segment
// and makes the cut durable, so that a spool closed cleanly has no tail for
// the next open to cut (one left by a crash is cut there, as a clean end).
func (s *Spool) closeActiveLocked() error {
	a := s.active
	if a.pre <= a.written {
		return nil
	}
	if err := s.cutPreLocked(a); err != nil {
		return err
	}
	return syncData(a.f)
}
