// Package loopback runs the small TCP servers the driver tests talk to: a
// listener on an ephemeral port of 127.0.0.1, a handler for each
// connection accepted, and everything closed and waited for when the test
// ends, so no goroutine outlives its test.
package loopback

import (
	"bufio"
	"net"
	"sync"
	"testing"
)

// ServeOne runs handler for the first connection to a new loopback
// listener and returns the address to dial. The listener takes no second
// connection; the handler's connection is closed when it returns, and the
// test's cleanup waits for it.
func ServeOne(t testing.TB, handler func(c net.Conn, r *bufio.Reader)) string {
	t.Helper()
	ln := listen(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		defer c.Close()
		handler(c, bufio.NewReader(c))
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// Serve runs handler on a goroutine of its own for every connection to a
// new loopback listener until the test ends, and returns the address to
// dial. Each connection is closed when its handler returns; the test's
// cleanup closes the listener and waits for every handler, so a handler
// that waits on a context needs it cancelled by a cleanup registered after
// Serve (cleanups run last first).
func Serve(t testing.TB, handler func(c net.Conn)) string {
	t.Helper()
	ln := listen(t)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handler(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// Pair returns both ends of one loopback TCP connection, closed when the
// test ends.
func Pair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln := listen(t)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	client = Dial(t, ln.Addr().String())
	server = <-accepted
	if server == nil {
		t.Fatal("loopback: accept failed")
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// Dial connects to addr over TCP, failing t if it cannot; the connection is
// closed when the test ends.
func Dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
