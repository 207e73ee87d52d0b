//go:build linux

package epoll

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/runtime/driver"
)

// ErrStop, returned by a step callback, ends the run without closing the
// connection, so that the owner can start the next machine on it. It is
// driver.ErrStop, which runtime/goroutine uses too, so one step callback
// serves both runtimes.
var ErrStop = driver.ErrStop

// ErrClosed is returned for a connection or Loop that was closed.
var ErrClosed = errors.New("epoll: connection closed")

// ErrTLSUnsupported is what a machine that asks for STARTTLS is told
// (TLSDone), and what its run ends with: crypto/tls needs a net.Conn, so
// TLS connections stay on runtime/goroutine.
var ErrTLSUnsupported = errors.New("epoll: STARTTLS is not supported (crypto/tls needs a net.Conn): run TLS connections on runtime/goroutine")

// Options configure a Loop.
type Options struct {
	// Now is the clock given to machines and used for their deadlines;
	// time.Now when nil.
	Now func() time.Time
	// ReadBuffer is the size of the loop's one read buffer; 64 KiB when
	// zero.
	ReadBuffer int
	// Bodies, when set, makes the loop write the output of machines that
	// are machine.SegmentSenders segment by segment, reading stored
	// articles from it: articles of at most driver.SmallBody octets
	// through driver.BodyAppender when it implements that (copied into
	// the write with the commands around them), others with sendfile(2)
	// when it implements FileBodySource, the rest through Body. Without it
	// the loop uses AppendOutgoing.
	Bodies machine.BodySource
	// MaxEvents is how many events one epoll_wait returns at most; 256
	// when zero.
	MaxEvents int
}

// handler is something registered with the epoll instance: a connection,
// a listener or the eventfd.
type handler interface {
	handle(ev uint32)
}

// Loop is one goroutine driving many connections. Its methods are safe for
// concurrent use.
type Loop struct {
	opts  Options
	epfd  int
	evfd  int
	epf   *os.File        // epfd, registered with Go's poller (see wait)
	epraw syscall.RawConn // epf's raw access

	// Loop goroutine only.
	handlers map[int]handler
	conns    map[*Conn]struct{}
	lns      map[*Listener]struct{}
	ready    []*Conn // connections to advance without waiting for epoll
	spare    []*Conn // the previous ready slice, reused
	timers   timerHeap
	buf      []byte // the read buffer
	events   []unix.EpollEvent
	scratch  scratch // output staging, see write.go
	stopping bool
	stats    Stats

	mu       sync.Mutex
	posted   []func()
	running  []func() // the previous posted slice, reused
	closed   bool
	sleeping atomic.Bool // the loop is in (or about to enter) epoll_wait
	done     chan struct{}
	closeErr error
}

// New creates a Loop and starts its goroutine. Close it when done.
func New(opts Options) (*Loop, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ReadBuffer <= 0 {
		opts.ReadBuffer = 64 << 10
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 256
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: epoll_create1: %w", err)
	}
	// The loop sleeps in Go's poller, not in epoll_wait (see wait): the
	// epoll descriptor is itself pollable, readable while events wait.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("epoll: epoll fd: %w", err)
	}
	epf := os.NewFile(uintptr(epfd), "epoll")
	epraw, err := epf.SyscallConn()
	if err != nil {
		epf.Close()
		return nil, fmt.Errorf("epoll: epoll fd: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		epf.Close()
		return nil, fmt.Errorf("epoll: eventfd: %w", err)
	}
	l := &Loop{
		opts:     opts,
		epfd:     epfd,
		evfd:     evfd,
		epf:      epf,
		epraw:    epraw,
		handlers: make(map[int]handler),
		conns:    make(map[*Conn]struct{}),
		lns:      make(map[*Listener]struct{}),
		buf:      make([]byte, opts.ReadBuffer),
		events:   make([]unix.EpollEvent, opts.MaxEvents),
		done:     make(chan struct{}),
	}
	if err := l.register(evfd, wakeHandler{l}); err != nil {
		unix.Close(evfd)
		epf.Close()
		return nil, err
	}
	go l.loop()
	return l, nil
}

// Close closes every connection and listener (runs end with ErrClosed, Do
// calls return it), stops the loop goroutine and waits for it. It must not
// be called on the loop goroutine (from step, done or accept callbacks).
func (l *Loop) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		l.posted = append(l.posted, func() { l.stopping = true })
		l.mu.Unlock()
		l.wake()
	} else {
		l.mu.Unlock()
	}
	<-l.done
	return l.closeErr
}

// Stats counts what a Loop did, for metrics and tests.
type Stats struct {
	Conns      int   // connections open now (including ones connecting)
	Wakeups    int64 // rounds of the loop that collected events (or timed out)
	Reads      int64 // read calls that returned bytes or EOF
	Writes     int64 // write and writev calls
	Sendfiles  int64 // sendfile calls
	WouldBlock int64 // writes that found the socket full (EAGAIN, or a short writev)
}

// Stats returns the loop's counters. It waits for the loop, so do not
// call it on the loop goroutine; after Close it returns the zero Stats.
func (l *Loop) Stats() Stats {
	res := make(chan Stats, 1)
	if err := l.post(func() {
		st := l.stats
		st.Conns = len(l.conns)
		res <- st
	}); err != nil {
		return Stats{}
	}
	return <-res
}

// post queues fn to run on the loop goroutine and wakes the loop if it
// sleeps. It fails only when the Loop is closed.
func (l *Loop) post(fn func()) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.posted = append(l.posted, fn)
	l.mu.Unlock()
	// The loop sets sleeping before it looks at posted for the last time
	// and blocks; either it sees fn there, or we see sleeping here.
	if l.sleeping.Load() {
		l.wake()
	}
	return nil
}

// wake makes epoll_wait return (eventfd counter += 1).
func (l *Loop) wake() {
	var one = [8]byte{1}
	for {
		_, err := unix.Write(l.evfd, one[:])
		if err != unix.EINTR {
			return // EAGAIN: the counter is huge, the loop will wake anyway
		}
	}
}

// wakeHandler drains the eventfd; the posted functions run at the top of
// the loop.
type wakeHandler struct{ l *Loop }

func (w wakeHandler) handle(uint32) {
	var b [8]byte
	for {
		_, err := unix.Read(w.l.evfd, b[:])
		if err != unix.EINTR {
			return
		}
	}
}

// register adds fd to the epoll instance, edge-triggered, for reading,
// writing and the peer's half-close.
func (l *Loop) register(fd int, h handler) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll: epoll_ctl add %d: %w", fd, err)
	}
	l.handlers[fd] = h
	return nil
}

// unregister removes fd from the epoll instance before it is closed.
func (l *Loop) unregister(fd int) {
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	delete(l.handlers, fd)
}

// loop is the loop goroutine.
func (l *Loop) loop() {
	defer close(l.done)
	for {
		l.runPosted()
		if l.stopping {
			l.shutdown()
			return
		}
		l.runReady()
		l.runPosted() // callbacks may have posted (Start, Close)
		if l.stopping {
			l.shutdown()
			return
		}

		d, block := l.waitTimeout()
		if block {
			l.sleeping.Store(true)
			l.mu.Lock()
			pending := len(l.posted) > 0
			l.mu.Unlock()
			if pending {
				block = false
			}
		}
		n, err := l.wait(d, block)
		l.sleeping.Store(false)
		l.stats.Wakeups++
		if err != nil {
			l.closeErr = err
			l.mu.Lock()
			l.closed = true
			l.mu.Unlock()
			l.runPosted()
			l.shutdown()
			return
		}
		for i := 0; i < n; i++ {
			ev := l.events[i]
			if h, ok := l.handlers[int(ev.Fd)]; ok {
				h.handle(ev.Events)
			}
		}
		l.expire(l.opts.Now())
	}
}

// runPosted runs the functions other goroutines queued.
func (l *Loop) runPosted() {
	for {
		l.mu.Lock()
		fns := l.posted
		l.posted = l.running[:0]
		l.mu.Unlock()
		if len(fns) == 0 {
			l.running = fns
			return
		}
		for i, fn := range fns {
			fn()
			fns[i] = nil
		}
		l.running = fns
	}
}

// runReady advances every connection marked ready. A connection that
// still has work after its budget marks itself ready again, for the next
// round, after the others had their turn.
func (l *Loop) runReady() {
	for len(l.ready) > 0 {
		cs := l.ready
		l.ready = l.spare[:0]
		for i, c := range cs {
			cs[i] = nil
			c.queued = false
			c.advance()
		}
		l.spare = cs
		if len(l.ready) > 0 {
			return // let epoll and the posted functions in first
		}
	}
}

// markReady queues c for advance in this round of the loop.
func (l *Loop) markReady(c *Conn) {
	if !c.queued && c.fd >= 0 {
		c.queued = true
		l.ready = append(l.ready, c)
	}
}

// waitTimeout says how long the loop may sleep: not at all when
// connections are ready or a deadline has passed (block false), until the
// nearest deadline (d > 0), or without a limit (d == 0).
func (l *Loop) waitTimeout() (d time.Duration, block bool) {
	if len(l.ready) > 0 {
		return 0, false
	}
	next, ok := l.nextDeadline()
	if !ok {
		return 0, true
	}
	d = next.Sub(l.opts.Now())
	if d <= 0 {
		return 0, false
	}
	return d, true
}

// wait collects ready events into l.events. When block is set and none
// are ready it sleeps until some are, or for d when d > 0.
//
// The loop does not sleep in epoll_wait: a goroutine blocked in a system
// call keeps its thread, and its P until the scheduler's monitor takes it
// back (tens of microseconds to milliseconds), during which other
// goroutines (the owner's, a sink in the same process) wait for a P. It
// polls with a zero timeout instead, and sleeps in Go's own poller, in
// which the epoll descriptor is registered (it is readable while events
// wait), with a read deadline for the timeout.
func (l *Loop) wait(d time.Duration, block bool) (int, error) {
	poll := func(fd int) (int, error) {
		n, err := unix.EpollWait(fd, l.events, 0)
		if err == unix.EINTR {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("epoll: epoll_wait: %w", err)
		}
		return n, nil
	}
	if !block {
		return poll(l.epfd)
	}
	if d > 0 {
		l.epf.SetReadDeadline(time.Now().Add(d))
	} else {
		l.epf.SetReadDeadline(time.Time{})
	}
	var n int
	var perr error
	err := l.epraw.Read(func(fd uintptr) bool {
		n, perr = poll(int(fd))
		return n > 0 || perr != nil // false: sleep until epfd is readable
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("epoll: wait: %w", err)
	}
	return n, perr
}

// nextDeadline is the nearest of the connections' deadlines and the
// listeners' retry times.
func (l *Loop) nextDeadline() (time.Time, bool) {
	var next time.Time
	ok := false
	if len(l.timers) > 0 {
		next, ok = l.timers[0].key, true
	}
	for ln := range l.lns {
		if ln.retry.IsZero() {
			continue
		}
		if !ok || ln.retry.Before(next) {
			next, ok = ln.retry, true
		}
	}
	return next, ok
}

// expire marks ready the connections whose deadline has come, and retries
// listeners that backed off.
func (l *Loop) expire(now time.Time) {
	for len(l.timers) > 0 && !now.Before(l.timers[0].key) {
		c := l.timers.pop()
		l.markReady(c)
	}
	for ln := range l.lns {
		if !ln.retry.IsZero() && !now.Before(ln.retry) {
			ln.retry = time.Time{}
			ln.accept()
		}
	}
}

// shutdown closes everything; the loop goroutine ends after it.
func (l *Loop) shutdown() {
	// Functions posted from now on are refused by post (closed is set);
	// run the ones that made it in, then close what they may have opened,
	// so that every Run, Do and Dial returns.
	l.runPosted()
	for c := range l.conns {
		c.closeWith(ErrClosed)
	}
	for ln := range l.lns {
		ln.closeNow()
	}
	l.unregister(l.evfd)
	unix.Close(l.evfd)
	l.epf.Close()
}
