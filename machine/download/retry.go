package download

import "fmt"

// The retry table: what one failed request means for its segment and its
// server. Every rule is a row
// of retryTable below; the Scheduler looks rows up and never decides a
// failure any other way. Which server is tried next is the selection
// algorithm's business (scheduler.go); this table only says whether the
// same server is wanted again, whether the server now counts as failed for
// the segment, and whether the server is blocked.
//
//	outcome    from (Fetch event)                         same server again       then
//	---------  -----------------------------------------  ----------------------  ------------------------------------------
//	OK         SegmentOK: body decoded, size and CRC good  -                       segment done
//	Missing    NotFound: 430, 423                           no                      failed here (and on its level's group);
//	                                                                               next server, then next level
//	Corrupt    SegmentBad: CRC mismatch, size error,        once (1 retry)          failed here; next server
//	           overflow, neither yEnc nor UU
//	ConnError  Closed (reset, EOF, timeout, 400, garbage),  ArticleRetries times    failed here ("exhausted"); next server
//	           RequestFailed (an unexpected code)
//	AuthError  Closed after 480 without success, 481;      no (server blocked)     not counted against the segment: it waits
//	           RequestFailed 502                                                   for another server or the block's end
//
// Server blocks: an AuthError outcome or a failed dial (connect error, TLS
// failure, 400/502 greeting, authentication refused) blocks the server for
// Config.BackoffBase, doubling with each consecutive failure up to
// Config.BackoffMax. A block already running is not extended by more
// failures reported during it (pipelined requests all fail at once). The
// count of consecutive failures goes back to zero when the server answers a
// request (OK or Missing). While blocked a server gets no requests and no
// dials; segments that wanted it (a retry) forget it.
//
// When a segment has failed (Missing, or retries exhausted) on every server
// that could have it, it fails: see Scheduler for who "could have it"
// (active, within retention, not an optional server that is blocked).

// Outcome is what became of one request for a segment, as its connection's
// Fetch reported it (Result.Outcome and Closed.Outcome give it).
type Outcome uint8

// Outcomes of a request.
const (
	OK        Outcome = iota + 1 // the body arrived, decoded and verified
	Missing                      // 430 (no such message-id) or 423: the server does not have it
	Corrupt                      // the body arrived but is bad: CRC mismatch, size error, not yEnc/UU
	ConnError                    // the connection failed with the request outstanding, or an unexpected answer
	AuthError                    // the server refused us: 480 unresolved, 481, 502
)

var outcomeNames = [...]string{"", "ok", "missing", "corrupt", "connection error", "auth error"}

// String returns the outcome in words ("connection error").
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && o > 0 {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// action is what a row does with the segment.
type action uint8

const (
	actDone  action = iota + 1 // the segment is complete
	actRetry                   // the same server again while the row's limit allows, then actFail
	actFail                    // the server counts as failed for the segment
	actBlock                   // block the server; the segment goes back to waiting, unharmed
)

// limitKind says where a row's retry limit comes from.
type limitKind uint8

const (
	limitNone   limitKind = iota // no retries on the same server
	limitOnce                    // one retry
	limitConfig                  // Config.ArticleRetries
)

// Per-(segment, server) retry counters: a segment counts connection errors
// and corrupt bodies separately on each server.
const (
	counterNone    = -1 // the row counts nothing
	counterConn    = 0  // connection errors
	counterCorrupt = 1  // corrupt bodies
	numCounters    = 2
)

// numOutcomes sizes arrays indexed by Outcome.
const numOutcomes = int(AuthError) + 1

// retryRow is one row of the retry table.
type retryRow struct {
	action  action
	limit   limitKind
	counter int  // which per-(segment, server) counter the retries use; counterNone
	group   bool // a failure extends to the server's load-balancing group (same level, group != 0)
	reset   bool // the server answered: its consecutive-failure count restarts
	verdict Why  // how the failure is reported in SegmentFailed
}

// retryTable holds every rule; see the comment at the top of this file.
var retryTable = [numOutcomes]retryRow{
	OK: {action: actDone, counter: counterNone, reset: true},
	// RFC 3977 §6.2.1-6.2.3: 430 "no article with that message-id"; 423
	// "no article with that number". Servers of one group are accounts
	// on one backend (NZBGet ServerX.Group): a 430 from one is a 430
	// from all of them, and asking the others would only waste requests.
	Missing: {action: actFail, counter: counterNone, group: true, reset: true, verdict: WhyMissing},
	// Corruption in transit or in the server's copy: one retry may get
	// a good copy (another spool, another path), a second rarely does.
	Corrupt: {action: actRetry, limit: limitOnce, counter: counterCorrupt, verdict: WhyCorrupt},
	// A broken connection says nothing about the article: try the same
	// server again on a new connection, ArticleRetries times.
	ConnError: {action: actRetry, limit: limitConfig, counter: counterConn, verdict: WhyExhausted},
	// RFC 4643 §2.1 (480), §2.3.1 (481); RFC 3977 §3.2.1 (502): the
	// server, not the article, is the problem.
	AuthError: {action: actBlock, counter: counterNone},
}

// rowFor returns the table's row for o; an outcome outside the table is
// treated as a connection error (it says nothing about the article).
func rowFor(o Outcome) retryRow {
	if o == 0 || int(o) >= len(retryTable) {
		return retryTable[ConnError]
	}
	return retryTable[o]
}

// limitOf is the number of retries a row allows on one server.
func (c Config) limitOf(r retryRow) int {
	switch r.limit {
	case limitOnce:
		return 1
	case limitConfig:
		return c.ArticleRetries
	}
	return 0
}

// DialCause says why a connection the Scheduler asked for did not come up.
// Every cause blocks the server for a while; the cause is kept for the
// owner's messages.
type DialCause uint8

// Causes of a failed dial.
const (
	DialConnect     DialCause = iota + 1 // TCP connect failed or timed out
	DialTLS                              // the TLS handshake failed (certificate, protocol)
	DialUnavailable                      // the greeting was 400 or 502 (RFC 3977 §5.1.1), or MODE READER was refused
	DialAuth                             // AUTHINFO was refused (481, 502) or needed without credentials
	DialProtocol                         // the server did not speak NNTP
)

var dialNames = [...]string{"", "connect", "tls", "unavailable", "auth", "protocol"}

// String returns the cause's name.
func (c DialCause) String() string {
	if int(c) < len(dialNames) && c > 0 {
		return dialNames[c]
	}
	return fmt.Sprintf("dial(%d)", uint8(c))
}

// Why says why a server did not deliver a segment that failed (a
// SegmentFailed verdict).
type Why uint8

// Verdicts of a server on a failed segment.
const (
	WhyMissing      Why = iota + 1 // it answered 430/423
	WhyGroupMissing                // a server of its load-balancing group answered 430/423
	WhyCorrupt                     // its copies were corrupt on every try
	WhyExhausted                   // connection errors used up ArticleRetries
	WhyRetention                   // the article is older than its retention: never asked
	WhyInactive                    // it is not active: never asked
)

var whyNames = [...]string{"", "missing", "missing in group", "corrupt", "retries exhausted",
	"beyond retention", "inactive"}

// String returns the verdict in words.
func (w Why) String() string {
	if int(w) < len(whyNames) && w > 0 {
		return whyNames[w]
	}
	return fmt.Sprintf("why(%d)", uint8(w))
}
