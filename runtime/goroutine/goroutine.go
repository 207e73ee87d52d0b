// Package goroutine drives sans-I/O connection machines (machine.Conn) over
// a net.Conn with one goroutine per connection plus a reader goroutine.
//
// # Theory of operation
//
// Machines are not safe for concurrent use, so exactly one goroutine, the
// one running Conn.Run (the loop), ever calls them. The loop follows the
// driving sequence of runtime/driver (driver.Settle decides its middle steps,
// as it does for runtime/epoll):
//
//  1. drains AppendOutgoing and writes the bytes (the write blocks the loop;
//     it is bounded by the machine's deadline and by ctx);
//  2. calls the owner's step callback, which drains the machine's events
//     and may stop the run (driver.ErrStop) to hand the connection to the
//     next machine;
//  3. closes the connection if the machine is Closed;
//  4. performs the STARTTLS handshake if the machine asks (TLSStarter), then
//     calls TLSDone and goes back to 1;
//  5. after the peer's EOF, keeps a machine.EOFReceiver that is not Closed
//     running on its other inputs, without reads; ends the run on a failed
//     read or an EOF the machine cannot hear of;
//  6. asks the reader goroutine for one read, unless one is in flight, the
//     machine is Paused (machine.Pauser) or the read side ended, and waits
//     for whichever comes first: the read's result (driver.Input: Receive,
//     and ReceiveEOF at the EOF), the machine's deadline (Timeout), an
//     owner's function sent with Do or Post, or ctx's end.
//
// The reader goroutine reads only when asked, one read per request, into a
// buffer the loop does not touch until the result arrives. Because the loop
// asks for the next read only after it handled the previous one and checked
// WantTLS, no plaintext read can race the TLS handshake, and when a run
// stops after Receive no bytes have been read for the next machine behind
// its back. (A read asked for before Timeout or Do may still be in flight
// when a run stops; the next Run on the same Conn receives its bytes.)
//
// Time comes from Options.Now (time.Now by default) and deadlines are served
// with a time.Timer, so tests can run the loop inside testing/synctest.
package goroutine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/runtime/driver"
)

// ErrStop, returned by a step callback, ends Run without closing the
// connection, so that the owner can hand it to the next machine. It is
// driver.ErrStop, which runtime/epoll uses too.
var ErrStop = driver.ErrStop

// ErrClosed is returned by Run and Do on a Conn that was closed.
var ErrClosed = errors.New("goroutine: connection closed")

// TLSUpgrader is implemented by connections that perform the STARTTLS
// handshake themselves and keep being used afterwards (such as
// record.Recorder, which records the plaintext inside TLS).
type TLSUpgrader interface {
	StartTLS(ctx context.Context, cfg *tls.Config) error
}

// ErrorRecorder is implemented by connections that record sessions (such as
// record.Recorder): Run tells them when the machine's Receive failed,
// before it closes the connection, so a replay can expect the failure.
type ErrorRecorder interface {
	RecordError(err error)
}

// Options configure a Conn.
type Options struct {
	// TLSConfig is used when a machine asks for STARTTLS; without it the
	// handshake fails (and the machine is told so).
	TLSConfig *tls.Config
	// TLSServer makes STARTTLS take the server's role (for the ingest
	// machine); by default the runtime is the TLS client.
	TLSServer bool
	// Now is the clock given to machines; time.Now when nil.
	Now func() time.Time
	// ReadBuffer is the size of the read buffer; 64 KiB when zero.
	ReadBuffer int
	// Bodies, when set, makes Run write the output of machines that are
	// machine.SegmentSenders segment by segment, reading stored articles
	// from it (see segments.go); without it Run uses AppendOutgoing.
	Bodies machine.BodySource
}

// Conn is one connection driven by the runtime. Run drives one machine at
// a time; several Runs in a row may share the connection.
type Conn struct {
	opts Options

	mu sync.Mutex // guards nc, which STARTTLS replaces and Close reads
	nc net.Conn

	buf     []byte          // owned by the reader while a read is pending
	reqs    chan net.Conn   // read requests: read once from this conn
	results chan readResult // one result per request
	pending bool            // a request is outstanding
	readErr error           // the sticky error of a failed read
	started bool            // the reader goroutine runs
	do      chan action     // owner actions for the loop
	closed  bool

	postMu     sync.Mutex
	posted     []func(now time.Time) // from Post, for the loop
	postClosed bool                  // Close was called: Post fails
	wake       chan struct{}         // a Post is waiting

	// Owned by Run's goroutine: reused by every flush (segments.go).
	segs   []machine.Segment
	gather gather
	plan   []string // tokens for driver.BodyPlanner
}

type readResult struct {
	n   int
	err error
}

type action struct {
	fn   func(now time.Time)
	done chan struct{}
}

// New wraps nc. The Conn owns nc from now on: close it with Conn.Close.
func New(nc net.Conn, opts Options) *Conn {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ReadBuffer <= 0 {
		opts.ReadBuffer = 64 << 10
	}
	return &Conn{
		opts:    opts,
		nc:      nc,
		buf:     make([]byte, opts.ReadBuffer),
		reqs:    make(chan net.Conn),
		results: make(chan readResult, 1),
		do:      make(chan action),
		wake:    make(chan struct{}, 1),
	}
}

var _ driver.Driver = (*Conn)(nil)

// NetConn returns the current connection: after STARTTLS, the TLS
// connection (or the TLSUpgrader given to New). Do not read from it while
// Run may have a read in flight.
func (c *Conn) NetConn() net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nc
}

// Close closes the connection and stops the reader goroutine. It must not
// be called while Run is running on another goroutine: cancel Run's
// context instead.
func (c *Conn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.postMu.Lock()
	c.postClosed, c.posted = true, nil
	c.postMu.Unlock()
	err := c.NetConn().Close()
	if c.started {
		close(c.reqs)
	}
	return err
}

// Run drives m until it is done and reports how it ended:
//
//   - nil when m reported Closed (the connection is then closed) or step
//     returned ErrStop (the connection stays open for the next Run);
//   - an error when step failed, m.Receive failed (m broke off), the
//     connection failed or the peer closed it, or ctx ended; the connection
//     is then closed.
//
// step, if not nil, is called after every input the machine took (and once
// at the start), after its output was written: it drains the machine's
// events. It runs on Run's goroutine and may call m's methods, but must not
// call Do.
func (c *Conn) Run(ctx context.Context, m machine.Conn, step func(now time.Time) error) (err error) {
	if c.closed {
		return ErrClosed
	}
	// ctx's end closes the connection, which unblocks a write or a TLS
	// handshake in progress; the select below notices it otherwise.
	stopWatch := context.AfterFunc(ctx, func() { c.NetConn().Close() })
	defer func() {
		if !stopWatch() {
			// ctx ended and closed the connection: what the loop saw
			// after that (a read or write on a closed connection, which
			// can win the select against ctx.Done) is ctx's doing.
			err = ctx.Err()
		}
		if err != nil && !errors.Is(err, ErrStop) {
			c.Close()
		}
	}()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	now := c.opts.Now()
	for {
		if err := c.flush(m); err != nil {
			return err
		}
		if step != nil {
			if stop, err := driver.Step(step, now); stop {
				return nil
			} else if err != nil {
				return fmt.Errorf("goroutine: %w", err)
			}
			// step may have given the machine work (an Offer, a Close):
			// write it now rather than after the next input.
			if err := c.flush(m); err != nil {
				return err
			}
		}
		switch next, err := driver.Settle(m, c.readErr); next {
		case driver.Close:
			return c.Close()
		case driver.StartTLS:
			herr := c.startTLS(ctx, m)
			now = c.opts.Now()
			if err := m.(machine.TLSStarter).TLSDone(now, herr); err != nil {
				return fmt.Errorf("goroutine: %w", err)
			}
			continue
		case driver.End:
			return fmt.Errorf("goroutine: %w", err)
		}
		if !c.pending && driver.MayRead(m, c.readErr) {
			c.read()
		}

		var timerC <-chan time.Time
		if d, ok := m.Deadline(); ok {
			timer.Reset(d.Sub(c.opts.Now()))
			timerC = timer.C
		}
		select {
		case r := <-c.results:
			c.pending = false
			now = c.opts.Now()
			readErr, err := driver.Input(now, m, c.buf[:r.n], r.err)
			if err != nil {
				if er, ok := c.NetConn().(ErrorRecorder); ok {
					er.RecordError(err)
				}
				c.flush(m) // a machine may say goodbye
				if step != nil {
					step(now)
				}
				return fmt.Errorf("goroutine: %w", err)
			}
			c.readErr = readErr
		case <-timerC:
			now = c.opts.Now()
			m.Timeout(now)
		case a := <-c.do:
			now = c.opts.Now()
			a.fn(now)
			close(a.done)
		case <-c.wake:
			now = c.opts.Now()
			c.postMu.Lock()
			fns := c.posted
			c.posted = nil
			c.postMu.Unlock()
			for _, fn := range fns {
				fn(now)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		timer.Stop()
	}
}

// Do runs fn on Run's goroutine between two inputs, so that an owner can
// give the machine work (fn calls the machine's own methods); the loop then
// writes the machine's output and calls step as after any input. Do waits
// until fn has run, ctx ends, or the Conn is closed; it blocks while no Run
// is running.
func (c *Conn) Do(ctx context.Context, fn func(now time.Time)) error {
	a := action{fn: fn, done: make(chan struct{})}
	select {
	case c.do <- a:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Post is Do without waiting: fn runs on Run's goroutine between two
// inputs, like Do's, and the loop then writes the machine's output and
// calls step. Functions posted while no Run is running wait for the next
// Run; those still waiting when the Conn is closed never run. Post fails
// only on a closed Conn (ErrClosed). It may be called from step.
func (c *Conn) Post(fn func(now time.Time)) error {
	c.postMu.Lock()
	defer c.postMu.Unlock()
	if c.postClosed {
		return ErrClosed
	}
	c.posted = append(c.posted, fn)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// flush writes everything the machine has to send.
func (c *Conn) flush(m machine.Conn) error {
	if ss, ok := m.(machine.SegmentSender); ok && c.opts.Bodies != nil {
		return c.flushSegments(m, ss)
	}
	var out []byte
	for {
		n := len(out)
		out = m.AppendOutgoing(out)
		if len(out) == n {
			break
		}
	}
	if len(out) == 0 {
		return nil
	}
	nc := c.NetConn()
	if d, ok := m.Deadline(); ok {
		nc.SetWriteDeadline(c.wall(d))
	} else {
		nc.SetWriteDeadline(time.Time{})
	}
	if _, err := nc.Write(out); err != nil {
		return fmt.Errorf("goroutine: write: %w", err)
	}
	return nil
}

// read asks the reader goroutine for one read.
func (c *Conn) read() {
	if !c.started {
		c.started = true
		go c.reader()
	}
	c.pending = true
	c.reqs <- c.NetConn()
}

// reader serves read requests until Close.
func (c *Conn) reader() {
	for nc := range c.reqs {
		n, err := nc.Read(c.buf)
		c.results <- readResult{n, err}
	}
}

// startTLS performs the STARTTLS handshake (RFC 4642 §2.2.2) within the
// machine's deadline.
func (c *Conn) startTLS(ctx context.Context, m machine.Conn) error {
	if c.opts.TLSConfig == nil {
		return errors.New("goroutine: STARTTLS asked for, but no TLS configuration was given")
	}
	if c.pending {
		return errors.New("goroutine: STARTTLS asked for while a read is in flight")
	}
	nc := c.NetConn()
	if d, ok := m.Deadline(); ok {
		nc.SetDeadline(c.wall(d))
		defer func() { c.NetConn().SetDeadline(time.Time{}) }()
	}
	if u, ok := nc.(TLSUpgrader); ok {
		return u.StartTLS(ctx, c.opts.TLSConfig)
	}
	var tc *tls.Conn
	if c.opts.TLSServer {
		tc = tls.Server(nc, c.opts.TLSConfig)
	} else {
		tc = tls.Client(nc, c.opts.TLSConfig)
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.nc = tc
	c.mu.Unlock()
	return nil
}

// wall converts a machine's deadline d, a time on Options.Now's clock, to
// the wall-clock time a net.Conn deadline needs: as far from time.Now as d
// is from Options.Now. With the default clock it is d itself.
func (c *Conn) wall(d time.Time) time.Time {
	return time.Now().Add(d.Sub(c.opts.Now()))
}
