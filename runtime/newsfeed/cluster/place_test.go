package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestPublishNearLeader: with one publishing connection per NATS server,
// each shard's heads go through the connection to the server that leads
// the shard's stream, and again after the leader moved (stepped down)
// and Place asked anew; articles are stored either way.
func TestPublishNearLeader(t *testing.T) {
	e := startJetStream(t, 3)
	connect := func(i int) *nats.Conn { return connectPreferring(t, e, i) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := OpenStore(ctx, connect(0), Settings{Name: "t", Node: "n1", Shards: 3, Replicas: 3,
		ReserveTTL: time.Minute, AckWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PublishOn(ctx, connect(0), connect(1), connect(2)); err != nil {
		t.Fatal(err)
	}
	wantNear := func(when string) {
		t.Helper()
		for i, st := range s.shards {
			info, err := st.Info(ctx)
			if err != nil || info.Cluster == nil {
				t.Fatalf("%s: stream info of shard %d: %v", when, i, err)
			}
			if got := s.pubFor(i).nc.ConnectedServerName(); got != info.Cluster.Leader {
				t.Errorf("%s: shard %d publishes through %s, its leader is %s", when, i, got, info.Cluster.Leader)
			}
		}
	}
	wantNear("at start")
	// Move shard 0's leader: step it down and wait for another.
	info, err := s.shards[0].Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := info.Cluster.Leader
	if _, err := s.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+s.shardStream(0), nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for {
		info, err = s.shards[0].Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" && info.Cluster.Leader != old {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("shard 0's leader %s did not move", old)
		case <-time.After(100 * time.Millisecond):
		}
	}
	s.Place(ctx)
	wantNear("after the leader moved")
	for i := range 30 {
		id := "<near" + itoa(i) + "@test>"
		if err := s.Put(ctx, id, []byte("body "+id+"\r\n.\r\n"), nil); err != nil {
			t.Fatalf("Put %s: %v", id, err)
		}
		if body, err := getApplied(ctx, s, id); err != nil || string(body) != "body "+id+"\r\n.\r\n" {
			t.Fatalf("Get %s = %q, %v", id, body, err)
		}
	}
}
