package ingest

import (
	"fmt"
	"strconv"

	"github.com/newsflow/newsflow/proto"
)

// Cmd names the feeding command an event or response belongs to.
type Cmd uint8

// The feeding commands (RFC 4644 §2.4, §2.5; RFC 3977 §6.3.2).
const (
	CmdCheck    Cmd = iota + 1 // CHECK <message-id>
	CmdTakeThis                // TAKETHIS <message-id> and its article
	CmdIHave                   // IHAVE <message-id>, then the article after 335
)

var cmdNames = [...]string{"", "CHECK", "TAKETHIS", "IHAVE"}

// String returns the command's keyword ("TAKETHIS").
func (c Cmd) String() string {
	if int(c) < len(cmdNames) && c > 0 {
		return cmdNames[c]
	}
	return "cmd(" + strconv.Itoa(int(c)) + ")"
}

// Event is something an Ingest tells its owner: Check, Article, Rejected or
// Closed. Check and Article carry a Seq the owner must answer exactly once
// (Decide, Stored); Rejected and Closed are for logs and bookkeeping.
type Event interface{ isEvent() }

// Check asks the owner whether it wants the article offered by CHECK or
// IHAVE. Answer with Decide(now, Seq, verdict); typically the owner looks
// the id up in its history and its set of articles in progress. After Want
// for IHAVE, the article that follows comes as an Article with its own Seq.
type Check struct {
	Seq       uint64
	Cmd       Cmd    // CmdCheck or CmdIHave
	MessageID string // syntax already checked with proto.ValidMessageID
}

// Article is a complete article that passed the machine's own checks
// (message-id syntax, header syntax, required headers and Date window via
// proto.ValidateArticle, Message-ID equal to the command's id, size, Path
// loop). The owner stores it durably, then answers Stored(now, Seq, result).
type Article struct {
	Seq       uint64
	Cmd       Cmd    // CmdTakeThis or CmdIHave
	MessageID string // the command's id, equal to the Message-ID field
	// Data is the article as received, dot-unstuffed (RFC 3977 §3.1.1):
	// header and body with their line endings, without the terminating
	// line. It belongs to the owner; proto.AppendWire makes the spool's form.
	// Small articles share one 64 KiB array (each capped to its own
	// part), so holding a Data long keeps that array alive: store and drop.
	Data []byte
	// Header is Data's header section, parsed; its slices point into Data.
	Header proto.Header
	// Body is the offset of the body in Data (len(Data) if there is none).
	Body int
}

// Rejected reports an offer or article the machine refused by itself,
// with the reason it also sent to the peer (438, 439, 435 or 437).
type Rejected struct {
	Cmd       Cmd
	MessageID string // as the peer sent it; may be malformed
	Kind      RejectKind
	Reason    string
}

// Closed is the last event: the machine is done with the connection.
type Closed struct {
	Reason string // "QUIT", "idle timeout", "peer closed the connection", ...
}

func (Check) isEvent()    {}
func (Article) isEvent()  {}
func (Rejected) isEvent() {}
func (Closed) isEvent()   {}

// Verdict is the owner's answer to a Check.
type Verdict uint8

// Verdicts. For CHECK they become 238, 438 and 431 (RFC 4644 §2.4); for
// IHAVE 335, 435 and 436 (RFC 3977 §6.3.2).
const (
	Want   Verdict = iota + 1 // not in history and not in progress: send it
	Refuse                    // already have it (or never want it)
	Defer                     // in progress elsewhere or cannot take it now: try later
)

var verdictNames = [...]string{"", "want", "refuse", "defer"}

// String returns "want", "refuse" or "defer".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) && v > 0 {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Outcome is what became of an Article the owner tried to store.
type Outcome uint8

// Outcomes of storing. TAKETHIS answers 239, 439, 439 and "400, close"
// (RFC 4644 §2.5 has no temporary failure for TAKETHIS); IHAVE answers 235,
// 437, 437 and 436 (RFC 3977 §6.3.2).
const (
	StoreAccepted  Outcome = iota + 1 // durable in the spool and queued for peers
	StoreDuplicate                    // another connection stored it first
	StoreRejected                     // the owner's policy refuses it for good
	StoreLater                        // cannot store now (disk full, shutting down)
)

var outcomeNames = [...]string{"", "accepted", "duplicate", "rejected", "later"}

// String returns "accepted", "duplicate", "rejected" or "later".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && o > 0 {
		return outcomeNames[o]
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Result is the owner's answer to an Article.
type Result struct {
	Outcome Outcome
	Reason  string // sent to the peer with StoreRejected and StoreLater; may be empty
}

// RejectKind classifies why an offer or article was rejected, for counters.
type RejectKind uint8

// Reject kinds. All but RejectOwner are decided by the machine.
const (
	RejectMessageID RejectKind = iota // the command's message-id fails RFC 5536 §3.1.3
	RejectTooLarge                    // the article is larger than Config.MaxArticleSize
	RejectHeader                      // the header section does not parse (RFC 5322 §2.2)
	RejectInvalid                     // proto.ValidateArticle: required headers, Date window
	RejectMismatch                    // the Message-ID field differs from the command's id
	RejectPathLoop                    // Path already holds Config.PathHost (RFC 5537 §3.3)
	RejectOwner                       // the owner answered StoreRejected
	NumRejectKinds                    // the number of kinds, for arrays
)

var rejectNames = [...]string{"message-id", "too-large", "header", "invalid", "mismatch", "path-loop", "owner"}

// String returns the kind's short name ("path-loop"), used as a metric label.
func (k RejectKind) String() string {
	if int(k) < len(rejectNames) {
		return rejectNames[k]
	}
	return "reject(" + strconv.Itoa(int(k)) + ")"
}

// Counters count what one connection offered and what became of it.
type Counters struct {
	// Offered counts CHECK, IHAVE and TAKETHIS commands with a message-id
	// argument; an article offered by CHECK and sent by TAKETHIS counts twice.
	Offered int64
	// Accepted counts articles stored (239, 235).
	Accepted int64
	// Refused counts offers not wanted (438, 435) and articles the owner
	// found to be duplicates (439, 437 "Duplicate").
	Refused int64
	// Deferred counts "try later" answers: 431, 436, and the 400 that
	// ends a connection when a TAKETHIS article cannot be stored now.
	Deferred int64
	// Rejected counts rejections by kind (439, 437, and 438/435 for a
	// malformed message-id).
	Rejected [NumRejectKinds]int64
}

// RejectedTotal is the sum of Rejected.
func (c Counters) RejectedTotal() int64 {
	var n int64
	for _, v := range c.Rejected {
		n += v
	}
	return n
}

// String summarises the counters in one line, as a periodic stats line would.
func (c Counters) String() string {
	s := fmt.Sprintf("offered %d accepted %d refused %d deferred %d rejected %d",
		c.Offered, c.Accepted, c.Refused, c.Deferred, c.RejectedTotal())
	for k, v := range c.Rejected {
		if v != 0 {
			s += fmt.Sprintf(" %s=%d", RejectKind(k), v)
		}
	}
	return s
}
