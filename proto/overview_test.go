package proto

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// innOverviewFmt is LIST OVERVIEW.FMT as INN 2.7 sends it.
var innOverviewFmt = []string{"Subject:", "From:", "Date:", "Message-ID:", "References:", ":bytes", ":lines", "Xref:full"}

func TestParseOverviewFmt(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		want    OverviewFmt
		wantErr string
	}{
		{"INN 2.7", innOverviewFmt, DefaultOverviewFmt, ""},
		{"old Bytes:/Lines: forms, any case, CRLF", []string{"subject:", "FROM:", "Date:", "Message-ID:", "References:", "Bytes:", "Lines:\r\n", "Xref:full"}, DefaultOverviewFmt, ""},
		{"extra fields", []string{"Subject:", "From:", "Date:", "Message-ID:", "References:", ":bytes", ":lines", "Xref:full", "Newsgroups:FULL", "Path:", ":x-meta"},
			append(DefaultOverviewFmt[:8:8], OverviewFmtField{"Newsgroups", true}, OverviewFmtField{"Path", false}, OverviewFmtField{":x-meta", false}), ""},
		{"only the seven", innOverviewFmt[:7], DefaultOverviewFmt[:7], ""},
		{"blank lines skipped", []string{"", "Subject:", "From:", "Date:", "Message-ID:", "References:", ":bytes", ":lines", ""}, DefaultOverviewFmt[:7], ""},
		{"wrong order", []string{"From:", "Subject:", "Date:", "Message-ID:", "References:", ":bytes", ":lines"}, nil, "wants Subject here"},
		{"too few", innOverviewFmt[:5], nil, "5 fields, RFC 3977 §8.4.2 requires the first 7"},
		{"no colon", []string{"Subject"}, nil, `want Name: or :metadata`},
		{"bad suffix", []string{"Subject:", "From:", "Date:", "Message-ID:", "References:", ":bytes", ":lines", "Xref:half"}, nil, `unknown suffix "half"`},
		{"empty metadata", []string{":"}, nil, "empty metadata name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseOverviewFmt(tc.lines)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diff:\n%s", diff)
			}
		})
	}
}

func TestParseOverviewLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		f       OverviewFmt
		want    Overview
		wantErr string
	}{
		{
			name: "INN line",
			line: "1234\tRe: testing\tAlice <a@example.org>\tTue, 14 Mar 2023 09:26:53 +0100\t<u6p1ad$3kq$1@news.example.org>\t<a1@example.org> <b2@example.org>\t2345\t12\tXref: news.example.net misc.test:1234\r\n",
			want: Overview{Number: 1234, Subject: "Re: testing", From: "Alice <a@example.org>", Date: "Tue, 14 Mar 2023 09:26:53 +0100",
				MessageID: "<u6p1ad$3kq$1@news.example.org>", References: "<a1@example.org> <b2@example.org>", Bytes: 2345, Lines: 12,
				Extra: []OverviewExtra{{"Xref", "news.example.net misc.test:1234"}}},
		},
		{
			name: "empty fields (no references, no lines, empty Xref)",
			line: "7\tsubj\tfrom\tdate\t<m@x>\t\t100\t\t",
			want: Overview{Number: 7, Subject: "subj", From: "from", Date: "date", MessageID: "<m@x>", Bytes: 100,
				Extra: []OverviewExtra{{"Xref", ""}}},
		},
		{
			name: "missing trailing Xref",
			line: "7\ts\tf\td\t<m@x>\t\t1\t2",
			want: Overview{Number: 7, Subject: "s", From: "f", Date: "d", MessageID: "<m@x>", Bytes: 1, Lines: 2},
		},
		{
			name: "message-id form: number 0; Xref without the name (not full)",
			line: "0\ts\tf\td\t<m@x>\t\t1\t2\thost g:1",
			f:    append(DefaultOverviewFmt[:7:7], OverviewFmtField{Name: "Xref"}),
			want: Overview{Subject: "s", From: "f", Date: "d", MessageID: "<m@x>", Bytes: 1, Lines: 2, Extra: []OverviewExtra{{"Xref", "host g:1"}}},
		},
		{
			name: "full field without its name, and a field beyond the format",
			line: "1\ts\tf\td\t<m@x>\t\t1\t2\thost g:1\tspare",
			want: Overview{Number: 1, Subject: "s", From: "f", Date: "d", MessageID: "<m@x>", Bytes: 1, Lines: 2,
				Extra: []OverviewExtra{{"Xref", "host g:1"}, {"", "spare"}}},
		},
		{name: "NUL inside", line: "1\ts\x00\tf\td\t<m@x>\t\t1\t2", wantErr: "control octet 0x00 at offset 3"},
		{name: "CR inside", line: "1\ts\r\tf\td\t<m@x>\t\t1\t2\r\n", wantErr: "control octet 0x0d at offset 3"},
		{name: "too few fields", line: "1\ts\tf\td\t<m@x>\t\t1", wantErr: "6 fields after the number, want at least 7"},
		{name: "no tab", line: "1", wantErr: "no tab after the article number"},
		{name: "bad number", line: "x\ts\tf\td\t<m@x>\t\t1\t2", wantErr: `bad article number "x"`},
		{name: "bad bytes", line: "1\ts\tf\td\t<m@x>\t\tlots\t2", wantErr: `:bytes: bad article number "lots"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseOverviewLine([]byte(tc.line), tc.f)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diff:\n%s", diff)
			}
			if v, ok := got.ExtraValue("XREF"); ok != (len(tc.want.Extra) > 0 && tc.want.Extra[0].Name == "Xref") || (ok && v != tc.want.Extra[0].Value) {
				t.Errorf("ExtraValue(XREF) = %q, %v", v, ok)
			}
		})
	}
}

func TestAppendOverviewLine(t *testing.T) {
	o := Overview{Number: 3, Subject: "a\tb\r\nc", From: "f", Date: "d", MessageID: "<m@x>", Bytes: 10, Lines: 1,
		Extra: []OverviewExtra{{"Xref", "h g:3"}, {"", "spare"}}}
	got := string(AppendOverviewLine(nil, o, nil))
	want := "3\ta b  c\tf\td\t<m@x>\t\t10\t1\tXref: h g:3\tspare\r\n"
	if got != want {
		t.Errorf("AppendOverviewLine = %q\nwant %q", got, want)
	}
	o.Extra = nil
	if got, want := string(AppendOverviewLine(nil, o, nil)), "3\ta b  c\tf\td\t<m@x>\t\t10\t1\r\n"; got != want {
		t.Errorf("without Xref: %q, want %q", got, want)
	}
}

func TestPayloadLines(t *testing.T) {
	got := PayloadLines([]byte("a\r\nb\n\r\nc"))
	if diff := cmp.Diff([]string{"a", "b", "", "c"}, got); diff != "" {
		t.Errorf("diff:\n%s", diff)
	}
}

// sanitizeOverview is what an Overview becomes on the wire: TAB, CR, LF and
// NUL turn into spaces.
func sanitizeOverview(s string) string {
	return strings.NewReplacer("\t", " ", "\r", " ", "\n", " ", "\x00", " ").Replace(s)
}

func FuzzOverview(f *testing.F) {
	f.Add([]byte("1234\tRe: testing\tAlice <a@example.org>\tTue, 14 Mar 2023 09:26:53 +0100\t<u6p1ad$3kq$1@news.example.org>\t<a1@example.org>\t2345\t12\tXref: news.example.net misc.test:1234"), "s", "<m@x>", int64(5), uint32(7))
	f.Add([]byte("7\tsubj\tfrom\tdate\t<m@x>\t\t100\t\t"), "a\tb", "", int64(0), uint32(0))
	f.Add([]byte("0\t\t\t\t\t\t\t"), "", "x:y", int64(1<<40), uint32(1))
	f.Fuzz(func(t *testing.T, line []byte, subj, xref string, num int64, lines uint32) {
		// A parsed line is a fixed point of append then parse.
		if o, err := ParseOverviewLine(line, nil); err == nil {
			o2, err := ParseOverviewLine(AppendOverviewLine(nil, o, nil), nil)
			if err != nil {
				t.Fatalf("re-parse of %+v: %v", o, err)
			}
			if diff := cmp.Diff(o, o2); diff != "" {
				t.Fatalf("parse(append(parse(%q))) differs:\n%s", line, diff)
			}
		}
		// A constructed Overview round-trips, modulo TAB/CR/LF/NUL.
		if num < 0 {
			num = -num
		}
		if num < 0 {
			num = 0
		}
		x := Overview{Number: num, Subject: subj, From: subj + "f", Date: "d", MessageID: xref, References: subj,
			Bytes: int64(lines) * 3, Lines: int64(lines), Extra: []OverviewExtra{{"Xref", xref}}}
		got, err := ParseOverviewLine(AppendOverviewLine(nil, x, nil), nil)
		if err != nil {
			t.Fatalf("parse(append(%+v)): %v", x, err)
		}
		want := x
		for _, p := range []*string{&want.Subject, &want.From, &want.MessageID, &want.References, &want.Extra[0].Value} {
			*p = sanitizeOverview(*p)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("parse(append(x)) != x:\n%s", diff)
		}
	})
}
