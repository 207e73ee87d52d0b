package handshake

import (
	"fmt"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// core is what Handshake and Session share: a machine on a client
// connection that sends a command, waits StepTimeout for each answer, and
// ends either in StateReady (the connection is handed on, bytes after the
// last answer kept for the next machine) or in StateFailed (one Failed
// event, the connection Closed). Each machine embeds a core and keeps its
// own Receive, send and states; the outputs, the deadline, EOF and failure
// work the same for both.
type core struct {
	cfg      Config
	state    State
	deadline time.Time
	in       proto.LineBuffer
	out      []byte
	events   []Event
	closed   bool
	auth     Auth
}

// fail ends the machine with f. quit sends QUIT first (RFC 3977 §5.4), for
// failures that leave the connection in step.
func (c *core) fail(f Failed, quit bool) {
	if c.state == StateFailed {
		return
	}
	if quit {
		c.out, _ = proto.Quit().Append(c.out)
	}
	c.state, c.deadline, c.closed = StateFailed, time.Time{}, true
	c.events = append(c.events, f)
}

// protocolError fails with ReasonProtocol and returns the error for Receive.
func (c *core) protocolError(detail string) error {
	f := Failed{State: c.state, Reason: ReasonProtocol, Detail: detail}
	c.fail(f, false)
	return f
}

// Timeout fails the machine when its step deadline has passed
// (machine.Conn); otherwise it does nothing.
func (c *core) Timeout(now time.Time) {
	if c.state == StateReady || c.state == StateFailed || now.Before(c.deadline) {
		return
	}
	c.fail(Failed{State: c.state, Reason: ReasonTimeout,
		Detail: fmt.Sprintf("no answer within %v", c.cfg.StepTimeout)}, false)
}

// ReceiveEOF notes that the server closed the connection
// (machine.EOFReceiver): while an answer is awaited, that fails the machine.
func (c *core) ReceiveEOF(now time.Time) {
	if c.state == StateReady || c.state == StateFailed {
		return
	}
	c.fail(Failed{State: c.state, Reason: ReasonClosed}, false)
}

// AppendOutgoing appends the commands to send (machine.Conn).
func (c *core) AppendOutgoing(dst []byte) []byte {
	dst = append(dst, c.out...)
	c.out = c.out[:0]
	return dst
}

// Deadline is when Timeout must be called; none once Ready or Failed.
func (c *core) Deadline() (time.Time, bool) {
	if c.state == StateReady || c.state == StateFailed {
		return time.Time{}, false
	}
	return c.deadline, true
}

// Closed reports that the machine failed and the connection must close
// (machine.Conn). A Ready machine is not closed: the connection is handed on.
func (c *core) Closed() bool { return c.closed }

// NextEvent returns the next event for the owner: Ready (Handshake), Done
// (Session) or Failed.
func (c *core) NextEvent() (Event, bool) {
	if len(c.events) == 0 {
		return nil, false
	}
	e := c.events[0]
	c.events = c.events[1:]
	return e, true
}

// Leftover returns a copy of the bytes received after the last answer of a
// machine that is Ready: they belong to the next machine on the connection.
func (c *core) Leftover() []byte { return c.in.Rest() }
