package download

import (
	"fmt"
	"strings"
	"time"
)

// Event is something the Scheduler tells its owner: Assign, Dial,
// SegmentDone, SegmentFailed, ServerBlocked or ServerUnblocked.
type Event interface{ isEvent() }

// Assign asks the owner to fetch a segment on a connection: send the request
// to the connection's Fetch (Assign.Request gives it) and report the outcome
// with Scheduler.Report.
type Assign struct {
	Segment   Key
	MessageID string
	Group     string // the group to join first, when the server has JoinGroup; "" otherwise
	Server    int    // Server.ID
	Conn      ConnID
	Attempt   int   // 1 for the first request of the segment, 2 for the next, ... (counted up to 65535)
	Bytes     int64 // Segment.Bytes
}

// Request is the Fetch request that carries out a.
func (a Assign) Request() Request {
	return Request{Segment: a.Segment, MessageID: a.MessageID, Group: a.Group, Bytes: a.Bytes}
}

// Dial asks the owner to open a connection to a server (connect, TLS,
// handshake) and to report the result with Connected or DialFailed.
type Dial struct {
	Server int // Server.ID
	Conn   ConnID
}

// SegmentDone: the segment was fetched and verified (its OK was reported).
type SegmentDone struct {
	Segment Key
	Server  int
}

// SegmentFailed: no server can deliver the segment. Verdicts says, server
// by server in configuration order, why not.
type SegmentFailed struct {
	Segment  Key
	Verdicts []Verdict
}

// A Verdict is one server's part in a failed segment.
type Verdict struct {
	Server int
	Why    Why
}

// ServerBlocked: the server gets no requests and no dials until Until.
// Failures counts consecutive failures; the owner may give up on a server
// (SetActive false) after too many.
type ServerBlocked struct {
	Server   int
	Until    time.Time
	Failures int
	Cause    string // what blocked it: an outcome or a dial cause, in words
}

// ServerUnblocked: the block of a server ended.
type ServerUnblocked struct{ Server int }

func (Assign) isEvent()          {}
func (Dial) isEvent()            {}
func (SegmentDone) isEvent()     {}
func (SegmentFailed) isEvent()   {}
func (ServerBlocked) isEvent()   {}
func (ServerUnblocked) isEvent() {}

// String summarises the event on one line, as tests compare them.
func (e Assign) String() string {
	s := fmt.Sprintf("assign %s s%d c%d #%d", e.Segment, e.Server, e.Conn, e.Attempt)
	if e.Group != "" {
		s += " group=" + e.Group
	}
	return s
}

// String summarises the event.
func (e Dial) String() string { return fmt.Sprintf("dial s%d c%d", e.Server, e.Conn) }

// String summarises the event.
func (e SegmentDone) String() string { return fmt.Sprintf("done %s s%d", e.Segment, e.Server) }

// String summarises the event: "failed 1/2 s1=missing s2=beyond retention".
func (e SegmentFailed) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "failed %s", e.Segment)
	for _, v := range e.Verdicts {
		fmt.Fprintf(&b, " s%d=%s", v.Server, v.Why)
	}
	return b.String()
}

// String summarises the event; the time is shown as given.
func (e ServerBlocked) String() string {
	return fmt.Sprintf("blocked s%d until %s n=%d (%s)", e.Server, e.Until.Format("15:04:05"), e.Failures, e.Cause)
}

// String summarises the event.
func (e ServerUnblocked) String() string { return fmt.Sprintf("unblocked s%d", e.Server) }
