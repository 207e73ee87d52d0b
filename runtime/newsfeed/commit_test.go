package newsfeed

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestPowerLossBeforeQueueSync: the group commit answers 239 once the
// spool is synced; the peers' queue files are synced only when the
// fan-out position moves. A power loss in between leaves the queue files
// as they were at their last sync, and the spool and fanout.pos as synced.
// Every article answered 239 must still reach the peer after the restart:
// those the queue files lost are routed again from the position.
//
// The position moves once (after the first round) and then not for an
// hour; the queue files are copied at that move, which is what a power
// loss leaves of them (the peer is down, and the second batch is sent only
// after the copy, so nothing else writes them meanwhile).
// The second batch is answered with its queue entries in no synced file.
func TestPowerLossBeforeQueueSync(t *testing.T) {
	forRuntimes(t, func(t *testing.T, rt string) {
		s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
		s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
		dir := t.TempDir()
		text := peerText("p", s, "connections = 1")
		h := startRelay(t, relayConfigRT(t, rt, dir, text), nil)
		spool := dir
		synced := filepath.Join(t.TempDir(), "backlog-at-sync")
		var moves atomic.Int32
		moved := make(chan struct{}, 1)
		h.r.com.every = time.Hour
		h.r.com.moved = func() { // the move's goroutine, after its syncs
			moves.Add(1)
			os.RemoveAll(synced)
			if err := os.CopyFS(synced, os.DirFS(filepath.Join(spool, "backlog"))); err != nil {
				t.Errorf("copy the synced backlog: %v", err)
			}
			moved <- struct{}{}
		}

		send := func(prefix string, n int) []string {
			arts := map[string][]byte{}
			var ids []string
			for i := range n {
				id := fmt.Sprintf("<%s%d@t>", prefix, i)
				ids = append(ids, id)
				arts[id] = testArticle(id, "misc.test", "up!x", 3)
			}
			got := dialIngest(t, h.r.Addr().String()).takethis(arts)
			for _, id := range ids {
				if got[id] != "239" {
					t.Fatalf("TAKETHIS %s: %q, want 239 (%v)", id, got[id], got)
				}
			}
			return ids
		}
		first := send("first", 20)
		select {
		case <-moved: // the copy is the queue files as synced, before the second batch
		case <-time.After(30 * time.Second):
			t.Fatal("the fan-out position never moved")
		}
		second := send("second", 20)
		if n := moves.Load(); n != 1 {
			t.Fatalf("the fan-out position moved %d times, want once (after the first round)", n)
		}

		// The power loss: the spool as synced (all of it: every article
		// was answered), the queue files as at their last sync. The relay
		// is abandoned, not stopped: a stop would sync the queues.
		after := filepath.Join(t.TempDir(), "after")
		if err := os.CopyFS(after, os.DirFS(spool)); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(after, "backlog")); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(filepath.Join(after, "backlog"), os.DirFS(synced)); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(after, "LOCK"))

		// The restarted relay feeds a second sink: the first relay runs
		// on (abandoned, its peer still down), and must not be the one
		// that delivers.
		s2 := nntptest.Start(t, nntptest.Options{Hostname: "sink2"})
		cfg := relayConfigRT(t, rt, t.TempDir(), peerText("p", s2, "connections = 1"))
		cfg.Spool = after
		h2 := startRelay(t, cfg, nil)
		h2.settle()
		for _, id := range append(first, second...) {
			if !s2.Has(id) {
				t.Errorf("%s was answered 239 and never reached the peer after the power loss", id)
			}
		}
		h2.checkStats()
	})
}

// TestQueueSyncFailureFreezesFanout: a peer's queue files cannot be made
// durable after the articles were answered 239 (here the queue is shut
// under the committer, as a failing disk would fail its Sync). The fan-out
// position must then stay where it was for the rest of the run, so the
// next start routes those articles to the peer again from the spool.
func TestQueueSyncFailureFreezesFanout(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
	dir := t.TempDir()
	h := startRelay(t, relayConfig(t, dir, peerText("p", s, "connections = 1")), nil)
	h.r.com.every = 0 // move after every round (one move at a time)
	sent := 0
	send := func(n int) []string {
		arts := map[string][]byte{}
		var ids []string
		for range n {
			id := fmt.Sprintf("<frozen%d@t>", sent)
			sent++
			ids = append(ids, id)
			arts[id] = testArticle(id, "misc.test", "up!x", 3)
		}
		got := dialIngest(t, h.r.Addr().String()).takethis(arts)
		for _, id := range ids {
			if got[id] != "239" {
				t.Fatalf("TAKETHIS %s: %q, want 239", id, got[id])
			}
		}
		return ids
	}
	ids := send(10)
	if err := h.r.peerList()[0].q.shutdown(h.r.now()); err != nil {
		t.Fatal(err)
	}
	// Rounds after the shutdown offer in vain; the first move after one
	// of them fails its Sync and freezes the position.
	for i := 0; !h.r.com.frozen(); i++ {
		if i == 200 {
			t.Fatal("the fan-out position never froze after the queue failed")
		}
		ids = append(ids, send(1)...)
		time.Sleep(5 * time.Millisecond)
	}
	ids = append(ids, send(5)...)
	h.stop()

	s2 := nntptest.Start(t, nntptest.Options{Hostname: "sink2"})
	h2 := startRelay(t, relayConfig(t, dir, peerText("p", s2, "connections = 1")), nil)
	h2.settle()
	for _, id := range ids {
		if !s2.Has(id) {
			t.Errorf("%s was answered 239 and never reached the peer after its queue failed", id)
		}
	}
}
