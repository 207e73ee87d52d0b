package handshake

import (
	"fmt"
	"strconv"

	"github.com/newsflow/newsflow/proto"
)

// State is where a Handshake (or Session) is in its work.
type State uint8

// States of the handshake, in the order a full handshake visits them.
const (
	StateGreeting       State = iota // waiting for the server's greeting
	StateCapabilities                // CAPABILITIES sent, waiting for 101
	StateCapabilityList              // reading the capability list after 101
	StateModeReader                  // MODE READER sent
	StateStartTLS                    // STARTTLS sent, waiting for 382
	StateTLS                         // 382 received: the runtime does TLS and calls TLSDone
	StateAuth                        // AUTHINFO USER or PASS sent (see Auth)
	StateModeStream                  // MODE STREAM sent
	StateCommand                     // Session only: the owner's command sent
	StateBlock                       // Session only: reading the command's multi-line block
	StateReady                       // done: the connection is set up (Ready was emitted)
	StateFailed                      // done: Failed was emitted, the connection must close
)

var stateNames = [...]string{"greeting", "capabilities", "capability-list", "mode-reader",
	"starttls", "tls", "auth", "mode-stream", "command", "block", "ready", "failed"}

// String returns the state's name as used in errors ("capability-list").
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Reason says why a handshake or session failed.
type Reason uint8

// Reasons for Failed.
const (
	ReasonUnavailable        Reason = iota + 1 // 400, or 502 in the greeting: no service
	ReasonProtocol                             // the server sent something that is not NNTP
	ReasonTimeout                              // a step's deadline passed
	ReasonClosed                               // the server closed the connection
	ReasonUnexpected                           // a valid response that makes no sense in the state
	ReasonNoReader                             // 502 to MODE READER: reading not permitted
	ReasonTLSUnavailable                       // TLS required but not offered or refused (580, 502)
	ReasonTLSFailed                            // the TLS handshake failed
	ReasonEncryptionRequired                   // 483 and TLS is off or already tried
	ReasonAuthRequired                         // 480 without credentials, or after authenticating
	ReasonAuthRejected                         // 481: credentials rejected
	ReasonAuthSequence                         // 482: AUTHINFO out of sequence
	ReasonAuthRefused                          // 502 to AUTHINFO: not permitted (already authenticated?)
	ReasonAuthUnsupported                      // 500/501 to AUTHINFO: the server has no AUTHINFO USER
	ReasonConfig                               // the configuration cannot be sent (e.g. a space in a user name)
)

var reasonNames = [...]string{"", "service unavailable", "protocol error", "timeout", "connection closed",
	"unexpected response", "reading not permitted", "TLS unavailable", "TLS handshake failed",
	"encryption required", "authentication required", "authentication rejected",
	"authentication out of sequence", "authentication refused", "authentication unsupported",
	"bad configuration"}

// String returns the reason in words ("authentication rejected").
func (r Reason) String() string {
	if int(r) < len(reasonNames) && r > 0 {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Event is something a Handshake or Session tells its owner: Ready, Done or
// Failed.
type Event interface{ isEvent() }

// Ready is the last event of a successful handshake. The owner hands the
// connection (and Handshake.Leftover) to the next machine.
type Ready struct {
	Greeting      proto.Response      // the greeting (200 or 201), or MODE READER's answer when it replaced it
	Capabilities  proto.CapabilitySet // the last capability list; empty when Legacy
	Legacy        bool                // the server did not answer CAPABILITIES: RFC 977 behaviour assumed
	Posting       bool                // POST advertised (or, when Legacy, a 200 greeting or MODE READER answer)
	Reader        bool                // reader commands available: READER advertised or MODE READER accepted
	Streaming     bool                // MODE STREAM answered 203 (RFC 4644 §2.3)
	Authenticated bool                // AUTHINFO succeeded (281)
	TLS           bool                // STARTTLS completed
}

// Failed is the last event of a handshake or session that did not succeed.
// The machine is Closed.
type Failed struct {
	State    State          // the state in which it failed
	Reason   Reason         // why
	Response proto.Response // the server's answer that caused it; zero when none did
	Detail   string         // more words (a parse error, a TLS error), possibly empty
}

// Error describes the failure.
func (f Failed) Error() string {
	s := fmt.Sprintf("nntp handshake: %s in state %s", f.Reason, f.State)
	if f.Response.Code != 0 {
		s += fmt.Sprintf(": server said %q", f.Response.String())
	}
	if f.Detail != "" {
		s += ": " + f.Detail
	}
	return s
}

// String summarises r on one line: "Ready caps=5 posting reader streaming
// authenticated tls" (only the flags that are set; "legacy" instead of
// caps=N for an RFC 977 server).
func (r Ready) String() string {
	s := "Ready"
	if r.Legacy {
		s += " legacy"
	} else {
		s += " caps=" + strconv.Itoa(len(r.Capabilities.List))
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{r.Posting, "posting"}, {r.Reader, "reader"}, {r.Streaming, "streaming"},
		{r.Authenticated, "authenticated"}, {r.TLS, "tls"}} {
		if f.on {
			s += " " + f.name
		}
	}
	return s
}

func (Ready) isEvent()  {}
func (Failed) isEvent() {}
