package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestRedeliveredRejectRefused: a 439 to an entry JetStream delivers
// again counts as refused, as a resend does in the relay; a 439 to a
// first delivery counts as rejected. The peer defers <c1@cluster.test>
// (431 to CHECK: the entry is delivered again) and then answers its
// TAKETHIS 439, as INN does for an article it took meanwhile;
// <c2@cluster.test> it answers 439 at the first TAKETHIS.
func TestRedeliveredRejectRefused(t *testing.T) {
	e, err := StartEmbedded(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	peer := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	peer.SetRule(nntptest.Sequence(map[string][]nntptest.Verdict{
		"<c1@cluster.test>": {nntptest.Defer, nntptest.Reject},
		"<c2@cluster.test>": {nntptest.Reject},
	}, nntptest.Want))
	n := startNode(t, nodeConfig(t, "a", e.URLs(), 1, map[string]int{"sink": peer.Port()}, ""))
	arts := map[string][]byte{}
	for i := range 4 {
		id, a := testArticle(i, 2000)
		arts[id] = a
	}
	for id, code := range takeThis(t, n.Addr().String(), arts) {
		if code != 239 {
			t.Fatalf("%s: answer %d, want 239", id, code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type counts struct{ Accepted, Refused, Rejected, Deferred int64 }
	want := counts{Accepted: 2, Refused: 1, Rejected: 1, Deferred: 1}
	var got counts
	for {
		st := n.Status(ctx)
		p := st.Peers[0]
		got = counts{p.Accepted, p.Refused, p.Rejected, p.Deferred}
		if got == want && p.Queued == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("peer counts (-want +got):\n%s", cmp.Diff(want, got))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
