package nntptest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// body1 is the BODY 1 response of readerFixture as it appears on the wire.
const body1 = "222 1 <1@example>\r\nline one\r\n..dot line\r\n.\r\n"

func TestFaultActions(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		want  string // everything the client reads after BODY 1, up to EOF when eof
		eof   bool
	}{
		{"code", Fault{Cmd: "BODY", Code: 400, Text: "Service unavailable"}, "400 Service unavailable\r\n", false},
		{"code and close", Fault{Cmd: "BODY", Code: 400, Close: true}, "400\r\n", true},
		{"garbage", Fault{Cmd: "BODY", Garbage: "\x00junk\r\n"}, "\x00junk\r\n", false},
		{"code then garbage", Fault{Cmd: "BODY", Code: 222, Text: "1 <1@example>", Garbage: "no terminator\r\n"}, "222 1 <1@example>\r\nno terminator\r\n", false},
		{"drop", Fault{Cmd: "BODY", Drop: true}, "", true},
		{"cut mid-body", Fault{Cmd: "BODY", CloseAfter: 25}, body1[:25], true},
		{"cut past the end", Fault{Cmd: "BODY", CloseAfter: 1000}, body1, true},
		{"close after response", Fault{Cmd: "BODY", Close: true}, body1, true},
		{"delay", Fault{Cmd: "BODY", Delay: 20 * time.Millisecond}, body1, false},
		{"slow", Fault{Cmd: "BODY", Rate: 2000}, body1, false},
		{"other command", Fault{Cmd: "ARTICLE", Code: 400}, body1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := readerFixture(t, Options{})
			id := s.AddFault(tt.fault)
			c := dialGreeted(t, s)
			runSteps(t, c, []step{{"GROUP misc.test", []string{"211 3 1 3 misc.test"}}})
			start := time.Now()
			c.send("BODY 1\r\n")
			var got string
			if tt.eof {
				got = c.rest()
			} else {
				for len(got) < len(tt.want) {
					got += c.line() + "\r\n"
				}
			}
			elapsed := time.Since(start)
			if got != tt.want {
				t.Errorf("read %q, want %q", got, tt.want)
			}
			if !tt.eof {
				// The connection still works.
				runSteps(t, c, []step{{"STAT", []string{"223 1 <1@example>"}}})
			}
			if f := s.Fired(id); (tt.fault.Cmd == "ARTICLE") != (f == 0) {
				t.Errorf("fault fired %d times", f)
			}
			// Lower bounds only: a slow machine can make them longer, never shorter.
			if tt.fault.Delay > 0 && elapsed < tt.fault.Delay {
				t.Errorf("delayed response came after %v, before the %v delay", elapsed, tt.fault.Delay)
			}
			if r := tt.fault.Rate; r > 0 {
				if min := time.Duration(len(body1)-r/100) * time.Second / time.Duration(r); elapsed < min {
					t.Errorf("%d bytes at %d B/s came in %v, under %v", len(body1), r, elapsed, min)
				}
			}
		})
	}
}

// TestFaultCmd: a verb matches all its variants, a full name only itself,
// and "" every command.
func TestFaultCmd(t *testing.T) {
	s := readerFixture(t, Options{})
	s.AddFault(Fault{Cmd: "LIST", Code: 503})
	s.AddFault(Fault{Cmd: "MODE STREAM", Code: 501})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"LIST NEWSGROUPS", []string{"503"}},
		{"LIST", []string{"503"}},
		{"MODE STREAM", []string{"501"}},
		{"MODE READER", []string{"200 Posting allowed"}},
	})
	s.AddFault(Fault{Code: 502})
	runSteps(t, c, []step{{"GROUP misc.test", []string{"502"}}, {"QUIT", []string{"502"}}})
}

// TestFaultReplacedHasNoEffect: a GROUP answered by a fault selects nothing.
func TestFaultReplacedHasNoEffect(t *testing.T) {
	s := readerFixture(t, Options{})
	s.AddFault(Fault{Cmd: "GROUP", Times: 1, Code: 400, Text: "busy"})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"GROUP misc.test", []string{"400 busy"}},
		{"STAT", []string{"412 No newsgroup selected"}},
		{"GROUP misc.test", []string{"211 3 1 3 misc.test"}},
	})
}

func TestFaultMatching(t *testing.T) {
	s := readerFixture(t, Options{})
	nth := s.AddFault(Fault{Cmd: "STAT", Nth: 2, Code: 400})
	conn2 := s.AddFault(Fault{Cmd: "DATE", Conn: 2, Code: 502})
	times := s.AddFault(Fault{Cmd: "HELP", Times: 2, Code: 503})
	c1 := dialGreeted(t, s)
	c2 := dialGreeted(t, s)
	var got []string
	for _, x := range []struct {
		c    *client
		line string
	}{
		{c1, "STAT <1@example>"}, {c2, "STAT <1@example>"}, {c1, "STAT <1@example>"},
		{c1, "DATE"}, {c2, "DATE"}, {c2, "DATE"},
		{c2, "HELP"}, {c1, "HELP"}, {c2, "HELP"},
	} {
		got = append(got, x.c.do(x.line)[0])
	}
	want := []string{
		"223 0 <1@example>", "400", "223 0 <1@example>",
		"111 20240304050607", "502", "502",
		"503", "503", "100 Commands understood:",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
	for id, n := range map[FaultID]int{nth: 1, conn2: 2, times: 2} {
		if s.Fired(id) != n {
			t.Errorf("fault %d fired %d times, want %d", id, s.Fired(id), n)
		}
	}
	// Removing a fault while connected takes effect at once.
	if !s.RemoveFault(conn2) || s.RemoveFault(conn2) {
		t.Errorf("RemoveFault did not remove exactly once")
	}
	runSteps(t, c2, []step{{"DATE", []string{"111 20240304050607"}}})
	s.AddFault(Fault{Cmd: "DATE", Code: 400})
	runSteps(t, c2, []step{{"DATE", []string{"400"}}})
	s.ClearFaults()
	runSteps(t, c2, []step{{"DATE", []string{"111 20240304050607"}}})
	if s.Fired(nth) != 0 {
		t.Errorf("Fired of a cleared fault is not 0")
	}
}

// TestFaultPriority: the fault added first acts; a later one's counter still
// advances.
func TestFaultPriority(t *testing.T) {
	s := readerFixture(t, Options{})
	s.AddFault(Fault{Cmd: "DATE", Nth: 1, Code: 400})
	second := s.AddFault(Fault{Cmd: "DATE", Nth: 1, Code: 502})
	c := dialGreeted(t, s)
	runSteps(t, c, []step{
		{"DATE", []string{"400"}},
		{"DATE", []string{"111 20240304050607"}},
	})
	if s.Fired(second) != 0 {
		t.Errorf("the second fault fired")
	}
}

func TestGreetingFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		want  string
	}{
		{"400 and close", Fault{Cmd: Greeting, Code: 400, Text: "too busy", Close: true}, "400 too busy\r\n"},
		{"502", Fault{Cmd: Greeting, Code: 502, Text: "go away", Close: true}, "502 go away\r\n"},
		{"201", Fault{Cmd: Greeting, Code: 201, Text: "read only", Close: true}, "201 read only\r\n"},
		{"garbage", Fault{Cmd: Greeting, Garbage: "HTTP/1.1 400 Bad Request\r\n", Close: true}, "HTTP/1.1 400 Bad Request\r\n"},
		{"drop", Fault{Cmd: Greeting, Drop: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Options{})
			s.AddFault(tt.fault)
			c := dial(t, s)
			if got := c.rest(); got != tt.want {
				t.Errorf("read %q, want %q", got, tt.want)
			}
			if len(s.Commands()) != 0 {
				t.Errorf("the greeting was recorded as a command")
			}
		})
	}
	t.Run("only the second connection", func(t *testing.T) {
		s := Start(t, Options{})
		s.AddFault(Fault{Cmd: Greeting, Conn: 2, Code: 400, Close: true})
		dialGreeted(t, s)
		if got := dial(t, s).rest(); got != "400\r\n" {
			t.Errorf("second connection read %q", got)
		}
		dialGreeted(t, s)
	})
	t.Run("a fault on every command spares the greeting", func(t *testing.T) {
		s := Start(t, Options{})
		s.AddFault(Fault{Drop: true})
		dialGreeted(t, s)
	})
}

// TestHang: the server goes silent; Close still ends the connection.
func TestHang(t *testing.T) {
	s := readerFixture(t, Options{})
	s.AddFault(Fault{Cmd: "BODY", Hang: true})
	c := dialGreeted(t, s)
	c.send("BODY <1@example>\r\n")
	if !c.silent(50 * time.Millisecond) {
		t.Fatalf("a hanging server answered")
	}
	c.send("DATE\r\n") // read and ignored
	if !c.silent(10 * time.Millisecond) {
		t.Fatalf("a hanging server answered a later command")
	}
	if s.Count("DATE") != 0 {
		t.Errorf("a hanging connection processed DATE")
	}
	s.Close()
	if got := c.rest(); got != "" {
		t.Errorf("after Close read %q", got)
	}

	g := Start(t, Options{})
	g.AddFault(Fault{Cmd: Greeting, Hang: true})
	c = dial(t, g)
	if !c.silent(50 * time.Millisecond) {
		t.Fatalf("a silent greeting said something")
	}
}

// TestTakeThisFault: a replaced TAKETHIS response still consumes the
// article, so the next command is read in step, and the transfer is recorded
// with the fault's code.
func TestTakeThisFault(t *testing.T) {
	s := Start(t, Options{})
	s.AddFault(Fault{Cmd: "TAKETHIS", Nth: 2, Code: 400, Text: "going down"})
	c := dialGreeted(t, s)
	c.send(takethis("<1@x>") + takethis("<2@x>") + takethis("<3@x>") + "DATE\r\n")
	got := []string{c.line(), c.line(), c.line(), c.line()[:4]}
	if diff := cmp.Diff([]string{"239 <1@x>", "400 going down", "239 <3@x>", "111 "}, got); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
	xs := s.Transfers()
	if len(xs) != 3 || xs[1].Code != 400 || xs[1].Accepted() || string(xs[1].Article) != wantArticle("<2@x>") {
		t.Errorf("transfers %+v", xs)
	}
	if diff := cmp.Diff([]string{"<1@x>", "<3@x>"}, s.AcceptedIDs()); diff != "" {
		t.Errorf("accepted (-want +got):\n%s", diff)
	}
}

func TestParseFault(t *testing.T) {
	tests := []struct {
		spec string
		want Fault
	}{
		{"cmd=TAKETHIS nth=2 code=400 text=\"going down\" close",
			Fault{Cmd: "TAKETHIS", Nth: 2, Code: 400, Text: "going down", Close: true}},
		{"cmd=mode_stream code=501", Fault{Cmd: "MODE STREAM", Code: 501}},
		{"cmd=GREETING garbage=hello", Fault{Cmd: Greeting, Garbage: "hello\r\n"}},
		{`garbage="a b\n"`, Fault{Garbage: "a b\n"}},
		{"cmd=BODY conn=2 times=3 delay=15ms closeafter=100 rate=500", Fault{Cmd: "BODY", Conn: 2, Times: 3, Delay: 15 * time.Millisecond, CloseAfter: 100, Rate: 500}},
		{"  hang   drop ", Fault{Hang: true, Drop: true}},
		{"", Fault{}},
	}
	for _, tt := range tests {
		got, err := ParseFault(tt.spec)
		if err != nil {
			t.Errorf("ParseFault(%q): %v", tt.spec, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseFault(%q) (-want +got):\n%s", tt.spec, diff)
		}
		back, err := ParseFault(got.String())
		if err != nil || !cmp.Equal(back, got) {
			t.Errorf("ParseFault(%q) = %+v, %v; not the fault that printed it", got.String(), back, err)
		}
	}
	for _, bad := range []string{
		"code=99", "code=600", "code=x", "nth=-1", "delay=soon", "delay=-1s", "hang=yes", "bogus", "color=red",
		`text="unterminated`, `text="a"b`, `text="a\nb"`,
	} {
		if f, err := ParseFault(bad); err == nil {
			t.Errorf("ParseFault(%q) = %+v, want an error", bad, f)
		}
	}
	if s := (Fault{Cmd: "LIST ACTIVE", Text: "x y"}).String(); !strings.Contains(s, "cmd=LIST_ACTIVE") || !strings.Contains(s, `text="x y"`) {
		t.Errorf("String() = %q", s)
	}
}
