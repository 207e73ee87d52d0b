//go:build unix

package nntptest

import (
	"syscall"
	"testing"
)

// RefusedPort returns a loopback port that refuses connections for the
// rest of the test.
//
// A closed listener's port is not enough: another listener (this test
// binary's or another process's) may be given the port while the test
// still dials it. A socket bound there that never listens holds the port
// for the test (bound without SO_REUSEADDR, no listener can take it) and
// the kernel refuses every connection to it.
func RefusedPort(t testing.TB) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}
