package newsweb

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/machine/handshake"
	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/goroutine"
)

// Transports a connection may end up with (logged and counted).
const (
	TransportTLS      = "tls"      // implicit TLS
	TransportStartTLS = "starttls" // plain TCP upgraded with STARTTLS
	TransportPlain    = "plain"    // no TLS
)

// ErrTLSRequired is wrapped by connection errors when credentials are
// configured and TLS could not be had.
var ErrTLSRequired = errors.New("TLS is required when credentials are configured")

// clientEvent is what a connection's step callback passes to its worker:
// an event of the reader Client, and for results the commands the Client
// sent since the previous result.
type clientEvent struct {
	ev   mreader.Event
	sent map[string]int
}

// serverConn is one established reader connection: the goroutine runtime's
// Conn running machine/reader's Client until it closes.
type serverConn struct {
	gc        *goroutine.Conn
	client    *mreader.Client
	transport string
	events    chan clientEvent
	done      chan struct{} // closed when Run has returned (the connection is closed)
	cancel    context.CancelFunc
	ctx       context.Context
}

// alive reports whether the connection still runs.
func (sc *serverConn) alive() bool {
	select {
	case <-sc.done:
		return false
	default:
		return true
	}
}

// close ends the connection and waits for its loop to stop.
func (sc *serverConn) close() {
	sc.cancel()
	<-sc.done
}

// connect opens a connection with the TLS policy of ServerConfig: TLS
// first; required with credentials; otherwise plain TCP as a fallback.
func (s *Service) connect(ctx context.Context, worker int) (*serverConn, error) {
	cfg := s.cfg
	creds := cfg.User != ""
	log := s.log.With("worker", worker)
	if cfg.TLS == TLSImplicit {
		nc, err := s.dial(ctx, true)
		if err == nil {
			return s.setUp(ctx, nc, handshake.TLSOff, TransportTLS, log)
		}
		if creds {
			return nil, fmt.Errorf("reader: %w: implicit TLS failed: %w", ErrTLSRequired, err)
		}
		log.Warn("TLS connection failed, falling back to plain TCP", "err", err)
		nc, err = s.dial(ctx, false)
		if err != nil {
			return nil, err
		}
		return s.setUp(ctx, nc, handshake.TLSOff, TransportPlain, log)
	}
	mode := handshake.TLSIfOffered
	if creds {
		mode = handshake.TLSRequired
	}
	nc, err := s.dial(ctx, false)
	if err != nil {
		return nil, err
	}
	sc, err := s.setUp(ctx, nc, mode, "", log)
	var f handshake.Failed
	if err != nil && !creds && errors.As(err, &f) && f.Reason == handshake.ReasonTLSFailed {
		log.Warn("STARTTLS failed, falling back to plain TCP", "err", err)
		if nc, err = s.dial(ctx, false); err != nil {
			return nil, err
		}
		return s.setUp(ctx, nc, handshake.TLSOff, TransportPlain, log)
	}
	if err != nil && creds && errors.As(err, &f) && (f.Reason == handshake.ReasonTLSFailed || f.Reason == handshake.ReasonTLSUnavailable) {
		return nil, fmt.Errorf("reader: %s: %w: %w", cfg.Name, ErrTLSRequired, err)
	}
	return sc, err
}

// dial opens a TCP (or implicit TLS) connection within the dial timeout.
func (s *Service) dial(ctx context.Context, useTLS bool) (net.Conn, error) {
	return s.dialAddr(ctx, s.cfg.Addr, useTLS)
}

// dialAddr is dial to addr (the server's, or its Inject address); the
// dial timeout bounds the TCP connect and the implicit TLS handshake
// together.
func (s *Service) dialAddr(ctx context.Context, addr string, useTLS bool) (net.Conn, error) {
	var implicit *tls.Config
	if useTLS {
		implicit = s.cfg.tlsConfigFor(addr)
	}
	nc, err := driver.Dial(ctx, addr, s.opts.DialTimeout, implicit)
	if err != nil {
		return nil, &dialError{server: s.cfg.Name, addr: addr, err: err}
	}
	return nc, nil
}

// dialError is a failed dial of a server, said once, with the server's
// name: "news2 (127.0.0.1:1): connection refused".
type dialError struct {
	server, addr string
	err          error // as driver.Dial returns it
}

func (e *dialError) Error() string {
	return e.server + " (" + e.addr + "): " + dialReason(e.err)
}

func (e *dialError) Unwrap() error { return e.err }

// dialReason is what went wrong in err, a driver.Dial error, without the
// address: the system's reason for a failed connect ("connection
// refused"), the resolver's for a name ("lookup news.example: no such
// host"), "timed out", or the TLS handshake's.
func dialReason(err error) string {
	timeout := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
	var de *driver.DialError
	switch {
	case errors.As(err, &de) && de.Step == "tls" && timeout:
		return "TLS handshake: timed out"
	case de != nil && de.Step == "tls":
		return "TLS handshake: " + strings.TrimPrefix(de.Reason(), "tls: ")
	}
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return dns.Error()
	case timeout:
		return "timed out"
	case de != nil:
		return de.Reason()
	}
	return err.Error()
}

// setUp runs the handshake (greeting, CAPABILITIES, MODE READER, STARTTLS,
// AUTHINFO) on nc and starts the reader Client on it. transport is "" when
// the handshake decides (STARTTLS or plain).
func (s *Service) setUp(ctx context.Context, nc net.Conn, mode handshake.TLSMode, transport string, log *slog.Logger) (*serverConn, error) {
	gc := goroutine.New(heardConn{nc, &s.heard}, goroutine.Options{TLSConfig: s.cfg.tlsConfig(), Now: s.now})
	hctx, cancel := context.WithTimeout(ctx, 4*s.opts.DialTimeout)
	ready, left, err := driver.Handshake(hctx, gc, s.now(), handshake.Config{
		Reader: true, User: s.cfg.User, Pass: s.cfg.Pass, TLS: mode, StepTimeout: s.opts.DialTimeout,
	})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("reader: %s: %w", s.cfg.Name, err)
	}
	if transport == "" {
		transport = TransportPlain
		if ready.TLS {
			transport = TransportStartTLS
		}
	}
	client, err := mreader.FromHandshake(s.now(), s.opts.Client, ready, left)
	if err != nil {
		gc.Close()
		return nil, fmt.Errorf("reader: %s: %w", s.cfg.Name, err)
	}
	cctx, ccancel := context.WithCancel(s.ctx)
	sc := &serverConn{gc: gc, client: client, transport: transport, events: make(chan clientEvent, 16),
		done: make(chan struct{}), cancel: ccancel, ctx: cctx}
	last := map[string]int{}
	go func() {
		// When the loop ends (the server closed, a timeout), cancelling
		// cctx also releases a worker blocked in gc.Do on this connection.
		defer close(sc.done)
		defer ccancel()
		gc.Run(cctx, client, func(time.Time) error {
			for {
				ev, ok := client.NextEvent()
				if !ok {
					return nil
				}
				ce := clientEvent{ev: ev}
				if _, closed := ev.(mreader.Closed); !closed {
					now := client.Sent()
					ce.sent = make(map[string]int)
					for k, v := range now {
						if d := v - last[k]; d > 0 {
							ce.sent[k] = d
						}
					}
					last = maps.Clone(now)
				}
				select {
				case sc.events <- ce:
				case <-cctx.Done():
					return cctx.Err()
				}
			}
		})
		gc.Close()
	}()
	s.heard.Store(time.Now().UnixNano())
	log.Info("nntp connection ready", "transport", transport, "strategy", client.Strategy().String(), "ready", ready.String())
	s.metrics.connection(s.cfg.Name, transport)
	return sc, nil
}

// heardConn records in heard when bytes last came from the server
// (Service.silent).
type heardConn struct {
	net.Conn
	heard *atomic.Int64
}

// Read reads from the connection and records the arrival of bytes.
func (c heardConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.heard.Store(time.Now().UnixNano())
	}
	return n, err
}
