//go:build !unix

package nntptest

import (
	"net"
	"testing"
)

// RefusedPort returns a loopback port that refuses connections: a closed
// listener's, which another listener may be given later (on unix systems a
// bound socket that never listens holds it for the test).
func RefusedPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}
