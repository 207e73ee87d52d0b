package reader

import (
	"fmt"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/proto"
)

// The connection-level answers: what an answer means for the connection,
// whatever step of whatever request drew it. Before a step looks at the
// answers of its batch, connAnswers picks the one answer of the batch that
// concerns the connection, if any, and the Client acts on it instead of the
// step (in recover). It is the only place, with the step handlers of
// steps.go and handshake.Auth's table for AUTHINFO, where response codes are
// interpreted. The rules:
//
//	400  the server is closing the connection (RFC 3977 §3.2.1): the request
//	     fails (Retry) and the Client closes, without QUIT.
//	483  encryption required (RFC 4642 §2.2.2 / RFC 3977 §3.2.1): the
//	     request fails (Retry) and the Client closes; the runtime must
//	     reconnect with TLS.
//	480  authentication required (RFC 4643 §2.1): AUTHINFO USER/PASS with
//	     handshake.Auth, then the step is planned again (with GROUP first:
//	     the selection is not assumed to survive). Without credentials, or
//	     a second time on the connection: the request fails, QUIT, closed.
//	401  wrong mode (RFC 3977 §3.2.1): the first word names the capability
//	     that would make the command available; MODE-READER (INN's innd on
//	     its transit port) is answered with MODE READER, CAPABILITIES again
//	     (RFC 3977 §5.3.2: they change; the strategy is chosen anew), then
//	     the step is planned again. Once per connection; any other
//	     capability fails the request.
//	412  no group selected, to a command that works on the selected group:
//	     GROUP, then the step again. Once per request; a 412 to any other
//	     command is the step's to read.
//
// In a pipelined batch several answers may concern the connection; the one
// acted on is the first of the highest rank: a closing server (400, 483)
// over a missing login (480), over a wrong mode (401), over a lost
// selection (412). The batch is always wholly answered first, so nothing is
// outstanding when the recovery sends its commands (the drain of RFC 4643
// §2.1's "send the command again").
//
// The step's own rules then apply; one is shared by all steps that fetch
// thread data:
//
//	500, 501, 503  the command is unknown, its syntax refused, or the
//	     feature unsupported (RFC 3977 §3.2.1): the thread-data strategy
//	     is demoted for the rest of the connection (HDR -> OVER -> HEAD) and
//	     the step is planned again with the next one (steps.go).
var connAnswers = map[int]connRow{
	proto.CodeUnavailable:     {connClosing, 0},
	proto.CodeEncryptRequired: {connEncrypt, 0},
	proto.CodeAuthRequired:    {connAuth, 1},
	proto.CodeWrongMode:       {connWrongMode, 2},
	proto.CodeNoGroup:         {connNoGroup, 3},
	proto.CodeUnknownCommand:  {connUnsupported, noRank},
	proto.CodeSyntaxError:     {connUnsupported, noRank},
	proto.CodeUnsupported:     {connUnsupported, noRank},
}

// connRow is one row of connAnswers: what the code means, and its rank
// among the answers of one batch (lower wins; noRank: the step reads it).
type connRow struct {
	act  connAct
	rank uint8
}

const noRank = 255

// connAct is what an answer means for the connection.
type connAct uint8

const (
	connStep        connAct = iota // nothing: the step reads the answer
	connClosing                    // 400
	connEncrypt                    // 483
	connAuth                       // 480
	connWrongMode                  // 401
	connNoGroup                    // 412 to a command that needs a group
	connUnsupported                // 500, 501, 503: read by the step (refusedCode)
)

// connAnswer returns the answer of batch as that concerns the connection
// and what it means, or connStep when none does.
func connAnswer(as []answer) (answer, connAct) {
	var pick answer
	best := connRow{connStep, noRank}
	for _, a := range as {
		row, ok := connAnswers[a.resp.Code]
		if !ok || row.rank == noRank || row.rank >= best.rank {
			continue
		}
		if row.act == connNoGroup && !needsGroup(a.cmd) {
			continue
		}
		pick, best = a, row
	}
	return pick, best.act
}

// refusedCode reports answers that mean "this command is not available
// here" (RFC 3977 §3.2.1: 500 unknown, 501 syntax, 503 not supported).
func refusedCode(code int) bool { return connAnswers[code].act == connUnsupported }

// recover acts on answer a, which concerns the connection (see connAnswers).
func (c *Client) recover(now time.Time, a answer, act connAct) {
	switch act {
	case connClosing:
		c.fatal(fmt.Errorf("reader: %s: %w: %q", a.cmd.Name(), ErrUnavailable, a.resp.String()), true, false)
	case connEncrypt:
		c.fatal(fmt.Errorf("reader: %s: %w: %q", a.cmd.Name(), ErrEncryptionReq, a.resp.String()), true, true)
	case connAuth:
		// RFC 4643 §2.1: authenticate, then send the command again. The
		// batch is answered already: nothing to drain.
		if err := c.reauth.Need(); err != nil {
			c.fatal(fmt.Errorf("reader: %s: %w: %q", a.cmd.Name(), ErrAuthRequired, a.resp.String()), false, true)
			return
		}
		c.rewind()
		out, err := c.reauth.Drained(c.out)
		if err != nil {
			c.fatal(fmt.Errorf("reader: %w: %w", ErrAuthFailed, err), false, true)
			return
		}
		c.out = out
		c.recordSent(now, proto.AuthinfoUser(c.cfg.User), tagAuth)
	case connWrongMode:
		if !strings.EqualFold(a.resp.StreamID(), proto.CapModeReader) {
			c.failJob(refusal(a.cmd, a.resp), false)
			return
		}
		if c.modeReaderDone {
			c.fatal(fmt.Errorf("reader: %s: %w: %q after MODE READER", a.cmd.Name(), ErrNoReader, a.resp.String()), false, true)
			return
		}
		c.rewind()
		c.send(now, proto.ModeReader(), tagModeReader)
	case connNoGroup:
		// The server lost (or never had) the selection; select again.
		if c.job.regrouped {
			c.failJob(refusal(a.cmd, a.resp), false)
			return
		}
		c.job.regrouped, c.curGroup = true, ""
		c.rewind()
		c.advance(now)
	}
}

// needsGroup reports whether cmd works on the selected group.
func needsGroup(cmd proto.Command) bool {
	switch cmd.Verb {
	case "HDR", "XHDR", "OVER", "XOVER":
		return len(cmd.Args) == 0 || !proto.IsMessageIDArg(cmd.Args[len(cmd.Args)-1])
	case "HEAD", "ARTICLE":
		return len(cmd.Args) == 0 || !proto.IsMessageIDArg(cmd.Args[0])
	}
	return false
}

// rewind makes the step in hand start over when it is planned again after
// a recovery (AUTHINFO, MODE READER, GROUP): a HEAD window is asked again.
func (c *Client) rewind() {
	if j := c.job; j != nil && j.step == stFetch && j.used == StrategyHEAD {
		j.next = j.window
	}
}

// authAnswer passes an AUTHINFO answer to the shared 480 step.
func (c *Client) authAnswer(now time.Time, r proto.Response) {
	out, outcome, reason := c.reauth.Handle(r, c.out)
	c.out = out
	switch outcome {
	case handshake.AuthPending:
		c.recordSent(now, proto.AuthinfoPass(c.cfg.Pass), tagAuth)
	case handshake.AuthOK:
		// The selection is not assumed to survive authentication.
		c.curGroup = ""
		c.advance(now)
	default:
		c.fatal(fmt.Errorf("reader: AUTHINFO: %w: %s (%q)", ErrAuthFailed, reason, r.String()), false, reason != handshake.ReasonUnavailable)
	}
}

// modeReaderAnswer handles the answer to MODE READER sent after a 401.
func (c *Client) modeReaderAnswer(now time.Time, r proto.Response) {
	switch r.Code {
	case proto.CodePostingOK, proto.CodeNoPosting:
		// RFC 3977 §5.3.2: the capabilities may have changed.
		c.modeReaderDone, c.curGroup = true, ""
		c.send(now, proto.Capabilities(), tagCaps)
	case proto.CodeUnavailable:
		c.fatal(fmt.Errorf("reader: MODE READER: %w: %q", ErrUnavailable, r.String()), true, false)
	default:
		c.fatal(fmt.Errorf("reader: MODE READER: %w: %q", ErrNoReader, r.String()), false, true)
	}
}

// capsAnswer takes the capability list asked for after MODE READER and
// plans the request's step again.
func (c *Client) capsAnswer(now time.Time, a answer) {
	if a.resp.Code == proto.CodeCapabilities {
		c.caps = proto.ParseCapabilitiesLoose(proto.PayloadLines(a.block))
		c.hints = Hints{}
	} else {
		c.caps, c.hints = proto.CapabilitySet{}, Hints{Legacy: true}
	}
	c.askedH, c.askedF = false, false
	c.advance(now)
}

// parseCaps parses a capability list, skipping lines that are not valid
// capabilities (RFC 3977 §9.8) rather than failing on a server's oddity.
func parseCaps(lines []string) proto.CapabilitySet {
	valid := lines[:0:0]
	for _, l := range lines {
		if _, err := proto.ParseCapabilities([]string{l}); err == nil {
			valid = append(valid, l)
		}
	}
	set, _ := proto.ParseCapabilities(valid)
	return set
}
