package nntptest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// takethis is a TAKETHIS command with an article whose body has a line that
// needs dot-stuffing.
func takethis(id string) string {
	return "TAKETHIS " + id + "\r\nNewsgroups: misc.test\r\nMessage-ID: " + id + "\r\nSubject: s\r\n\r\n..stuffed\r\nend\r\n.\r\n"
}

func wantArticle(id string) string {
	return "Newsgroups: misc.test\r\nMessage-ID: " + id + "\r\nSubject: s\r\n\r\n.stuffed\r\nend\r\n"
}

func TestStreamingVerdicts(t *testing.T) {
	s := readerFixture(t, Options{KeepReceived: true})
	s.SetRule(Verdicts(map[string]Verdict{
		"<defer@x>": Defer, "<refuse@x>": Refuse, "<reject@x>": Reject,
	}, Want))
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"MODE STREAM", []string{"203 Streaming permitted"}},
		{"CHECK <want@x>", []string{"238 <want@x>"}},
		{"CHECK <defer@x>", []string{"431 <defer@x>"}},
		{"CHECK <refuse@x>", []string{"438 <refuse@x>"}},
		{"CHECK <reject@x>", []string{"238 <reject@x>"}},
		{"CHECK", []string{"501 Syntax: CHECK <message-id>"}},
	})
	// Pipelined: four TAKETHIS in one write, answered in order.
	c.send(takethis("<want@x>") + takethis("<defer@x>") + takethis("<refuse@x>") + takethis("<reject@x>"))
	var got []string
	for range 4 {
		got = append(got, c.line())
	}
	want := []string{"239 <want@x>", "439 <defer@x>", "439 <refuse@x>", "439 <reject@x>"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TAKETHIS responses (-want +got):\n%s", diff)
	}
	runSteps(t, c, []step{
		{"IHAVE <defer@x>", []string{"436 Try again later"}},
		{"IHAVE <refuse@x>", []string{"435 Duplicate"}},
		{"IHAVE <ihave@x>", []string{"335 Send it; end with <CR-LF>.<CR-LF>"}},
	})
	c.send("Newsgroups: misc.test\r\nMessage-ID: <ihave@x>\r\nSubject: s\r\n\r\n..stuffed\r\nend\r\n.\r\n")
	if got := c.line(); got != "235 Article transferred OK" {
		t.Errorf("IHAVE transfer: %q", got)
	}
	runSteps(t, c, []step{{"IHAVE <reject@x>", []string{"335 Send it; end with <CR-LF>.<CR-LF>"}}})
	c.send("Newsgroups: misc.test\r\nMessage-ID: <reject@x>\r\n\r\nx\r\n.\r\n")
	if got := c.line(); got != "437 Article rejected" {
		t.Errorf("IHAVE rejected transfer: %q", got)
	}

	type tr struct {
		Cmd, ID string
		Code    int
	}
	var gotT []tr
	for _, x := range s.Transfers() {
		gotT = append(gotT, tr{x.Cmd, x.MessageID, x.Code})
		if x.Conn != 1 {
			t.Errorf("transfer on conn %d", x.Conn)
		}
	}
	wantT := []tr{
		{"TAKETHIS", "<want@x>", 239}, {"TAKETHIS", "<defer@x>", 439}, {"TAKETHIS", "<refuse@x>", 439},
		{"TAKETHIS", "<reject@x>", 439}, {"IHAVE", "<ihave@x>", 235}, {"IHAVE", "<reject@x>", 437},
	}
	if diff := cmp.Diff(wantT, gotT); diff != "" {
		t.Errorf("Transfers (-want +got):\n%s", diff)
	}
	if got := string(s.Transfers()[0].Article); got != wantArticle("<want@x>") {
		t.Errorf("received article %q, want %q", got, wantArticle("<want@x>"))
	}
	if diff := cmp.Diff([]string{"<want@x>", "<ihave@x>"}, s.AcceptedIDs()); diff != "" {
		t.Errorf("AcceptedIDs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"<want@x>", "<defer@x>", "<refuse@x>", "<reject@x>", "<ihave@x>", "<reject@x>"}, s.TransferIDs()); diff != "" {
		t.Errorf("TransferIDs (-want +got):\n%s", diff)
	}
	// KeepReceived: accepted articles can be read back, numbered after the fixture's.
	runSteps(t, c, []step{
		{"GROUP misc.test", []string{"211 5 1 5 misc.test"}},
		{"BODY 4", []string{"222 4 <want@x>", "..stuffed", "end", "."}},
		{"STAT <ihave@x>", []string{"223 0 <ihave@x>"}},
		{"STAT <reject@x>", []string{"430 No such article"}},
	})
	if s.Count("TAKETHIS") != 4 || s.Count("CHECK") != 5 || s.Count("IHAVE") != 4 {
		t.Errorf("counts: TAKETHIS %d CHECK %d IHAVE %d", s.Count("TAKETHIS"), s.Count("CHECK"), s.Count("IHAVE"))
	}
}

// TestDefaultRule refuses what the server has and wants the rest.
func TestDefaultRule(t *testing.T) {
	s := readerFixture(t, Options{})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"CHECK <1@example>", []string{"438 <1@example>"}},
		{"CHECK <new@x>", []string{"238 <new@x>"}},
	})
	c.send(takethis("<new@x>") + takethis("<new@x>"))
	if got := []string{c.line(), c.line()}; !cmp.Equal(got, []string{"239 <new@x>", "439 <new@x>"}) {
		t.Errorf("a second TAKETHIS of the same id got %q", got)
	}
	runSteps(t, c, []step{{"IHAVE <new@x>", []string{"435 Duplicate"}}})
	if !s.Has("<new@x>") || s.Has("<other@x>") {
		t.Errorf("Has is wrong")
	}
	// Not kept without KeepReceived.
	if _, ok := s.ArticleBytes("<new@x>"); ok {
		t.Errorf("article stored without KeepReceived")
	}
}

func TestSequenceRule(t *testing.T) {
	s := Start(t, Options{Rule: Sequence(map[string][]Verdict{"<a@x>": {Defer, Want}}, Refuse)})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"CHECK <a@x>", []string{"431 <a@x>"}},
		{"CHECK <a@x>", []string{"238 <a@x>"}},
		{"CHECK <a@x>", []string{"238 <a@x>"}},
		{"CHECK <b@x>", []string{"438 <b@x>"}},
	})
	s.SetRule(nil)
	runSteps(t, c, []step{{"CHECK <b@x>", []string{"238 <b@x>"}}})
	for _, tt := range []struct {
		in   string
		want Verdict
	}{{"want", Want}, {"DEFER", Defer}, {"refuse", Refuse}, {"Reject", Reject}} {
		if v, err := ParseVerdict(tt.in); err != nil || v != tt.want || !strings.EqualFold(v.String(), tt.in) {
			t.Errorf("ParseVerdict(%q) = %v, %v", tt.in, v, err)
		}
	}
	if _, err := ParseVerdict("maybe"); err == nil {
		t.Errorf("ParseVerdict(maybe) succeeded")
	}
}

// TestNoStreaming refuses MODE STREAM and CHECK, and does not read
// TAKETHIS's article: its lines arrive as commands, as with a server that
// lacks TAKETHIS; IHAVE still works.
func TestNoStreaming(t *testing.T) {
	s := Start(t, Options{NoStreaming: true})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"MODE STREAM", []string{"500 What?"}},
		{"CHECK <a@x>", []string{"500 What?"}},
	})
	c.send("TAKETHIS <a@x>\r\nSubject: s\r\n.\r\n")
	if got := []string{c.line(), c.line(), c.line()}; !cmp.Equal(got, []string{"500 What?", "500 What?", "500 What?"}) {
		t.Errorf("TAKETHIS on a non-streaming server: %q", got)
	}
	runSteps(t, c, []step{{"IHAVE <a@x>", []string{"335 Send it; end with <CR-LF>.<CR-LF>"}}})
	c.send("Subject: s\r\n\r\nx\r\n.\r\n")
	if got := c.line(); got != "235 Article transferred OK" {
		t.Errorf("IHAVE: %q", got)
	}
}

// TestAwait waits for a pipelined stream without sleeping.
func TestAwait(t *testing.T) {
	s := Start(t, Options{})
	c := dialGreeted(t, s)
	c.send(takethis("<1@x>") + takethis("<2@x>") + takethis("<3@x>"))
	ctx, cancel := context.WithTimeout(context.Background(), ioLimit)
	defer cancel()
	if err := s.Await(ctx, func() bool { return len(s.AcceptedIDs()) == 3 }); err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()
	if err := s.Await(short, func() bool { return len(s.AcceptedIDs()) == 4 }); err == nil {
		t.Errorf("Await returned nil for a condition that cannot become true")
	}
}
