package driver

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// Dial opens a TCP connection to addr within timeout and, when implicitTLS
// is not nil, runs the TLS client handshake with it inside the same
// deadline (nntps: encrypted from the first byte; STARTTLS is the
// handshake machine's business). Errors say which step failed: "dial
// ADDR: ..." or "tls ADDR: ...".
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
		if from != nil {
			return nil, fmt.Errorf("dial %s from %s: %w", addr, from, err)
		}
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if implicitTLS == nil {
		return nc, nil
	}
	tc := tls.Client(nc, implicitTLS)
	if err := tc.HandshakeContext(dctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("tls %s: %w", addr, err)
	}
	return tc, nil
}
