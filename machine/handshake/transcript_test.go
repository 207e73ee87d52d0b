package handshake

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
)

// Each testdata/*.txt transcript describes its own test in comments:
//
//	# config: reader stream tls=off|offered|required user=U pass=P timeout=30s
//	# session: GROUP misc.test     (run a Session with this command instead)
//	# then: GROUP misc.test        (a handshake, then from this command on a Session)
//	# want: <summary of the events, as summarize writes it>
//
// The test replays the transcript against a fresh machine with input split
// one line per Receive, whole runs, byte by byte and cut at every offset,
// and compares the events.

type scripted struct {
	cfg     Config
	session *proto.Command
	then    bool // the session follows a handshake
	want    string
}

func readHeader(tr transcript.Transcript) (scripted, error) {
	var s scripted
	var haveCfg, haveWant bool
	for key, val := range tr.Fields() {
		switch key {
		case "config":
			haveCfg = true
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
					m := map[string]TLSMode{"off": TLSOff, "offered": TLSIfOffered, "required": TLSRequired}
					mode, ok := m[v]
					if !ok {
						return s, fmt.Errorf("config: tls=%q", v)
					}
					s.cfg.TLS = mode
				case "timeout":
					d, err := time.ParseDuration(v)
					if err != nil {
						return s, fmt.Errorf("config: %w", err)
					}
					s.cfg.StepTimeout = d
				default:
					return s, fmt.Errorf("config: unknown word %q", w)
				}
			}
		case "session", "then":
			c, err := proto.ParseCommand([]byte(val))
			if err != nil {
				return s, err
			}
			s.session, s.then = &c, key == "then"
		case "want":
			haveWant = true
			s.want = val
		}
	}
	if !haveCfg || !haveWant {
		return s, errors.New(`transcript lacks a "# config:" or "# want:" comment`)
	}
	return s, nil
}

// summarize writes events as one line: "Ready caps=5 posting reader ...",
// "Failed <state>: <reason> (<code>)", "Done <code> authenticated mode-reader".
func summarize(events []Event) string {
	var parts []string
	for _, ev := range events {
		var b strings.Builder
		switch e := ev.(type) {
		case Ready:
			b.WriteString(e.String())
		case Failed:
			fmt.Fprintf(&b, "Failed %s: %s", e.State, e.Reason)
			if e.Response.Code != 0 {
				fmt.Fprintf(&b, " (%d)", e.Response.Code)
			}
		case Done:
			fmt.Fprintf(&b, "Done %d", e.Response.Code)
			if e.Authenticated {
				b.WriteString(" authenticated")
			}
			if e.ModeReader {
				b.WriteString(" mode-reader")
			}
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "; ")
}

type eventer interface {
	machine.Conn
	NextEvent() (Event, bool)
}

func newScripted(s scripted) eventer {
	if s.session != nil {
		return NewSession(transcript.Epoch, s.cfg, *s.session)
	}
	return New(transcript.Epoch, s.cfg)
}

// replayScripted replays tr as its header says and summarises the events.
func replayScripted(s scripted, tr transcript.Transcript, opts transcript.Options) (string, error) {
	if !s.then {
		m := newScripted(s)
		if err := transcript.Replay(m, tr, opts); err != nil {
			return "", err
		}
		return summarize(drainEvents(m)), nil
	}
	first := s.session.String() + "\r\n"
	cut := -1
	for i, e := range tr {
		if e.Kind == transcript.Data && e.Side == transcript.Client && string(e.Data) == first {
			cut = i
			break
		}
	}
	if cut < 0 {
		return "", fmt.Errorf("the session's command %q is not in the transcript", first)
	}
	h := New(transcript.Epoch, s.cfg)
	if err := transcript.Replay(h, tr[:cut], opts); err != nil {
		return "", fmt.Errorf("handshake part: %w", err)
	}
	sess := NewSession(transcript.Epoch, s.cfg, *s.session)
	if err := transcript.Replay(sess, tr[cut:], opts); err != nil {
		return "", fmt.Errorf("session part: %w", err)
	}
	return summarize(append(drainEvents(h), drainEvents(sess)...)), nil
}

func drainEvents(m eventer) []Event {
	var evs []Event
	for {
		e, ok := m.NextEvent()
		if !ok {
			return evs
		}
		evs = append(evs, e)
	}
}

func TestTranscripts(t *testing.T) {
	if files, _ := filepath.Glob("testdata/*.txt"); len(files) < 25 {
		t.Fatalf("found %d transcripts in testdata; some are missing", len(files))
	}
	transcript.Run(t, os.DirFS("."), "testdata/*.txt", transcript.Server, func(f transcript.File) (transcript.Case, error) {
		s, err := readHeader(f.Transcript)
		return transcript.Case{
			Replay: func(split func([]byte) [][]byte) (string, error) {
				return replayScripted(s, f.Transcript, transcript.Options{Split: split})
			},
			Want: s.want,
		}, err
	})
}

// TestTranscriptsCatchMistakes edits good transcripts the way a broken
// machine would behave and checks that Replay names the edited line.
func TestTranscriptsCatchMistakes(t *testing.T) {
	tests := []struct {
		file      string
		from, to  string
		line      int
		reasonHas string
	}{
		{"auth_381_281.txt", "C: AUTHINFO PASS secret", "C: AUTHINFO PASS wrong", 13, "wrote something else"},
		{"mode_reader_inn.txt", "C: MODE READER\n", "", 13, "wrote something else"},
		{"starttls_ok.txt", "! tls\nC: CAPABILITIES", "! tls\nC: AUTHINFO USER alice", 14, "wrote something else"},
		{"timeout_greeting.txt", "@ +1ms\n", "", 5, "machine is not Closed"},
		{"greeting_400.txt", "C! eof", "C: QUIT\nC! eof", 6, "machine wrote nothing"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			edited := strings.Replace(string(text), tc.from, tc.to, 1)
			if edited == string(text) {
				t.Fatalf("edit %q not applied", tc.from)
			}
			tr, err := transcript.Parse([]byte(edited))
			if err != nil {
				t.Fatal(err)
			}
			s, err := readHeader(tr)
			if err != nil {
				t.Fatal(err)
			}
			_, err = replayScripted(s, tr, transcript.Options{})
			var d *transcript.Divergence
			if !errors.As(err, &d) || d.Line != tc.line || !strings.Contains(d.Reason, tc.reasonHas) {
				t.Fatalf("Replay = %v; want a divergence at line %d containing %q", err, tc.line, tc.reasonHas)
			}
		})
	}
}
