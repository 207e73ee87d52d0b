package driver

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"time"
)

// Dial opens a TCP connection to addr within timeout and, when implicitTLS
// is not nil, runs the TLS client handshake with it inside the same
// deadline (nntps: encrypted from the first byte; STARTTLS is the
// handshake machine's business). Its errors are *DialError.
func Dial(ctx context.Context, addr string, timeout time.Duration, implicitTLS *tls.Config) (net.Conn, error) {
	return DialFrom(ctx, addr, nil, timeout, implicitTLS)
}

// DialFrom is Dial from the local address from (a source address, as
// innfeed's bindaddress; nil lets the system choose).
func DialFrom(ctx context.Context, addr string, from net.IP, timeout time.Duration, implicitTLS *tls.Config) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	if from != nil {
		d.LocalAddr = &net.TCPAddr{IP: from}
	}
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, &DialError{Step: "dial", Addr: addr, From: from, Err: err}
	}
	if implicitTLS == nil {
		return nc, nil
	}
	tc := tls.Client(nc, implicitTLS)
	if err := tc.HandshakeContext(dctx); err != nil {
		nc.Close()
		return nil, &DialError{Step: "tls", Addr: addr, From: from, Err: err}
	}
	return tc, nil
}

// DialError says which step of Dial failed, for which address, and why.
type DialError struct {
	Step string // "dial" (the TCP connection) or "tls" (the implicit TLS handshake)
	Addr string
	From net.IP // the local address asked for; nil when the system chose
	Err  error
}

// Error reads "dial ADDR: connection refused" or "tls ADDR: ...": the
// address once, then the reason without the net package's own "dial tcp
// ADDR:" that would repeat it.
func (e *DialError) Error() string {
	s := e.Step + " " + e.Addr
	if e.From != nil {
		s += " from " + e.From.String()
	}
	return s + ": " + e.Reason()
}

// Reason is the error's cause alone: "connection refused", "lookup
// news.example: no such host", the TLS handshake's own error.
func (e *DialError) Reason() string {
	var op *net.OpError
	if errors.As(e.Err, &op) {
		var dns *net.DNSError
		if errors.As(op.Err, &dns) {
			return dns.Error()
		}
		inner := op.Err
		var sys *os.SyscallError
		if errors.As(inner, &sys) {
			inner = sys.Err
		}
		return inner.Error()
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *DialError) Unwrap() error { return e.Err }
