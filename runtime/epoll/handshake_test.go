//go:build linux

package epoll

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// scriptTimeout replaces the step timeouts of scripts that let time pass
// ("@ +d" lines, which the scripted server skips): a silent step lasts
// until the client gives up. Scripts without them keep the default, so a
// loaded machine cannot make a step time out.
const scriptTimeout = time.Second

// handshakeScript is one of machine/handshake's transcripts, read as a
// server script.
type handshakeScript struct {
	cfg     handshake.Config
	session *proto.Command // run a Session with this command...
	then    bool           // ...after a handshake
	text    []byte
}

// readScript reads the "# config:", "# session:" and "# then:" comments
// of a machine/handshake transcript (see its transcript_test.go).
func readScript(t *testing.T, path string) (handshakeScript, bool) {
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := transcript.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	s := handshakeScript{text: text}
	timed := false
	for _, e := range tr {
		switch e.Kind {
		case transcript.TLS, transcript.TLSFail:
			return s, false // TLS stays on runtime/goroutine
		case transcript.Advance:
			timed = true
			continue
		case transcript.Comment:
		default:
			continue
		}
		key, val, ok := strings.Cut(e.Text, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "config":
			for _, w := range strings.Fields(val) {
				k, v, _ := strings.Cut(w, "=")
				switch k {
				case "reader":
					s.cfg.Reader = true
				case "stream":
					s.cfg.Stream = true
				case "user":
					s.cfg.User = v
				case "pass":
					s.cfg.Pass = v
				case "tls":
					s.cfg.TLS = map[string]handshake.TLSMode{"off": handshake.TLSOff,
						"offered": handshake.TLSIfOffered, "required": handshake.TLSRequired}[v]
				case "timeout":
				default:
					t.Fatalf("%s: config word %q", path, w)
				}
			}
		case "session", "then":
			c, err := proto.ParseCommand([]byte(val))
			if err != nil {
				t.Fatal(err)
			}
			s.session, s.then = &c, key == "then"
		}
	}
	if timed {
		s.cfg.StepTimeout = scriptTimeout
	}
	return s, true
}

// runHandshake runs a handshake (and/or a Session) through r against the
// server at addr, through a tap, and returns what the owner and the tap
// saw. The connection is closed after the last machine stops.
func runHandshake(t *testing.T, r rt, addr string, cfg handshake.Config, session *proto.Command, then bool, grace time.Duration) outcome {
	tp := startTap(t, addr)
	c := r.dial(t, tp.addr(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var evs []handshake.Event
	collect := func(next func() (handshake.Event, bool)) func(time.Time) error {
		return func(time.Time) error {
			for {
				e, ok := next()
				if !ok {
					return nil
				}
				evs = append(evs, e)
				switch e.(type) {
				case handshake.Ready, handshake.Done:
					return ErrStop
				}
			}
		}
	}
	var errs []string
	var leftover []byte
	if session == nil || then {
		h := handshake.New(time.Now(), cfg)
		err := c.Run(ctx, h, collect(h.NextEvent))
		errs = append(errs, errKind(err))
		leftover = h.Leftover()
		if err != nil || h.Closed() {
			session = nil
		}
	}
	if session != nil {
		s := handshake.NewSession(time.Now(), cfg, *session)
		if err := s.Receive(time.Now(), leftover); err != nil {
			t.Fatal(err)
		}
		errs = append(errs, errKind(c.Run(ctx, s, collect(s.NextEvent))))
	}
	c.Close()
	return outcome{Events: eventStrings(evs), Err: strings.Join(errs, "; "), Wire: tp.wait(t, grace)}
}

// waitScript waits for the scripted server to finish its play (it closes
// the connection just before), so its own check at cleanup sees the end.
func waitScript(t *testing.T, sc *nntptest.Script) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sc.Wait(ctx); err != nil {
		t.Error(err)
	}
}

// TestHandshakeScripts plays every machine/handshake transcript without
// TLS as a scripted server (nntptest.StartScript, which also checks every
// byte the client sends) to a handshake driven by each runtime.
func TestHandshakeScripts(t *testing.T) {
	paths, err := filepath.Glob("../../machine/handshake/testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no handshake transcripts: %v", err)
	}
	ran := 0
	for _, path := range paths {
		s, ok := readScript(t, path)
		if !ok {
			continue
		}
		ran++
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			t.Parallel()
			compare(t, func(t *testing.T, r rt) outcome {
				sc := nntptest.StartScript(t, string(s.text), nntptest.ScriptOptions{})
				o := runHandshake(t, r, sc.HostPort(), s.cfg, s.session, s.then, 10*time.Second)
				waitScript(t, sc)
				return o
			})
		})
	}
	if ran < 20 {
		t.Errorf("only %d transcripts ran", ran)
	}
}

// TestHandshakeNNTPTest runs handshakes against nntptest with faults.
func TestHandshakeNNTPTest(t *testing.T) {
	tests := []struct {
		name   string
		opts   nntptest.Options
		faults []nntptest.Fault
		cfg    handshake.Config
		hang   bool
	}{
		{name: "reader", cfg: handshake.Config{Reader: true}},
		{name: "201 greeting", opts: nntptest.Options{NoPosting: true}, cfg: handshake.Config{Reader: true}},
		{name: "400 greeting", faults: []nntptest.Fault{{Cmd: nntptest.Greeting, Code: 400, Text: "busy", Close: true}}},
		{name: "502 greeting", faults: []nntptest.Fault{{Cmd: nntptest.Greeting, Code: 502, Text: "go away", Close: true}}},
		{name: "garbage greeting", faults: []nntptest.Fault{{Cmd: nntptest.Greeting, Garbage: "HTTP/1.1 400 Bad Request\r\n"}}},
		{name: "no CAPABILITIES", opts: nntptest.Options{NoCapabilities: true}, cfg: handshake.Config{Reader: true}},
		{name: "auth required", opts: nntptest.Options{Auth: &nntptest.Auth{User: "alice", Pass: "pw", Required: true}},
			cfg: handshake.Config{Reader: true, User: "alice", Pass: "pw"}},
		{name: "auth rejected", opts: nntptest.Options{Auth: &nntptest.Auth{User: "alice", Pass: "pw", Required: true}},
			cfg: handshake.Config{User: "alice", Pass: "wrong"}},
		{name: "transit, MODE STREAM", opts: nntptest.Options{Transit: true}, cfg: handshake.Config{Stream: true}},
		{name: "MODE STREAM refused", opts: nntptest.Options{Transit: true},
			faults: []nntptest.Fault{{Cmd: "MODE STREAM", Code: 500, Text: "What?"}}, cfg: handshake.Config{Stream: true}},
		{name: "cut in the capability list", faults: []nntptest.Fault{{Cmd: "CAPABILITIES", CloseAfter: 30}}},
		{name: "slow server", faults: []nntptest.Fault{{Cmd: "CAPABILITIES", Rate: 2000}}, cfg: handshake.Config{Reader: true}},
		{name: "silent server", faults: []nntptest.Fault{{Cmd: nntptest.Greeting, Hang: true}},
			cfg: handshake.Config{StepTimeout: 100 * time.Millisecond}, hang: true},
		{name: "silent after CAPABILITIES", faults: []nntptest.Fault{{Cmd: "CAPABILITIES", Hang: true}},
			cfg: handshake.Config{StepTimeout: 100 * time.Millisecond}, hang: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			compare(t, func(t *testing.T, r rt) outcome {
				s := nntptest.Start(t, tc.opts)
				for _, f := range tc.faults {
					s.AddFault(f)
				}
				grace := 10 * time.Second
				if tc.hang {
					grace = 500 * time.Millisecond // the server never ends by itself
				}
				o := runHandshake(t, r, s.HostPort(), tc.cfg, nil, false, grace)
				o.Extra = s.CommandLines(0)
				return o
			})
		})
	}
}

// TestHandshakeSTARTTLS: the server agrees to STARTTLS. runtime/goroutine
// without a TLS configuration and this runtime both tell the machine the
// handshake failed; the wire is the same, and the events differ only in
// the detail that says why.
func TestHandshakeSTARTTLS(t *testing.T) {
	const script = "S: 200 hi\r\nC: CAPABILITIES\r\nS: 101 caps\r\nS: VERSION 2\r\nS: STARTTLS\r\nS: .\r\nC: STARTTLS\r\nS: 382 go ahead\r\nC! eof\r\n"
	var details []string
	g := compare(t, func(t *testing.T, r rt) outcome {
		sc := nntptest.StartScript(t, script, nntptest.ScriptOptions{})
		o := runHandshake(t, r, sc.HostPort(), handshake.Config{TLS: handshake.TLSRequired}, nil, false, 10*time.Second)
		waitScript(t, sc)
		// Keep the detail aside; compare the rest.
		for i, e := range o.Events {
			if j := strings.Index(e, `Detail:"`); j >= 0 {
				details = append(details, e[j:])
				o.Events[i] = e[:j]
			}
		}
		if r.name == "epoll" {
			if !strings.Contains(o.Err, ErrTLSUnsupported.Error()) {
				t.Errorf("Run = %q, want ErrTLSUnsupported", o.Err)
			}
			o.Err = "refused"
		} else {
			if o.Err != "" {
				t.Errorf("Run = %q, want nil", o.Err)
			}
			o.Err = "refused"
		}
		return o
	})
	want := []string{
		`Detail:"goroutine: STARTTLS asked for, but no TLS configuration was given"}`,
		fmt.Sprintf(`Detail:%q}`, ErrTLSUnsupported.Error()),
	}
	if len(details) != 2 || details[0] != want[0] || details[1] != want[1] {
		t.Errorf("details %q, want %q", details, want)
	}
	if len(g.Events) != 1 || !strings.HasPrefix(g.Events[0], "handshake.Failed{State:0x5") {
		t.Errorf("events %q, want one Failed in StateTLS", g.Events)
	}
}
