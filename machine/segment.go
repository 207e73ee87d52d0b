package machine

import "fmt"

// A Segment is one piece of a machine's output: either bytes the machine
// built (commands, and anything else it wrote itself), or a stored article
// that the runtime writes on the machine's behalf.
//
// When Token is empty, Bytes are the bytes to write. When Token is not
// empty, Bytes is nil and the runtime writes the stored article named by
// Token, exactly Size bytes, in its wire form (CRLF line ends, dot-stuffed,
// ended by ".\r\n"), so that large bodies can go out with writev or sendfile
// without passing through the machine.
type Segment struct {
	Bytes []byte // bytes to write when Token is empty
	Token string // names a stored article to write instead, when not empty
	Size  int64  // the stored article's length in bytes, when Token is not empty
}

// SegmentSender is implemented by machines whose output may name stored
// articles (see Segment). For such a machine AppendSegments replaces
// machine.Conn's AppendOutgoing: after every input the runtime drains
// AppendSegments until it appends nothing and writes the segments in order.
//
// A runtime uses one of the two outputs for the whole life of the machine,
// never both: bytes taken with AppendSegments are gone from AppendOutgoing
// and the other way round. A runtime that cannot write stored articles
// itself uses AppendOutgoing, which a SegmentSender must still implement
// (typically by expanding tokens through a BodySource it was given).
type SegmentSender interface {
	// AppendSegments appends the segments to write to dst and forgets them.
	// The Bytes of the returned segments stay valid until the machine's next
	// input (Receive, Timeout, an owner's command); write them before that.
	AppendSegments(dst []Segment) []Segment
}

// BodySource gives the stored article named by a token, in wire form. It is
// how a runtime (or a test) turns token segments into bytes.
type BodySource interface {
	// Body returns the stored article named by token. The caller must not
	// modify the returned bytes.
	Body(token string) ([]byte, error)
}

// AppendSegmentBytes appends the bytes of segs to dst, fetching token
// segments from src, and checks that each stored article has the size the
// segment gives. It stops at the first failure and returns what it appended
// up to there with the error.
func AppendSegmentBytes(dst []byte, segs []Segment, src BodySource) ([]byte, error) {
	for _, s := range segs {
		if s.Token == "" {
			dst = append(dst, s.Bytes...)
			continue
		}
		if src == nil {
			return dst, fmt.Errorf("machine: segment %s: no body source", s.Token)
		}
		body, err := src.Body(s.Token)
		if err != nil {
			return dst, fmt.Errorf("machine: segment %s: %w", s.Token, err)
		}
		if int64(len(body)) != s.Size {
			return dst, fmt.Errorf("machine: segment %s: stored article has %d bytes, want %d", s.Token, len(body), s.Size)
		}
		dst = append(dst, body...)
	}
	return dst, nil
}
