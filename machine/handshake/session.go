package handshake

// Theory of operation
//
// A Session runs one command on a connection that is already set up, and
// shows how later machines recover from the two refusals a command can meet
// mid-session:
//
//   - 480 (RFC 4643 §2.1, authentication required): run Auth, and on 281
//     send the command again. A second 480 after authenticating is final.
//   - 401 with the text "MODE-READER" (RFC 3977 §3.2.1, INN's innd on its
//     transit port): send MODE READER; on 200/201 the connection now talks
//     to the reader server (INN hands it to nnrpd), so ask CAPABILITIES again
//     (RFC 3977 §5.3.2), then send the command again. Once only.
//
// Every other response is the command's answer and ends the session with
// Done (with the decoded multi-line block when the command has one, per
// proto.MultiLine); the owner decides what a 4xx or 5xx answer means. Each
// command sent sets a deadline StepTimeout later. The session never closes
// the connection on success; on failure it is Closed like a Handshake.

import (
	"fmt"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// Done is the event of a Session whose command got its answer.
type Done struct {
	Response      proto.Response      // the command's answer
	Block         []byte              // the decoded multi-line block, when the answer has one
	Authenticated bool                // AUTHINFO was run (after a 480) and succeeded
	ModeReader    bool                // MODE READER was sent (after a 401 MODE-READER)
	Capabilities  proto.CapabilitySet // the list asked for after MODE READER, if any
}

func (Done) isEvent() {}

// sessAction is what a response means to a Session; see sessionTable.
type sessAction uint8

const (
	sAnswer      sessAction = iota + 1 // the command's answer
	sAuth                              // 480: authenticate, then retry
	sWrongMode                         // 401: MODE READER if it says MODE-READER, else an answer
	sEncrypt                           // 483: a Session cannot start TLS
	sReaderOK                          // 200/201 to MODE READER
	sNoReader                          // 502 to MODE READER
	sUnavailable                       // 400 to MODE READER
	sCapsList                          // 101: the capability list follows
	sRetry                             // CAPABILITIES not understood: just retry the command
	sUnexpected                        // a response that makes no sense here
	sProtocol                          // not a response line
)

// sessionTable holds every response transition of a Session (AUTHINFO's
// are in authTable).
var sessionTable = map[State]map[int]sessAction{
	StateCommand: {
		proto.CodeAuthRequired:    sAuth,
		proto.CodeWrongMode:       sWrongMode,
		proto.CodeEncryptRequired: sEncrypt,
		codeOther:                 sAnswer,
		codeGarbage:               sProtocol,
	},
	StateModeReader: {
		proto.CodePostingOK:    sReaderOK,
		proto.CodeNoPosting:    sReaderOK,
		proto.CodeNotPermitted: sNoReader,
		proto.CodeUnavailable:  sUnavailable,
		codeOther:              sUnexpected,
		codeGarbage:            sProtocol,
	},
	StateCapabilities: {
		proto.CodeCapabilities: sCapsList,
		codeOther:              sRetry,
		codeGarbage:            sRetry,
	},
}

// Session is a sans-I/O machine (machine.Conn) that sends one command and
// waits for its answer, authenticating or switching to reader mode on the
// way when the server asks for it. After every input drain AppendOutgoing
// and NextEvent.
type Session struct {
	core
	cmd proto.Command

	answer  proto.Response
	block   []byte
	dec     *proto.BlockDecoder
	caps    []string
	done    Done
	retried bool // the command was sent again after MODE READER
}

// NewSession returns a session that sends cmd at now. Only User, Pass and
// StepTimeout of cfg are used.
func NewSession(now time.Time, cfg Config, cmd proto.Command) *Session {
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = DefaultStepTimeout
	}
	s := &Session{core: core{cfg: cfg, auth: Auth{User: cfg.User, Pass: cfg.Pass}}, cmd: cmd}
	s.send(now, cmd, StateCommand)
	return s
}

// State returns where the session is.
func (s *Session) State() State { return s.state }

// Receive takes bytes from the server (machine.Conn).
func (s *Session) Receive(now time.Time, p []byte) error {
	if s.state == StateReady {
		s.in.Add(p) // for the next machine
		return nil
	}
	if s.state == StateFailed {
		return fmt.Errorf("handshake: session: %d bytes received in state %s", len(p), s.state)
	}
	s.in.Add(p)
	for s.state != StateReady && s.state != StateFailed {
		if s.state == StateBlock {
			if err := s.blockBytes(); err != nil {
				return s.protocolError(err.Error())
			}
			if s.state == StateBlock {
				return nil // need more
			}
			continue
		}
		line, ok, err := s.in.Next()
		if err != nil {
			return s.protocolError(err.Error())
		}
		if !ok {
			return nil
		}
		if err := s.line(now, line); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) line(now time.Time, line []byte) error {
	if s.state == StateCapabilityList {
		if len(line) > 0 && line[0] == '.' {
			if len(line) == 1 {
				s.done.Capabilities = proto.ParseCapabilitiesLoose(s.caps)
				s.send(now, s.cmd, StateCommand)
				return nil
			}
			line = line[1:]
		}
		s.caps = append(s.caps, string(line))
		return nil
	}
	resp, perr := proto.ParseResponse(line)
	if s.state == StateAuth {
		if perr != nil {
			return s.protocolError(perr.Error())
		}
		out, outcome, reason := s.auth.Handle(resp, s.out)
		s.out = out
		switch outcome {
		case AuthPending:
			s.deadline = now.Add(s.cfg.StepTimeout)
		case AuthOK:
			s.done.Authenticated = true
			s.send(now, s.cmd, StateCommand)
		case AuthFailed:
			s.fail(Failed{State: StateAuth, Reason: reason, Response: resp}, reason != ReasonUnavailable)
		}
		return nil
	}
	code := resp.Code
	if perr != nil {
		code = codeGarbage
	}
	rows, ok := sessionTable[s.state]
	if !ok {
		return s.protocolError(fmt.Sprintf("response %q in state %s", clip(line), s.state))
	}
	act, ok := rows[code]
	if !ok {
		act = rows[codeOther]
	}
	switch act {
	case sAnswer:
		s.answered(resp)
	case sAuth:
		if s.cfg.User == "" || s.done.Authenticated {
			s.fail(Failed{State: s.state, Reason: ReasonAuthRequired, Response: resp}, true)
			return nil
		}
		out, err := s.auth.Start(s.out)
		if err != nil {
			s.fail(Failed{State: s.state, Reason: ReasonConfig, Detail: err.Error()}, true)
			return nil
		}
		s.out, s.state, s.deadline = out, StateAuth, now.Add(s.cfg.StepTimeout)
	case sWrongMode:
		// INN's innd: "401 MODE-READER" (RFC 3977 §3.2.1 names the
		// capability that would make the command available).
		if s.retried || !strings.EqualFold(resp.StreamID(), "MODE-READER") {
			s.answered(resp)
			return nil
		}
		s.retried, s.done.ModeReader = true, true
		s.send(now, proto.ModeReader(), StateModeReader)
	case sEncrypt:
		s.fail(Failed{State: s.state, Reason: ReasonEncryptionRequired, Response: resp}, true)
	case sReaderOK:
		s.send(now, proto.Capabilities(), StateCapabilities)
	case sNoReader:
		s.fail(Failed{State: s.state, Reason: ReasonNoReader, Response: resp}, true)
	case sUnavailable:
		s.fail(Failed{State: s.state, Reason: ReasonUnavailable, Response: resp}, false)
	case sCapsList:
		s.state, s.caps = StateCapabilityList, nil
	case sRetry:
		s.send(now, s.cmd, StateCommand)
	case sUnexpected:
		s.fail(Failed{State: s.state, Reason: ReasonUnexpected, Response: resp}, true)
	case sProtocol:
		return s.protocolError(perr.Error())
	}
	return nil
}

// answered takes the command's answer and reads its block if it has one.
func (s *Session) answered(resp proto.Response) {
	s.answer = resp
	if proto.MultiLine(s.cmd.Verb, resp.Code) {
		s.state, s.dec, s.block = StateBlock, proto.NewBlockDecoder(0), []byte{}
		return
	}
	s.finish()
}

// blockBytes decodes buffered bytes of the multi-line block.
func (s *Session) blockBytes() error {
	out, n, done, err := s.dec.Decode(s.block, s.in.Peek())
	s.block = out
	s.in.Skip(n)
	if err != nil {
		return err
	}
	if done {
		s.finish()
	}
	return nil
}

func (s *Session) finish() {
	s.done.Response, s.done.Block = s.answer, s.block
	s.state, s.deadline = StateReady, time.Time{}
	s.events = append(s.events, s.done)
}

func (s *Session) send(now time.Time, c proto.Command, st State) {
	out, err := c.Append(s.out)
	if err != nil {
		s.fail(Failed{State: s.state, Reason: ReasonConfig, Detail: err.Error()}, false)
		return
	}
	s.out, s.state, s.deadline = out, st, now.Add(s.cfg.StepTimeout)
}
