// Package handshake sets up NNTP client connections: the greeting,
// CAPABILITIES, MODE READER, STARTTLS, AUTHINFO and MODE STREAM, as a pure
// machine shared by newsfeed, newsget and newsweb. It also holds Auth, the
// AUTHINFO sub-machine that later machines reuse when a command draws 480,
// and Session, which runs one command with that recovery.
package handshake

// Theory of operation
//
// A Handshake is a sans-I/O machine (machine.Conn, machine.TLSStarter,
// machine.EOFReceiver) for the client side of a fresh connection. It never
// pipelines: it sends one command, waits for its one response (or a
// capability list), decides, and sends the next. Every decision has two
// halves, kept apart on purpose:
//
//   - table (below) says what a response code means in the current state:
//     an action such as "capabilities follow", "authenticate, then retry",
//     "not streaming". It is the only place where codes are interpreted.
//   - advance says what to do next from what is known so far (configuration,
//     capabilities, what was done), in one ordered list:
//
//     1. CAPABILITIES, whenever the last list is stale (RFC 3977 §5.2: after
//        MODE READER, RFC 4642 §2.2.2: after TLS, RFC 4643 §2.2: after
//        AUTHINFO). A server that does not answer 101 is an RFC 977 server
//        ("legacy"): it is not asked again, and the steps below are tried
//        blindly where that is safe.
//     2. MODE READER, when reading is wanted and READER is not advertised
//        (RFC 3977 §5.3). On a mode-switching server such as INN's innd, the
//        connection is handed to another program (nnrpd) whose capabilities
//        differ, hence step 1 again.
//     3. STARTTLS when TLS is wanted and advertised (or required, or a 483
//        demanded it). After 382 the machine waits in StateTLS; the runtime
//        performs the TLS handshake and calls TLSDone. Bytes received between
//        382 and TLSDone are a protocol error (they would be plaintext
//        injected into the protected session).
//     4. AUTHINFO USER/PASS via Auth, when credentials are configured and the
//        server advertises AUTHINFO USER (or is legacy). Any command that
//        draws 480 authenticates first and is then retried by step order.
//     5. MODE STREAM when streaming is wanted and STREAMING is advertised (or
//        legacy). 203 means streaming; 500/501/502 mean the feed must use
//        IHAVE (RFC 4644 §2.3).
//     6. Ready.
//
// Each command sets a deadline StepTimeout after it was sent; the greeting's
// is StepTimeout after New. Timeout at or past it fails the handshake with
// ReasonTimeout naming the state. On failure the machine emits Failed, sends
// QUIT when the connection is still in step (a well-formed refusal), and
// reports Closed. On success it emits Ready and keeps any bytes received
// beyond the last response for the next machine (Leftover).

import (
	"fmt"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// DefaultStepTimeout is the time allowed for each response when
// Config.StepTimeout is zero.
const DefaultStepTimeout = 30 * time.Second

// TLSMode says whether to use STARTTLS (RFC 4642).
type TLSMode uint8

// TLS modes.
const (
	TLSOff       TLSMode = iota // never send STARTTLS
	TLSIfOffered                // STARTTLS when CAPABILITIES lists it, plaintext otherwise
	TLSRequired                 // STARTTLS or fail with ReasonTLSUnavailable
)

// Config says what the caller wants from the connection.
type Config struct {
	Reader      bool          // reader commands wanted: MODE READER unless READER is advertised
	Stream      bool          // streaming wanted: MODE STREAM (RFC 4644)
	User, Pass  string        // AUTHINFO USER/PASS credentials; no User means none
	TLS         TLSMode       // STARTTLS policy
	StepTimeout time.Duration // time allowed per response; DefaultStepTimeout when zero
}

// Handshake is the sans-I/O machine that sets up one client connection. It
// performs no I/O and reads no clock. After every input (Receive, Timeout,
// TLSDone, ReceiveEOF) drain AppendOutgoing and NextEvent.
type Handshake struct {
	core

	greeting      proto.Response
	posting       bool                // from the greeting or MODE READER answer
	caps          proto.CapabilitySet // last capability list
	capsFresh     bool                // caps describe the current state of the session
	pending       []string            // list being read in StateCapabilityList
	legacy        bool                // CAPABILITIES not understood
	readerDone    bool                // MODE READER answered (or skipped as unknown)
	tls           bool                // TLS established
	tlsTried      bool                // STARTTLS refused: do not ask again
	tlsNeeded     bool                // a 483 asked for TLS
	authenticated bool                // 281 received
	authSkipped   bool                // the server had no AUTHINFO USER: go on without
	streamDone    bool                // MODE STREAM answered or skipped
	streaming     bool                // MODE STREAM answered 203
}

// New returns a handshake that waits for the server's greeting on a
// connection opened at now.
func New(now time.Time, cfg Config) *Handshake {
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = DefaultStepTimeout
	}
	return &Handshake{core: core{
		cfg:      cfg,
		state:    StateGreeting,
		deadline: now.Add(cfg.StepTimeout),
		auth:     Auth{User: cfg.User, Pass: cfg.Pass},
	}}
}

// action is what a response means in a state; see table.
type action uint8

const (
	actGreeted       action = iota + 1 // 200/201 greeting
	actUnavailable                     // 400 anywhere, 502 greeting: no service (RFC 3977 §5.1.1)
	actCapsList                        // 101: the capability list follows
	actLegacy                          // CAPABILITIES not understood: RFC 977 server
	actReaderOK                        // 200/201 to MODE READER
	actReaderAssumed                   // 500/501 to MODE READER: old server, reading assumed
	actNoReader                        // 502 to MODE READER (RFC 3977 §5.3.2)
	actAuth                            // 480: authenticate, then retry (RFC 4643 §2.1)
	actTLSFirst                        // 483: STARTTLS, then retry (RFC 4642 §2.2.2)
	actTLSGo                           // 382: the runtime does TLS now
	actTLSRefused                      // 580, 502, 500, 501 to STARTTLS
	actStreamOK                        // 203 to MODE STREAM (RFC 4644 §2.3)
	actStreamNo                        // 500/501/502 to MODE STREAM: IHAVE only
	actUnexpected                      // a response that makes no sense here
	actProtocol                        // a line that is not a response at all
)

// Pseudo-codes for table lookups.
const (
	codeOther   = 0  // any code without its own row
	codeGarbage = -1 // a line ParseResponse refuses
)

// table holds every response transition of the handshake (AUTHINFO's are
// in authTable). StateCapabilityList reads lines, not responses, and
// StateTLS accepts no input; neither appears here.
var table = map[State]map[int]action{
	StateGreeting: {
		proto.CodePostingOK:    actGreeted,
		proto.CodeNoPosting:    actGreeted,
		proto.CodeUnavailable:  actUnavailable,
		proto.CodeNotPermitted: actUnavailable,
		codeOther:              actUnexpected,
		codeGarbage:            actProtocol,
	},
	StateCapabilities: {
		proto.CodeCapabilities:    actCapsList,
		proto.CodeUnavailable:     actUnavailable,
		proto.CodeAuthRequired:    actAuth,
		proto.CodeEncryptRequired: actTLSFirst,
		// 500/501/502 and anything else, even garbage: an RFC 977 server.
		codeOther:   actLegacy,
		codeGarbage: actLegacy,
	},
	StateModeReader: {
		proto.CodePostingOK:       actReaderOK,
		proto.CodeNoPosting:       actReaderOK,
		proto.CodeUnknownCommand:  actReaderAssumed,
		proto.CodeSyntaxError:     actReaderAssumed,
		proto.CodeNotPermitted:    actNoReader,
		proto.CodeUnavailable:     actUnavailable,
		proto.CodeAuthRequired:    actAuth,
		proto.CodeEncryptRequired: actTLSFirst,
		codeOther:                 actUnexpected,
		codeGarbage:               actProtocol,
	},
	StateStartTLS: {
		proto.CodeContinueTLS:    actTLSGo,
		580:                      actTLSRefused, // RFC 4642 §2.2.2: can not initiate TLS
		proto.CodeNotPermitted:   actTLSRefused,
		proto.CodeUnknownCommand: actTLSRefused,
		proto.CodeSyntaxError:    actTLSRefused,
		proto.CodeUnavailable:    actUnavailable,
		codeOther:                actUnexpected,
		codeGarbage:              actProtocol,
	},
	StateModeStream: {
		proto.CodeStreamingOK:     actStreamOK,
		proto.CodeUnknownCommand:  actStreamNo,
		proto.CodeSyntaxError:     actStreamNo,
		proto.CodeNotPermitted:    actStreamNo,
		proto.CodeUnavailable:     actUnavailable,
		proto.CodeAuthRequired:    actAuth,
		proto.CodeEncryptRequired: actTLSFirst,
		codeOther:                 actUnexpected,
		codeGarbage:               actProtocol,
	},
}

// lookup returns the action for a response line in state s.
func lookup(s State, code int) (action, bool) {
	rows, ok := table[s]
	if !ok {
		return 0, false
	}
	if a, ok := rows[code]; ok {
		return a, true
	}
	if code == codeGarbage {
		return actProtocol, true
	}
	return rows[codeOther], true
}

// State returns where the handshake is.
func (h *Handshake) State() State { return h.state }

// Receive takes bytes from the server (machine.Conn). Bytes that follow the
// last response of a successful handshake are kept for Leftover.
func (h *Handshake) Receive(now time.Time, p []byte) error {
	switch h.state {
	case StateReady:
		h.in.Add(p)
		return nil
	case StateFailed:
		return fmt.Errorf("handshake: %d bytes received in state %s", len(p), h.state)
	case StateTLS:
		return h.protocolError("data received between 382 and the TLS handshake")
	}
	h.in.Add(p)
	for h.state != StateReady && h.state != StateFailed && h.state != StateTLS {
		line, ok, err := h.in.Next()
		if err != nil {
			return h.protocolError(err.Error())
		}
		if !ok {
			break
		}
		if err := h.line(now, line); err != nil {
			return err
		}
	}
	if h.state == StateTLS && h.in.Buffered() > 0 {
		// RFC 4642 §2.2.2 and the STARTTLS command-injection attacks:
		// nothing may follow 382 in plaintext.
		return h.protocolError("data received between 382 and the TLS handshake")
	}
	return nil
}

// line handles one complete line from the server.
func (h *Handshake) line(now time.Time, line []byte) error {
	if h.state == StateCapabilityList {
		h.capLine(now, line)
		return nil
	}
	resp, perr := proto.ParseResponse(line)
	if h.state == StateAuth {
		if perr != nil {
			return h.protocolError(perr.Error())
		}
		h.authResponse(now, resp)
		return nil
	}
	code := resp.Code
	if perr != nil {
		code = codeGarbage
	}
	act, ok := lookup(h.state, code)
	if !ok {
		return h.protocolError(fmt.Sprintf("response %q in state %s", clip(line), h.state))
	}
	switch act {
	case actGreeted:
		h.greeting = resp
		h.posting = resp.Code == proto.CodePostingOK
		h.advance(now)
	case actUnavailable:
		h.fail(Failed{State: h.state, Reason: ReasonUnavailable, Response: resp}, false)
	case actCapsList:
		h.state, h.pending = StateCapabilityList, nil
	case actLegacy:
		h.legacy, h.caps = true, proto.CapabilitySet{}
		h.advance(now)
	case actReaderOK:
		// RFC 3977 §5.3.2: the answer replaces the greeting's posting
		// status, and the capabilities may have changed.
		h.readerDone, h.capsFresh = true, false
		h.greeting, h.posting = resp, resp.Code == proto.CodePostingOK
		h.advance(now)
	case actReaderAssumed:
		h.readerDone = true
		h.advance(now)
	case actNoReader:
		h.fail(Failed{State: h.state, Reason: ReasonNoReader, Response: resp}, true)
	case actAuth:
		if h.cfg.User == "" || h.authenticated {
			h.fail(Failed{State: h.state, Reason: ReasonAuthRequired, Response: resp}, true)
			return nil
		}
		h.startAuth(now)
	case actTLSFirst:
		if h.cfg.TLS == TLSOff || h.tls || h.tlsTried {
			h.fail(Failed{State: h.state, Reason: ReasonEncryptionRequired, Response: resp}, true)
			return nil
		}
		h.tlsNeeded = true
		h.advance(now)
	case actTLSGo:
		h.state, h.deadline = StateTLS, now.Add(h.cfg.StepTimeout)
	case actTLSRefused:
		h.tlsTried = true
		if h.cfg.TLS == TLSRequired || h.tlsNeeded {
			h.fail(Failed{State: h.state, Reason: ReasonTLSUnavailable, Response: resp}, true)
			return nil
		}
		h.advance(now)
	case actStreamOK:
		h.streamDone, h.streaming = true, true
		h.advance(now)
	case actStreamNo:
		h.streamDone = true
		h.advance(now)
	case actUnexpected:
		h.fail(Failed{State: h.state, Reason: ReasonUnexpected, Response: resp}, true)
	case actProtocol:
		return h.protocolError(perr.Error())
	}
	return nil
}

// capLine takes one line of the capability list (RFC 3977 §5.2.2).
func (h *Handshake) capLine(now time.Time, line []byte) {
	if len(line) > 0 && line[0] == '.' {
		if len(line) == 1 {
			h.caps, h.pending, h.capsFresh = proto.ParseCapabilitiesLoose(h.pending), nil, true
			h.advance(now)
			return
		}
		line = line[1:] // RFC 3977 §3.1.1 dot-stuffing
	}
	h.pending = append(h.pending, string(line))
}

// startAuth begins AUTHINFO (RFC 4643 §2.3).
func (h *Handshake) startAuth(now time.Time) {
	out, err := h.auth.Start(h.out)
	if err != nil {
		h.fail(Failed{State: h.state, Reason: ReasonConfig, Detail: err.Error()}, true)
		return
	}
	h.out = out
	h.state, h.deadline = StateAuth, now.Add(h.cfg.StepTimeout)
}

// authResponse passes a response to the AUTHINFO sub-machine.
func (h *Handshake) authResponse(now time.Time, resp proto.Response) {
	out, outcome, reason := h.auth.Handle(resp, h.out)
	h.out = out
	switch outcome {
	case AuthPending:
		h.deadline = now.Add(h.cfg.StepTimeout)
	case AuthOK:
		// RFC 4643 §2.3.1: after 281 the capabilities may differ.
		h.authenticated, h.capsFresh = true, false
		h.advance(now)
	case AuthFailed:
		switch {
		case reason == ReasonEncryptionRequired && h.cfg.TLS != TLSOff && !h.tls && !h.tlsTried:
			// RFC 4643 §2.2: 483 means STARTTLS first, then AUTHINFO again.
			h.tlsNeeded = true
			h.advance(now)
		case reason == ReasonAuthUnsupported && h.legacy:
			// AUTHINFO was a guess on an RFC 977 server; it has none.
			h.authSkipped = true
			h.advance(now)
		default:
			h.fail(Failed{State: StateAuth, Reason: reason, Response: resp}, reason != ReasonUnavailable)
		}
	}
}

// advance sends the next command of the handshake, or finishes it. The
// order is the one in the theory of operation.
func (h *Handshake) advance(now time.Time) {
	switch {
	case !h.capsFresh && !h.legacy:
		h.send(now, proto.Capabilities(), StateCapabilities)
	case h.cfg.Reader && !h.readerDone && !h.caps.Has(proto.CapReader):
		h.send(now, proto.ModeReader(), StateModeReader)
	case h.cfg.TLS != TLSOff && !h.tls && !h.tlsTried &&
		(h.tlsNeeded || h.caps.Has(proto.CapStartTLS) || (h.legacy && h.cfg.TLS == TLSRequired)):
		h.send(now, proto.StartTLS(), StateStartTLS)
	case h.cfg.TLS == TLSRequired && !h.tls:
		h.fail(Failed{State: h.state, Reason: ReasonTLSUnavailable, Detail: "the server does not offer STARTTLS"}, true)
	case h.cfg.User != "" && !h.authenticated && !h.authSkipped &&
		(h.legacy || h.caps.HasArg(proto.CapAuthinfo, "USER")):
		h.startAuth(now)
	case h.cfg.Stream && !h.streamDone && (h.legacy || h.caps.Has(proto.CapStreaming)):
		h.send(now, proto.ModeStream(), StateModeStream)
	default:
		h.ready()
	}
}

// send writes one command and waits for its response in state s.
func (h *Handshake) send(now time.Time, c proto.Command, s State) {
	out, err := c.Append(h.out)
	if err != nil {
		h.fail(Failed{State: h.state, Reason: ReasonConfig, Detail: err.Error()}, true)
		return
	}
	h.out = out
	h.state, h.deadline = s, now.Add(h.cfg.StepTimeout)
}

func (h *Handshake) ready() {
	r := Ready{
		Greeting:      h.greeting,
		Legacy:        h.legacy,
		Posting:       h.posting,
		Reader:        h.readerDone || h.caps.Has(proto.CapReader),
		Streaming:     h.streaming,
		Authenticated: h.authenticated,
		TLS:           h.tls,
	}
	if !h.legacy {
		r.Capabilities = h.caps
		// RFC 3977 §5.1.1: the greeting only says whether posting might
		// be allowed; the POST capability is authoritative.
		r.Posting = h.caps.Has(proto.CapPost)
	}
	h.state, h.deadline = StateReady, time.Time{}
	h.events = append(h.events, r)
}

// WantTLS reports that STARTTLS was accepted (382) and the runtime must now
// perform the TLS handshake (machine.TLSStarter).
func (h *Handshake) WantTLS() bool { return h.state == StateTLS }

// TLSDone reports the outcome of the TLS handshake (machine.TLSStarter). On
// success the handshake asks CAPABILITIES again, as RFC 4642 §2.2.2 requires.
func (h *Handshake) TLSDone(now time.Time, err error) error {
	if h.state != StateTLS {
		return fmt.Errorf("handshake: TLSDone in state %s", h.state)
	}
	if err != nil {
		h.fail(Failed{State: StateTLS, Reason: ReasonTLSFailed, Detail: err.Error()}, false)
		return nil
	}
	h.tls, h.capsFresh = true, false
	h.advance(now)
	return nil
}

func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
