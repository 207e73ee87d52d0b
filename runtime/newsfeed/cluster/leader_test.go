package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestPublishOverLeaderMove: a shard's stream without a leader for a
// moment (stepped down, as after a server's death or at a cluster's
// start) answers publishes "no responders"; every article published
// meanwhile is still stored, none refused, none lost (issue #10: the
// upstream's TAKETHIS connection was closed on it).
func TestPublishOverLeaderMove(t *testing.T) {
	e, err := StartEmbedded(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	if err := e.WaitJetStream(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	urls := e.URLs()
	connect := func(i int) *nats.Conn {
		t.Helper()
		order := append([]string{urls[i]}, slices.Delete(slices.Clone(urls), i, i+1)...)
		nc, err := Connect(ConnectOptions{URLs: order, InOrder: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := OpenStore(ctx, connect(0), Settings{Name: "t", Node: "n1", Shards: 1, Replicas: 3,
		ReserveTTL: time.Minute, AckWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PublishOn(ctx, connect(0), connect(1), connect(2)); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for round := range 3 {
		// Step the leader down, and publish at once, as fast as the
		// connection goes, while the stream elects another.
		if _, err := s.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+s.shardStream(0), nil, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		var ps []*Pending
		for i := range 300 {
			id := "<move" + itoa(round) + "." + itoa(i) + "@test>"
			p, err := s.Publish(id, []byte("body "+id+"\r\n.\r\n"), nil)
			if err != nil {
				t.Fatalf("Publish %s: %v", id, err)
			}
			ps = append(ps, p)
			ids = append(ids, id)
		}
		for i, p := range ps {
			if err := p.Wait(ctx); err != nil {
				t.Fatalf("round %d: article %d of %d not stored: %v", round, i, len(ps), err)
			}
		}
	}
	for _, id := range ids {
		if body, err := getApplied(ctx, s, id); err != nil || string(body) != "body "+id+"\r\n.\r\n" {
			t.Fatalf("Get %s = %q, %v", id, body, errors.Join(err))
		}
	}
}
