package newsget

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/poster"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// TestInterruptDuringDial: a download stopped while its connections are
// still being set up (the server accepted, its greeting not yet sent)
// ends as interrupted without logging a connection failure or a blocked
// server: the user's Ctrl-C is no fault of the server.
func TestInterruptDuringDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c // and never greet
		}
	}()
	r := newRun(t, ServerConfig{Name: "mute", Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, Connections: 1})
	r.cfg.ConnectTimeout = tomlconf.Duration(time.Minute)
	e := r.engine(t)
	defer e.Close()
	p := newPosting("Stopped.bin", 71, 20_000, 10_000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Download(ctx, []Job{{Name: "stopped.nzb", NZB: poster.NZB(p)}})
		done <- err
	}()
	c := <-accepted
	defer c.Close()
	cancel()
	err = <-done
	if err != nil && !strings.Contains(err.Error(), "interrupted") && !errors.Is(err, context.Canceled) {
		t.Fatalf("Download: %v", err)
	}
	for _, bad := range []string{"connection failed", "server blocked", "giving up"} {
		if strings.Contains(r.log.String(), bad) {
			t.Errorf("log after an interrupt has %q:\n%s", bad, r.log.String())
		}
	}
}
