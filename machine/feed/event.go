package feed

import (
	"fmt"
	"strconv"
)

// Article is one article to offer: the spool's token for it, its
// message-id (with angle brackets) and the length of its stored wire form.
// The spool holds each article in wire form (CRLF, dot-stuffed, ended by
// ".\r\n"), so the body of TAKETHIS or IHAVE is the stored bytes verbatim.
type Article struct {
	Token     string // names the stored article (see machine.Segment)
	MessageID string // "<local@domain>"
	Size      int64  // bytes of the stored wire form, terminator included
}

// Mode is how a Feed offers articles.
type Mode uint8

// Modes of a Feed.
const (
	// ModeCheck asks with CHECK and sends TAKETHIS for what the peer wants
	// (RFC 4644).
	ModeCheck Mode = iota + 1
	// ModeTakeThis sends TAKETHIS without asking (innfeed's "no-CHECK mode"),
	// while nearly everything offered is wanted.
	ModeTakeThis
	// ModeIHave offers one article at a time with IHAVE (RFC 3977 §6.3.2),
	// for a peer that cannot stream.
	ModeIHave
)

var modeNames = [...]string{"", "check", "takethis", "ihave"}

// String returns "check", "takethis" or "ihave".
func (m Mode) String() string {
	if int(m) < len(modeNames) && m > 0 {
		return modeNames[m]
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Reason says why a Feed closed.
type Reason uint8

// Reasons for Closed.
const (
	ReasonQuit        Reason = iota + 1 // Close was called: QUIT sent after the replies drained
	ReasonIdle                          // nothing to send for IdleTimeout: QUIT sent
	ReasonTimeout                       // no reply within ResponseTimeout
	ReasonUnavailable                   // 400 (or 403): the peer is going down
	ReasonPeerClosed                    // the peer closed the connection with work outstanding
	ReasonProtocol                      // garbage, a mismatched message-id, an unexpected code
	ReasonAuth                          // 480 and no (or failed) authentication
	ReasonDenied                        // 502: the peer does not allow us to feed it
	ReasonNoStreaming                   // 500/501 to TAKETHIS: the stream is out of step
	ReasonNoTransfer                    // 500/501 to IHAVE: the peer takes no articles
	ReasonAborted                       // the owner called Abort (connection failure, unreadable body)
)

var reasonNames = [...]string{"", "quit", "idle", "timeout", "peer unavailable", "peer closed",
	"protocol error", "authentication", "permission denied", "streaming unsupported",
	"transfer unsupported", "aborted"}

// String returns the reason in words ("peer unavailable").
func (r Reason) String() string {
	if int(r) < len(reasonNames) && r > 0 {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Event is something a Feed tells its owner. Every article given to Offer
// comes back in exactly one Accepted, Refused, Rejected, Deferred or
// Requeue event.
type Event interface{ isEvent() }

// Accepted: the peer took the article (239 to TAKETHIS, 235 to IHAVE).
//
// Article is a pointer, unlike the other events' articles, because
// Accepted is the event of nearly every article sent: a struct holding
// only a pointer goes into an Event without an allocation, where the
// Article itself (40 bytes) took one per article (1.09M allocations for
// 1.2M 2 KB articles sent to four peers). The Feed allocates the
// Articles a block at a time and never writes one again once handed
// out; the owner must not change it either.
type Accepted struct{ Article *Article }

// GoString shows the Article, not its address, so that %#v of an event
// (as runtime transcripts compare them) depends only on what happened.
func (a Accepted) GoString() string {
	if a.Article == nil {
		return "feed.Accepted{Article:(*feed.Article)(nil)}"
	}
	return fmt.Sprintf("feed.Accepted{Article:&%#v}", *a.Article)
}

// Refused: the peer does not want the article (438 to CHECK, 435 to IHAVE);
// it usually has it already. Done.
type Refused struct{ Article Article }

// Rejected: the peer received the article and refused it (439 to TAKETHIS,
// 437 to IHAVE), or the article could not be offered at all (Code 0). Do
// not offer it to this peer again.
type Rejected struct {
	Article Article
	Code    int    // the peer's code, 0 when the Feed refused to offer it
	Reason  string // the peer's text, or why it could not be offered
}

// Deferred: the peer asks to be offered the article later (431 to CHECK,
// 436 to IHAVE).
type Deferred struct {
	Article Article
	Code    int
}

// Requeue gives back articles the Feed can no longer handle, because it
// closed (or is closing) with them queued or sent but unanswered. Nothing
// offered is ever lost: offer them again, on another connection.
type Requeue struct{ Articles []Article }

// ModeChanged: the Feed switched how it offers articles. Percent is the
// filtered share of wanted articles that caused the switch (0 for a switch
// to ModeIHave).
type ModeChanged struct {
	From, To Mode
	Percent  float64
	Why      string
}

// Warning reports a peer's misbehaviour that the Feed tolerated, for the
// log: 431 or 438 to TAKETHIS (RFC 4644 §2.5 allows neither; the article
// counts as rejected).
type Warning struct {
	Article  Article
	Response string
	Text     string
}

// WantMore: the Feed has room for N more articles beyond those it already
// asked for; offer up to N more when there are any. The credits add up: an
// owner keeps a count, adds N, and subtracts one per Offer.
type WantMore struct{ N int }

// Closed is the last event: the connection is finished (and the runtime
// closes it). Requeue events come before it.
type Closed struct {
	Reason Reason
	Detail string
}

// Error describes why the Feed closed.
func (c Closed) Error() string {
	if c.Detail == "" {
		return "feed: closed: " + c.Reason.String()
	}
	return fmt.Sprintf("feed: closed: %s: %s", c.Reason, c.Detail)
}

func (Accepted) isEvent()    {}
func (Refused) isEvent()     {}
func (Rejected) isEvent()    {}
func (Deferred) isEvent()    {}
func (Requeue) isEvent()     {}
func (ModeChanged) isEvent() {}
func (Warning) isEvent()     {}
func (WantMore) isEvent()    {}
func (Closed) isEvent()      {}

// Stats are a Feed's counters, for innfeed-like stats lines and metrics.
type Stats struct {
	Offered   int64 // articles given to Offer
	Accepted  int64 // 239 / 235
	Refused   int64 // 438 / 435
	Rejected  int64 // 439 / 437 (and 431 to TAKETHIS, and articles that could not be offered)
	Deferred  int64 // 431 / 436
	Requeued  int64 // articles given back in Requeue events
	InFlight  int   // articles held now: queued, or sent and not yet answered
	Checks    int64 // CHECK commands sent
	TakeThis  int64 // TAKETHIS commands sent
	IHave     int64 // IHAVE commands sent
	BodyBytes int64 // article bytes sent (TAKETHIS and IHAVE bodies)
}
