package download

import (
	"slices"
	"time"
)

// What the Scheduler lets its owner and tests inspect.

// SegmentInfo is the inspectable state of one segment.
type SegmentInfo struct {
	State    string    // "waiting", "in flight", "done" or "failed"
	Server   int       // in flight: the server's ID; otherwise -1
	Conn     ConnID    // in flight: the connection; otherwise 0
	Want     int       // a retry waits for this server's ID; -1 for none
	Attempts int       // requests made so far (counted up to 65535)
	Bytes    int64     // Segment.Bytes
	Failed   []Verdict // servers that failed it, in the order they did; none once it is done or failed (SegmentFailed carried them)
}

// Segment returns the state of the segment k.
func (s *Scheduler) Segment(k Key) (SegmentInfo, bool) {
	i, ok := s.segs.find(k)
	if !ok {
		return SegmentInfo{}, false
	}
	in := SegmentInfo{State: segStateNames[s.segs.state[i]], Server: -1, Want: -1, Attempts: int(s.segs.attempts[i]),
		Bytes: s.segs.bytes[i]}
	if x := s.segs.peek(i); x != nil {
		in.Failed = append([]Verdict(nil), x.verdicts...)
		if x.want >= 0 {
			in.Want = s.srv[x.want].ID
		}
	}
	if s.segs.state[i] == segInFlight {
		for _, c := range s.conns {
			if slices.Contains(c.reqs, i) {
				in.Server, in.Conn = c.srv.ID, c.id
			}
		}
	}
	return in, true
}

// ServerInfo is the inspectable state of one server.
type ServerInfo struct {
	Blocked  bool
	Until    time.Time // the block's end, when Blocked
	Failures int       // consecutive failures
	Open     int       // connections up
	Dialing  int       // connections asked for, not yet up
	InFlight int       // requests in flight
}

// Server returns the state of the server with the given ID.
func (s *Scheduler) Server(id int) (ServerInfo, bool) {
	sv, ok := s.byID[id]
	if !ok {
		return ServerInfo{}, false
	}
	in := ServerInfo{Blocked: sv.blocked, Failures: sv.failures, Open: sv.open, Dialing: sv.dialing, InFlight: sv.inflight}
	if sv.blocked {
		in.Until = sv.until
	}
	return in, true
}
