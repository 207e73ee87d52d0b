//go:build linux

package epoll

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/runtime/driver"
)

// maxInputs is how many inputs one connection takes in a row before the
// loop turns to the others.
const maxInputs = 16

// phase is where a run is in the driving loop (see the package comment).
type phase uint8

const (
	phStep  phase = iota // once the output is written: call step
	phCheck              // after step: Closed? STARTTLS? a read error?
	phIdle               // waiting for an input
	phFail               // Receive failed: once written, step once more and end
)

// run is one machine driven on a connection, from Start to done.
type run struct {
	m       machine.Conn
	ss      machine.SegmentSender // set when segments are written
	tls     machine.TLSStarter
	step    func(now time.Time) error
	done    func(err error)
	ctx     context.Context
	stopCtx func() bool // stops the ctx watch; nil when ctx cannot end
	phase   phase
	now     time.Time // the time of the last input, given to step
	err     error     // phFail: what Receive said
	tlsDone bool      // STARTTLS was refused: the run ends with ErrTLSUnsupported
}

// action is a function from Do or Post, waiting for the loop.
type action struct {
	fn    func(now time.Time)
	state atomic.Int32 // actPending, actTaken, actCancelled
	done  chan error   // Do's result; nil for Post
}

const (
	actPending int32 = iota
	actTaken
	actCancelled
)

// finish hands Do its result, unless Do gave up waiting.
func (a *action) take() bool { return a.state.CompareAndSwap(actPending, actTaken) }

func (a *action) reply(err error) {
	if a.done != nil {
		a.done <- err
	}
}

// Conn is one connection of a Loop. Its methods are safe for concurrent
// use; everything they ask for happens on the loop goroutine.
type Conn struct {
	l      *Loop
	remote net.Addr

	// Loop goroutine only.
	fd       int  // -1 once closed
	readable bool // a read may return data (edge-triggered readiness)
	writable bool // a write may take data
	hup      bool // the peer half-closed or the socket failed: read to the end
	readErr  error
	run      *run
	out      outQueue
	actions  []*action
	dial     func(err error) // set while a Dial's connect is in progress
	closeErr error           // why the connection closed before its first run
	queued   bool            // on the loop's ready list
	key      time.Time       // timer heap key
	hidx     int             // timer heap index, -1 when not in it
}

func newConn(l *Loop, fd int, remote net.Addr) *Conn {
	return &Conn{l: l, fd: fd, remote: remote, writable: true, hidx: -1}
}

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// Start runs m on the connection until it is done, then calls done on the
// loop goroutine with how it ended, as runtime/goroutine's Run returns:
//
//   - nil when m reported Closed (the connection is then closed) or step
//     returned ErrStop (the connection stays open for the next Start);
//   - an error when step failed, m.Receive failed, a read or write failed
//     (a write that outlasts m's deadline: os.ErrDeadlineExceeded), the
//     peer closed the connection and m is not a machine.EOFReceiver,
//     STARTTLS was refused (ErrTLSUnsupported), the connection was closed
//     (ErrClosed), or ctx ended; the connection is then closed.
//
// As on runtime/goroutine (driver.Settle decides for both), an EOFReceiver
// that is not Closed after the peer's EOF keeps running on its other
// inputs (Do, Post, Timeout) until it closes: machine/ingest sends the
// answers it still owes.
//
// step, if not nil, is called on the loop goroutine after every input m
// took (and once at the start), after its output was written: it drains
// m's events and may call m's methods and Post, but must not call Do, Run
// or anything else that waits for the loop. Start returns an error, and
// done is not called, only when the Loop is closed.
func (c *Conn) Start(ctx context.Context, m machine.Conn, step func(now time.Time) error, done func(err error)) error {
	if ctx == nil {
		ctx = context.Background()
	}
	r := &run{m: m, step: step, done: done, ctx: ctx}
	if ss, ok := m.(machine.SegmentSender); ok && c.l.opts.Bodies != nil {
		r.ss = ss
	}
	r.tls, _ = m.(machine.TLSStarter)
	if r.done == nil {
		r.done = func(error) {}
	}
	return c.l.post(func() { c.start(r) })
}

// Run is Start that waits for the run's end and returns its result. Call
// it from any goroutine but the loop's.
func (c *Conn) Run(ctx context.Context, m machine.Conn, step func(now time.Time) error) error {
	res := make(chan error, 1)
	if err := c.Start(ctx, m, step, func(err error) { res <- err }); err != nil {
		return err
	}
	return <-res
}

// Do runs fn on the loop goroutine between two inputs of the running
// machine, so that an owner can give it work (fn calls the machine's own
// methods); the loop then writes the machine's output and calls step as
// after any input. Do waits until fn has run, ctx ends, or the connection
// closes (ErrClosed); while no machine runs, fn waits for the next Start.
// Do must not be called on the loop goroutine (use Post there).
func (c *Conn) Do(ctx context.Context, fn func(now time.Time)) error {
	a := &action{fn: fn, done: make(chan error, 1)}
	if err := c.l.post(func() { c.addAction(a) }); err != nil {
		return err
	}
	select {
	case err := <-a.done:
		return err
	case <-ctx.Done():
		if a.state.CompareAndSwap(actPending, actCancelled) {
			return ctx.Err()
		}
		return <-a.done
	}
}

// Post is Do without waiting: fn runs on the loop goroutine like Do's,
// unless the connection closes first, in which case it never runs. It
// fails only when the Loop is closed. Post may be called from step.
func (c *Conn) Post(fn func(now time.Time)) error {
	a := &action{fn: fn}
	return c.l.post(func() { c.addAction(a) })
}

// Close closes the connection soon, on the loop goroutine; a run in
// progress ends with ErrClosed. It does not wait, so it may be called from
// step; it is safe to call more than once.
func (c *Conn) Close() error {
	if err := c.l.post(func() { c.closeWith(ErrClosed) }); err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	return nil
}

// start begins r on the loop goroutine.
func (c *Conn) start(r *run) {
	l := c.l
	switch {
	case c.fd < 0:
		err := ErrClosed
		if c.closeErr != nil {
			err = c.closeErr
		}
		r.done(err)
		return
	case c.run != nil:
		r.done(errors.New("epoll: a machine is already running on this connection"))
		return
	case r.ctx.Err() != nil:
		c.closeFd()
		r.done(r.ctx.Err())
		return
	}
	if r.ctx.Done() != nil {
		r.stopCtx = context.AfterFunc(r.ctx, func() {
			l.post(func() {
				if c.run == r {
					c.finish(r, r.ctx.Err(), true)
				}
			})
		})
	}
	c.run = r
	r.now = l.opts.Now()
	c.collect(r)
	r.phase = phStep
	// At once: collected output lives in the loop's scratch space until
	// the first flush, and the next connection's collect reuses it.
	c.advance()
}

// addAction queues a (loop goroutine).
func (c *Conn) addAction(a *action) {
	if c.fd < 0 {
		if a.take() {
			a.reply(ErrClosed)
		}
		return
	}
	c.actions = append(c.actions, a)
	if c.run != nil && c.run.phase == phIdle {
		c.l.markReady(c)
	}
}

// nextAction returns the next queued action that Do has not given up on.
func (c *Conn) nextAction() *action {
	for len(c.actions) > 0 {
		a := c.actions[0]
		c.actions[0] = nil
		c.actions = c.actions[1:]
		if len(c.actions) == 0 {
			c.actions = nil
		}
		if a.take() {
			return a
		}
	}
	return nil
}

// handle takes the connection's epoll events.
func (c *Conn) handle(ev uint32) {
	if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.hup = true
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.readable = true
	}
	if ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.writable = true
	}
	if c.dial != nil {
		if ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			c.connected()
		}
		return
	}
	if c.run != nil {
		c.l.markReady(c)
	}
}

// advance drives the running machine as far as it can go without waiting
// (see the package comment for the steps).
func (c *Conn) advance() {
	l := c.l
	budget := maxInputs
	for {
		r := c.run
		if r == nil || c.fd < 0 {
			return
		}
		if c.out.pending() {
			if err := c.flush(); err != nil {
				if r.phase != phFail {
					c.finish(r, err, true)
					return
				}
				c.out.drop() // the run fails anyway: say goodbye where we can
			} else if c.out.pending() {
				// Wait for EPOLLOUT, within the write deadline
				// runtime/goroutine would set.
				if c.out.hasDeadline {
					if !l.opts.Now().Before(c.out.deadline) {
						c.finish(r, fmt.Errorf("epoll: write: %w", os.ErrDeadlineExceeded), true)
						return
					}
					l.timers.set(c, c.out.deadline)
				} else {
					l.timers.remove(c)
				}
				return
			}
		}
		switch r.phase {
		case phStep:
			r.phase = phCheck
			if r.step != nil {
				if stop, err := driver.Step(r.step, r.now); stop {
					c.finish(r, nil, false)
					return
				} else if err != nil {
					c.finish(r, fmt.Errorf("epoll: %w", err), true)
					return
				}
				if c.run != r {
					return
				}
				// step may have given the machine work: write it now
				// rather than after the next input.
				c.collect(r)
			}
		case phCheck:
			switch next, err := driver.Settle(r.m, c.readErr); next {
			case driver.Close:
				c.finish(r, nil, true)
				return
			case driver.StartTLS:
				// crypto/tls needs a net.Conn: refuse (see the package
				// comment).
				r.tlsDone = true
				r.now = l.opts.Now()
				if err := r.tls.TLSDone(r.now, ErrTLSUnsupported); err != nil {
					c.finish(r, fmt.Errorf("epoll: %w", err), true)
					return
				}
				c.collect(r)
				r.phase = phStep
				continue
			case driver.End:
				c.finish(r, fmt.Errorf("epoll: %w", err), true)
				return
			}
			r.phase = phIdle
		case phFail:
			if r.step != nil {
				r.step(r.now)
			}
			c.finish(r, r.err, true)
			return
		case phIdle:
			if budget == 0 {
				l.markReady(c)
				return
			}
			budget--
			if a := c.nextAction(); a != nil {
				r.now = l.opts.Now()
				a.fn(r.now)
				a.reply(nil)
				if c.run != r {
					return
				}
				c.collect(r)
				r.phase = phStep
				continue
			}
			if c.readable && driver.MayRead(r.m, c.readErr) && c.read(r) {
				continue
			}
			if d, ok := r.m.Deadline(); ok {
				now := l.opts.Now()
				if !now.Before(d) {
					r.now = now
					r.m.Timeout(now)
					c.collect(r)
					r.phase = phStep
					continue
				}
				l.timers.set(c, d)
			} else {
				l.timers.remove(c)
			}
			return
		}
	}
}

// read reads once into the loop's buffer and gives the machine what came.
// It reports false when nothing was there (EAGAIN).
func (c *Conn) read(r *run) bool {
	l := c.l
	var n int
	var err error
	for {
		n, err = unix.Read(c.fd, l.buf)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EAGAIN {
		c.readable = false
		return false
	}
	l.stats.Reads++
	r.now = l.opts.Now()
	r.phase = phStep
	var rerr error
	switch {
	case err != nil:
		rerr = os.NewSyscallError("read", err)
		n = 0
	case n == 0:
		rerr = io.EOF
	case n < len(l.buf) && !c.hup:
		// A short read drained the socket (epoll(7)); a later arrival
		// raises a new edge. After EPOLLRDHUP the EOF raises none, so
		// then the loop reads on until it sees it.
		c.readable = false
	}
	readErr, recvErr := driver.Input(r.now, r.m, l.buf[:n], rerr)
	if recvErr != nil {
		r.err = fmt.Errorf("epoll: %w", recvErr)
		r.phase = phFail
	} else {
		c.readErr = readErr
	}
	c.collect(r)
	return true
}

// finish ends r: it closes the connection when told to (or when the run
// failed), and reports to the owner.
func (c *Conn) finish(r *run, err error, closeConn bool) {
	c.run = nil
	c.l.timers.remove(c)
	if r.stopCtx != nil && !r.stopCtx() && err == nil {
		err = r.ctx.Err()
	}
	if r.tlsDone && err == nil {
		err = fmt.Errorf("epoll: machine closed after STARTTLS was refused: %w", ErrTLSUnsupported)
	}
	if err != nil && !errors.Is(err, ErrStop) {
		closeConn = true
	}
	if closeConn {
		c.closeFd()
	}
	r.done(err)
}

// closeWith closes the connection, ending a run in progress with err.
func (c *Conn) closeWith(err error) {
	if c.dial != nil {
		c.failDial(err)
		return
	}
	if c.run != nil {
		c.finish(c.run, err, true)
		return
	}
	c.closeFd()
}

// closeFd closes the socket and forgets the connection; actions still
// queued fail with ErrClosed.
func (c *Conn) closeFd() {
	if c.fd < 0 {
		return
	}
	l := c.l
	l.unregister(c.fd)
	unix.Close(c.fd)
	c.fd = -1
	delete(l.conns, c)
	l.timers.remove(c)
	c.out.drop()
	for _, a := range c.actions {
		if a.take() {
			a.reply(ErrClosed)
		}
	}
	c.actions = nil
}
