package ingest

// The command table: every command the ingest listener knows, its
// arguments, and what it answers. Anything else draws 500 (RFC 3977
// §3.2.1: a command the server does not implement is unknown to it, which
// includes the reader commands of a transit-only server), and a known
// command with the wrong number of arguments draws 501.
//
//	command             args  responses
//	CAPABILITIES [kw]   0-1   101 + list: VERSION 2, IHAVE, STREAMING, IMPLEMENTATION (RFC 3977 §5.2)
//	MODE STREAM         1     203 (RFC 4644 §2.3)
//	MODE READER         1     502, then close (RFC 3977 §5.3: transit only)
//	MODE <other>        any   501 Unknown MODE variant
//	CHECK <id>          1     238 / 438 / 431 with the id (RFC 4644 §2.4); 438 for a malformed id
//	TAKETHIS <id>       1     article block, then 239 / 439 with the id (RFC 4644 §2.5);
//	                          400 and close when the relay cannot store now
//	IHAVE <id>          1     335 / 435 / 436, after the article 235 / 436 / 437 (RFC 3977 §6.3.2)
//	HELP                0     100 + text (RFC 3977 §7.2)
//	DATE                0     111 yyyymmddhhmmss (RFC 3977 §7.1)
//	QUIT                0     205, then close (RFC 3977 §5.4)
//	AUTHINFO USER/PASS  1+    381 / 281 / 481 / 482 / 483 / 502 (RFC 4643 §2.3; auth.go)
//	STARTTLS            0     382, then the TLS handshake / 502 (RFC 4642 §2.2; auth.go)
//	(anything feeding)        480 until authenticated, when Config.AuthRequired
//
// Choices where practice varies, and why:
//   - MODE READER answers 502 and closes. innd answers reader commands with
//     401 and hands the connection to nnrpd on MODE READER; newsflow has
//     no reader behind its feed port, which is RFC 3977 §5.3's transit-only
//     case: 502, after which the server closes the connection. (401 would
//     invite the peer to switch modes, which cannot succeed.)
//   - A malformed message-id draws 438 (CHECK), 439 (TAKETHIS, after its
//     article is read) or 435 (IHAVE), with "Syntax error in message-ID",
//     as innd does, rather than 501: the feeder then drops the article
//     instead of treating the connection as broken.
//   - TAKETHIS with a missing or extra argument draws 501 at once, but its
//     article block is still read and discarded, since RFC 4644 §2.5 has the
//     peer send it without waiting.
//   - A command line over 512 octets (RFC 3977 §3.1) draws 501 as soon as
//     512 octets without LF have arrived; the rest of the line is skipped.
//   - Ten consecutive 500/501 responses end the connection with 400.

import (
	"bytes"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// handler serves one command whose argument count the table checked.
type handler func(g *Ingest, now time.Time, c proto.Command)

// command is one row of the table.
type command struct {
	minArgs, maxArgs int
	usage            string // shown in 501 responses
	block            bool   // an article block follows whatever the answer (TAKETHIS)
	handle           handler
	refuse           string // set instead of handle: answer "501 <refuse>"
}

// commands is keyed by proto.Command.Name ("MODE STREAM"); a bare verb
// ("MODE") catches the names not listed.
var commands = map[string]command{
	"CAPABILITIES": {0, 1, "CAPABILITIES [keyword]", false, (*Ingest).capabilities, ""},
	"MODE STREAM":  {1, 1, "MODE STREAM", false, (*Ingest).modeStream, ""},
	"MODE READER":  {1, 1, "MODE READER", false, (*Ingest).modeReader, ""},
	"MODE":         {0, 99, "MODE STREAM", false, nil, "Unknown MODE variant"},
	"CHECK":        {1, 1, "CHECK message-id", false, (*Ingest).check, ""},
	"TAKETHIS":     {1, 1, "TAKETHIS message-id", true, (*Ingest).takeThis, ""},
	"IHAVE":        {1, 1, "IHAVE message-id", false, (*Ingest).iHave, ""},
	"HELP":         {0, 0, "HELP", false, (*Ingest).help, ""},
	"DATE":         {0, 0, "DATE", false, (*Ingest).date, ""},
	"QUIT":         {0, 0, "QUIT", false, (*Ingest).quit, ""},
	// RFC 4643 §2.3 and RFC 4642 §2.2; see auth.go for the states.
	"AUTHINFO USER": {2, 99, "AUTHINFO USER name", false, (*Ingest).authinfo, ""},
	"AUTHINFO PASS": {2, 99, "AUTHINFO PASS password", false, (*Ingest).authinfo, ""},
	"STARTTLS":      {0, 0, "STARTTLS", false, (*Ingest).startTLS, ""},
}

// helpText is HELP's block (RFC 3977 §7.2), terminator included.
const helpText = "CAPABILITIES [keyword]\r\n" +
	"CHECK message-id\r\n" +
	"DATE\r\n" +
	"HELP\r\n" +
	"IHAVE message-id\r\n" +
	"MODE STREAM\r\n" +
	"QUIT\r\n" +
	"TAKETHIS message-id\r\n" +
	".\r\n"

// msgSyntax is the text for a malformed message-id, as innd words it.
const msgSyntax = "Syntax error in message-ID"

// dispatch parses one command line and runs its row of the table.
func (g *Ingest) dispatch(now time.Time, line []byte) {
	c, ok := g.fastCommand(line)
	var err error
	if !ok {
		c, err = proto.ParseCommand(line)
	}
	if err != nil {
		// Empty, or holding NUL or a bare CR (RFC 3977 §3.1).
		g.syntaxError(now, proto.CodeSyntaxError, "Syntax error")
		return
	}
	row, ok := commands[c.Name()]
	if !ok {
		row, ok = commands[c.Verb]
	}
	if !ok {
		g.syntaxError(now, proto.CodeUnknownCommand, "Unknown command")
		return
	}
	if n := len(c.Args); n < row.minArgs || n > row.maxArgs {
		g.syntaxError(now, proto.CodeSyntaxError, "Syntax error; usage: "+row.usage)
		if row.block && g.state == stCommand {
			// RFC 4644 §2.5: the article follows regardless; read it
			// to stay in step, and answer nothing more.
			g.startArticle(CmdTakeThis, "")
			g.cur.syntax, g.cur.discard = true, true
		}
		return
	}
	if row.handle == nil {
		g.syntaxError(now, proto.CodeSyntaxError, row.refuse)
		return
	}
	if g.gated(now, c, row) {
		return
	}
	g.bad = 0
	row.handle(g, now, c)
}

// syntaxError answers 500 or 501, or ends a connection that keeps drawing them.
func (g *Ingest) syntaxError(now time.Time, code int, text string) {
	g.bad++
	if g.bad >= maxBadCommands {
		g.stop()
		g.push(now, slot{code: proto.CodeUnavailable, text: "Too many unrecognized commands", close: true, reason: "too many unrecognized commands"})
		return
	}
	g.push(now, slot{code: code, text: text})
}

func (g *Ingest) capabilities(now time.Time, _ proto.Command) {
	// RFC 3977 §5.2; no READER and no MODE-READER: transit only.
	caps := proto.CapabilitySet{List: []proto.Capability{
		{Label: proto.CapVersion, Args: []string{"2"}},
		{Label: proto.CapImplementation, Args: []string{g.cfg.Implementation}},
		{Label: proto.CapIHave},
		{Label: proto.CapStreaming},
	}}
	caps.List = g.appendAuthCaps(caps.List)
	block := string(proto.AppendCapabilities(nil, caps)) + ".\r\n"
	g.push(now, slot{code: proto.CodeCapabilities, text: "Capability list:", block: block})
}

func (g *Ingest) modeStream(now time.Time, _ proto.Command) {
	g.streaming = true
	g.push(now, slot{code: proto.CodeStreamingOK, text: "Streaming permitted"})
}

func (g *Ingest) modeReader(now time.Time, _ proto.Command) {
	g.stop()
	g.push(now, slot{code: proto.CodeNotPermitted, text: "Transit service only", close: true, reason: "MODE READER: transit service only"})
}

func (g *Ingest) help(now time.Time, _ proto.Command) {
	g.push(now, slot{code: proto.CodeHelp, text: "Help text follows", block: helpText})
}

func (g *Ingest) date(now time.Time, _ proto.Command) {
	g.push(now, slot{code: proto.CodeDate, text: now.UTC().Format("20060102150405")})
}

func (g *Ingest) quit(now time.Time, _ proto.Command) {
	g.stop()
	g.push(now, slot{code: proto.CodeClosing, text: "Bye", close: true, reason: "QUIT"})
}

// notAccepting is the text of answers given while the relay is not accepting.
func (g *Ingest) notAccepting() string { return orText(g.notReason, "Not accepting articles now") }

// check serves CHECK (RFC 4644 §2.4).
func (g *Ingest) check(now time.Time, c proto.Command) {
	id := c.Args[0]
	g.counters.Offered++
	if err := proto.ValidMessageID(id); err != nil {
		g.rejected(CmdCheck, id, RejectMessageID, err.Error())
		g.push(now, slot{code: proto.CodeCheckNotWanted, id: id, echo: true, text: msgSyntax})
		return
	}
	if !g.accepting {
		g.counters.Deferred++
		g.push(now, slot{code: proto.CodeCheckLater, id: id, echo: true, text: g.notAccepting()})
		return
	}
	seq := g.push(now, slot{kind: slotCheck, cmd: CmdCheck, id: id, echo: true, waiting: true})
	g.emit(Check{Seq: seq, Cmd: CmdCheck, MessageID: id})
}

// takeThis serves TAKETHIS (RFC 4644 §2.5): the article follows at once.
func (g *Ingest) takeThis(now time.Time, c proto.Command) {
	id := c.Args[0]
	g.counters.Offered++
	if !g.accepting {
		// No temporary failure exists for TAKETHIS: 400 and close, so the
		// peer keeps the article for later (RFC 3977 §3.2.1).
		g.counters.Deferred++
		g.stop()
		g.push(now, slot{code: proto.CodeUnavailable, text: g.notAccepting(), close: true, reason: "not accepting: " + g.notAccepting()})
		return
	}
	g.startArticle(CmdTakeThis, id)
	if err := proto.ValidMessageID(id); err != nil {
		g.cur.badID, g.cur.discard, g.cur.why = true, true, err.Error()
	}
}

// iHave serves IHAVE (RFC 3977 §6.3.2). Nothing more is read until the
// owner decides: the peer waits for 335 before it sends the article.
func (g *Ingest) iHave(now time.Time, c proto.Command) {
	id := c.Args[0]
	g.counters.Offered++
	if err := proto.ValidMessageID(id); err != nil {
		g.rejected(CmdIHave, id, RejectMessageID, err.Error())
		g.push(now, slot{code: proto.CodeNotWanted, text: msgSyntax})
		return
	}
	if !g.accepting {
		g.counters.Deferred++
		g.push(now, slot{code: proto.CodeTransferLater, text: g.notAccepting()})
		return
	}
	seq := g.push(now, slot{kind: slotCheck, cmd: CmdIHave, id: id, waiting: true})
	g.state, g.ihave = stIHaveWait, seq
	g.emit(Check{Seq: seq, Cmd: CmdIHave, MessageID: id})
}

// rejected counts a refusal by the machine and reports it.
func (g *Ingest) rejected(cmd Cmd, id string, k RejectKind, reason string) {
	g.counters.Rejected[k]++
	g.emit(Rejected{Cmd: cmd, MessageID: id, Kind: k, Reason: reason})
}

// fastCommand parses the commands of a busy feed, "CHECK <id>" and
// "TAKETHIS <id>" in upper case with one argument of printable octets, to
// exactly what proto.ParseCommand returns, without its allocations (the
// Args slice is the machine's; handlers do not keep it). Anything else
// reports false and takes the general way.
func (g *Ingest) fastCommand(line []byte) (proto.Command, bool) {
	if len(line) > proto.MaxCommandLine {
		return proto.Command{}, false // ParseCommand refuses it
	}
	b := proto.TrimEOL(line)
	var verb string
	switch {
	case bytes.HasPrefix(b, []byte("CHECK ")):
		verb, b = "CHECK", b[len("CHECK "):]
	case bytes.HasPrefix(b, []byte("TAKETHIS ")):
		verb, b = "TAKETHIS", b[len("TAKETHIS "):]
	default:
		return proto.Command{}, false
	}
	if len(b) == 0 {
		return proto.Command{}, false
	}
	for _, c := range b {
		if c <= ' ' {
			return proto.Command{}, false
		}
	}
	g.arg[0] = string(b)
	return proto.Command{Verb: verb, Args: g.arg[:]}, true
}
