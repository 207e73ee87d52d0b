package download

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/newsflow/newsflow/proto"
)

// Request is one segment for a Fetch to download.
type Request struct {
	Segment   Key
	MessageID string // with or without angle brackets
	Group     string // join this group first when it is not the current one; "" never sends GROUP
	Bytes     int64  // the article's size as the NZB gives it (bytes=); 0 when unknown. Bounds the body (MaxBody).
}

// Reason says why a Fetch closed.
type Reason uint8

// Reasons for ConnClosed.
const (
	ReasonQuit        Reason = iota + 1 // Close was called: QUIT sent once the requests were answered
	ReasonTimeout                       // the server was silent for Timeout with a response due (a stall)
	ReasonEOF                           // the server closed the connection
	ReasonUnavailable                   // 400: the server is going away (RFC 3977 §3.2.1)
	ReasonProtocol                      // garbage, an overlong line, a mismatched message-id, an impossible code
	ReasonAuth                          // 480 without credentials, AUTHINFO refused, or 480 again after it
	ReasonAborted                       // the owner called Abort
)

var reasonNames = [...]string{"", "quit", "timeout", "eof", "unavailable", "protocol error", "auth", "aborted"}

// String returns the reason's name.
func (r Reason) String() string {
	if int(r) < len(reasonNames) && r > 0 {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// FetchEvent is something a Fetch tells its owner: Data, a Result
// (SegmentOK, SegmentBad, NotFound, RequestFailed) or ConnClosed.
type FetchEvent interface{ isFetchEvent() }

// Result is the end of one request: exactly one Result, or a place in
// ConnClosed.Pending, comes back for every Request. Outcome is what to
// report to the Scheduler.
type Result interface {
	FetchEvent
	Key() Key
	Outcome() Outcome
}

// Data is decoded bytes of a segment: they belong at Offset in the output
// file (for yEnc, from =ypart begin=; for UU, counted from the start of the
// article, as UU carries no offsets). Bytes stay valid until the Fetch's
// next input; write them before that. The decoder never writes more than
// the part declares, but the declaration is the server's word: the owner
// checks that Offset+len(Bytes) is within the file it expects.
type Data struct {
	Segment Key
	Offset  int64
	Bytes   []byte
}

// SegmentOK: the body ended, its size and CRC-32 match the yEnc trailer
// (UU has neither, so only begin and end lines were checked).
type SegmentOK struct {
	Segment    Key
	Name       string // yEnc name= or the UU begin line's name; NOT sanitised
	Offset     int64  // where the part's data starts in the file
	Size       int64  // bytes of data
	CRC        uint32 // CRC-32 of the data (IEEE)
	FileSize   int64  // yEnc =ybegin size=: the whole file's size; 0 for UU
	FileCRC    uint32 // yEnc =yend crc32=: the whole file's CRC-32, when HasFileCRC
	HasFileCRC bool
	Part       int  // yEnc part=, 0 when absent
	Total      int  // yEnc total=, 0 when absent
	UU         bool // decoded as UU, not yEnc
}

// SegmentBad: the body arrived but is not good: a CRC mismatch, a size
// error, more data than declared, or neither yEnc nor UU. Data already
// handed out for it must not be trusted. Err wraps proto.ErrYencCRC,
// ErrYencSize, ErrYencOverflow, ErrYencHeader, ErrYencMissing or
// ErrUUData/ErrUUMissing.
type SegmentBad struct {
	Segment Key
	Err     error
}

// NotFound: 430 or 423, the server does not have the article.
type NotFound struct {
	Segment  Key
	Response proto.Response
}

// RequestFailed: an answer to BODY that is neither a body nor "not found":
// 502 or 481 (AuthError), anything else single-line (ConnError). The
// connection stays usable.
type RequestFailed struct {
	Segment  Key
	Response proto.Response
}

// ConnClosed is the Fetch's last event: the connection is finished. Pending
// lists the requests that got no Result, in request order; each gets
// Outcome.
type ConnClosed struct {
	Reason   Reason
	Response proto.Response // the server's line that caused it, when one did
	Detail   string
	Pending  []Key
}

func (Data) isFetchEvent()          {}
func (SegmentOK) isFetchEvent()     {}
func (SegmentBad) isFetchEvent()    {}
func (NotFound) isFetchEvent()      {}
func (RequestFailed) isFetchEvent() {}
func (ConnClosed) isFetchEvent()    {}

// Key returns the segment the result is for.
func (e SegmentOK) Key() Key { return e.Segment }

// Key returns the segment the result is for.
func (e SegmentBad) Key() Key { return e.Segment }

// Key returns the segment the result is for.
func (e NotFound) Key() Key { return e.Segment }

// Key returns the segment the result is for.
func (e RequestFailed) Key() Key { return e.Segment }

// Outcome is OK.
func (SegmentOK) Outcome() Outcome { return OK }

// Outcome is Corrupt.
func (SegmentBad) Outcome() Outcome { return Corrupt }

// Outcome is Missing.
func (NotFound) Outcome() Outcome { return Missing }

// Outcome is AuthError for 502 and 481 (RFC 3977 §3.2.1, RFC 4643 §2.3.1:
// the server refuses us, not the article), ConnError otherwise.
func (e RequestFailed) Outcome() Outcome {
	switch e.Response.Code {
	case proto.CodeNotPermitted, proto.CodeAuthRejected:
		return AuthError
	}
	return ConnError
}

// Outcome is what the Pending requests report: AuthError after
// ReasonAuth, ConnError otherwise.
func (e ConnClosed) Outcome() Outcome {
	if e.Reason == ReasonAuth {
		return AuthError
	}
	return ConnError
}

// String summarises the event for tests and logs.
func (e Data) String() string {
	return fmt.Sprintf("data %s %d+%d", e.Segment, e.Offset, len(e.Bytes))
}

// String summarises the event.
func (e SegmentOK) String() string {
	s := fmt.Sprintf("ok %s off=%d size=%d crc=%08x", e.Segment, e.Offset, e.Size, e.CRC)
	if e.UU {
		s += " uu"
	}
	if e.Name != "" {
		s += fmt.Sprintf(" name=%q", e.Name)
	}
	return s
}

// String summarises the event.
func (e SegmentBad) String() string { return fmt.Sprintf("bad %s: %v", e.Segment, e.Err) }

// String summarises the event.
func (e NotFound) String() string { return fmt.Sprintf("notfound %s %d", e.Segment, e.Response.Code) }

// String summarises the event.
func (e RequestFailed) String() string {
	return fmt.Sprintf("failed %s %d %s", e.Segment, e.Response.Code, e.Outcome())
}

// String summarises the event.
func (e ConnClosed) String() string {
	s := "closed " + e.Reason.String()
	if e.Response.Code != 0 {
		s += " " + strconv.Itoa(e.Response.Code)
	}
	if len(e.Pending) > 0 {
		ks := make([]string, len(e.Pending))
		for i, k := range e.Pending {
			ks[i] = k.String()
		}
		s += " pending=" + strings.Join(ks, ",")
	}
	return s
}
