package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestWaitAllForgets: when a wait fails (here the caller's context ends
// while no acknowledgement comes), the publishes not yet waited for leave
// the waiting table too: nobody will wait for them, and an
// acknowledgement that never comes (its server died) would keep them
// there for good.
func TestWaitAllForgets(t *testing.T) {
	s, _ := testStore(t, Settings{Shards: 1, Replicas: 1})
	// A subscriber that never answers: the publishes are taken (no "no
	// responders") and never acknowledged.
	sub, err := s.nc.SubscribeSync("swallow.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	p, err := newPublisher(s.nc)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	var ws []*ackWait
	for range 3 {
		w, err := p.publish(&nats.Msg{Subject: "swallow.part", Data: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.waitAll(ctx, ws); !errors.Is(err, context.Canceled) {
		t.Fatalf("waitAll with its context ended = %v, want context.Canceled", err)
	}
	p.mu.Lock()
	left := len(p.waiting)
	p.mu.Unlock()
	if left != 0 {
		t.Errorf("%d publishes still wait for an acknowledgement after waitAll failed, want 0", left)
	}
}
