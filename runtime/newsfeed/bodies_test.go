package newsfeed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestCorruptArticleSettledMissing: a stored article whose bytes were
// damaged on disk (its CRC no longer matches) fails the connection that
// tried to send it once; after that it is settled as missing and every
// other article reaches the peer, instead of the connection failing on it
// forever.
func TestCorruptArticleSettledMissing(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Hostname: "sink"})
	down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
	dir := t.TempDir()
	h := startRelay(t, relayConfig(t, dir, peerText("p", s, "connections = 1")), nil)
	var arts [][]byte
	for i := range 10 {
		arts = append(arts, testArticle(fmt.Sprintf("<c%d@t>", i), "misc.test", "up!x", 10))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != 10 {
		t.Fatalf("inject: %s", res)
	}
	// Damage one byte of <c4@t>'s body in its segment file.
	mark := []byte("body line 5 of <c4@t>")
	damaged := false
	files, _ := filepath.Glob(filepath.Join(dir, "spool", "spool", "*"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		if i := bytes.LastIndex(data, mark); i >= 0 {
			f, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("X"), int64(i)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			damaged = true
		}
	}
	if !damaged {
		t.Fatalf("article <c4@t> not found in the spool files %v", files)
	}
	s.RemoveFault(down)
	h.settle()
	ps, _ := h.r.PeerStats("p")
	if ps.Accepted != 9 || ps.Missing != 1 {
		t.Errorf("%s; want 9 accepted and the damaged one missing", ps.Line())
	}
	if s.Has("<c4@t>") {
		t.Error("the damaged article reached the peer")
	}
	h.checkStats()
}
