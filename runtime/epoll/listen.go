//go:build linux

package epoll

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// acceptBatch is how many connections a listener accepts in a row before
// the loop turns to other work.
const acceptBatch = 128

// acceptBackoff is how long a listener waits after running out of file
// descriptors or memory before it accepts again.
const acceptBackoff = 100 * time.Millisecond

// Listener accepts connections on a socket of the Loop and hands each to
// its accept function, on the loop goroutine.
type Listener struct {
	l        *Loop
	fd       int // loop goroutine only after registration; -1 once closed
	addr     net.Addr
	onAccept func(now time.Time, c *Conn)
	retry    time.Time // when to accept again after a failure; zero for none
}

// Listen listens on addr (a literal "ip:port"; port 0 picks one) and calls
// accept on the loop goroutine for every connection, with the time it was
// accepted. accept typically starts a server machine on it (Conn.Start);
// it must not wait for the loop.
func (l *Loop) Listen(addr string, accept func(now time.Time, c *Conn)) (*Listener, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("epoll: listen %s: %w", addr, err)
	}
	sa, family := sockaddr(ap)
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return nil, fmt.Errorf("epoll: listen %s: %w", addr, os.NewSyscallError("socket", err))
	}
	fail := func(op string, err error) (*Listener, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("epoll: listen %s: %w", addr, os.NewSyscallError(op, err))
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("setsockopt", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		return fail("listen", err)
	}
	bound, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	ln := &Listener{l: l, fd: fd, addr: tcpAddr(bound), onAccept: accept}
	res := make(chan error, 1)
	if err := l.post(func() {
		err := l.register(fd, ln)
		if err == nil {
			l.lns[ln] = struct{}{}
		}
		res <- err
	}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := <-res; err != nil {
		unix.Close(fd)
		return nil, err
	}
	return ln, nil
}

// Addr returns the address the listener is bound to.
func (ln *Listener) Addr() net.Addr { return ln.addr }

// Close stops accepting; connections already accepted stay. It does not
// wait.
func (ln *Listener) Close() error {
	if err := ln.l.post(ln.closeNow); err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	return nil
}

func (ln *Listener) closeNow() {
	if ln.fd < 0 {
		return
	}
	ln.l.unregister(ln.fd)
	unix.Close(ln.fd)
	ln.fd = -1
	delete(ln.l.lns, ln)
}

func (ln *Listener) handle(uint32) { ln.accept() }

// accept takes the connections waiting in the backlog (edge-triggered: up
// to EAGAIN, or a batch and then again on the next round).
func (ln *Listener) accept() {
	l := ln.l
	for i := 0; ln.fd >= 0; i++ {
		if i == acceptBatch {
			ln.retry = l.opts.Now() // more may wait: come back at once
			return
		}
		nfd, sa, err := unix.Accept4(ln.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch err {
		case nil:
		case unix.EAGAIN:
			return
		case unix.EINTR, unix.ECONNABORTED, unix.EPROTO:
			continue
		default:
			// EMFILE, ENFILE, ENOBUFS, ENOMEM: the backlog stays; try
			// again a little later (no new edge would come for it).
			ln.retry = l.opts.Now().Add(acceptBackoff)
			return
		}
		unix.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) // as net does
		c := newConn(l, nfd, tcpAddr(sa))
		if err := l.addConn(c); err != nil {
			unix.Close(nfd)
			continue
		}
		ln.onAccept(l.opts.Now(), c)
	}
}

// addConn registers a new connection (loop goroutine).
func (l *Loop) addConn(c *Conn) error {
	if err := l.register(c.fd, c); err != nil {
		return err
	}
	l.conns[c] = struct{}{}
	return nil
}

// Dial connects to addr ("host:port"; a name is resolved on the caller's
// goroutine) with a non-blocking connect that the loop completes, and
// returns the connection. Call it from any goroutine but the loop's; use
// Connect there.
func (l *Loop) Dial(ctx context.Context, addr string) (*Conn, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("epoll: dial %s: %w", addr, err)
	}
	type result struct {
		c   *Conn
		err error
	}
	res := make(chan result, 1)
	c, err := l.Connect(ta.AddrPort(), func(c *Conn, err error) { res <- result{c, err} })
	if err != nil {
		return nil, err
	}
	select {
	case r := <-res:
		return r.c, r.err
	case <-ctx.Done():
		l.post(func() {
			if c.dial != nil {
				c.failDial(ctx.Err())
			}
		})
		r := <-res
		if r.err == nil {
			c.Close()
			return nil, ctx.Err()
		}
		return nil, r.err
	}
}

// Connect starts a non-blocking connect to addr and calls done on the
// loop goroutine when it completes, with the connection or why it failed
// (the connection is closed then). It may be called on the loop goroutine.
// The returned Conn is the one done will get; use it only after done.
func (l *Loop) Connect(addr netip.AddrPort, done func(c *Conn, err error)) (*Conn, error) {
	sa, family := sockaddr(addr)
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return nil, fmt.Errorf("epoll: dial %s: %w", addr, os.NewSyscallError("socket", err))
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) // as net does
	c := newConn(l, fd, net.TCPAddrFromAddrPort(addr))
	c.writable = false // until the connect completes
	cerr := unix.Connect(fd, sa)
	if cerr != nil && cerr != unix.EINPROGRESS {
		unix.Close(fd)
		return nil, fmt.Errorf("epoll: dial %s: %w", addr, os.NewSyscallError("connect", cerr))
	}
	c.dial = func(err error) {
		if err != nil {
			done(nil, fmt.Errorf("epoll: dial %s: %w", addr, err))
			return
		}
		done(c, nil)
	}
	if err := l.post(func() {
		if err := l.addConn(c); err != nil {
			unix.Close(fd)
			c.fd = -1
			d := c.dial
			c.dial = nil
			d(err)
		}
		// epoll reports EPOLLOUT at once if the connect is already done.
	}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return c, nil
}

// connected completes a connect when the socket reports writable or failed.
func (c *Conn) connected() {
	errno, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && errno != 0 {
		err = os.NewSyscallError("connect", syscall.Errno(errno))
	}
	if err != nil {
		c.failDial(err)
		return
	}
	d := c.dial
	c.dial = nil
	d(nil)
}

// failDial closes a connection whose connect did not complete.
func (c *Conn) failDial(err error) {
	d := c.dial
	c.dial = nil
	c.closeFd()
	d(err)
}

// Attach takes over nc, a connected TCP (or Unix) socket: the Loop drives
// a duplicate of its descriptor and nc is closed, so Go's poller lets go
// of the socket (see the package comment). Do not use nc afterwards. A
// connection without a descriptor (a *tls.Conn, a wrapper) is refused:
// TLS connections stay on runtime/goroutine.
func (l *Loop) Attach(nc net.Conn) (*Conn, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("epoll: attach: %T has no file descriptor (TLS connections stay on runtime/goroutine)", nc)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("epoll: attach: %w", err)
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, fmt.Errorf("epoll: attach: %w", err)
	}
	if derr != nil {
		return nil, fmt.Errorf("epoll: attach: %w", os.NewSyscallError("fcntl", derr))
	}
	remote := nc.RemoteAddr()
	nc.Close() // Go's poller deregisters its descriptor; the socket lives on in fd
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("epoll: attach: %w", os.NewSyscallError("fcntl", err))
	}
	c := newConn(l, fd, remote)
	if err := l.post(func() {
		if err := l.addConn(c); err != nil {
			unix.Close(fd)
			c.fd, c.closeErr = -1, err
		}
	}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return c, nil
}

// sockaddr converts an address for bind and connect.
func sockaddr(ap netip.AddrPort) (unix.Sockaddr, int) {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.Unmap().As4()}, unix.AF_INET
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
	return sa, unix.AF_INET6
}

// tcpAddr converts a socket address from accept or getsockname.
func tcpAddr(sa unix.Sockaddr) net.Addr {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port)))
	case *unix.SockaddrInet6:
		return net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port)))
	}
	return nil
}
