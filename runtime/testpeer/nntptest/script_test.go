package nntptest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/newsflow/newsflow/machine/transcript"
)

const playScript = `# a reader session
S: 200 scripted server ready
C: GROUP misc.test
S: 211 2 1 2 misc.test
C: BODY 1
S: 222 1 <a@x>
S: ..dot
S: .
C: QUIT
S: 205 bye
S! eof
`

func TestServeScript(t *testing.T) {
	s := StartScript(t, playScript, ScriptOptions{})
	c := dial(t, s)
	if got := c.line(); got != "200 scripted server ready" {
		t.Fatalf("greeting %q", got)
	}
	runSteps(t, c, []step{
		{"GROUP misc.test", []string{"211 2 1 2 misc.test"}},
		{"BODY 1", []string{"222 1 <a@x>", "..dot", "."}},
		{"QUIT", []string{"205 bye"}},
	})
	if got := c.rest(); got != "" {
		t.Errorf("after the script's EOF read %q", got)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestServeScriptDivergence(t *testing.T) {
	tr, err := transcript.Parse([]byte(playScript))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ServeScript(tr, ScriptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := dial(t, s)
	c.line()
	c.send("GROUP alt.test\r\n")
	if got := c.rest(); got != "" {
		t.Errorf("after a divergence read %q", got)
	}
	err = s.Wait(context.Background())
	var d *transcript.Divergence
	if !errors.As(err, &d) || d.Line != 3 || !strings.Contains(d.Diff, "alt.test") {
		t.Fatalf("Wait = %v, want a divergence at line 3 showing the line sent", err)
	}
}

func TestServeScriptTLS(t *testing.T) {
	s := StartScript(t, `S: 200 ready
C: STARTTLS
S: 382 go ahead
! tls
C: CAPABILITIES
S: 101 caps
S: VERSION 2
S: .
C! eof
`, ScriptOptions{})
	c := dial(t, s)
	c.line()
	runSteps(t, c, []step{{"STARTTLS", []string{"382 go ahead"}}})
	c.startTLS(s.ClientTLSConfig())
	runSteps(t, c, []step{{"CAPABILITIES", []string{"101 caps", "VERSION 2", "."}}})
	c.nc.Close()
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
