package nntptest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// errClosing ends a connection's loop after a QUIT, a fault or a failed write.
var errClosing = errors.New("closing")

// conn is the server side of one client connection. Its goroutine reads a
// command, records it, looks for a fault, runs the command's handler and
// writes the response, one command at a time; pipelined commands wait in the
// read buffer, and responses are flushed when no more input is buffered.
type conn struct {
	s  *Server
	id int
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer

	tls     bool   // TLS is active (implicit or after STARTTLS)
	reader  bool   // MODE READER was sent (matters in Transit)
	user    string // AUTHINFO USER given, awaiting PASS
	authed  bool
	group   *group // selected group, nil if none
	current int64  // current article number, 0 if invalid

	// then, if set by a handler, runs after its first response is written:
	// IHAVE and POST read the article there, STARTTLS does the handshake.
	then func() error
}

func newConn(s *Server, id int, nc net.Conn) *conn {
	c := &conn{s: s, id: id, nc: nc}
	_, c.tls = nc.(*tls.Conn)
	c.r = bufio.NewReaderSize(nc, 64<<10)
	c.w = bufio.NewWriterSize(nc, 64<<10)
	return c
}

func (c *conn) serve() {
	if c.greet() != nil || c.w.Flush() != nil {
		return
	}
	for {
		line, err := c.readLine()
		if err != nil {
			return
		}
		if err := c.command(line); err != nil {
			return
		}
		if c.r.Buffered() == 0 {
			if c.w.Flush() != nil {
				return
			}
		}
	}
}

func (c *conn) greet() error {
	code := proto.CodePostingOK
	text := c.s.hostname + " NNTP server ready (nntptest)"
	if c.s.opts.NoPosting {
		code = proto.CodeNoPosting
	}
	if c.s.opts.Transit {
		text += " (transit mode)"
	}
	resp := proto.AppendResponse(nil, code, text)
	f, ok := c.s.matchFault(c.id, Greeting, Greeting)
	if !ok {
		c.s.logf("nntptest: conn %d: S: %s", c.id, strings.TrimSpace(string(resp)))
		return c.write(resp)
	}
	return c.deliver(resp, f)
}

// readLine reads one command line, LF or CRLF terminated. A line longer
// than the read buffer is returned truncated to that size; ParseCommand
// then refuses it as too long.
func (c *conn) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = c.r.ReadSlice('\n')
		}
		return long, err
	}
	return line, err
}

// command handles one command line.
func (c *conn) command(line []byte) error {
	cmd, err := proto.ParseCommand(line)
	if err != nil {
		if errors.Is(err, proto.ErrLineTooLong) {
			return c.write(proto.AppendResponse(nil, proto.CodeSyntaxError, "Line too long"))
		}
		return c.write(proto.AppendResponse(nil, proto.CodeUnknownCommand, "What?"))
	}
	c.s.logf("nntptest: conn %d: C: %s", c.id, cmd)
	c.s.record(c.id, cmd)
	f, faulty := c.s.matchFault(c.id, cmd.Name(), cmd.Verb)
	if faulty && f.replaces() {
		// The command has no effect, but TAKETHIS's article is part of the
		// command and must be read for the stream to stay in step.
		if cmd.Verb == "TAKETHIS" && !f.Drop && !f.Hang && c.streaming() == nil {
			art, err := c.readBlock()
			if err != nil {
				return err
			}
			c.s.recordTransfer(Transfer{Conn: c.id, Cmd: "TAKETHIS", MessageID: arg(cmd, 0), Article: art, Code: f.Code})
		}
		return c.deliver(nil, f)
	}
	resp := c.dispatch(cmd)
	c.s.logf("nntptest: conn %d: S: %s", c.id, firstLine(resp))
	if faulty {
		err = c.deliver(resp, f)
	} else {
		err = c.write(resp)
	}
	if err != nil {
		return err
	}
	if then := c.then; then != nil {
		c.then = nil
		return then()
	}
	if cmd.Verb == "QUIT" {
		c.w.Flush()
		return errClosing
	}
	return nil
}

// dispatch runs the command and returns its response.
func (c *conn) dispatch(cmd proto.Command) []byte {
	if h := c.s.handler(cmd); h != nil {
		return h(c.id, cmd)
	}
	if r := c.gate(cmd); r != nil {
		return r
	}
	if h := handlers[cmd.Name()]; h != nil {
		return h(c, cmd)
	}
	if h := handlers[cmd.Verb]; h != nil {
		return h(c, cmd)
	}
	if cmd.Verb == "LIST" || cmd.Verb == "MODE" || cmd.Verb == "AUTHINFO" {
		return resp(proto.CodeSyntaxError, "Unknown keyword")
	}
	return resp(proto.CodeUnknownCommand, "What?")
}

// open lists the commands a session may use before authenticating and, in
// Transit, before MODE READER.
var open = map[string]bool{
	"CAPABILITIES": true, "MODE READER": true, "STARTTLS": true,
	"QUIT": true, "HELP": true, "AUTHINFO USER": true, "AUTHINFO PASS": true,
}

// transit lists what innd answers on its feed port before MODE READER.
var transit = map[string]bool{
	"MODE STREAM": true, "CHECK": true, "TAKETHIS": true, "IHAVE": true, "DATE": true,
}

// gate answers commands the session may not use yet: 480 before
// authentication when it is required (RFC 4643 §2.2), 401 MODE-READER
// before MODE READER on a transit server.
func (c *conn) gate(cmd proto.Command) []byte {
	name := cmd.Name()
	if open[name] {
		return nil
	}
	if a := c.s.opts.Auth; a != nil && a.Required && !c.authed {
		return resp(proto.CodeAuthRequired, "Authentication required")
	}
	if c.s.opts.Transit && !c.reader && !transit[name] && c.s.handler(cmd) == nil {
		if _, known := handlers[name]; known || handlers[cmd.Verb] != nil {
			return resp(proto.CodeWrongMode, "MODE-READER")
		}
	}
	return nil
}

// write sends resp (buffered; the loop flushes).
func (c *conn) write(resp []byte) error {
	if _, err := c.w.Write(resp); err != nil {
		return errClosing
	}
	return nil
}

// deliver sends resp as fault f says.
func (c *conn) deliver(resp []byte, f Fault) error {
	c.s.logf("nntptest: conn %d: fault %s", c.id, f)
	if f.Delay > 0 {
		if c.w.Flush() != nil || !c.s.sleep(f.Delay) {
			return errClosing
		}
	}
	if f.Drop {
		c.w.Flush()
		return errClosing
	}
	if f.Hang {
		c.w.Flush()
		io.Copy(io.Discard, c.nc) // until the client or Close closes it
		return errClosing
	}
	if f.replaces() {
		resp = nil
		if f.Code != 0 {
			resp = proto.AppendResponse(resp, f.Code, f.Text)
		}
		resp = append(resp, f.Garbage...)
	}
	cut := f.CloseAfter > 0 && f.CloseAfter < len(resp)
	if cut {
		resp = resp[:f.CloseAfter]
	}
	if f.Rate > 0 {
		if err := c.writePaced(resp, f.Rate); err != nil {
			return err
		}
	} else if err := c.write(resp); err != nil {
		return err
	}
	if cut || f.CloseAfter > 0 || f.Close {
		c.w.Flush()
		c.linger()
		return errClosing
	}
	return nil
}

// linger half-closes the connection and reads until the client closes it
// (or a second passes), so that what was sent reaches the client before the
// kernel could answer unread input with a reset.
func (c *conn) linger() {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.nc.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, c.nc)
}

// writePaced sends p at about rate bytes per second in small chunks.
func (c *conn) writePaced(p []byte, rate int) error {
	if c.w.Flush() != nil {
		return errClosing
	}
	chunk := max(1, rate/100) // about 10 ms per chunk
	start := time.Now()
	for sent := 0; sent < len(p); {
		n := min(chunk, len(p)-sent)
		if _, err := c.nc.Write(p[sent : sent+n]); err != nil {
			return errClosing
		}
		sent += n
		due := start.Add(time.Duration(float64(sent) / float64(rate) * float64(time.Second)))
		if !c.s.sleep(time.Until(due)) {
			return errClosing
		}
	}
	return nil
}

// readBlock reads one dot-stuffed block (an article after TAKETHIS, IHAVE's
// 335 or POST's 340) and returns its payload.
func (c *conn) readBlock() ([]byte, error) {
	if c.r.Buffered() == 0 {
		// Responses due before the client sends the article must be out.
		if c.w.Flush() != nil {
			return nil, errClosing
		}
	}
	d := proto.NewBlockDecoder(0)
	var out []byte
	for {
		if c.r.Buffered() == 0 {
			if _, err := c.r.Peek(1); err != nil {
				return nil, fmt.Errorf("nntptest: conn %d: article block: %w", c.id, err)
			}
		}
		src, _ := c.r.Peek(c.r.Buffered())
		var n int
		var done bool
		var err error
		out, n, done, err = d.Decode(out, src)
		c.r.Discard(n)
		if err != nil {
			return nil, fmt.Errorf("nntptest: conn %d: article block: %w", c.id, err)
		}
		if done {
			return out, nil
		}
	}
}

// resp is a one-line response.
func resp(code int, text string) []byte { return proto.AppendResponse(nil, code, text) }

// block is a status line followed by payload as a multi-line block.
func block(code int, text string, payload []byte) []byte {
	return proto.AppendBlock(proto.AppendResponse(nil, code, text), payload)
}

// arg returns argument i of cmd, or "".
func arg(cmd proto.Command, i int) string {
	if i < len(cmd.Args) {
		return cmd.Args[i]
	}
	return ""
}

func firstLine(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, "\r")
}
