package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// echo is a toy machine for the harness: for every line L it receives it
// writes "ECHO L"; "QUIT" closes it, "TLS" makes it want TLS, "BAD" is a
// protocol error. Its deadline is 10s after its start or its last input;
// Timeout writes "TIMEOUT" and closes.
type echo struct {
	buf      []byte
	out      []byte
	deadline time.Time
	closed   bool
	wantTLS  bool
	tls      string // "ok" or the failure text
	eof      bool
	greet    bool // write "HELLO" at start (a server machine)
}

func newEcho(now time.Time, greet bool) *echo {
	e := &echo{deadline: now.Add(10 * time.Second), greet: greet}
	if greet {
		e.out = append(e.out, "HELLO\r\n"...)
	}
	return e
}

func (e *echo) Receive(now time.Time, p []byte) error {
	e.buf = append(e.buf, p...)
	for {
		i := bytes.IndexByte(e.buf, '\n')
		if i < 0 {
			return nil
		}
		line := string(bytes.TrimSuffix(e.buf[:i], []byte("\r")))
		e.buf = e.buf[i+1:]
		e.deadline = now.Add(10 * time.Second)
		switch line {
		case "QUIT":
			e.closed = true
			return nil
		case "TLS":
			e.wantTLS = true
			return nil
		case "BAD":
			e.closed = true
			return errors.New("echo: bad line")
		}
		e.out = fmt.Appendf(e.out, "ECHO %s\r\n", line)
	}
}

func (e *echo) Timeout(now time.Time) {
	if e.closed || now.Before(e.deadline) {
		return
	}
	e.out = append(e.out, "TIMEOUT\r\n"...)
	e.closed = true
}

func (e *echo) AppendOutgoing(dst []byte) []byte {
	dst = append(dst, e.out...)
	e.out = e.out[:0]
	return dst
}

func (e *echo) Deadline() (time.Time, bool) { return e.deadline, !e.closed }
func (e *echo) Closed() bool                { return e.closed }
func (e *echo) WantTLS() bool               { return e.wantTLS }
func (e *echo) ReceiveEOF(now time.Time)    { e.eof = true }

func (e *echo) TLSDone(now time.Time, err error) error {
	if !e.wantTLS {
		return errors.New("echo: TLSDone without STARTTLS")
	}
	e.wantTLS = false
	e.tls = "ok"
	if err != nil {
		e.tls = err.Error()
	}
	e.out = fmt.Appendf(e.out, "TLS %s\r\n", e.tls)
	return nil
}

func mustParse(t *testing.T, s string) Transcript {
	t.Helper()
	tr, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

const goodClient = `# the machine is the client: S lines are its input
S: one
C: ECHO one
S: two
S: three
C: ECHO two
C: ECHO three

S: TLS
! tls
C: TLS ok
@ +9s
S: four
C: ECHO four
@ +10s
C: TIMEOUT
S! eof
C! eof
`

func TestReplayGoodEverySplit(t *testing.T) {
	tr := mustParse(t, goodClient)
	splits := map[string]func([]byte) [][]byte{"lines": nil, "whole": Whole}
	for n := 1; n <= 16; n++ {
		splits[fmt.Sprintf("chunks%d", n)] = Chunks(n)
		splits[fmt.Sprintf("cut%d", n)] = CutAt(n)
	}
	for name, split := range splits {
		m := newEcho(Epoch, false)
		if err := Replay(m, tr, Options{Split: split}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if !m.eof {
			t.Errorf("%s: the server's EOF did not reach ReceiveEOF", name)
		}
	}
}

func TestReplayServerDirection(t *testing.T) {
	tr := mustParse(t, "S: HELLO\nC: hi\nS: ECHO hi\nC: QUIT\nS! eof\n")
	if err := Replay(newEcho(Epoch, true), tr, Options{Local: Server}); err != nil {
		t.Fatal(err)
	}
	// The same transcript read with the wrong direction must fail at once:
	// the machine greets where the transcript says its peer speaks.
	err := Replay(newEcho(Epoch, true), tr, Options{Local: Client})
	wantDivergence(t, err, 1, "machine wrote a line where the transcript has S input")
}

func wantDivergence(t *testing.T, err error, line int, reason string, diffHas ...string) {
	t.Helper()
	var d *Divergence
	if !errors.As(err, &d) {
		t.Fatalf("Replay = %v, want a *Divergence at line %d", err, line)
	}
	if d.Line != line || !strings.Contains(d.Reason, reason) {
		t.Fatalf("Replay diverged at line %d: %q; want line %d and %q\n%v", d.Line, d.Reason, line, reason, err)
	}
	for _, s := range diffHas {
		if !strings.Contains(d.Diff, s) {
			t.Errorf("diff lacks %q:\n%s", s, d.Diff)
		}
	}
}

func TestReplayDivergences(t *testing.T) {
	tests := []struct {
		name   string
		script string
		line   int
		reason string
		diff   []string
	}{
		{"wrong output", "S: a\nC: ECHO a\nS: b\nC: ECHO c\n", 4, "machine wrote something else",
			[]string{"ECHO c", "ECHO b"}},
		{"missing output", "S: a\nC: ECHO a\nC: ECHO again\n", 3, "machine wrote nothing", []string{"ECHO again"}},
		{"output at the end", "S: a\nS: b\n# the echoes are not in the transcript\nS: c\n", 5,
			"machine wrote more than the transcript holds", []string{"ECHO a"}},
		{"output where input is due", "S: a\nC: ECHO a\nS: b\n@ +1s\nS: c\n", 5,
			"machine wrote a line where the transcript has S input", []string{"ECHO b"}},
		{"closed then more input", "S: QUIT\n@ +1s\nS: more\n", 3, "machine closed the connection", nil},
		{"not closed", "S: a\nC: ECHO a\nC! eof\n", 3, "machine is not Closed", nil},
		{"timeout too early", "S: a\nC: ECHO a\n@ +9s\nC: TIMEOUT\n", 4, "machine wrote nothing", nil},
		{"tls not asked", "S: a\nC: ECHO a\n! tls\n", 3, "did not ask for one", nil},
		{"tls wanted but data follows", "S: TLS\n@ +1s\nS: a\n", 3, "waits for the STARTTLS handshake", nil},
		{"unexpected error", "S: ok\nC: ECHO ok\nS: BAD\nC! eof\n", 3, "Receive failed: echo: bad line", nil},
		{"unexpected error at end", "S: BAD\n", 1, "Receive failed", nil},
		{"error expected but none", "S: a\n! error\n", 2, "expects Receive to fail", nil},
		{"other error", "S: BAD\n! error malformed\n", 2, "another error", []string{"malformed", "echo: bad line"}},
		{"output before eof", "S: a\nC! eof\n", 2, "still has output", []string{"ECHO a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Replay(newEcho(Epoch, false), mustParse(t, tc.script), Options{})
			wantDivergence(t, err, tc.line, tc.reason, tc.diff...)
		})
	}
}

func TestReplayErrorLineInRun(t *testing.T) {
	// Input lines form one run; the error must name the line whose bytes
	// made Receive fail, whatever the split.
	tr := mustParse(t, "S: a\nS: b\nS: BAD\nS: c\nC: ECHO a\n")
	for _, split := range []func([]byte) [][]byte{nil, Chunks(1), Chunks(4), CutAt(8)} {
		err := Replay(newEcho(Epoch, false), tr, Options{Split: split})
		wantDivergence(t, err, 3, "Receive failed")
	}
}

func TestReplayAcceptsExpectedError(t *testing.T) {
	tr := mustParse(t, "S: a\nC: ECHO a\nS: BAD\n! error bad line\nC! eof\n")
	if err := Replay(newEcho(Epoch, false), tr, Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestReplayTLSFail(t *testing.T) {
	m := newEcho(Epoch, false)
	tr := mustParse(t, "S: TLS\n! tls-fail handshake failure\nC: TLS handshake failure\n")
	if err := Replay(m, tr, Options{}); err != nil {
		t.Fatal(err)
	}
	if m.tls != "handshake failure" {
		t.Errorf("TLSDone got %q", m.tls)
	}
}

func TestReplayStart(t *testing.T) {
	// The deadline is relative to the machine's own start; with Start
	// matching it, 10s of transcript time fire the timeout.
	start := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tr := mustParse(t, "@ +10s\nC: TIMEOUT\nC! eof\n")
	if err := Replay(newEcho(start, false), tr, Options{Start: start}); err != nil {
		t.Fatal(err)
	}
	// Built in code, entries have no line numbers: the index is reported.
	err := Replay(newEcho(Epoch, false), Transcript{Send(Server, "x"), Send(Client, "ECHO y")}, Options{})
	wantDivergence(t, err, 2, "something else")
}

func TestSplitters(t *testing.T) {
	got := Chunks(3)([]byte("abcdefg"))
	if d := cmp.Diff([][]byte{[]byte("abc"), []byte("def"), []byte("g")}, got); d != "" {
		t.Errorf("Chunks (-want +got):\n%s", d)
	}
	got = CutAt(2)([]byte("abcd"))
	if d := cmp.Diff([][]byte{[]byte("ab"), []byte("cd")}, got); d != "" {
		t.Errorf("CutAt (-want +got):\n%s", d)
	}
	got = CutAt(4)([]byte("abcd"))
	if d := cmp.Diff([][]byte{[]byte("abcd")}, got); d != "" {
		t.Errorf("CutAt at end (-want +got):\n%s", d)
	}
}
