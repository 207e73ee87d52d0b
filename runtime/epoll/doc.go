// Package epoll drives many sans-I/O connection machines (machine.Conn)
// from one goroutine with Linux's epoll: the same machines, with the same
// observable behaviour, as runtime/goroutine, without a goroutine and a read
// buffer per connection. It is Linux-only; on other systems the package is
// empty.
//
// # Theory of operation
//
// A Loop owns an epoll instance, an eventfd and one goroutine (the loop).
// Everything that touches a connection's socket or machine happens on the
// loop goroutine: reads, writes, Receive, Timeout, the owner's step
// callbacks and the functions given to Do and Post. Other goroutines talk to
// the loop by queueing a function (Loop.post) and writing the eventfd, which
// is registered in the epoll instance and so wakes the loop.
//
// The loop collects events with epoll_wait and a zero timeout; when there
// are none it sleeps in Go's own poller, where the epoll descriptor is
// registered (it is readable while events wait), with a read deadline for
// the nearest machine deadline. A blocking epoll_wait would hold its thread
// and its P until the scheduler took the P back, starving other goroutines
// on a small machine. One Loop uses at most one core; a program with many busy
// connections runs one Loop per core and spreads its connections over
// them.
//
// Sockets are non-blocking and registered once, edge-triggered, for
// EPOLLIN|EPOLLOUT|EPOLLRDHUP; the loop never calls epoll_ctl again for
// them. Edge-triggered means the loop keeps each connection's readiness
// itself: readable and writable are set by events and cleared when a read or
// write returns EAGAIN, or when a read or writev returns less than asked for
// (epoll(7): for stream sockets a short read or write means the buffer was
// exhausted). sendfile is the exception: it also stops short when a signal
// is pending (the Go runtime's preemption signal, SIGURG) while the socket
// has room, and then no EPOLLOUT follows, since the kernel raises it only
// after a write found the buffer full; so a short sendfile is retried, and
// only its EAGAIN clears writable (TestShortSendfileUnderSignals). After the
// peer's FIN or an error (EPOLLRDHUP, EPOLLHUP, EPOLLERR) a short read does
// not clear readable, so the loop reads on until it sees the EOF. Keeping
// readiness in the loop lets a connection stop reading (no machine attached,
// a machine that is Paused, unwritten output) and resume later without
// re-arming anything.
//
// Each connection runs at most one machine at a time (Conn.Start, or Run,
// which waits). The loop drives it like runtime/goroutine does, through the
// driving sequence of runtime/driver (driver.Settle decides steps 3 to 5 for
// both, drive.Input gives a read's result to the machine):
//
//  1. collect the machine's output (AppendSegments when it is a
//     machine.SegmentSender and Options.Bodies is set, else
//     AppendOutgoing) and write it: writev for commands, small articles
//     copied in by a drive.BodyAppender and bodies from
//     BodySource.Body; sendfile for larger articles whose source is a
//     FileBodySource. What the socket does not take waits for EPOLLOUT;
//     meanwhile the machine gets no input, so the segments' bytes stay
//     valid and are not copied;
//  2. call the owner's step callback (events), then write what it produced;
//  3. close when the machine is Closed; refuse STARTTLS (see below); after
//     the peer's EOF keep an EOFReceiver that is not Closed running on its
//     other inputs, or end the run;
//  4. give the machine its next input: a function queued with Do or Post,
//     else one read into the loop's read buffer (Receive, or ReceiveEOF),
//     else Timeout when its deadline has passed; then go to 1. Without an
//     input the connection waits for epoll.
//
// A machine that implements machine.Pauser and reports Paused gets no
// reads until an input unpauses it (machine/ingest's back-pressure): the
// socket's receive buffer fills and TCP pushes back on the peer.
//
// Deadlines come from the machines: after each input the connection's
// Deadline (or, while output is unwritten, the write deadline taken from it
// as runtime/goroutine does) is kept in a heap, and the nearest one becomes
// epoll_wait's timeout. Time is Options.Now.
//
// One read buffer serves the whole loop: Receive must not keep the slice it
// is given (the machine.Conn contract). Output that the socket takes at once
// is not copied either; only output left over for EPOLLOUT is kept per
// connection. An idle connection costs its Conn, its machine and the
// kernel's socket, not a goroutine stack or a buffer.
//
// # File descriptors
//
// Connections come from Listen (accept4 on a socket the loop created), Dial
// (a non-blocking connect the loop completes on EPOLLOUT) or Attach, which
// takes over an existing *net.TCPConn: Attach duplicates its descriptor
// (F_DUPFD_CLOEXEC) and closes the net.TCPConn, so Go's own poller lets go
// of the socket and the Loop owns the duplicate, which it closes when the
// connection ends. The caller must not use the net.TCPConn afterwards.
//
// # TLS
//
// crypto/tls needs a net.Conn, so TLS connections stay on
// runtime/goroutine. A machine (machine.TLSStarter) that asks for STARTTLS
// is told ErrTLSUnsupported through TLSDone, and its run ends with an error
// wrapping ErrTLSUnsupported.
package epoll
