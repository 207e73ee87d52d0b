package newsfeed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/newsflow/newsflow/runtime/drive"
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

// TestCorruptLargeArticleNotSent is TestCorruptArticleSettledMissing for
// articles larger than drive.SmallBody, which leave from a buffer the
// send path reads and CRC-checks (spoolBodies.BodyBuffer), on both
// runtimes: a byte flipped in one article's segment file after it was
// stored keeps that article from the peer (it is settled as missing), and
// every other article arrives intact.
func TestCorruptLargeArticleNotSent(t *testing.T) {
	forRuntimes(t, func(t *testing.T, rt string) {
		s := nntptest.Start(t, nntptest.Options{Hostname: "sink", KeepReceived: true})
		down := s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "down", Close: true})
		dir := t.TempDir()
		h := startRelay(t, relayConfigRT(t, rt, dir, peerText("p", s, "connections = 2")), nil)
		const n, bad = 12, "<big5@t>"
		var arts [][]byte
		for i := range n {
			a := testArticle(fmt.Sprintf("<big%d@t>", i), "misc.test", "up!x", 1500) // about 110 KB
			if len(a) <= drive.SmallBody {
				t.Fatalf("article of %d bytes: not larger than drive.SmallBody", len(a))
			}
			arts = append(arts, a)
		}
		if res := h.r.Inject(context.Background(), arts); res.Accepted != n {
			t.Fatalf("inject: %s", res)
		}
		flipInSpool(t, dir, []byte("body line 777 of "+bad))
		s.RemoveFault(down)
		h.settle()
		ps, _ := h.r.PeerStats("p")
		// The connection that met the damaged article failed; articles
		// the peer took before it ended without their answer being read
		// are offered again and refused as duplicates (438 to CHECK, 439
		// to TAKETHIS); the sink's store below shows each arrived.
		if ps.Accepted+ps.Refused+ps.Rejected != n-1 || ps.Missing != 1 {
			t.Errorf("%s; want %d accepted (or refused as duplicates) and the damaged one missing", ps.Line(), n-1)
		}
		if s.Has(bad) {
			t.Error("the damaged article reached the peer")
		}
		for i := range n {
			id := fmt.Sprintf("<big%d@t>", i)
			if id == bad {
				continue
			}
			got, ok := s.ArticleBytes(id)
			if !ok {
				t.Errorf("%s did not reach the peer", id)
			} else if !bytes.Contains(got, []byte("body line 1499 of "+id)) || bytes.Contains(got, []byte("Xody line")) {
				t.Errorf("%s reached the peer damaged or cut (%d bytes)", id, len(got))
			}
		}
		h.checkStats()
	})
}

// flipInSpool overwrites the first byte of the last place mark occurs in
// the spool's segment files with 'X', as a disk error would.
func flipInSpool(t *testing.T, dir string, mark []byte) {
	t.Helper()
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
			defer f.Close()
			if _, err := f.WriteAt([]byte("X"), int64(i)); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("%q not found in the spool files %v", mark, files)
}
