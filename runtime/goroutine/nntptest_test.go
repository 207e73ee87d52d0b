package goroutine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/recorder"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// recorded is the outcome of one handshake run through the runtime with a
// Recorder on the connection.
type recorded struct {
	events []handshake.Event
	runErr error
	tr     transcript.Transcript
}

// runRecorded dials addr, wraps the connection in a Recorder (with time
// markers when timed), and runs a handshake with cfg to its end.
func runRecorded(t *testing.T, addr string, cfg handshake.Config, tlsCfg *tls.Config, timed bool) recorded {
	t.Helper()
	var ropts []recorder.RecorderOption
	if timed {
		ropts = append(ropts, recorder.WithTimes(time.Millisecond, nil))
	}
	rec := recorder.NewRecorder(dial(t, addr), transcript.Client, ropts...)
	conn := New(rec, Options{TLSConfig: tlsCfg})
	defer conn.Close()
	// Made after the Recorder, so a replay's deadlines are never later
	// than the recording's (see recorder.WithTimes).
	h := handshake.New(time.Now(), cfg)
	ev := &events{next: h.NextEvent}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := conn.Run(ctx, h, ev.step)
	return recorded{events: ev.list, runErr: err, tr: rec.Transcript()}
}

// replayRecorded replays a recorded transcript against a fresh machine,
// whole and byte by byte, and checks that it ends with the same events.
func replayRecorded(t *testing.T, r recorded, cfg handshake.Config) {
	t.Helper()
	text, err := transcript.Format(r.tr)
	if err != nil {
		t.Fatal(err)
	}
	// Through the text form, as a committed transcript would be.
	tr, err := transcript.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	for name, split := range map[string]func([]byte) [][]byte{"lines": nil, "whole": transcript.Whole, "bytes": transcript.Chunks(1)} {
		h := handshake.New(transcript.Epoch, cfg)
		if err := transcript.Replay(h, tr, transcript.Options{Split: split}); err != nil {
			t.Fatalf("replay (%s) of the recorded session: %v\ntranscript:\n%s", name, err, text)
		}
		var got []handshake.Event
		for {
			e, ok := h.NextEvent()
			if !ok {
				break
			}
			got = append(got, e)
		}
		if d := cmp.Diff(r.events, got); d != "" {
			t.Fatalf("replay (%s) events differ from the live run (-live +replay):\n%s\ntranscript:\n%s", name, d, text)
		}
	}
}

func TestHandshakeAgainstNNTPTest(t *testing.T) {
	ready := func(greet int, caps int, f func(*handshake.Ready)) func(*testing.T, recorded) {
		return func(t *testing.T, r recorded) {
			t.Helper()
			if r.runErr != nil || len(r.events) != 1 {
				t.Fatalf("Run = %v, events %v", r.runErr, r.events)
			}
			got, ok := r.events[0].(handshake.Ready)
			if !ok {
				t.Fatalf("event %#v, want Ready", r.events[0])
			}
			want := got
			want.Greeting.Code = greet
			f(&want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if caps >= 0 && len(got.Capabilities.List) != caps {
				t.Errorf("%d capabilities, want %d: %v", len(got.Capabilities.List), caps, got.Capabilities)
			}
		}
	}
	failed := func(state handshake.State, reason handshake.Reason, code int) func(*testing.T, recorded) {
		return func(t *testing.T, r recorded) {
			t.Helper()
			if len(r.events) != 1 {
				t.Fatalf("Run = %v, events %v", r.runErr, r.events)
			}
			got, ok := r.events[0].(handshake.Failed)
			if !ok || got.State != state || got.Reason != reason || got.Response.Code != code {
				t.Fatalf("event %#v, want Failed in %s: %s (%d)", r.events[0], state, reason, code)
			}
		}
	}
	tests := []struct {
		name   string
		opts   nntptest.Options
		faults []nntptest.Fault
		cfg    handshake.Config
		tls    func(*nntptest.Server) *tls.Config
		timed  bool
		check  func(*testing.T, recorded)
	}{
		{name: "200 greeting, reader", cfg: handshake.Config{Reader: true},
			check: ready(200, -1, func(r *handshake.Ready) { r.Posting, r.Reader = true, true })},
		{name: "201 greeting", opts: nntptest.Options{NoPosting: true}, cfg: handshake.Config{Reader: true},
			check: ready(201, -1, func(r *handshake.Ready) { r.Posting, r.Reader = false, true })},
		{name: "400 greeting", faults: []nntptest.Fault{{Cmd: nntptest.Greeting, Code: 400, Text: "busy", Close: true}},
			check: failed(handshake.StateGreeting, handshake.ReasonUnavailable, 400)},
		{name: "502 greeting", faults: []nntptest.Fault{{Cmd: nntptest.Greeting, Code: 502, Text: "go away", Close: true}},
			check: failed(handshake.StateGreeting, handshake.ReasonUnavailable, 502)},
		{name: "garbage greeting", faults: []nntptest.Fault{{Cmd: nntptest.Greeting, Garbage: "HTTP/1.1 400 Bad Request\r\n"}},
			check: failed(handshake.StateGreeting, handshake.ReasonProtocol, 0)},
		{name: "no CAPABILITIES", opts: nntptest.Options{NoCapabilities: true}, cfg: handshake.Config{Reader: true},
			check: ready(200, 0, func(r *handshake.Ready) { r.Legacy, r.Posting, r.Reader = true, true, true })},
		{name: "auth required", opts: nntptest.Options{Auth: &nntptest.Auth{User: "alice", Pass: "pw", Required: true}},
			cfg:   handshake.Config{Reader: true, User: "alice", Pass: "pw"},
			check: ready(200, -1, func(r *handshake.Ready) { r.Posting, r.Reader, r.Authenticated = true, true, true })},
		{name: "auth rejected", opts: nntptest.Options{Auth: &nntptest.Auth{User: "alice", Pass: "pw", Required: true}},
			cfg:   handshake.Config{User: "alice", Pass: "wrong"},
			check: failed(handshake.StateAuth, handshake.ReasonAuthRejected, 481)},
		{name: "STARTTLS then auth", opts: nntptest.Options{TLS: nntptest.StartTLS, Auth: &nntptest.Auth{User: "alice", Pass: "pw"}},
			cfg: handshake.Config{Reader: true, TLS: handshake.TLSRequired, User: "alice", Pass: "pw"},
			tls: func(s *nntptest.Server) *tls.Config {
				return &tls.Config{RootCAs: s.CertPool(), ServerName: "127.0.0.1"}
			},
			check: ready(200, -1, func(r *handshake.Ready) { r.Posting, r.Reader, r.Authenticated, r.TLS = true, true, true, true })},
		{name: "STARTTLS with an untrusted certificate", opts: nntptest.Options{TLS: nntptest.StartTLS},
			cfg: handshake.Config{TLS: handshake.TLSRequired},
			tls: func(s *nntptest.Server) *tls.Config {
				return &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"}
			},
			check: failed(handshake.StateTLS, handshake.ReasonTLSFailed, 0)},
		{name: "STARTTLS not offered, required", cfg: handshake.Config{TLS: handshake.TLSRequired},
			check: failed(handshake.StateCapabilityList, handshake.ReasonTLSUnavailable, 0)},
		{name: "transit server, MODE READER", opts: nntptest.Options{Transit: true}, cfg: handshake.Config{Reader: true},
			check: ready(200, -1, func(r *handshake.Ready) {
				r.Greeting.Text = "Posting allowed"
				r.Posting, r.Reader = true, true
			})},
		{name: "transit server, MODE STREAM", opts: nntptest.Options{Transit: true}, cfg: handshake.Config{Stream: true},
			check: ready(200, -1, func(r *handshake.Ready) { r.Streaming = true })},
		{name: "MODE STREAM refused", opts: nntptest.Options{Transit: true},
			faults: []nntptest.Fault{{Cmd: "MODE STREAM", Code: 500, Text: "What?"}}, cfg: handshake.Config{Stream: true},
			check: ready(200, -1, func(r *handshake.Ready) { r.Streaming = false })},
		{name: "silent server", faults: []nntptest.Fault{{Cmd: nntptest.Greeting, Hang: true}},
			cfg: handshake.Config{StepTimeout: 100 * time.Millisecond}, timed: true,
			check: failed(handshake.StateGreeting, handshake.ReasonTimeout, 0)},
		{name: "silent after CAPABILITIES", faults: []nntptest.Fault{{Cmd: "CAPABILITIES", Hang: true}},
			cfg: handshake.Config{StepTimeout: 100 * time.Millisecond}, timed: true,
			check: failed(handshake.StateCapabilities, handshake.ReasonTimeout, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := nntptest.Start(t, tc.opts)
			for _, f := range tc.faults {
				s.AddFault(f)
			}
			var tlsCfg *tls.Config
			if tc.tls != nil {
				tlsCfg = tc.tls(s)
			}
			r := runRecorded(t, s.HostPort(), tc.cfg, tlsCfg, tc.timed)
			tc.check(t, r)
			replayRecorded(t, r, tc.cfg)
		})
	}
}

// TestSessionAgainstNNTPTest runs the handshake and then a Session on the
// same connection against a transit server that answers reader commands
// with 401 MODE-READER and wants authentication.
func TestSessionAgainstNNTPTest(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{Transit: true, Auth: &nntptest.Auth{User: "alice", Pass: "pw", Required: true}})
	s.AddGroup(nntptest.Group{Name: "misc.test"})
	s.AddArticle(nntptest.NewArticle("<a@example>", "misc.test", "hello", []byte("body\n")))
	rec := recorder.NewRecorder(dial(t, s.HostPort()), transcript.Client)
	conn := New(rec, Options{})
	defer conn.Close()
	ctx := context.Background()
	cfg := handshake.Config{User: "alice", Pass: "pw"}
	// No credentials in the handshake: the session meets 480 itself.
	h := handshake.New(time.Now(), handshake.Config{})
	ev := &events{next: h.NextEvent}
	if err := conn.Run(ctx, h, ev.step); err != nil {
		t.Fatal(err)
	}
	sess := handshake.NewSession(time.Now(), cfg, proto.Group("misc.test"))
	ev = &events{next: sess.NextEvent}
	if err := conn.Run(ctx, sess, ev.step); err != nil {
		t.Fatal(err)
	}
	want := []handshake.Event{handshake.Done{Response: proto.Response{Code: 211, Text: "1 1 1 misc.test"},
		Authenticated: true, ModeReader: true, Capabilities: sessionCaps(t, ev.list)}}
	if d := cmp.Diff(want, ev.list); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	// The whole connection replays: the handshake's part, then the
	// session's, against fresh machines over the same transcript.
	tr := rec.Transcript()
	cut := 0
	for i, e := range tr {
		if e.Kind == transcript.Data && string(e.Data) == "GROUP misc.test\r\n" {
			cut = i
			break
		}
	}
	if cut == 0 {
		t.Fatalf("no GROUP in the transcript:\n%s", tr)
	}
	if err := transcript.Replay(handshake.New(transcript.Epoch, handshake.Config{}), tr[:cut], transcript.Options{}); err != nil {
		t.Fatalf("handshake part: %v\n%s", err, tr)
	}
	if err := transcript.Replay(handshake.NewSession(transcript.Epoch, cfg, proto.Group("misc.test")), tr[cut:], transcript.Options{}); err != nil {
		t.Fatalf("session part: %v\n%s", err, tr)
	}
}

func sessionCaps(t *testing.T, evs []handshake.Event) proto.CapabilitySet {
	if len(evs) == 1 {
		if d, ok := evs[0].(handshake.Done); ok {
			return d.Capabilities
		}
	}
	return proto.CapabilitySet{}
}
