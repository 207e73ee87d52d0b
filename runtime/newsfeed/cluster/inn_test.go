package cluster

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// TestClusterFeedsINN: two nodes on a 3-server NATS cluster (replicas 3)
// share one queue for a real INN; articles taken in by either node all
// reach innd, each once.
func TestClusterFeedsINN(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	inn := inntest.Start(t, inntest.Options{})
	e := startJetStream(t, 3)
	_, port, _ := strings.Cut(inn.Addr(), ":")
	var innPort int
	fmt.Sscan(port, &innPort)
	var nodes []*Node
	for _, name := range []string{"a", "b"} {
		cfg := nodeConfig(t, name, e.URLs(), 3, map[string]int{"inn": innPort}, "")
		nodes = append(nodes, startNode(t, cfg))
	}
	arts := [2]map[string][]byte{{}, {}}
	var ids []string
	for i := range 60 {
		id := fmt.Sprintf("<inn%d@cluster.test>", i)
		var b bytes.Buffer
		fmt.Fprintf(&b, "Path: origin.test!not-for-mail\nFrom: t@cluster.test\nNewsgroups: local.test\nSubject: %d\n", i)
		fmt.Fprintf(&b, "Date: %s\nMessage-ID: %s\n\nbody of %d\n", time.Now().UTC().Format(time.RFC1123Z), id, i)
		arts[i%2][id] = b.Bytes()
		ids = append(ids, id)
	}
	for i, n := range nodes {
		for id, code := range takeThis(t, n.Addr().String(), arts[i]) {
			if code != 239 {
				t.Errorf("node %d: %s answered %d, want 239", i, id, code)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, id := range ids {
		for !inn.HasArticle(id) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		if !inn.HasArticle(id) {
			t.Errorf("innd lacks %s", id)
		}
	}
	// The queue drains: every entry answered, by one node or the other.
	// The acks settle at the servers after innd has the articles; the
	// drain has a bound of its own (the one above may be used up by a
	// loaded machine's grephistory runs).
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		st := nodes[0].Status(ctx)
		if st.Peers[0].Queued == 0 {
			var accepted int64
			for _, n := range nodes {
				accepted += n.Status(ctx).Peers[0].Accepted
			}
			if accepted != int64(len(ids)) {
				t.Errorf("innd accepted %d articles from the nodes, want %d (each once)", accepted, len(ids))
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("the queue for innd never drained")
}
