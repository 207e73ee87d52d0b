package goroutine

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/recorder"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// update rewrites the golden INN transcripts from a live INN:
//
//	go test ./runtime/goroutine/ -run INN -update
var update = flag.Bool("update", false, "rewrite machine/handshake/testdata/inn_*.txt from a live INN")

// goldenDir is where the handshake machine's transcripts live; its
// TestTranscripts replays every file there, INN's included.
const goldenDir = "../../machine/handshake/testdata"

// innCase is one session against a real INN, with the header comments its
// golden transcript carries (see machine/handshake/transcript_test.go).
type innCase struct {
	golden  string
	about   string
	config  string // the "# config:" words
	cfg     handshake.Config
	session *proto.Command // run a Session after the handshake (on innd)
}

var innCases = []innCase{
	{
		golden: "inn_transit_stream.txt",
		about:  "INN 2.7.1 innd on its feed port: CAPABILITIES, then MODE STREAM (RFC 4644 §2.3).",
		config: "stream",
		cfg:    handshake.Config{Stream: true},
	},
	{
		golden: "inn_mode_reader.txt",
		about: "INN 2.7.1 innd, a reader client: MODE READER hands the connection to nnrpd,\n" +
			"whose greeting-like answer and CAPABILITIES follow (RFC 3977 §5.3).",
		config: "reader",
		cfg:    handshake.Config{Reader: true},
	},
	{
		golden: "inn_starttls_unconfigured.txt",
		about: "INN 2.7.1 nnrpd (after MODE READER) advertises STARTTLS but has no\n" +
			"certificate configured: TLS wanted if offered, so the session goes on in plaintext.",
		config: "reader tls=offered",
		cfg:    handshake.Config{Reader: true, TLS: handshake.TLSIfOffered},
	},
	{
		golden: "inn_session_401.txt",
		about: "INN 2.7.1 innd after a handshake that asked for nothing: a reader command\n" +
			"draws 401 MODE-READER; the Session sends MODE READER, asks CAPABILITIES\n" +
			"again and retries the command, now answered by nnrpd.",
		config:  "",
		session: &proto.Command{Verb: "GROUP", Args: []string{"local.test"}},
	},
}

// normalize replaces what differs between hosts and runs: the instance's
// path host and the machine's host name.
func normalize(tr transcript.Transcript, names ...string) transcript.Transcript {
	out := make(transcript.Transcript, 0, len(tr))
	for _, e := range tr {
		if e.Kind == transcript.Data {
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

func TestINN(t *testing.T) {
	inntest.MustRecord(t, *update, "-update")
	srv := inntest.Start(t, inntest.Options{}) // skips when INN is missing
	host, _ := os.Hostname()
	for _, tc := range innCases {
		t.Run(tc.golden, func(t *testing.T) {
			rec := recorder.NewRecorder(dial(t, srv.Addr()), transcript.Client)
			conn := New(rec, Options{})
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			h := handshake.New(time.Now(), tc.cfg)
			ev := &events{next: h.NextEvent}
			if err := conn.Run(ctx, h, ev.step); err != nil {
				t.Fatalf("handshake with INN: %v", err)
			}
			if len(ev.list) != 1 {
				t.Fatalf("events %v", ev.list)
			}
			ready, ok := ev.list[0].(handshake.Ready)
			if !ok {
				t.Fatalf("handshake with INN: %v", ev.list[0])
			}
			want := ready.String()
			switch {
			case tc.cfg.Stream && !ready.Streaming:
				t.Errorf("innd did not accept MODE STREAM: %v", ready)
			case tc.cfg.Reader && !ready.Reader:
				t.Errorf("no reader mode after MODE READER: %v", ready)
			}
			if tc.session != nil {
				s := handshake.NewSession(time.Now(), tc.cfg, *tc.session)
				ev = &events{next: s.NextEvent}
				if err := conn.Run(ctx, s, ev.step); err != nil {
					t.Fatalf("session with INN: %v", err)
				}
				done, ok := ev.list[0].(handshake.Done)
				if !ok || done.Response.Code != proto.CodeGroupSelected || !done.ModeReader {
					t.Fatalf("session with INN: %v, want 211 after MODE READER", ev.list)
				}
				want += fmt.Sprintf("; Done %d mode-reader", done.Response.Code)
			}
			live := normalize(rec.Transcript(), srv.PathHost(), host)

			// The live session replays against a fresh machine.
			if err := replayINN(live, tc); err != nil {
				t.Fatalf("replaying the live INN session: %v\n%s", err, live)
			}

			var head transcript.Transcript
			for _, l := range strings.Split(tc.about, "\n") {
				head = append(head, transcript.Entry{Kind: transcript.Comment, Text: l})
			}
			head = append(head,
				transcript.Entry{Kind: transcript.Comment, Text: "Recorded from a live INN by runtime/goroutine's TestINN -update; host names normalised."},
			)
			if tc.session != nil {
				head = append(head, transcript.Entry{Kind: transcript.Comment, Text: "then: " + tc.session.String()})
			}
			head = append(head,
				transcript.Entry{Kind: transcript.Comment, Text: strings.TrimSpace("config: " + tc.config)},
				transcript.Entry{Kind: transcript.Comment, Text: "want: " + want},
			)
			text, err := transcript.Format(append(head, live...))
			if err != nil {
				t.Fatal(err)
			}
			inntest.Golden{Path: filepath.Join(goldenDir, tc.golden), Update: *update, Flag: "-update"}.Check(t, text)
		})
	}
}

// replayINN replays a transcript of an innCase: the handshake part, then
// the session part from its command on.
func replayINN(tr transcript.Transcript, tc innCase) error {
	if tc.session == nil {
		return transcript.Replay(handshake.New(transcript.Epoch, tc.cfg), tr, transcript.Options{})
	}
	first := tc.session.String() + "\r\n"
	for i, e := range tr {
		if e.Kind == transcript.Data && e.Side == transcript.Client && string(e.Data) == first {
			if err := transcript.Replay(handshake.New(transcript.Epoch, tc.cfg), tr[:i], transcript.Options{}); err != nil {
				return fmt.Errorf("handshake part: %w", err)
			}
			return transcript.Replay(handshake.NewSession(transcript.Epoch, tc.cfg, *tc.session), tr[i:], transcript.Options{})
		}
	}
	return fmt.Errorf("the session's command %q is not in the transcript", first)
}
