package ingest

// Authentication (RFC 4643 AUTHINFO USER/PASS) and STARTTLS (RFC 4642) on
// the ingest side. The machine keeps the protocol; the owner keeps the
// secrets: a password is handed out in an Auth event and the owner answers
// with Authenticated (the relay checks a bcrypt hash and rate-limits
// failures per address), so nothing here reads a file or a clock.
//
//	state                 command            response
//	auth required, none   any not listed     480 (TAKETHIS: its article is read and dropped)
//	                      CAPABILITIES, HELP, DATE, QUIT, MODE READER, STARTTLS, AUTHINFO: as usual
//	not authenticated     AUTHINFO USER u    381 (483 when TLS is required and the link is plain)
//	after USER            AUTHINFO PASS p    Auth event -> 281 / 481 (481 and close when blocked)
//	no USER yet           AUTHINFO PASS p    482 (RFC 4643 §2.3.2)
//	authenticated         AUTHINFO ...       502 (RFC 4643 §2.2: no second authentication)
//	auth not configured   AUTHINFO ...       500 Unknown command (unchanged from before)
//	plain, TLS offered    STARTTLS           382, then the runtime's handshake (WantTLS/TLSDone)
//	TLS active or authed  STARTTLS           502 (RFC 4642 §2.2.2)
//	TLS not offered       STARTTLS           500 Unknown command
//
// After AUTHINFO PASS the parser waits for the owner's verdict, as after
// IHAVE, so commands pipelined behind it are judged with the verdict
// whatever the reads' sizes. After a successful handshake the machine forgets what the plaintext
// session set up (MODE STREAM; RFC 4642 §2.2.2) and drops any input that
// arrived pipelined behind STARTTLS in the clear (a man in the middle could
// have injected it). A failed handshake closes the connection: the stream
// is in an unknown state.

import (
	"fmt"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// Auth asks the owner to check credentials (AUTHINFO USER, then PASS).
// Answer with Authenticated(now, Seq, verdict). Password is the secret as
// sent: never log it.
type Auth struct {
	Seq      uint64
	User     string
	Password string
}

// TLSStarted reports that the STARTTLS handshake succeeded: the
// connection is encrypted from here on.
type TLSStarted struct{}

func (Auth) isEvent()       {}
func (TLSStarted) isEvent() {}

// AuthVerdict is the owner's answer to an Auth.
type AuthVerdict uint8

// Auth verdicts: 281, 481, or 481 and close (RFC 4643 §2.3.2; closing is
// the server's choice after repeated failures).
const (
	AuthAccepted AuthVerdict = iota + 1 // credentials are good
	AuthRejected                        // wrong user or password
	AuthBlocked                         // too many failures from this address: 481, then close
	AuthLimited                         // good credentials, but the user has too many connections: 481, then close
)

// Authenticated reports whether the peer has authenticated (always false
// when Config.AuthRequired is not set).
func (g *Ingest) Authenticated() bool { return g.authed }

// User is the name the peer authenticated as; "" before.
func (g *Ingest) User() string {
	if !g.authed {
		return ""
	}
	return g.user
}

// Secure reports that the connection is encrypted (Config.Secure, or a
// STARTTLS handshake that succeeded).
func (g *Ingest) Secure() bool { return g.secure }

// WantTLS reports that 382 went out and the machine waits for the
// runtime's TLS handshake (machine.TLSStarter).
func (g *Ingest) WantTLS() bool { return !g.closed && g.state == stTLSWait && len(g.out) == 0 }

// TLSDone reports the end of the STARTTLS handshake (machine.TLSStarter).
func (g *Ingest) TLSDone(now time.Time, err error) error {
	if g.closed {
		return nil
	}
	if g.state != stTLSWait {
		return fmt.Errorf("ingest: TLSDone in parse state %d: no STARTTLS handshake was asked for", g.state)
	}
	g.lastRecv = now
	if err != nil {
		g.stop()
		g.finish("STARTTLS handshake failed: " + err.Error())
		return nil
	}
	// RFC 4642 §2.2.2: forget the plaintext session; drop what was
	// pipelined in the clear.
	g.secure, g.streaming, g.user = true, false, ""
	g.in, g.off, g.lent = nil, 0, false
	g.own = g.own[:0]
	g.state = stCommand
	g.emit(TLSStarted{})
	return nil
}

// AuthDone answers the Auth with sequence number seq. It fails if no
// Auth with that number awaits an answer; after Closed it does nothing.
func (g *Ingest) AuthDone(now time.Time, seq uint64, v AuthVerdict) error {
	if g.closed {
		return nil
	}
	s, err := g.lookup(seq, slotAuth, "AuthDone")
	if err != nil {
		return err
	}
	if v < AuthAccepted || v > AuthLimited {
		return fmt.Errorf("ingest: AuthDone(%d): unknown verdict %d", seq, v)
	}
	s.waiting = false
	if g.state == stAuthWait {
		g.state = stCommand
	}
	switch v {
	case AuthAccepted:
		s.code, s.text = proto.CodeAuthOK, "Authentication accepted"
		g.authed = true
	case AuthRejected:
		s.code, s.text = proto.CodeAuthRejected, "Authentication failed"
		g.user = ""
	case AuthBlocked:
		s.code, s.text = proto.CodeAuthRejected, "Too many authentication failures; try later"
		s.close, s.reason = true, "too many authentication failures"
		g.stop()
	case AuthLimited:
		s.code, s.text = proto.CodeAuthRejected, "Too many connections for this user"
		s.close, s.reason = true, "too many connections for this user"
		g.user = ""
		g.stop()
	}
	g.release(now)
	g.advance(now)
	g.keep()
	return nil
}

// preAuth lists the commands served before authentication when it is
// required (RFC 4643 §2.2 lets the server choose; these cannot feed).
var preAuth = map[string]bool{
	"CAPABILITIES": true, "HELP": true, "DATE": true, "QUIT": true, "MODE READER": true,
	"STARTTLS": true, "AUTHINFO USER": true, "AUTHINFO PASS": true, "AUTHINFO": true,
}

// gated answers 480 to a command that needs authentication first, and
// reports whether it did.
func (g *Ingest) gated(now time.Time, c proto.Command, row command) bool {
	if !g.cfg.AuthRequired || g.authed || preAuth[c.Name()] {
		return false
	}
	g.push(now, slot{code: proto.CodeAuthRequired, text: "Authentication required"})
	if row.block && g.state == stCommand {
		// RFC 4644 §2.5: TAKETHIS's article follows regardless; read it
		// to stay in step and answer nothing more.
		g.startArticle(CmdTakeThis, "")
		g.cur.syntax, g.cur.discard = true, true
	}
	return true
}

// authinfo serves AUTHINFO USER and AUTHINFO PASS (RFC 4643 §2.3).
func (g *Ingest) authinfo(now time.Time, c proto.Command) {
	switch {
	case !g.cfg.AuthRequired:
		g.syntaxError(now, proto.CodeUnknownCommand, "Unknown command")
		return
	case g.authed:
		g.push(now, slot{code: proto.CodeNotPermitted, text: "Already authenticated"})
		return
	case g.cfg.TLSRequired && !g.secure:
		// RFC 4643 §2.2: 483 when the link must be encrypted first.
		g.push(now, slot{code: proto.CodeEncryptRequired, text: "Encryption required; use STARTTLS"})
		return
	}
	arg := strings.Join(c.Args[1:], " ")
	if c.Name() == "AUTHINFO USER" {
		g.user = arg
		g.push(now, slot{code: proto.CodePassRequired, text: "Enter password"})
		return
	}
	if g.user == "" {
		g.push(now, slot{code: proto.CodeAuthOutOfOrder, text: "Authentication commands issued out of sequence"})
		return
	}
	// Nothing more is parsed until the owner answers: whether the next
	// commands draw 480 depends on it (and a pipelined USER must not be
	// undone by this PASS's failure), however the input was cut.
	seq := g.push(now, slot{kind: slotAuth, waiting: true})
	g.state = stAuthWait
	g.emit(Auth{Seq: seq, User: g.user, Password: arg})
}

// startTLS serves STARTTLS (RFC 4642 §2.2).
func (g *Ingest) startTLS(now time.Time, _ proto.Command) {
	switch {
	case !g.cfg.StartTLS && !g.secure:
		g.syntaxError(now, proto.CodeUnknownCommand, "Unknown command")
	case g.secure || g.authed:
		g.push(now, slot{code: proto.CodeNotPermitted, text: "STARTTLS not allowed now"})
	case g.queued() > 0:
		// Answers still owed would go out after 382, in the clear,
		// to a peer that is starting TLS: refuse (the peer must not
		// pipeline STARTTLS, RFC 4642 §2.2.2).
		g.push(now, slot{code: proto.CodeNotPermitted, text: "STARTTLS while commands are pending"})
	default:
		g.push(now, slot{code: proto.CodeContinueTLS, text: "Begin TLS negotiation now"})
		g.state = stTLSWait
	}
}

// appendAuthCaps adds AUTHINFO and STARTTLS to CAPABILITIES (RFC 4643
// §2.1: AUTHINFO USER only where it can be used now; RFC 4642 §2.1).
func (g *Ingest) appendAuthCaps(caps []proto.Capability) []proto.Capability {
	if g.cfg.StartTLS && !g.secure && !g.authed {
		caps = append(caps, proto.Capability{Label: proto.CapStartTLS})
	}
	if g.cfg.AuthRequired && !g.authed {
		if g.cfg.TLSRequired && !g.secure {
			caps = append(caps, proto.Capability{Label: proto.CapAuthinfo})
		} else {
			caps = append(caps, proto.Capability{Label: proto.CapAuthinfo, Args: []string{"USER"}})
		}
	}
	return caps
}
