package queue

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// innToken is the shape of an INN storage token as grephistory prints it.
const innToken = "@030100000000000000000000000000000000@"

func TestParseLine(t *testing.T) {
	long := strings.Repeat("x", MaxTokenLen+1)
	cases := []struct {
		name string
		line string
		want Entry
		err  string // substring; "" means valid
	}{
		{name: "innfeed backlog line", line: innToken + " <i.am.an.article@example.com>\n",
			want: Entry{Token: innToken, MessageID: "<i.am.an.article@example.com>"}},
		{name: "deferred twice", line: "@a@ <a@x> 2\n", want: Entry{Token: "@a@", MessageID: "<a@x>", Attempts: 2, Resend: true}},
		{name: "largest attempts", line: "@a@ <a@x> 2147483647\n", want: Entry{Token: "@a@", MessageID: "<a@x>", Attempts: MaxAttempts, Resend: true}},
		{name: "offered before, never deferred", line: "@a@ <a@x> 0\n", want: Entry{Token: "@a@", MessageID: "<a@x>", Resend: true}},
		{name: "unusual but framed id", line: "@a@ <no-at-sign>\n", want: Entry{Token: "@a@", MessageID: "<no-at-sign>"}},
		{name: "torn: no LF", line: "@a@ <a@x>", err: "no LF"},
		{name: "torn: NULs a crash left", line: "@a@ <a@\x00\x00\x00\n", err: "octet 0x00"},
		{name: "empty line", line: "\n", err: "want <token> <message-id>"},
		{name: "one field", line: "@a@\n", err: "want <token> <message-id>"},
		{name: "double space", line: "@a@  <a@x>\n", err: "empty message-id"},
		{name: "four fields", line: "@a@ <a@x> 1 2\n", err: "more than 3 fields"},
		{name: "CRLF", line: "@a@ <a@x>\r\n", err: "octet 0x0d"},
		{name: "id without brackets", line: "@a@ a@x\n", err: "not enclosed"},
		{name: "attempts with a leading zero", line: "@a@ <a@x> 01\n", err: "not a decimal in 0.."},
		{name: "attempts zero twice", line: "@a@ <a@x> 00\n", err: "not a decimal in 0.."},
		{name: "attempts empty", line: "@a@ <a@x> \n", err: "not a decimal in 0.."},
		{name: "attempts not a number", line: "@a@ <a@x> x\n", err: "not a decimal"},
		{name: "attempts too large", line: "@a@ <a@x> 2147483648\n", err: "out of range"},
		{name: "token too long", line: long + " <a@x>\n", err: "token of 256 octets"},
		{name: "id too long", line: "@a@ <" + strings.Repeat("x", 249) + ">\n", err: "message-id of 251 octets"},
		{name: "tab inside", line: "@a@\t<a@x>\n", err: "want <token> <message-id>"},
		{name: "tab in the token", line: "@a\t@ <a@x>\n", err: "token holds octet 0x09"},
		{name: "8-bit octet", line: "@a@ <\xc3\xa9@x>\n", err: "octet 0xc3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLine([]byte(tc.line))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrBadLine) {
					t.Fatalf("ParseLine(%q) = %+v, %v; want an ErrBadLine containing %q", tc.line, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLine(%q): %v", tc.line, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("entry (-want +got):\n%s", diff)
			}
			if back := AppendLine(nil, got); string(back) != tc.line {
				t.Errorf("AppendLine gives %q, want %q back", back, tc.line)
			}
			if n := LineLen(got); n != int64(len(tc.line)) {
				t.Errorf("LineLen = %d, want %d", n, len(tc.line))
			}
		})
	}
}

// TestParseLineString checks that the string form gives the same entries
// and errors as ParseLine, that its entries' fields are parts of the line
// (the point of it: no allocation per line), and that CheckLine agrees.
func TestParseLineString(t *testing.T) {
	for _, line := range []string{"@a@ <a@x>\n", "@a@ <a@x> 2\n", "@a@ <a@x>", "@a@ <a@x> 0\n", "@a@\t<a@x>\n"} {
		want, werr := ParseLine([]byte(line))
		got, err := ParseLineString(line)
		if got != want || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Errorf("ParseLineString(%q) = %+v, %v; ParseLine %+v, %v", line, got, err, want, werr)
		}
		if a, cerr := CheckLine([]byte(line)); a != want.Attempts || fmt.Sprint(cerr) != fmt.Sprint(werr) {
			t.Errorf("CheckLine(%q) = %d, %v; ParseLine %+v, %v", line, a, cerr, want, werr)
		}
	}
	run := "@a@ <a@x>\n@b@ <b@x> 3\n"
	if n := testing.AllocsPerRun(100, func() {
		if _, err := ParseLineString(run[:10]); err != nil {
			t.Fatal(err)
		}
		if _, err := ParseLineString(run[10:]); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ParseLineString allocates %v times for two good lines, want 0", n)
	}
	good := []byte("@a@ <a@x> 3\n")
	if n := testing.AllocsPerRun(100, func() {
		if _, err := CheckLine(good); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CheckLine allocates %v times for a good line, want 0", n)
	}
}

func TestFileNames(t *testing.T) {
	if got := FileName("peer", KindBacklog, 0x5db93971); got != "peer.B.5db93971" {
		t.Errorf("FileName = %q, want peer.B.5db93971", got)
	}
	cases := []struct {
		peer, name string
		kind       Kind
		ts         int64
		ok         bool
	}{
		{"peer", "peer.B.5db93971", KindBacklog, 0x5db93971, true},
		{"peer", "peer.D.0", KindDeferred, 0, true},
		{"news.example.org", "news.example.org.D.1", KindDeferred, 1, true},
		{"peer", "peer.D.7fffffffffffffff", KindDeferred, 1<<63 - 1, true},
		{"peer", "peer.D.8000000000000000", 0, 0, false}, // beyond int64
		{"peer", "peer.B.05", 0, 0, false},               // FileName never writes a leading zero
		{"peer", "peer.B.5DB93971", 0, 0, false},
		{"peer", "peer.B.", 0, 0, false},
		{"peer", "peer.P", 0, 0, false},
		{"peer", "peer.P.ckpt", 0, 0, false},
		{"peer", "peer.Q.5", 0, 0, false},
		{"peer", "peer.B.5.tmp", 0, 0, false},
		{"peer", "peerx.B.1", 0, 0, false},
		{"peer.B", "peer.B.1", 0, 0, false}, // another peer's file
		{"peer", "peer.B.B.1", 0, 0, false}, // peer "peer.B"'s file
		{"peer", "peer.B.12345678901234567", 0, 0, false},
		{"peer", "peer", 0, 0, false},
	}
	for _, tc := range cases {
		k, ts, ok := ParseFileName(tc.peer, tc.name)
		if ok != tc.ok || k != tc.kind || ts != tc.ts {
			t.Errorf("ParseFileName(%q, %q) = %v %x %v, want %v %x %v", tc.peer, tc.name, k, ts, ok, tc.kind, tc.ts, tc.ok)
		}
	}
	if got := JournalName("peer", 0x5db93971); got != "peer.J.5db93971" {
		t.Errorf("JournalName = %q, want peer.J.5db93971", got)
	}
	journals := []struct {
		peer, name string
		ts         int64
		ok         bool
	}{
		{"peer", "peer.J.5db93971", 0x5db93971, true},
		{"peer", "peer.J.0", 0, true},
		{"news.example.org", "news.example.org.J.1", 1, true},
		{"peer", "peer.J.05", 0, false},
		{"peer", "peer.J.", 0, false},
		{"peer", "peer.J.5DB93971", 0, false},
		{"peer", "peer.B.5db93971", 0, false}, // a backlog file is not a journal
		{"peer", "peer.J.J.1", 0, false},      // peer "peer.J"'s journal
		{"peer.J", "peer.J.1", 0, false},
		{"peer", "peer.J.1.tmp", 0, false},
		{"peer", "peer.J.8000000000000000", 0, false},
	}
	for _, tc := range journals {
		ts, ok := ParseJournalName(tc.peer, tc.name)
		if ok != tc.ok || ts != tc.ts {
			t.Errorf("ParseJournalName(%q, %q) = %x %v, want %x %v", tc.peer, tc.name, ts, ok, tc.ts, tc.ok)
		}
		if _, _, ok := ParseFileName(tc.peer, tc.name); ok && tc.ok {
			t.Errorf("journal name %q also parses as a backlog file", tc.name)
		}
	}
}

// referenceParseLine is the slow, obvious reading of the line format the
// fuzz target compares ParseLine with.
func referenceParseLine(line []byte) (Entry, bool) {
	s := string(line)
	if !strings.HasSuffix(s, "\n") {
		return Entry{}, false
	}
	s = strings.TrimSuffix(s, "\n")
	for _, r := range []byte(s) {
		if r != ' ' && (r < 0x21 || r > 0x7e) {
			return Entry{}, false
		}
	}
	f := strings.Split(s, " ")
	if len(f) < 2 || len(f) > 3 {
		return Entry{}, false
	}
	e := Entry{Token: f[0], MessageID: f[1]}
	if len(e.Token) < 1 || len(e.Token) > MaxTokenLen || len(e.MessageID) < 3 || len(e.MessageID) > MaxMessageIDLen ||
		!strings.HasPrefix(e.MessageID, "<") || !strings.HasSuffix(e.MessageID, ">") {
		return Entry{}, false
	}
	if len(f) == 3 {
		a, err := strconv.Atoi(f[2])
		if err != nil || a < 0 || a > MaxAttempts || strconv.Itoa(a) != f[2] {
			return Entry{}, false
		}
		e.Attempts, e.Resend = a, true
	}
	return e, true
}

// FuzzParseLine checks ParseLine against the reference and that every line
// it accepts encodes back to the same bytes, with LineLen octets.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		innToken + " <i.am.an.article@example.com>\n",
		"@a@ <a@x> 3\n", "@a@ <a@x>", "@a@ <a@\x00\x00\n", "\n", "@a@ <a@x> 01\n",
		"@a@ <a@x> 1 2\n", "@a@  <a@x>\n", "@a@ <a@x>\r\n",
		" <a@x>\n", "@a@ <a@x> \n", "@a@ a@x>\n", "@a@ <a@x\n", "@a@ <>\n", "@a@ <a>\n",
		"@a@ <a@x> 11\n", "@a@ <a@x> 1\x7f\n", "@a@\n", "@a@ <a@x>\n\n",
		"@a@ <a@x> 0\n", "@a@ <a@x> 00\n", "@a@ <a@x> -0\n", "@a@ <a@x> +1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := ParseLine(line)
		// The one-pass parse and the field-by-field one agree, errors too.
		slow, serr := parseLineFields(line)
		if got != slow || fmt.Sprint(err) != fmt.Sprint(serr) {
			t.Fatalf("ParseLine(%q) = %+v, %v; parseLineFields %+v, %v", line, got, err, slow, serr)
		}
		// The string form and the checker agree with it, errors too.
		str, strErr := ParseLineString(string(line))
		if str != got || fmt.Sprint(strErr) != fmt.Sprint(err) {
			t.Fatalf("ParseLineString(%q) = %+v, %v; ParseLine %+v, %v", line, str, strErr, got, err)
		}
		if a, cerr := CheckLine(line); a != got.Attempts || fmt.Sprint(cerr) != fmt.Sprint(err) {
			t.Fatalf("CheckLine(%q) = %d, %v; ParseLine %+v, %v", line, a, cerr, got, err)
		}
		want, ok := referenceParseLine(line)
		if (err == nil) != ok {
			t.Fatalf("ParseLine(%q) error %v, reference accepts %v", line, err, ok)
		}
		if err != nil {
			return
		}
		if got != want {
			t.Fatalf("ParseLine(%q) = %+v, reference %+v", line, got, want)
		}
		if back := AppendLine(nil, got); !bytes.Equal(back, line) {
			t.Fatalf("ParseLine(%q) re-encodes as %q", line, back)
		}
		if LineLen(got) != int64(len(line)) {
			t.Fatalf("LineLen = %d for a %d-octet line", LineLen(got), len(line))
		}
	})
}

// FuzzParseFileName checks that ParseFileName and ParseJournalName accept
// exactly the names FileName and JournalName make: what they parse builds
// back to the same name, any name made parses back to its kind and
// timestamp, and no name is both a backlog file and a journal.
func FuzzParseFileName(f *testing.F) {
	f.Add("peer", "peer.B.5db93971", int64(0x5db93971))
	f.Add("news.example.org", "news.example.org.D.0", int64(0))
	f.Add("peer", "peer.B.05", int64(-1))
	f.Add("peer.B", "peer.B.B.1", int64(1<<62))
	f.Add("peer", "peer.J.5db93971", int64(0x5db93971))
	f.Add("peer.J", "peer.J.J.1", int64(1))
	f.Fuzz(func(t *testing.T, peer, name string, ts int64) {
		k, v, okB := ParseFileName(peer, name)
		if okB {
			if back := FileName(peer, k, v); back != name {
				t.Fatalf("ParseFileName(%q, %q) = %v %x; FileName gives %q", peer, name, k, v, back)
			}
		}
		if v, ok := ParseJournalName(peer, name); ok {
			if back := JournalName(peer, v); back != name {
				t.Fatalf("ParseJournalName(%q, %q) = %x; JournalName gives %q", peer, name, v, back)
			}
			if okB {
				t.Fatalf("%q is both a backlog file and a journal of %q", name, peer)
			}
		}
		if ts < 0 {
			return
		}
		if v, ok := ParseJournalName(peer, JournalName(peer, ts)); !ok || v != ts {
			t.Fatalf("JournalName(%q, %x) parses as %x %v", peer, ts, v, ok)
		}
		for _, k := range []Kind{KindBacklog, KindDeferred} {
			n := FileName(peer, k, ts)
			gk, gts, ok := ParseFileName(peer, n)
			if !ok || gk != k || gts != ts {
				t.Fatalf("FileName(%q, %v, %x) = %q parses as %v %x %v", peer, k, ts, n, gk, gts, ok)
			}
		}
	})
}

// FuzzPrintable8 checks the word-at-a-time range test against the octets
// one at a time (the seeds hold each edge: 0x20/0x21, 0x7E/0x7F, 0x80, 0xFF).
func FuzzPrintable8(f *testing.F) {
	for _, w := range []uint64{0x2121212121212121, 0x7e7e7e7e7e7e7e7e, 0x2021212121212121, 0x217f212121212121,
		0x8021212121212121, 0xffffffffffffffff, 0, 0x4141414141414120, 0x7f7e7e7e7e7e7e7e} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w uint64) {
		want := true
		for i := 0; i < 8; i++ {
			if c := byte(w >> (8 * i)); c < 0x21 || c > 0x7e {
				want = false
			}
		}
		if got := printable8(w); got != want {
			t.Fatalf("printable8(%#016x) = %v, want %v", w, got, want)
		}
	})
}

// TestPrintable8 puts every octet value at every position of a word of
// 'A's (and of '~'s, the top of the range): the word is printable exactly
// when that octet is.
func TestPrintable8(t *testing.T) {
	for _, fill := range []uint64{0x4141414141414141, 0x7e7e7e7e7e7e7e7e, 0x2121212121212121} {
		for pos := 0; pos < 8; pos++ {
			for c := 0; c < 256; c++ {
				w := fill&^(0xff<<(8*pos)) | uint64(c)<<(8*pos)
				if got, want := printable8(w), c >= 0x21 && c <= 0x7e; got != want {
					t.Errorf("printable8(%#016x) = %v, want %v", w, got, want)
				}
			}
		}
	}
}
