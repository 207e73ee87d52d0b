package newsget

import (
	"strings"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestUnreachableServersStopTheRun: servers that never connect are given
// up after MaxStartFailures blocks in a row (not the longer
// MaxServerFailures of a server that worked), and the run stops with a
// reason naming each server and its error.
func TestUnreachableServersStopTheRun(t *testing.T) {
	a := ServerConfig{Name: "first", Host: "127.0.0.1", Port: nntptest.RefusedPort(t), Connections: 2}
	b := ServerConfig{Name: "second", Host: "127.0.0.1", Port: nntptest.RefusedPort(t), Connections: 1, Level: 1}
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
