package newsfeed

// Runtimes. A connection's machine is driven by runtime/goroutine (a
// goroutine and a read buffer per connection) or, with runtime = "epoll",
// by one runtime/epoll Loop that drives every ingest connection and every
// plain-TCP peer connection from one goroutine. The owner logic is the same
// for both: a step callback drains the machine's events after every input,
// and owner inputs (Stored, SetAccepting, Shutdown, more offers) are handed
// to the machine between inputs (Do, or Post from any goroutine).
//
// TLS peers (tls or starttls) stay on runtime/goroutine even with epoll:
// crypto/tls needs a net.Conn. The relay says so once per such peer at
// start.

import (
	"context"
	"net"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/runtime/goroutine"
)

// connDriver runs one machine at a time on a connection: a
// *goroutine.Conn, or a connection of the relay's epoll loop.
type connDriver interface {
	Run(ctx context.Context, m machine.Conn, step func(now time.Time) error) error
	Do(ctx context.Context, fn func(now time.Time)) error
	Close() error
}

// errStop ends a Run without closing the connection (both runtimes use
// runtime/goroutine's ErrStop).
var errStop = goroutine.ErrStop

// outDriver returns the driver for a peer connection nc: on the epoll loop
// when the relay runs one and the peer does not use TLS, else on
// runtime/goroutine with its own body source.
func (r *Relay) outDriver(nc net.Conn, p *peer) (connDriver, error) {
	if r.loop != nil && !p.cfg.TLS && !p.cfg.StartTLS {
		return r.loop.attach(nc)
	}
	return goroutine.New(nc, goroutine.Options{TLSConfig: p.tls, Now: r.now,
		Bodies: spoolBodies{s: r.spool, ra: r.spool.NewReadAhead(readAhead), bad: &r.badBodies}}), nil
}

// startLoop starts the epoll loop when the configuration asks for it, and
// says which peers stay on the goroutine runtime.
func (r *Relay) startLoop() error {
	if r.cfg.Runtime != "epoll" {
		return nil
	}
	l, err := newEventLoop(r)
	if err != nil {
		return err
	}
	r.loop = l
	for _, p := range r.peers {
		if p.cfg.TLS || p.cfg.StartTLS {
			r.log.Info("peer uses TLS: its connections stay on the goroutine runtime (crypto/tls needs a net.Conn)",
				"peer", p.cfg.Name)
		}
	}
	return nil
}
