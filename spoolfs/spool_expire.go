package spoolfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// Expire removes whole segments, oldest first: those whose newest article
// arrived before now-maxAge, then more while the spool holds over maxBytes
// (zero disables either limit). It returns how many segments it removed.
//
// It only removes sealed segments covered by a history checkpoint, so the
// active segment and one just sealed but not yet synced always stay; an
// article therefore lives at least maxAge, and at most maxAge plus the time
// its segment took to fill. Get and Section of a token in a removed segment
// fail with ErrExpired; a Section opened before stays readable until closed.
func (s *Spool) Expire(now time.Time, maxAge time.Duration, maxBytes int64) (removed int, err error) {
	cut := int64(-1 << 63)
	if maxAge > 0 {
		cut = now.Add(-maxAge).UnixNano()
	}
	covered := s.ckptSeg.Load()
	total := s.bytes.Load()

	s.rmu.Lock()
	var victims []*segment
	for _, seg := range s.order {
		if seg.num >= covered || !seg.sealed {
			break
		}
		old := seg.newest < cut
		big := maxBytes > 0 && total > maxBytes
		if !old && !big {
			break
		}
		victims = append(victims, seg)
		total -= seg.written
		seg.gone = true
		delete(s.segs, seg.num)
		if seg.refs == 0 && seg.f != nil {
			seg.f.Close()
			seg.f = nil
			s.nopen--
		}
	}
	s.order = s.order[len(victims):]
	s.rmu.Unlock()

	// Remove, then fsync the directory so the removals survive a crash. A
	// crash in between leaves some segments on disk that the next open loads
	// again and the next Expire removes.
	for _, seg := range victims {
		if err := os.Remove(seg.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("spool: expire: %w", err)
		}
		s.bytes.Add(-seg.written)
		removed++
	}
	if removed > 0 {
		if err := SyncDir(s.segDir); err != nil {
			return removed, fmt.Errorf("spool: expire: %w", err)
		}
		s.log.Info("spool expired", "segments", removed, "bytes", s.bytes.Load())
	}
	return removed, nil
}

// Bytes returns the bytes held in segment files.
func (s *Spool) Bytes() int64 { return s.bytes.Load() }
