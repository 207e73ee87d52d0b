package ingest

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/goroutine"
	"github.com/newsflow/newsflow/runtime/recorder"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// update rewrites the recorded INN transcripts:
//
//	go test ./machine/ingest/ -run Innfeed -update
var update = flag.Bool("update", false, "rewrite testdata/innfeed_*.txt from a live INN")

// innArticles is how many articles each recording carries.
const innArticles = 12

// innArticle is a 2 KB article in native form (LF line ends) for INN.
func innArticle(id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Path: upstream.example!not-for-mail\nFrom: Poster <poster@example.com>\n"+
		"Newsgroups: local.test\nSubject: ingest recording %s\nDate: Fri, 31 Dec 1999 12:00:00 +0000\n"+
		"Message-ID: %s\n\n", id, id)
	for i := 0; i < 26; i++ {
		fmt.Fprintf(&b, "line %02d of %s: the quick brown fox jumps over the lazy dog\n", i, id)
	}
	b.WriteString(".a line that begins with a dot\n.\n..\nlast line\n")
	return b.String()
}

// postToINN offers the articles to srv with IHAVE, so that INN stores them
// and innfeed can send them on.
func postToINN(t *testing.T, srv *inntest.Server, ids []string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", srv.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute)) // a wedged INN fails instead of hanging
	r := bufio.NewReader(c)
	line := func() string {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("INN: read: %v", err)
		}
		return strings.TrimRight(l, "\r\n")
	}
	if g := line(); !strings.HasPrefix(g, "200") {
		t.Fatalf("INN greeting %q", g)
	}
	for _, id := range ids {
		fmt.Fprintf(c, "IHAVE %s\r\n", id)
		if resp := line(); !strings.HasPrefix(resp, "335") {
			t.Fatalf("IHAVE %s: %q", id, resp)
		}
		c.Write(proto.ToWire([]byte(innArticle(id)))) // CRLF, stuffed, terminated
		if resp := line(); !strings.HasPrefix(resp, "235") {
			t.Fatalf("IHAVE %s: %q", id, resp)
		}
	}
	fmt.Fprintf(c, "QUIT\r\n")
}

// served is what one accepted connection left: its recording, the owner
// and how the runtime's Run ended.
type served struct {
	rec *recorder.Recorder
	o   *owner
	err error
}

// serveIngest accepts connections on a loopback listener and drives an
// Ingest on each with the goroutine runtime, recording the session.
func serveIngest(t *testing.T, ctx context.Context, cfg Config) (net.Listener, <-chan served) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan served, 8)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				rec := recorder.NewRecorder(nc, transcript.Server)
				conn := goroutine.New(rec, goroutine.Options{})
				o, _ := parseOwner("want new, store ok")
				m := &ownedConn{Ingest: New(time.Now(), cfg), o: o}
				err := conn.Run(ctx, m, nil)
				conn.Close()
				out <- served{rec: rec, o: o, err: err}
			}()
		}
	}()
	return ln, out
}

// normalize replaces what differs between hosts and runs: INN's path host.
func normalize(tr transcript.Transcript, pathHost string) transcript.Transcript {
	out := make(transcript.Transcript, 0, len(tr))
	for _, e := range tr {
		if e.Kind == transcript.Data {
			e.Data = []byte(strings.ReplaceAll(string(e.Data), pathHost, "inn.example"))
		}
		out = append(out, e)
	}
	return out
}

// TestInnfeedRecording has INN 2.7's innfeed (batch mode, one connection)
// feed articles to an Ingest over loopback, checks that every article
// arrived intact, and replays the recorded session against a fresh
// machine. With -update it stores the recordings as testdata transcripts,
// which TestTranscripts replays without INN; without, it holds each side of
// the recording to its golden.
func TestInnfeedRecording(t *testing.T) {
	inntest.MustRecord(t, *update, "-update")
	srv := inntest.Start(t, inntest.Options{}) // skips when INN is missing
	cases := []struct {
		golden, about string
		noStreaming   bool
	}{
		{"innfeed_stream.txt", "streaming: MODE STREAM, CHECK, TAKETHIS (RFC 4644)", false},
		{"innfeed_ihave.txt", "without streaming: IHAVE (RFC 3977 §6.3.2)", true},
	}
	for i, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			var ids []string
			for n := 0; n < innArticles; n++ {
				ids = append(ids, fmt.Sprintf("<innfeed.%d.%d@upstream.example>", i, n))
			}
			postToINN(t, srv, ids)
			batch, err := srv.BatchLines(ids)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cfg := Config{PathHost: "relay.example"}
			ln, done := serveIngest(t, ctx, cfg)
			res, err := srv.RunInnfeed(ctx, batch, inntest.InnfeedOptions{Addr: ln.Addr().String(), Connections: 1, NoStreaming: tc.noStreaming})
			if err != nil {
				t.Fatal(err)
			}
			if res.Unsent != 0 {
				t.Errorf("innfeed left %d articles unsent; log:\n%s", res.Unsent, res.Log)
			}
			var s served
			select {
			case s = <-done:
			case <-ctx.Done():
				t.Fatal("the ingest connection did not end")
			}
			ln.Close()
			select {
			case extra := <-done:
				t.Errorf("innfeed opened a second connection: %v", extra.rec.Transcript())
			default:
			}
			if s.err != nil && !errors.Is(s.err, context.Canceled) {
				t.Logf("runtime: %v", s.err)
			}

			// Every article arrived, byte for byte as INN stores it.
			if len(s.o.stored) != innArticles {
				t.Fatalf("stored %d articles, want %d; session:\n%s", len(s.o.stored), innArticles, s.rec.Transcript())
			}
			for _, a := range s.o.stored {
				want, err := srv.Article(a.MessageID)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), strings.ReplaceAll(string(a.Data), "\r\n", "\n")); diff != "" {
					t.Errorf("%s differs from INN's copy (-INN +ingest):\n%s", a.MessageID, diff)
				}
				if got, want := a.Header.Path(), srv.PathHost()+"!upstream.example!not-for-mail"; got != want {
					t.Errorf("%s: Path %q, want %q", a.MessageID, got, want)
				}
			}

			// The recording, with INN's name normalised, is the test.
			head := transcript.Transcript{
				{Kind: transcript.Comment, Text: "Recorded: INN 2.7 innfeed (batch mode, one connection) " + tc.about + ","},
				{Kind: transcript.Comment, Text: "feeding newsflow's ingest machine over loopback through runtime/goroutine."},
				{Kind: transcript.Comment, Text: "INN's path host is replaced by inn.example. Regenerate with"},
				{Kind: transcript.Comment, Text: "go test ./machine/ingest/ -run Innfeed -update (needs INN, see runtime/testpeer/inntest)."},
				{Kind: transcript.Comment, Text: "owner: want new, store ok"},
				{Kind: transcript.Comment, Text: "config: pathhost=relay.example"},
				{Kind: transcript.Comment, Text: fmt.Sprintf("stored: %d", innArticles)},
			}
			tr := append(head, normalize(s.rec.Transcript(), srv.PathHost())...)
			if _, err := replay(tr, transcript.Whole); err != nil {
				t.Fatalf("the recording does not replay: %v\n%s", err, tr)
			}
			text, err := transcript.Format(tr)
			if err != nil {
				t.Fatal(err)
			}
			inntest.Golden{Path: filepath.Join("testdata", tc.golden), Update: *update, Flag: "-update", Skeleton: inntest.BySide(inntest.Skeleton)}.Check(t, text)
			t.Logf("innfeed: %d articles in %v; counters: %v", innArticles, res.Elapsed, s.o.log[len(s.o.log)-1])
		})
	}
}
