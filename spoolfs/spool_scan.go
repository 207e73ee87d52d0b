package spoolfs

import (
	"errors"
	"fmt"
	"time"

	"github.com/newsflow/newsflow/spoolfs/records"
)

// Record is one stored article seen by Scan.
type Record struct {
	Token   Token
	MsgID   string
	Arrived time.Time
	Wire    []byte // the wire article; valid only during the callback
}

// Scan calls fn for every durable article from position from on (use the
// zero Position for the start of the spool), in the order they were stored,
// and returns the position after the last record it read: pass it to the
// next Scan to continue. A feeder that remembers such a position can hand
// every article that arrived since to its peers again after a crash.
// Corrupt regions are logged and skipped; an error from fn stops the scan.
func (s *Spool) Scan(from Position, fn func(Record) error) (Position, error) {
	end := s.End()
	s.rmu.Lock()
	var nums []uint32
	for _, seg := range s.order {
		if seg.num >= from.Seg && seg.num <= end.Seg {
			nums = append(nums, seg.num)
		}
	}
	s.rmu.Unlock()
	pos := from
	for _, num := range nums {
		seg, err := s.acquire(num)
		if errors.Is(err, ErrNotFound) {
			continue // expired meanwhile
		} else if err != nil {
			return pos, err
		}
		limit := seg.written // sealed before End was taken: fixed
		if num == end.Seg {
			limit = end.Off
		}
		start := int64(segHeaderSize)
		if num == from.Seg && from.Off > start {
			start = from.Off
		}
		if start > limit {
			start = limit
		}
		sc := records.NewScanner(seg.f, limit, recMagic, parseRecord)
		stop, err := sc.Scan(start, func(off int64, b []byte) error {
			r := viewRecord(off, b)
			if r.hdr.kind != kindArticle {
				return nil
			}
			return fn(Record{
				Token:   Token{Seg: num, Off: uint64(off) + recHeaderSize, Len: r.hdr.n},
				MsgID:   string(r.msgid),
				Arrived: time.Unix(0, r.hdr.arrived),
				Wire:    r.payload,
			})
		}, func(off, n int64) {
			s.log.Error("corrupt spool region skipped by scan", "segment", seg.path, "offset", off, "bytes", n)
		})
		s.release(seg)
		pos = Position{Seg: num, Off: stop}
		if err != nil {
			return pos, fmt.Errorf("spool: scan %s: %w", seg.path, err)
		}
		if stop < limit {
			s.log.Error("unreadable tail skipped by scan", "segment", seg.path, "offset", stop, "bytes", limit-stop)
			pos.Off = limit
		}
	}
	return pos, nil
}
