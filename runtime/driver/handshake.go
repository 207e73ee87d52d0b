package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/newsflow/newsflow/machine/handshake"
)

// ErrNoAnswer is Handshake's error when the run ended without Ready or
// Failed: the connection closed before the server was ready.
var ErrNoAnswer = errors.New("handshake: the connection ended before the server was ready")

// Handshake runs machine/handshake with cfg on d, a fresh connection, and
// stops when the server is ready, leaving the connection open for the next
// machine. It returns the Ready event and the bytes received beyond the
// handshake's last response, which the next machine must Receive first.
//
// On failure the connection is closed and the error is the machine's
// handshake.Failed (errors.As finds it: its Reason says whether waiting can
// mend it; its text begins "nntp handshake: "), or, when the machine did not
// say, the run's error wrapped as "handshake: ...", or ErrNoAnswer. Callers
// add who they are, not "handshake". now is the time of the start; the driver's
// clock gives the rest.
func Handshake(ctx context.Context, d Driver, now time.Time, cfg handshake.Config) (handshake.Ready, []byte, error) {
	h := handshake.New(now, cfg)
	var ready *handshake.Ready
	var failed error
	err := d.Run(ctx, h, func(time.Time) error {
		for {
			ev, ok := h.NextEvent()
			if !ok {
				return nil
			}
			switch e := ev.(type) {
			case handshake.Ready:
				ready = &e
				return ErrStop
			case handshake.Failed:
				failed = e
			}
		}
	})
	if ready != nil {
		return *ready, h.Leftover(), nil
	}
	d.Close()
	switch {
	case failed != nil:
		return handshake.Ready{}, nil, failed
	case err != nil:
		return handshake.Ready{}, nil, fmt.Errorf("handshake: %w", err)
	}
	return handshake.Ready{}, nil, ErrNoAnswer
}
