package newsfeed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestLostReplayFileReported deletes the replay file a peer's checkpoint
// names while the relay is down (issue 16, finding 6: 55,270 acknowledged
// articles went silently): the next start counts the lost file in the
// peer's stats.
func TestLostReplayFileReported(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	dir := t.TempDir()
	text := peerText("p", s, "connections = 1")
	h := startRelay(t, relayConfig(t, dir, text), nil)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	// What the queue leaves while it replays p.P, once p.P is deleted.
	if err := os.WriteFile(filepath.Join(dir, "backlog", "p.P.ckpt"), []byte("4096\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h2 := startRelay(t, relayConfig(t, dir, text), nil)
	ps, _ := h2.r.PeerStats("p")
	if ps.LostFiles != 1 {
		t.Errorf("lost files = %d, want 1\n%s", ps.LostFiles, ps.Line())
	}
	if _, err := os.Stat(filepath.Join(dir, "backlog", "p.P.ckpt")); !os.IsNotExist(err) {
		t.Errorf("checkpoint of the lost file still there: %v", err)
	}
}
