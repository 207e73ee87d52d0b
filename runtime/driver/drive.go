// Package driver is the seam between newsflow's two drivers (runtime/goroutine
// and runtime/epoll) and the program cores that use them (runtime/newsfeed,
// runtime/newsget, runtime/newsweb). It holds what they share: the Driver
// contract, ErrStop, the optional interfaces of a body source, the driving
// sequence both loops follow, one Handshake helper and one Mailbox for owner
// inputs. The drivers import machine and this package, never each other.
//
// # The contract, step by step
//
// A Driver runs one machine (machine.Conn) at a time on one connection. An
// owner uses it like this:
//
//  1. Run(ctx, m, step) drives m until it is done. step is the owner's
//     callback: the driver calls it once at the start and after every input
//     m took, once m's output is written, on the driver's goroutine. step
//     drains m's events and may call m's methods (an Offer, a Close); what
//     it makes m say is written at once.
//  2. Owner inputs from other goroutines go through Do (waits until fn has
//     run on the driver's goroutine) or Post (does not wait; fn is dropped
//     if the connection closes first). fn calls m's methods; afterwards the
//     driver writes m's output and calls step, as after any input. A Mailbox
//     collects such inputs and posts them one delivery at a time.
//  3. A step that returns ErrStop ends Run without closing the connection,
//     so the owner can run the next machine on it (a handshake, then a
//     feed: see Handshake).
//  4. Run returns nil when m reported Closed (the connection is then closed)
//     or step returned ErrStop; otherwise an error saying why: step failed,
//     m.Receive failed, a read or write failed, the peer closed the
//     connection and m cannot hear of it (not a machine.EOFReceiver), or ctx
//     ended. The connection is closed then.
//  5. Close closes the connection; a run in progress ends.
//
// # The driving sequence
//
// Both drivers loop over the same steps, with Step, Settle, MayRead and
// Input deciding all but the writing, so that they mean the same on both:
//
//  1. flush: collect m's output (AppendOutgoing, or segments) and write it;
//  2. step: call the owner's step, then flush what it produced;
//  3. Closed: m is finished; close the connection and end the run well;
//  4. TLS: m asks for STARTTLS (machine.TLSStarter); perform the handshake,
//     or refuse it, and report with TLSDone; go to 1;
//  5. EOF: after the peer's EOF (Input gave m ReceiveEOF) a machine that is
//     not Closed keeps running on its other inputs (Do, Post, Timeout) and
//     gets no more reads: machine/ingest still sends the answers it owes. A
//     failed read, or an EOF that m cannot hear of, ends the run;
//  6. next input: an owner's function, else one read (unless m is
//     machine.Pauser and Paused, or the read side ended; see MayRead), else
//     Timeout at m's deadline; give it to m (Input for reads) and go to 1.
package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/newsflow/newsflow/machine"
)

// Driver runs one machine at a time on a connection: a *goroutine.Conn or
// a connection of an epoll Loop. See the package comment for the contract.
type Driver interface {
	// Run drives m until it is done (package comment, steps 1, 3 and 4).
	Run(ctx context.Context, m machine.Conn, step func(now time.Time) error) error
	// Do runs fn between two inputs of the running machine and waits
	// until it has run, ctx ends or the connection closes.
	Do(ctx context.Context, fn func(now time.Time)) error
	// Post is Do without waiting: fn runs between two inputs, unless the
	// connection closes first. It may be called from step.
	Post(fn func(now time.Time)) error
	// Close closes the connection.
	Close() error
}

// ErrStop, returned by a step callback, ends the run without closing the
// connection, so that the owner can run the next machine on it. Both
// drivers use this one value, so one step callback serves both.
var ErrStop = errors.New("drive: stop")

// BodyWriter is an optional interface of a driver's body source
// (machine.BodySource): a source that writes the stored article named by
// token, exactly size bytes, to w itself (for example with io.Copy from the
// spool file, which lets the kernel use sendfile), and returns how many
// bytes it wrote.
type BodyWriter interface {
	WriteBody(w io.Writer, token string, size int64) (int64, error)
}

// BodyAppender is an optional interface of a driver's body source: a
// source that appends the stored article named by token, exactly size
// bytes, to dst (one read into the caller's buffer), after checking it.
// Drivers use it for articles of at most CopyBody octets: those of at most
// SmallBody are written together with the commands around them, larger
// ones each with the commands before it.
type BodyAppender interface {
	AppendBody(dst []byte, token string, size int64) ([]byte, error)
}

// BodyCopier is an optional interface of a BodyAppender that can also
// send an article from its file (a BodyWriter, or a file source of the
// epoll runtime): drivers ask it whether an article of more than SmallBody
// and at most CopyBody octets is to be copied (appended) or sent from its
// file. A source that checks what it sends copies an article the first
// time and sends it from its file to the peers after, once checked.
type BodyCopier interface {
	Copied(token string, size int64) bool
}

// BodyPlanner is an optional interface of a BodyAppender: before a driver
// appends the small articles of one write, it names them (tokens, in the
// order it will ask for them), so that a source that reads ahead reads
// what they span and no further. The call is a hint: the articles are
// still asked for one by one, and a source may ignore it. The driver
// reuses tokens after the call.
//
// Draining 2 KB articles to four peers, a connection's next articles are
// mostly not those stored after its last ones (the peer's other
// connections took those), so a read-ahead window of fixed size read
// about a third more than was sent.
type BodyPlanner interface {
	PlanBodies(tokens []string)
}

// SmallBody is the largest article that drivers gather with the commands
// around it into one write.
const SmallBody = 16 << 10

// CopyBody is the largest article a BodyAppender is asked to copy; larger
// ones are written by the BodyWriter (or sendfile). A source that checks
// every article it sends reads each one anyway: read once into the
// process, checked there and written from there, an article costs less
// CPU than checked by one read and sent by sendfile from the page cache
// (see spoolfs.BenchmarkSendArticle), and the bytes that leave are the
// very bytes checked. Above it, the copy's memory is not worth holding.
const CopyBody = 1 << 20

// Step calls the owner's step callback (step 2 of the driving sequence),
// if there is one, and says what its result means: stop when it returned
// ErrStop (the run ends well and the connection stays open), or an error
// ("step: ...") that ends the run and closes the connection.
func Step(step func(now time.Time) error, now time.Time) (stop bool, err error) {
	if step == nil {
		return false, nil
	}
	switch err := step(now); {
	case err == nil:
		return false, nil
	case errors.Is(err, ErrStop):
		return true, nil
	default:
		return false, fmt.Errorf("step: %w", err)
	}
}

// Next is what a driver does after an input's output is written and step
// ran (steps 3 to 5 of the driving sequence).
type Next uint8

const (
	// Wait: take the next input (step 6).
	Wait Next = iota
	// Close: the machine is Closed; close the connection, the run ended
	// well.
	Close
	// StartTLS: perform the STARTTLS handshake (or refuse it) and report
	// it with TLSDone, then flush and step again.
	StartTLS
	// End: the read side failed; end the run with Settle's error.
	End
)

// Settle decides steps 3 to 5 of the driving sequence for m, given the
// sticky error of the connection's last read (nil while reads succeed). The
// error, with End only, says why the run ends ("read: ..."); drivers prefix
// their name.
func Settle(m machine.Conn, readErr error) (Next, error) {
	if m.Closed() {
		return Close, nil
	}
	if ts, ok := m.(machine.TLSStarter); ok && ts.WantTLS() {
		return StartTLS, nil
	}
	if readErr != nil {
		if _, ok := m.(machine.EOFReceiver); !ok || !errors.Is(readErr, io.EOF) {
			// The machine cannot learn of the EOF, or the connection
			// failed: nothing more can come.
			return End, fmt.Errorf("read: %w", readErr)
		}
		// An EOFReceiver that is not Closed after the peer's EOF still
		// has work (machine/ingest owes answers its owner has not given
		// yet): it keeps its other inputs until it closes.
	}
	return Wait, nil
}

// MayRead reports whether a driver may read for m now: the read side has
// not ended (readErr is nil) and m does not ask for a pause
// (machine.Pauser). Owner inputs and deadlines are served either way.
func MayRead(m machine.Conn, readErr error) bool {
	if readErr != nil {
		return false
	}
	p, ok := m.(machine.Pauser)
	return !ok || !p.Paused()
}

// Input gives m the result of one read: the n bytes in buf (Receive), then,
// when the read failed, the EOF (ReceiveEOF, on an EOFReceiver and a clean
// EOF). It returns the read error to keep (sticky: no more reads follow),
// and Receive's error, which ends the run once m's goodbye is written and
// step has run once more.
func Input(now time.Time, m machine.Conn, p []byte, rerr error) (readErr, recvErr error) {
	if len(p) > 0 {
		if err := m.Receive(now, p); err != nil {
			return rerr, err
		}
	}
	if rerr != nil {
		if er, ok := m.(machine.EOFReceiver); ok && errors.Is(rerr, io.EOF) {
			er.ReceiveEOF(now)
		}
	}
	return rerr, nil
}
