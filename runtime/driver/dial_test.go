package driver

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// A refused connect says the address once and the reason, and keeps the
// cause for errors.Is.
func TestDialErrorSaysAddressOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = Dial(context.Background(), addr, 5*time.Second, nil)
	if err == nil {
		t.Fatal("dial of a closed port succeeded")
	}
	if got, want := err.Error(), "dial "+addr+": connection refused"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	var de *DialError
	if !errors.As(err, &de) || de.Step != "dial" || de.Addr != addr {
		t.Errorf("error %#v is not a DialError of the dial step for %s", err, addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("errors.Is(%v, ECONNREFUSED) = false", err)
	}
}
