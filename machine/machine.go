// Package machine holds the contract shared by newsflow's sans-I/O
// connection machines (handshake, feed, ingest, download, reader) so that
// runtimes and the transcript replay harness can drive any of them.
//
// A machine never blocks, never reads a clock and never starts a goroutine:
// bytes and time go in through method calls, bytes, deadlines and events come
// out. Machine-specific inputs (Offer an article, ask for a segment) and
// events (NextEvent) live on the concrete types; their owners call them from
// the same goroutine that drives Conn.
package machine

import "time"

// Conn is a sans-I/O connection machine: the part of a protocol endpoint that
// is independent of sockets and clocks. It is not safe for concurrent use; a
// runtime calls it from one goroutine at a time.
//
// The driving loop of a runtime is:
//
//  1. after any input (Receive, Timeout, TLSStarter.TLSDone, an owner's
//     command), drain AppendOutgoing until it appends nothing and write the
//     bytes in order;
//  2. if Closed reports true, close the connection once those bytes are
//     written, and stop;
//  3. otherwise wait for bytes from the peer or for Deadline, whichever comes
//     first, and go to 1.
type Conn interface {
	// Receive takes bytes read from the peer, in order. The bytes may be
	// split anywhere (mid-line, many lines at once); the machine buffers what
	// it needs. An error means the peer broke the protocol: the machine has
	// recorded the failure, Closed reports true and the runtime should close
	// the connection. Call it only while Closed is false.
	Receive(now time.Time, p []byte) error

	// Timeout tells the machine that the time it gave by Deadline has come.
	// Call it when now is at or past the deadline; an early or repeated call
	// is a no-op, so a runtime may call it after any wake-up.
	Timeout(now time.Time)

	// AppendOutgoing appends the bytes the machine wants written to the peer
	// and forgets them. Call it after every input until it appends nothing.
	AppendOutgoing(dst []byte) []byte

	// Deadline is when Timeout must next be called; false means there is no
	// deadline. Ask again after every input: it changes as the machine moves.
	Deadline() (time.Time, bool)

	// Closed reports that the machine is finished with the connection: the
	// runtime writes what AppendOutgoing still holds, then closes.
	Closed() bool
}

// TLSStarter is implemented by machines that can upgrade the connection with
// STARTTLS (RFC 4642). A runtime that drives such a machine checks WantTLS
// after draining the output of each input; when it is true the runtime reads
// nothing more in plaintext, performs the TLS handshake on the connection and
// reports the outcome with TLSDone. Until then the machine waits.
type TLSStarter interface {
	// WantTLS reports that the machine has received the server's consent
	// (382) and is waiting for the TLS handshake.
	WantTLS() bool

	// TLSDone reports the end of the handshake the machine asked for: err
	// is nil on success, after which all traffic is protected. An error
	// return means the call was out of place (no handshake was asked for).
	TLSDone(now time.Time, err error) error
}

// EOFReceiver is implemented by machines that want to know that the peer
// closed its side of the connection (a read returned EOF), so they can tell
// their owner why they stopped. Runtimes call ReceiveEOF once, after the last
// Receive; afterwards they drain output and honour Closed as usual.
type EOFReceiver interface {
	ReceiveEOF(now time.Time)
}

// Pauser is implemented by machines that apply back-pressure: while Paused
// reports true (for example, a server machine waiting for its owner's
// verdicts on many pipelined commands) the runtime requests no further
// reads from the peer. Input from the owner (a runtime's Do) or a deadline
// wakes the loop, after which the runtime asks again.
type Pauser interface {
	Paused() bool
}
