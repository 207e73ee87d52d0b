package feed

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// update rewrites testdata/inn_stream.txt from a live INN:
//
//	go test ./machine/feed/ -run INN -update
var update = flag.Bool("update", false, "rewrite testdata/inn_stream.txt from a live INN")

const innGolden = "testdata/inn_stream.txt"

// innCount is how many articles the INN session streams.
const innCount = 200

// normalize replaces what differs between hosts and runs (INN's path host,
// the machine's name) in the server's lines.
func normalize(tr transcript.Transcript, names ...string) transcript.Transcript {
	out := make(transcript.Transcript, 0, len(tr))
	for _, e := range tr {
		if e.Kind == transcript.Data && e.Side == transcript.Server {
			d := string(e.Data)
			for _, n := range names {
				if n != "" {
					d = strings.ReplaceAll(d, n, "inn.example")
				}
			}
			e.Data = []byte(d)
		}
		out = append(out, e)
	}
	return out
}

// TestINNStream streams 200 articles into a private innd through the
// handshake and the Feed on runtime/goroutine, checks that INN stores each,
// replays the recorded session against fresh machines and compares it with
// testdata/inn_stream.txt (which TestTranscripts replays without INN).
func TestINNStream(t *testing.T) {
	inntest.MustRecord(t, *update, "-update")
	srv := inntest.Start(t, inntest.Options{}) // skips when INN is missing
	arts := innArticles(innCount)
	r := runFeed(t, srv.Addr(), handshake.Config{Stream: true}, Config{}, arts, true)
	if r.runErr != nil {
		t.Fatalf("Run: %v", r.runErr)
	}
	if !r.ready.Streaming {
		t.Fatalf("innd did not stream: %v", r.ready)
	}
	// 149 wanted articles take innfeed's filter over 95%: the rest go
	// without CHECK.
	want := tally{Accepted: innCount, Closed: ReasonQuit, ModeChanges: []string{"check->takethis"}}
	if d := cmp.Diff(want, count(r.events)); d != "" {
		t.Fatalf("outcomes (-want +got):\n%s\n%s", d, summarize(r.events))
	}
	accountedFor(t, arts, r.events)
	for _, a := range arts {
		if !srv.HasArticle(a.MessageID) {
			t.Errorf("INN does not have %s", a.MessageID)
		}
	}

	host, _ := os.Hostname()
	live := normalize(r.rec.Transcript(), srv.PathHost(), host)
	// The owner's Close happened just before QUIT; the replay does it there.
	var body transcript.Transcript
	for _, e := range live {
		if e.Kind == transcript.Data && e.Side == transcript.Client && string(e.Data) == "QUIT\r\n" {
			body = append(body, transcript.Entry{Kind: transcript.Comment, Text: "do: close"})
		}
		body = append(body, e)
	}
	head := transcript.Transcript{
		{Kind: transcript.Comment, Text: fmt.Sprintf("INN 2.7.1 innd on its feed port: the handshake (CAPABILITIES, MODE STREAM), then %d articles", innCount)},
		{Kind: transcript.Comment, Text: "streamed with CHECK/TAKETHIS in a window of 100 (TAKETHIS only once 149 were wanted,"},
		{Kind: transcript.Comment, Text: "innfeed's no-CHECK mode), then QUIT (RFC 4644, RFC 3977 §5.4)."},
		{Kind: transcript.Comment, Text: "Recorded from a live INN by machine/feed's TestINNStream -update; host names normalised."},
		{Kind: transcript.Comment, Text: "handshake: stream"},
		{Kind: transcript.Comment, Text: "split: whole"},
		{Kind: transcript.Comment, Text: fmt.Sprintf("articles: inn %d", innCount)},
		{Kind: transcript.Comment, Text: "config:"},
		{Kind: transcript.Comment, Text: "tally: " + count(r.events).String()},
	}
	full := append(head, body...)
	text, err := transcript.Format(full)
	if err != nil {
		t.Fatal(err)
	}
	// The live session replays against fresh machines.
	parsed, err := transcript.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	s, err := readHeader(parsed)
	if err != nil {
		t.Fatal(err)
	}
	for name, split := range map[string]func([]byte) [][]byte{"whole": transcript.Whole, "bytes": transcript.Chunks(1)} {
		got, err := replayFeed(parsed, s, split)
		if err != nil {
			t.Fatalf("replaying the live session (%s): %v", name, err)
		}
		if got != s.tally {
			t.Fatalf("replaying the live session (%s): events differ:\n%s\nwant\n%s", name, got, s.tally)
		}
	}
	// How the two directions interleave depends on how reads were split:
	// each side is compared in its own order.
	inntest.Golden{Path: innGolden, Update: *update, Flag: "-update", Skeleton: inntest.BySide(inntest.Skeleton)}.Check(t, text)
}

// BenchmarkINN streams b.N articles into a fresh private innd (skipped
// without INN); innd is the limit. Run with a fixed count, e.g.
// -bench INN -benchtime=5000x.
func BenchmarkINN(b *testing.B) {
	arts := innArticles(b.N)
	srv := inntest.Start(b, inntest.Options{})
	b.ResetTimer()
	r := runFeed(b, srv.Addr(), handshake.Config{Stream: true}, Config{}, arts, false)
	b.StopTimer()
	if c := count(r.events); c.Accepted != b.N {
		b.Fatalf("outcomes %v", c)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "articles/s")
}
