package newsget

import (
	"strings"
	"syscall"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// refusedPort is a loopback port that refuses connections for the rest
// of the test.
//
// A closed listener's port is not enough: another listener (this test
// binary's or another process's) may be given the port while the test
// still dials it. A socket bound there that never listens holds the port
// for the test (bound without SO_REUSEADDR, no listener can take it) and
// the kernel refuses every connection to it.
func refusedPort(t *testing.T) int {
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

// TestUnreachableServersStopTheRun: servers that never connect are given
// up after MaxStartFailures blocks in a row (not the longer
// MaxServerFailures of a server that worked), and the run stops with a
// reason naming each server and its error.
func TestUnreachableServersStopTheRun(t *testing.T) {
	a := ServerConfig{Name: "first", Host: "127.0.0.1", Port: refusedPort(t), Connections: 2}
	b := ServerConfig{Name: "second", Host: "127.0.0.1", Port: refusedPort(t), Connections: 1, Level: 1}
	r := newRun(t, a, b)
	r.opts.MaxServerFailures = 1000
	r.opts.MaxStartFailures = 3
	sum := r.run(t, poster.NZB(newPosting("a.bin", 1, 3000, 1000)))
	if sum.Complete() || sum.Fatal == "" {
		t.Fatalf("the run did not stop: %+v", sum)
	}
	for _, want := range []string{"no usable server left", "first: 3 failures in a row, never connected (connect 127.0.0.1:",
		"second: 3 failures in a row, never connected (connect 127.0.0.1:", "connection refused"} {
		if !strings.Contains(sum.Fatal, want) {
			t.Errorf("reason %q does not say %q", sum.Fatal, want)
		}
	}
}
