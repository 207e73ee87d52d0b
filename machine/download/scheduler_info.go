package download

import "time"

// What the Scheduler lets its owner and tests inspect.

// SegmentInfo is the inspectable state of one segment.
type SegmentInfo struct {
	State    string    // "waiting", "in flight", "done" or "failed"
	Server   int       // in flight: the server's ID; otherwise -1
	Conn     ConnID    // in flight: the connection; otherwise 0
	Want     int       // a retry waits for this server's ID; -1 for none
	Attempts int       // requests made so far
	Failed   []Verdict // servers that failed it, in the order they did
}

// Segment returns the state of the segment k.
func (s *Scheduler) Segment(k Key) (SegmentInfo, bool) {
	sg, ok := s.segs[k]
	if !ok {
		return SegmentInfo{}, false
	}
	in := SegmentInfo{State: segStateNames[sg.state], Server: -1, Want: -1, Attempts: sg.attempts,
		Failed: append([]Verdict(nil), sg.verdicts...)}
	if sg.conn != nil {
		in.Server, in.Conn = sg.conn.srv.ID, sg.conn.id
	}
	if sg.want >= 0 {
		in.Want = s.srv[sg.want].ID
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
