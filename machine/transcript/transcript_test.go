package transcript

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var ignoreLine = cmpopts.IgnoreFields(Entry{}, "Line")

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Transcript
	}{
		{"plain lines", "C: CAPABILITIES\nS: 101 Capability list:\n", Transcript{
			{Kind: Data, Side: Client, Data: []byte("CAPABILITIES\r\n")},
			{Kind: Data, Side: Server, Data: []byte("101 Capability list:\r\n")},
		}},
		{"empty wire line", "S:\nS: \n", Transcript{
			{Kind: Data, Side: Server, Data: []byte("\r\n")},
			{Kind: Data, Side: Server, Data: []byte("\r\n")},
		}},
		{"leading space kept", "C:  x\n", Transcript{{Kind: Data, Side: Client, Data: []byte(" x\r\n")}}},
		{"escaped bare LF and NUL", `S~ "a\x00b\n"` + "\n", Transcript{{Kind: Data, Side: Server, Data: []byte("a\x00b\n")}}},
		{"escaped partial line", `C~ "AUTHINFO"` + "\n", Transcript{{Kind: Data, Side: Client, Data: []byte("AUTHINFO")}}},
		{"comments and blanks", "# hello\n#\n\n  \n#x\n", Transcript{
			{Kind: Comment, Text: "hello"}, {Kind: Comment}, {Kind: Blank}, {Kind: Blank}, {Kind: Comment, Text: "x"},
		}},
		{"time", "@ +1.5s\n@ +0s\n", Transcript{{Kind: Advance, D: 1500 * time.Millisecond}, {Kind: Advance}}},
		{"markers", "! tls\n! tls-fail bad cert\n! error\n! error malformed x\nS! eof\nC! eof\n", Transcript{
			{Kind: TLS}, {Kind: TLSFail, Text: "bad cert"}, {Kind: Error}, {Kind: Error, Text: "malformed x"},
			{Kind: EOF, Side: Server}, {Kind: EOF, Side: Client},
		}},
		{"CRLF file and no final newline", "C: A\r\nS: B", Transcript{
			{Kind: Data, Side: Client, Data: []byte("A\r\n")},
			{Kind: Data, Side: Server, Data: []byte("B\r\n")},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, ignoreLine); d != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tc.text, d)
			}
		})
	}
}

func TestParseLineNumbers(t *testing.T) {
	got, err := Parse([]byte("# a\n\nC: X\nS: Y\n"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, e := range got {
		lines = append(lines, e.Line)
	}
	if d := cmp.Diff([]int{1, 2, 3, 4}, lines); d != "" {
		t.Errorf("line numbers (-want +got):\n%s", d)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		text, want string
	}{
		{"C: ok\nX: what\n", "line 2: unknown line"},
		{"C:x\n", "line 1: \"C:x\": want a space"},
		{"C~ AB\n", "want a double-quoted string"},
		{`C~ "unterminated` + "\n", "invalid syntax"},
		{`C~ ""` + "\n", "empty data"},
		{`S~ "a" trailing` + "\n", "invalid syntax"},
		{"@ 1s\n", "want \"@ +<duration>\""},
		{"@ +-1s\n", "time cannot go back"},
		{"@ +soon\n", "time marker"},
		{"! nope\n", "unknown marker"},
		{"!tls\n", "want \"! <keyword>\""},
		{"! tls now\n", "tls takes no text"},
		{"S! closed\n", "want \"S! eof\""},
		{"# a\rb\n", "carriage return"},
		{"C\n", "unknown line"},
	}
	for _, tc := range tests {
		_, err := Parse([]byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.text, err, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	tr := Transcript{
		{Kind: Comment, Text: "greeting"},
		Send(Server, "200 news.example ready"),
		{Kind: Blank},
		Send(Client, "CAPABILITIES"),
		{Kind: Data, Side: Server, Data: []byte("\r\n")},
		{Kind: Data, Side: Server, Data: []byte("trailing space \r\n")},
		{Kind: Data, Side: Server, Data: []byte("bare lf\n")},
		{Kind: Data, Side: Server, Data: []byte("caf\xc3\xa9\r\n")},
		{Kind: Data, Side: Client, Data: []byte("partial")},
		{Kind: Data, Side: Client, Data: []byte("tab\there\r\n")},
		{Kind: Advance, D: 1500 * time.Millisecond},
		{Kind: TLS},
		{Kind: TLSFail, Text: "x509: bad"},
		{Kind: Error},
		{Kind: Error, Text: "malformed"},
		{Kind: EOF, Side: Server},
		{Kind: EOF, Side: Client},
		{Kind: Comment},
	}
	want := `# greeting
S: 200 news.example ready

C: CAPABILITIES
S:
S~ "trailing space \r\n"
S~ "bare lf\n"
S~ "caf\u00e9\r\n"
C~ "partial"
C: tab	here
@ +1.5s
! tls
! tls-fail x509: bad
! error
! error malformed
S! eof
C! eof
#
`
	got, err := Format(tr)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Errorf("Format (-want +got):\n%s", d)
	}
	back, err := Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(tr, back, ignoreLine); d != "" {
		t.Errorf("Parse(Format(t)) (-want +got):\n%s", d)
	}
	if tr.String() != want {
		t.Errorf("String() differs from Format")
	}
}

func TestFormatErrors(t *testing.T) {
	tests := []struct {
		e    Entry
		want string
	}{
		{Entry{Kind: Data, Side: Client}, "no bytes"},
		{Entry{Kind: Data, Data: []byte("x\r\n")}, "without a side"},
		{Entry{Kind: EOF}, "without a side"},
		{Entry{Kind: Comment, Text: "a\nb"}, "holds CR or LF"},
		{Entry{Kind: Error, Text: "a\rb"}, "holds CR or LF"},
		{Entry{Kind: Advance, D: -time.Second}, "negative"},
		{Entry{Kind: Kind(99)}, "unknown entry kind"},
	}
	for _, tc := range tests {
		_, err := Format(Transcript{tc.e})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Format(%+v) = %v, want an error containing %q", tc.e, err, tc.want)
		}
	}
}

func TestLines(t *testing.T) {
	got := Lines(Server, []byte("200 hi\r\n101 x\r\npart"))
	want := Transcript{
		Send(Server, "200 hi"), Send(Server, "101 x"),
		{Kind: Data, Side: Server, Data: []byte("part")},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Lines (-want +got):\n%s", d)
	}
}

// FuzzTranscript checks the round trips of the format: whatever Parse
// accepts, Format can write, and Parse reads back the same entries (line
// numbers included); Format's output is a fixed point.
func FuzzTranscript(f *testing.F) {
	for _, s := range []string{
		"C: CAPABILITIES\nS: 101 Capability list:\nS: VERSION 2\nS: .\n",
		"S: 200 news.example InterNetNews server INN 2.7.1 ready (transit mode)\n",
		"# comment\n\n@ +1.5s\n! tls\n! tls-fail x\n! error bad\nS! eof\nC! eof\n",
		`S~ "partial"` + "\n" + `C~ "\x00\xff\n"` + "\n",
		"C: A\r\nS: B",
		"S: 224 overview follows\nS: 1\tsubject\tauthor\nS: ..dot\nS: .\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		tr, err := Parse(text)
		if err != nil {
			return
		}
		out, err := Format(tr)
		if err != nil {
			t.Fatalf("Format(Parse(%q)): %v", text, err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Format(Parse(%q))) = %v; formatted:\n%s", text, err, out)
		}
		if d := cmp.Diff(tr, back, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("Parse(Format(t)) != t for %q (-want +got):\n%s", text, d)
		}
		again, err := Format(back)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Format is not a fixed point: %q then %q (%v)", out, again, err)
		}
		// The bytes of each side survive: the wire data is exactly what
		// the entries say, in order.
		var w1, w2 []byte
		for i := range tr {
			w1 = append(w1, tr[i].Data...)
			w2 = append(w2, back[i].Data...)
		}
		if !bytes.Equal(w1, w2) {
			t.Fatalf("wire bytes changed: %q -> %q", w1, w2)
		}
	})
}
