package newsfeed

// Runtimes. A connection's machine is driven by runtime/goroutine (a
// goroutine and a read buffer per connection) or, with runtime = "epoll",
// by one runtime/epoll Loop that drives every ingest connection and every
// plain-TCP peer connection from one goroutine. The owner logic is the same
// for both, written against driver.Driver: a step callback drains the
// machine's events after every input, and owner inputs (Stored,
// SetAccepting, Shutdown, "more offers") reach the machine between inputs
// through a driver.Mailbox.
//
// TLS peers (tls or starttls) stay on runtime/goroutine even with epoll:
// crypto/tls needs a net.Conn. The relay says so once per such peer at
// start.

import (
	"net"

	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/goroutine"
)

// outDriver returns the driver for a peer connection nc: on the epoll loop
// when the relay runs one and the peer does not use TLS, else on
// runtime/goroutine with its own body source.
func (r *Relay) outDriver(nc net.Conn, p *peer) (driver.Driver, error) {
	if r.loop != nil && !p.cfg.TLS && !p.cfg.StartTLS {
		return r.loop.attach(nc)
	}
	return goroutine.New(nc, goroutine.Options{TLSConfig: p.conn.TLS, Now: r.now,
		Bodies: spoolBodies{s: r.spool, ra: newBodyReader(r.spool), bad: &r.badBodies}}), nil
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
	for _, p := range r.peerList() {
		if p.cfg.TLS || p.cfg.StartTLS {
			r.log.Info("peer uses TLS: its connections stay on the goroutine runtime (crypto/tls needs a net.Conn)",
				"peer", p.cfg.Name)
		}
	}
	return nil
}
