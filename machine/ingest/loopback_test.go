package ingest

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/transcript"
)

// TestLoopback drives an Ingest over a real loopback TCP connection with
// the goroutine runtime: a peer writes the whole test session at once and
// reads until the server closes; it must read exactly what the machine
// answers when the session is given to it directly, and the recorded
// transcript must replay.
func TestLoopback(t *testing.T) {
	cfg := Config{PathHost: "relay.example", MaxArticleSize: 600}
	// Without DATE, whose answer is the runtime's wall clock.
	in := strings.Replace(session, "DATE\r\n", "", 1)
	want := drive(cfg, "want all, store ok", [][]byte{[]byte(in)})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln, done := serveIngest(t, ctx, cfg)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second)) // a hang fails instead of blocking
	go c.Write([]byte(in))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Out, string(got)); diff != "" {
		t.Errorf("over loopback (-direct +loopback):\n%s", diff)
	}
	s := <-done
	if s.err != nil {
		t.Errorf("runtime: %v", s.err)
	}
	tr := append(transcript.Transcript{
		{Kind: transcript.Comment, Text: "owner: want all, store ok"},
		{Kind: transcript.Comment, Text: "config: pathhost=relay.example maxsize=600"},
	}, s.rec.Transcript()...)
	if _, err := replay(tr, nil); err != nil {
		t.Errorf("the loopback recording does not replay: %v", err)
	}
}
