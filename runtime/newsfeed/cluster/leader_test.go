package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestPublishOverLeaderMove: a shard's stream without a leader for a
// moment (stepped down, as after a server's death or at a cluster's
// start) answers publishes "no responders"; every article published
// meanwhile is still stored, none refused, none lost (a refusal would
// close the upstream's TAKETHIS connection). A head whose first
// acknowledgement was lost (sent to the old leader) may come back
// ErrDuplicate, refused by its own first copy: it must be stored too.
func TestPublishOverLeaderMove(t *testing.T) {
	e := startJetStream(t, 3)
	connect := func(i int) *nats.Conn { return connectPreferring(t, e, i) }
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
	dups := 0
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
			err := p.Wait(ctx)
			if errors.Is(err, ErrDuplicate) {
				dups++
				continue
			}
			if err != nil {
				t.Fatalf("round %d: article %d of %d not stored: %v", round, i, len(ps), err)
			}
		}
	}
	for _, id := range ids {
		if body, err := getApplied(ctx, s, id); err != nil || string(body) != "body "+id+"\r\n.\r\n" {
			t.Fatalf("Get %s = %q, %v", id, body, err)
		}
	}
	t.Logf("%d articles stored, %d of them answered duplicate (their first acknowledgement lost)", len(ids), dups)
}

// TestNodeTakesOverLeaderMove: a node whose shard streams lose their
// leaders (stepped down) just before a TAKETHIS stream answers every
// article on the same connection, and stores them all; before issue
// #10's fix the first article drew "400 Cannot store articles now" and
// the connection closed. 439 is allowed for an article that is stored
// (its first publish's acknowledgement lost, see publish.go).
func TestNodeTakesOverLeaderMove(t *testing.T) {
	e := startJetStream(t, 3)
	n := startNode(t, nodeConfig(t, "n1", e.URLs(), 3, nil, ""))
	arts := map[string][]byte{}
	for i := range 200 {
		id, a := testArticle(i, 1000)
		arts[id] = a
	}
	for i := range n.store.shards {
		if _, err := n.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+n.store.shardStream(i), nil, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	got := takeThis(t, n.Addr().String(), arts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for id := range arts {
		if got[id] != 239 && got[id] != 439 {
			t.Errorf("TAKETHIS %s: %d, want 239", id, got[id])
			continue
		}
		if _, err := getApplied(ctx, n.store, id); err != nil {
			t.Errorf("%d for %s, but: %v", got[id], id, err)
		}
	}
}
