package newsweb

// The request's time bound, without a timer until something waits.
//
// Every request is bounded by Options.Timeout. context.WithTimeout would
// arm a runtime timer and allocate a cancel context on every request, and
// stop the timer at the end; but a view of a cached page never waits for
// anything, so on the path that matters most that work is for nothing
// (newsbench web's profile: about 4% of the server's CPU on cached
// articles). lazyDeadline carries the deadline from the start and makes the
// real context, with its timer, only when someone asks for Done: a wait
// for a fetch, a worker, an incremental update. Until then Err and
// Deadline answer from the deadline and the parent.
//
// It keeps the context contract: Err is nil while Done is open and non-nil
// once it is closed, because Err arms the real context as soon as the
// deadline has passed (that context is born expired) and afterwards
// answers from it. Value answers from the real context once it exists, so
// that a context derived from this one finds its cancel context and is
// cancelled with it without a goroutine of its own (context.WithCancel
// asks for Done first, which arms it).

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// lazyDeadline is parent bounded by deadline; see the file comment.
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time

	mu     sync.Mutex
	armed  context.Context // nil until arm
	cancel context.CancelFunc
}

// withLazyDeadline returns parent bounded by deadline and the function
// that releases it (call it when the request ends, as with
// context.WithDeadline).
func withLazyDeadline(parent context.Context, deadline time.Time) (*lazyDeadline, func()) {
	c := &lazyDeadline{parent: parent, deadline: deadline}
	return c, c.release
}

// requestDeadline is the bound of a request served on w: parent bounded
// by deadline. On the front (front.go) the connection's is reused from
// one request to the next unless its real context was made (reset);
// elsewhere it is a new one. Call release when the request ends.
func requestDeadline(w http.ResponseWriter, parent context.Context, deadline time.Time) *lazyDeadline {
	fw, ok := w.(*frontWriter)
	if !ok {
		c, _ := withLazyDeadline(parent, deadline)
		return c
	}
	if fw.deadline == nil || !fw.deadline.reset(parent, deadline) {
		fw.deadline, _ = withLazyDeadline(parent, deadline)
	}
	return fw.deadline
}

// reset makes c, released, the bound of another request: parent bounded
// by deadline. It changes nothing and reports false when c's real
// context was made: whoever derived a context from c or waited on it
// (a goroutine of the handler's that outlives it, like groupPage's wait
// for the stats, whose cancel runs after the answer) may still use c.
// Until then nothing can have kept c but the handler itself, which may
// not keep it past its return (TestFrontReuseNewsweb).
func (c *lazyDeadline) reset(parent context.Context, deadline time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed != nil {
		return false
	}
	c.parent, c.deadline = parent, deadline
	return true
}

// arm makes the real context on first use and returns it.
func (c *lazyDeadline) arm() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed == nil {
		c.armed, c.cancel = context.WithDeadline(c.parent, c.deadline)
	}
	return c.armed
}

// current is the real context, nil while there is none.
func (c *lazyDeadline) current() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.armed
}

// release stops the real context's timer, if it was ever made.
func (c *lazyDeadline) release() {
	c.mu.Lock()
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Deadline is the earlier of the parent's deadline and the request's.
func (c *lazyDeadline) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done arms the real context and returns its channel.
func (c *lazyDeadline) Done() <-chan struct{} {
	return c.arm().Done()
}

// Err is the real context's error once it exists; before, the parent's,
// or the deadline's once it has passed (arming the real context, so that
// Done is closed too).
func (c *lazyDeadline) Err() error {
	if a := c.current(); a != nil {
		return a.Err()
	}
	if err := c.parent.Err(); err != nil {
		return c.arm().Err()
	}
	if !time.Now().Before(c.deadline) {
		return c.arm().Err()
	}
	return nil
}

// Value looks key up in the real context once it exists, else in the
// parent.
func (c *lazyDeadline) Value(key any) any {
	if a := c.current(); a != nil {
		return a.Value(key)
	}
	return c.parent.Value(key)
}
