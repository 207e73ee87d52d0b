package proto

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestToWire(t *testing.T) {
	tests := []struct{ name, native, wire string }{
		{"empty", "", ".\r\n"},
		{"LF lines", "a\nb\n", "a\r\nb\r\n.\r\n"},
		{"CRLF left alone", "a\r\nb\n", "a\r\nb\r\n.\r\n"},
		{"no final newline", "a\nb", "a\r\nb\r\n.\r\n"},
		{"dot-stuffing", ".\n..x\n.a\nb.\n", "..\r\n...x\r\n..a\r\nb.\r\n.\r\n"},
		{"empty lines", "\n\n", "\r\n\r\n.\r\n"},
		{"bare CR inside a line kept", "a\rb\n", "a\rb\r\n.\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wire, string(ToWire([]byte(tc.native)))); diff != "" {
				t.Errorf("ToWire(%q) diff:\n%s", tc.native, diff)
			}
		})
	}
}

func TestFromWire(t *testing.T) {
	tests := []struct{ name, wire, native, wantErr string }{
		{"empty", ".\r\n", "", ""},
		{"lines", "a\r\nb\r\n.\r\n", "a\nb\n", ""},
		{"unstuff", "..\r\n...x\r\n.\r\n", ".\n..x\n", ""},
		{"bare LF tolerated", "a\nb\n.\n", "a\nb\n", ""},
		{"not terminated", "a\r\nb\r\n", "", "not terminated"},
		{"data after", "a\r\n.\r\nextra", "", "5 octets after the terminator"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromWire([]byte(tc.wire))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("FromWire(%q) error = %v, want %q", tc.wire, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.native, string(got)); diff != "" {
				t.Errorf("FromWire(%q) diff:\n%s", tc.wire, diff)
			}
		})
	}
}

func FuzzWireRoundTrip(f *testing.F) {
	f.Add([]byte("Path: a!b\nSubject: x\n\n.hidden\n..two\nend\n"))
	f.Add([]byte(""))
	f.Add([]byte("."))
	f.Add([]byte("a\r\nb"))
	f.Add([]byte("\r\r\n.\r"))
	f.Fuzz(func(t *testing.T, native []byte) {
		wire := ToWire(native)
		if !bytes.HasSuffix(wire, []byte("\r\n.\r\n")) && string(wire) != ".\r\n" {
			t.Fatalf("ToWire(%q) = %q: not terminated", native, wire)
		}
		// Every LF on the wire is part of a CRLF, and no line starts with a
		// single dot except the terminator.
		for i, c := range wire {
			if c == '\n' && (i == 0 || wire[i-1] != '\r') {
				t.Fatalf("ToWire(%q) = %q: bare LF at %d", native, wire, i)
			}
		}
		back, err := FromWire(wire)
		if err != nil {
			t.Fatalf("FromWire(ToWire(%q)): %v", native, err)
		}
		if want := refNormalizeNative(native); !bytes.Equal(back, want) {
			t.Fatalf("FromWire(ToWire(%q)) = %q, want %q", native, back, want)
		}
		// Canonical native text (no CR before an LF) survives exactly, and
		// its wire form is a fixed point.
		if !bytes.Contains(back, []byte("\r\n")) {
			if again := ToWire(back); !bytes.Equal(again, wire) {
				t.Fatalf("ToWire(FromWire(%q)) = %q", wire, again)
			}
		}
	})
}

// refNormalizeNative is what a wire round trip makes of native text: every
// LF-terminated line loses one CR before its LF, and an unterminated last
// line gains an LF.
func refNormalizeNative(native []byte) []byte {
	out := []byte{}
	for len(native) > 0 {
		i := bytes.IndexByte(native, '\n')
		if i < 0 {
			out = append(out, native...)
			return append(out, '\n')
		}
		out = append(out, bytes.TrimSuffix(native[:i], []byte("\r"))...)
		out = append(out, '\n')
		native = native[i+1:]
	}
	return out
}

func TestParseArticleDate(t *testing.T) {
	est := time.FixedZone("", -5*3600)
	cet := time.FixedZone("", 3600)
	tests := []struct {
		in   string
		want time.Time
	}{
		{"Tue, 14 Mar 2023 09:26:53 +0100", time.Date(2023, 3, 14, 9, 26, 53, 0, cet)},
		{"14 Mar 2023 09:26:53 +0100", time.Date(2023, 3, 14, 9, 26, 53, 0, cet)},
		{"Tue, 14 Mar 2023 09:26 -0500", time.Date(2023, 3, 14, 9, 26, 0, 0, est)},
		{"Tue,14 Mar 2023 09:26:53 GMT", time.Date(2023, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"Tue, 1 Mar 2023 09:26:53 +0000 (UTC)", time.Date(2023, 3, 1, 9, 26, 53, 0, time.UTC)},
		{"Tue, 14 Mar 2023 09:26:53 +0000 GMT", time.Date(2023, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"(comment) Tue, (x (nested)) 14 Mar\r\n 2023 09:26:53 EST", time.Date(2023, 3, 14, 9, 26, 53, 0, est)},
		// Obsolete forms, RFC 5322 §4.3.
		{"Wed, 14 Mar 01 09:26:53 EST", time.Date(2001, 3, 14, 9, 26, 53, 0, est)},
		{"14 Mar 95 09:26:53 PST", time.Date(1995, 3, 14, 9, 26, 53, 0, time.FixedZone("", -8*3600))},
		{"14 Mar 103 09:26:53 UT", time.Date(2003, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"14 Mar 2003 09:26:53 A", time.Date(2003, 3, 14, 9, 26, 53, 0, time.UTC)}, // military: unknown
		{"14 Mar 2003 09:26:53 XYZT", time.Date(2003, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"14 Mar 2003 09:26:53", time.Date(2003, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"Friday, 14 March 2003 09:26:53 MET", time.Date(2003, 3, 14, 9, 26, 53, 0, cet)},
		{"14 sept 2003 09:26:53 +01", time.Date(2003, 9, 14, 9, 26, 53, 0, cet)},
		{"14 Mar 2003 09:26:53 +01:00", time.Date(2003, 3, 14, 9, 26, 53, 0, cet)},
		// RFC 850, asctime, Unix date, ISO 8601.
		{"Friday, 14-Mar-03 09:26:53 GMT", time.Date(2003, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"Fri Mar 14 09:26:53 2003", time.Date(2003, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"Fri Mar  4 09:26:53 EST 2003", time.Date(2003, 3, 4, 9, 26, 53, 0, est)},
		{"2003-03-14 09:26:53", time.Date(2003, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"2003-03-14T09:26:53Z", time.Date(2003, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"2003-03-14T09:26:53.123+01:00", time.Date(2003, 3, 14, 9, 26, 53, 0, cet)},
		{"2003-03-14 09:26:53 -0500", time.Date(2003, 3, 14, 9, 26, 53, 0, est)},
		// Wrong day of week ignored; leap second normalised.
		{"Mon, 14 Mar 2023 09:26:53 +0000", time.Date(2023, 3, 14, 9, 26, 53, 0, time.UTC)},
		{"31 Dec 2016 23:59:60 +0000", time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"29 Feb 2024 00:00:00 +0000", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		got, err := ParseArticleDate(tc.in)
		if err != nil {
			t.Errorf("ParseArticleDate(%q): %v", tc.in, err)
			continue
		}
		_, gotOff := got.Zone()
		_, wantOff := tc.want.Zone()
		if !got.Equal(tc.want) || gotOff != wantOff {
			t.Errorf("ParseArticleDate(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseArticleDateErrors(t *testing.T) {
	tests := []struct{ in, wantErr string }{
		{"", "empty"},
		{"Tue,", "no date after the day of week"},
		{"14 Foo 2023 09:26:53 +0000", `unknown month "Foo"`},
		{"30 Feb 2023 09:26:53 +0000", "day 30 is past the end of February 2023"},
		{"32 Jan 2023 09:26:53 +0000", "day 32 out of range"},
		{"14 Mar 2023 24:00:00 +0000", "out of range"},
		{"14 Mar 2023 09:60:00 +0000", "out of range"},
		{"14 Mar 2023 9.26.53 +0000", "not hh:mm"},
		{"14 Mar 2023 09:26:53 +2400", "zone \"+2400\" out of range"},
		{"14 Mar 2023 09:26:53 +01x0", "is not +hhmm"},
		{"14 Mar 2023 09:26:53 +0000 and more", "unexpected words after the zone"},
		{"14 Mar 20233 09:26:53 +0000", "is not 2 to 4 digits"},
		{"14 Mar 2023 (unclosed", "unclosed comment"},
		{"14 Mar 2023", "want day month year time"},
		{"hello world", "unrecognised date form"},
	}
	for _, tc := range tests {
		_, err := ParseArticleDate(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseArticleDate(%q) error = %v, want %q", tc.in, err, tc.wantErr)
		}
	}
}

func FuzzDate(f *testing.F) {
	f.Add("Tue, 14 Mar 2023 09:26:53 +0100", int64(1678782413), int16(60))
	f.Add("Fri Mar  4 09:26:53 EST 2003", int64(0), int16(-300))
	f.Add("14-Mar-03 09:26:53 GMT", int64(4102444799), int16(0))
	f.Add("2003-03-14T09:26:53Z", int64(-2208988800), int16(23*60+59))
	f.Fuzz(func(t *testing.T, s string, unix int64, offMin int16) {
		// Arbitrary text: no panic, and whatever parses survives a trip
		// through the canonical RFC 5322 form.
		if got, err := ParseArticleDate(s); err == nil {
			again, err := ParseArticleDate(FormatArticleDate(got))
			if err != nil || !again.Equal(got) {
				t.Fatalf("%q -> %v -> %q -> %v, %v", s, got, FormatArticleDate(got), again, err)
			}
		}
		// Generated instants in years 1000-9999 and offsets within ±23:59
		// round-trip exactly, zone included.
		const lo, hi = -30610224000, 253402300799 // 1000-01-01 .. 9999-12-31
		if unix < lo || unix > hi || offMin < -(23*60+59) || offMin > 23*60+59 {
			return
		}
		want := time.Unix(unix, 0).In(time.FixedZone("", int(offMin)*60))
		if want.Year() < 1000 || want.Year() > 9999 {
			return
		}
		got, err := ParseArticleDate(FormatArticleDate(want))
		if err != nil || !got.Equal(want) {
			t.Fatalf("%q parsed as %v, %v; want %v", FormatArticleDate(want), got, err, want)
		}
		if _, o := got.Zone(); o != int(offMin)*60 {
			t.Fatalf("%q: offset %d, want %d", FormatArticleDate(want), o, int(offMin)*60)
		}
	})
}

const validHeader = "Path: peer.example!not-for-mail\r\n" +
	"From: a@example.org\r\n" +
	"Newsgroups: misc.test\r\n" +
	"Subject: test\r\n" +
	"Date: Tue, 14 Mar 2023 09:26:53 +0000\r\n" +
	"Message-ID: <1@example.org>\r\n" +
	"\r\n"

func TestValidateArticle(t *testing.T) {
	now := time.Date(2023, 3, 14, 12, 0, 0, 0, time.UTC)
	replace := func(old, new string) string { return strings.Replace(validHeader, old, new, 1) }
	tests := []struct {
		name, header string
		opts         ValidateOptions
		wantReason   string // "" means accepted
	}{
		{"valid", validHeader, ValidateOptions{}, ""},
		{"valid with all checks", validHeader, ValidateOptions{MessageID: "<1@example.org>", PathIdentity: "me.example", Now: now, MaxAge: 24 * time.Hour, Size: 100, MaxSize: 1000}, ""},
		{"missing Path", replace("Path: peer.example!not-for-mail\r\n", ""), ValidateOptions{}, "Missing Path header"},
		{"missing Message-ID", replace("Message-ID: <1@example.org>\r\n", ""), ValidateOptions{}, "Missing Message-ID header"},
		{"missing Date", replace("Date: Tue, 14 Mar 2023 09:26:53 +0000\r\n", ""), ValidateOptions{}, "Missing Date header"},
		{"missing From", replace("From: a@example.org\r\n", ""), ValidateOptions{}, "Missing From header"},
		{"missing Subject", replace("Subject: test\r\n", ""), ValidateOptions{}, "Missing Subject header"},
		{"missing Newsgroups", replace("Newsgroups: misc.test\r\n", ""), ValidateOptions{}, "Missing Newsgroups header"},
		{"duplicate Subject", replace("Subject: test\r\n", "Subject: a\r\nsubject: b\r\n"), ValidateOptions{}, "Duplicate Subject header"},
		{"bad Message-ID", replace("<1@example.org>", "<1 example.org>"), ValidateOptions{}, `Bad Message-ID header: message-id "<1 example.org>": whitespace (only printable US-ASCII is allowed)`},
		{"other Message-ID than offered", validHeader, ValidateOptions{MessageID: "<2@example.org>"}, "Message-ID <1@example.org> does not match the offered <2@example.org>"},
		{"bad Newsgroups", replace("misc.test", "misc..test"), ValidateOptions{}, `Bad Newsgroups "misc..test": newsgroup name "misc..test" has an empty component`},
		{"empty Path", replace("peer.example!not-for-mail", "!"), ValidateOptions{}, "Empty Path header"},
		{"path loop", validHeader, ValidateOptions{PathIdentity: "PEER.example"}, "Path loop: already holds PEER.example"},
		{"empty From", replace("a@example.org", " "), ValidateOptions{}, "Empty From header"},
		{"bad Date", replace("Tue, 14 Mar 2023", "Tue, 14 Foo 2023"), ValidateOptions{}, `Bad Date "Tue, 14 Foo 2023 09:26:53 +0000": unknown month "Foo"`},
		{"too old", validHeader, ValidateOptions{Now: now, MaxAge: time.Hour}, "Too old: dated Tue, 14 Mar 2023 09:26:53 +0000"},
		{"future, default window", validHeader, ValidateOptions{Now: now.Add(-27 * time.Hour)}, "Dated in the future: Tue, 14 Mar 2023 09:26:53 +0000"},
		{"future within window", validHeader, ValidateOptions{Now: now.Add(-23 * time.Hour)}, ""},
		{"future check disabled", validHeader, ValidateOptions{Now: now.Add(-27 * time.Hour), MaxFuture: -1}, ""},
		{"too large", validHeader, ValidateOptions{Size: 1001, MaxSize: 1000}, "Too large: 1001 octets, limit 1000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _, err := ParseHeaders([]byte(tc.header))
			if err != nil {
				t.Fatal(err)
			}
			err = ValidateArticle(h, tc.opts)
			if tc.wantReason == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var rej *RejectError
			if !errors.As(err, &rej) {
				t.Fatalf("error %v is not a *RejectError", err)
			}
			if rej.Reason != tc.wantReason {
				t.Errorf("reason = %q\nwant     %q", rej.Reason, tc.wantReason)
			}
		})
	}
}

func TestRejectReasonIsOneLine(t *testing.T) {
	// A hostile Message-ID must not smuggle a line break into the 437/439 reply.
	h, _, err := ParseHeaders([]byte(strings.Replace(validHeader, "<1@example.org>", "<1\r\n @example.org>", 1)))
	if err != nil {
		t.Fatal(err)
	}
	err = ValidateArticle(h, ValidateOptions{MessageID: "<x\r\n@y>"})
	if err == nil || strings.ContainsAny(err.Error(), "\r\n") {
		t.Fatalf("reason %q holds a line break", err)
	}
	line := AppendResponse(nil, CodeTakeThisReject, "<x@y> "+err.Error())
	if _, err := ParseResponse(line); err != nil || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("response %q is not one line: %v", line, err)
	}
}
