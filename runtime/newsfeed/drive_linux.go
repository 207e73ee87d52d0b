//go:build linux

package newsfeed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/epoll"
	"github.com/newsflow/newsflow/spoolfs"
)

// epollAvailable reports that runtime = "epoll" can be used here.
const epollAvailable = true

// eventLoop is the relay's epoll runtime: one epoll.Loop per core
// (GOMAXPROCS), since one Loop uses at most one core. Connections are
// spread over the loops in turn, so a peer's connections, and the ingest
// connections, run on every core (on 500 KB articles the loop goroutine
// verifies and sends every article itself, and one loop was the limit).
type eventLoop struct {
	loops    []*epoll.Loop
	next     atomic.Uint64 // the loop the next connection goes to, mod len(loops)
	attached atomic.Int64  // connections attached, ever
}

func newEventLoop(r *Relay) (*eventLoop, error) {
	e := &eventLoop{}
	for range max(1, runtime.GOMAXPROCS(0)) {
		// A loop's connections share one body source, and so one
		// ReadAhead: it is used only on that loop's goroutine.
		bodies := spoolBodies{s: r.spool, ra: newBodyReader(r.spool), bad: &r.badBodies}
		l, err := epoll.New(epoll.Options{Now: r.now, Bodies: bodies})
		if err != nil {
			e.close()
			return nil, fmt.Errorf("relay: epoll runtime: %w", err)
		}
		e.loops = append(e.loops, l)
	}
	return e, nil
}

// pick returns the loop for the next connection.
func (e *eventLoop) pick() *epoll.Loop {
	return e.loops[(e.next.Add(1)-1)%uint64(len(e.loops))]
}

// attach moves nc onto a loop (nc must not be used afterwards).
func (e *eventLoop) attach(nc net.Conn) (driver.Driver, error) {
	e.attached.Add(1)
	c, err := e.pick().Attach(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("relay: epoll attach: %w", err)
	}
	return c, nil
}

// start runs m on nc from a loop without a goroutine of its own: step
// after every input, done at the end (both on the loop goroutine). It
// returns the connection's driver, for Post (a driver.Mailbox) and Close.
func (e *eventLoop) start(ctx context.Context, nc net.Conn, m machine.Conn, step func(now time.Time) error,
	done func(err error)) (driver.Driver, error) {
	e.attached.Add(1)
	c, err := e.pick().Attach(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("relay: epoll attach: %w", err)
	}
	if err := c.Start(ctx, m, step, done); err != nil {
		c.Close()
		return nil, fmt.Errorf("relay: epoll start: %w", err)
	}
	return c, nil
}

// close stops the loops; runs still going end with an error.
func (e *eventLoop) close() error {
	var errs []error
	for _, l := range e.loops {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// BodyFile gives a stored article as a range of its spool segment file,
// for the epoll runtime's sendfile (epoll.FileBodySource).
func (b spoolBodies) BodyFile(token string) (fd int, off, n int64, release func(), err error) {
	tok, err := spoolfs.ParseToken(token)
	if err != nil {
		b.bad.add(token, err)
		return -1, 0, 0, nil, err
	}
	sec, err := b.s.Section(tok)
	if err != nil {
		b.bad.add(token, err)
		return -1, 0, 0, nil, err
	}
	return int(sec.File.Fd()), sec.Offset, sec.Length, func() { sec.Close() }, nil
}

var _ epoll.FileBodySource = spoolBodies{}

// conns returns how many connections were attached to the loop (tests);
// 0 without a loop.
func (e *eventLoop) conns() int {
	if e == nil {
		return 0
	}
	return int(e.attached.Load())
}
