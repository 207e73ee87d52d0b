package newsweb

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// art builds an article from header lines and a body (LF; converted to CRLF
// like a server sends it).
func art(headers []string, body string) []byte {
	s := strings.Join(headers, "\n") + "\n\n" + body
	return []byte(strings.ReplaceAll(s, "\n", "\r\n"))
}

var basicHeaders = []string{
	"From: Jane Doe <jane@example.com>",
	"Newsgroups: misc.test,alt.test",
	"Subject: Hello",
	"Date: Tue, 02 Jan 2024 03:04:05 +0000",
	"Message-ID: <hello@example>",
}

func TestDecodeArticle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		raw     []byte
		parts   []Part
		attach  []Attachment
		subject string
		from    string
	}{
		{
			name: "plain text with quotes and signature",
			raw:  art(basicHeaders, "Jane wrote:\n> quoted\n> > deeper\n>>also deeper\nreply\n-- \nsig line\n"),
			parts: []Part{{Type: "text/plain", Lines: []Line{
				{Text: "Jane wrote:"}, {Text: "> quoted", Quote: 1}, {Text: "> > deeper", Quote: 2},
				{Text: ">>also deeper", Quote: 2}, {Text: "reply"}, {Text: "-- ", Sig: true}, {Text: "sig line", Sig: true},
			}}},
			subject: "Hello", from: "Jane Doe <jane@example.com>",
		},
		{
			name: "quoted-printable latin-1 and encoded-word subject",
			raw: art([]string{"From: =?ISO-8859-1?Q?Ren=E9_M=FCller?= <r@example>", "Newsgroups: misc.test",
				"Subject: =?UTF-8?B?R3LDvMOfZQ==?= und =?iso-8859-15?q?=A4uro?=", "Message-ID: <qp@example>",
				"MIME-Version: 1.0", "Content-Type: text/plain; charset=iso-8859-1", "Content-Transfer-Encoding: quoted-printable"},
				"Gr=FC=DFe aus K=F6ln, a long line that is soft=\n-wrapped\n"),
			parts:   []Part{{Type: "text/plain", Lines: []Line{{Text: "Grüße aus Köln, a long line that is soft-wrapped"}}}},
			subject: "Grüße und €uro", from: "René Müller <r@example>",
		},
		{
			name: "base64 utf-8",
			raw: art([]string{"From: a@example", "Newsgroups: misc.test", "Subject: b64", "Message-ID: <b64@example>",
				"MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64"},
				"w6ljaGVsbGUg4oCUIG5hw692ZQo=\n"),
			parts:   []Part{{Type: "text/plain", Lines: []Line{{Text: "échelle — naïve"}}}},
			subject: "b64", from: "a@example",
		},
		{
			name:    "8-bit without charset is read as windows-1252",
			raw:     append(art([]string{"From: a@example", "Newsgroups: misc.test", "Subject: raw", "Message-ID: <raw@example>"}, ""), []byte("caf\xe9 \x93quoted\x94\r\n")...),
			parts:   []Part{{Type: "text/plain", Lines: []Line{{Text: "café “quoted”"}}}},
			subject: "raw", from: "a@example",
		},
		{
			name: "multipart mixed: text shown, attachment listed",
			raw: art([]string{"From: a@example", "Newsgroups: misc.test", "Subject: mixed", "Message-ID: <mixed@example>",
				"MIME-Version: 1.0", `Content-Type: multipart/mixed; boundary="XX"`},
				"preamble\n--XX\nContent-Type: text/plain; charset=us-ascii\n\nfirst part\n--XX\nContent-Type: image/png; name=\"dot.png\"\nContent-Transfer-Encoding: base64\n\niVBORw0KGgo=\n--XX\nContent-Type: text/plain; charset=koi8-r\nContent-Transfer-Encoding: quoted-printable\n\n=F0=D2=C9=D7=C5=D4\n--XX--\n"),
			parts: []Part{{Type: "text/plain", Lines: []Line{{Text: "first part"}}},
				{Type: "text/plain", Lines: []Line{{Text: "Привет"}}}},
			attach:  []Attachment{{Name: "dot.png", Type: "image/png", Size: 8}},
			subject: "mixed", from: "a@example",
		},
		{
			name: "multipart alternative prefers text/plain",
			raw: art([]string{"From: a@example", "Newsgroups: misc.test", "Subject: alt", "Message-ID: <alt@example>",
				"MIME-Version: 1.0", "Content-Type: multipart/alternative; boundary=b1"},
				"--b1\nContent-Type: text/html\n\n<p>html</p>\n--b1\nContent-Type: text/plain\n\nplain\n--b1--\n"),
			parts:   []Part{{Type: "text/plain", Lines: []Line{{Text: "plain"}}}},
			subject: "alt", from: "a@example",
		},
		{
			name: "html only is shown as source text",
			raw: art([]string{"From: a@example", "Newsgroups: misc.test", "Subject: html", "Message-ID: <html@example>",
				"MIME-Version: 1.0", "Content-Type: text/html; charset=utf-8"}, "<script>alert(1)</script>\n"),
			parts:   []Part{{Type: "text/html", Note: "HTML part, shown as source text", Lines: []Line{{Text: "<script>alert(1)</script>"}}}},
			subject: "html", from: "a@example",
		},
		{
			name:    "yEnc body is listed, not shown",
			raw:     art([]string{"From: a@example", "Newsgroups: alt.binaries.test", "Subject: file", "Message-ID: <y@example>"}, "=ybegin line=128 size=3 name=f.bin\nabc\n=yend size=3\n"),
			attach:  []Attachment{{Name: "f.bin", Type: "application/x-yenc", Size: 52}},
			subject: "file", from: "a@example",
		},
		{
			name:    "control characters and bidi overrides are removed",
			raw:     art([]string{"From: a@example", "Newsgroups: misc.test", "Subject: evil\x1b[31m \u202egnp.exe", "Message-ID: <c@example>"}, "ring\x07 the bell\tand tab\n"),
			parts:   []Part{{Type: "text/plain", Lines: []Line{{Text: "ring the bell\tand tab"}}}},
			subject: "evil[31m gnp.exe", from: "a@example",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decodeArticle(tc.raw)
			if d.Problem != "" {
				t.Fatalf("problem: %s", d.Problem)
			}
			if d.Subject != tc.subject || d.From != tc.from {
				t.Errorf("subject %q from %q, want %q %q", d.Subject, d.From, tc.subject, tc.from)
			}
			if d := cmp.Diff(tc.parts, d.Parts); d != "" {
				t.Errorf("parts (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.attach, d.Attachments); d != "" {
				t.Errorf("attachments (-want +got):\n%s", d)
			}
		})
	}
}

func TestDecodeArticleHeaders(t *testing.T) {
	d := decodeArticle(art(append(basicHeaders, "References: <a@x> <b@x>", "Organization: Test Org"), "x\n"))
	want := &Display{MessageID: "<hello@example>", From: "Jane Doe <jane@example.com>", Subject: "Hello",
		Date: "2024-01-02T03:04:05Z", DateText: "2024-01-02 03:04 UTC", Newsgroups: []string{"misc.test", "alt.test"}, References: []string{"<a@x>", "<b@x>"},
		Organization: "Test Org", Parts: []Part{{Type: "text/plain", Lines: []Line{{Text: "x"}}}}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := displayName(d.From); got != "Jane Doe" {
		t.Errorf("displayName = %q", got)
	}
}

// FuzzDecodeArticle: any bytes decode without panic to valid UTF-8 free of
// control characters (other than tab), and a plain ASCII body comes back
// line for line.
func FuzzDecodeArticle(f *testing.F) {
	f.Add(art(basicHeaders, "hello\n> quoted\n"))
	f.Add(art([]string{"Subject: x", "MIME-Version: 1.0", "Content-Type: multipart/mixed; boundary=a"}, "--a\n\nx\n--a--\n"))
	f.Add(art([]string{"Subject: =?utf-8?q?=E2=82=AC?=", "Content-Transfer-Encoding: base64"}, "!!!\n"))
	f.Add([]byte("no header at all"))
	f.Add(art([]string{"MIME-Version: 1.0", "Content-Type: text/plain; format=flowed; delsp=yes"}, "> soft \n>> x \n \n-- \nend \n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		d := decodeArticle(raw)
		check := func(what, s string) {
			if !utf8.ValidString(s) {
				t.Fatalf("%s is not UTF-8: %q", what, s)
			}
			for _, r := range s {
				if r < 0x20 && r != '\t' && what != "problem" {
					t.Fatalf("%s has control character %U: %q", what, r, s)
				}
			}
		}
		check("subject", d.Subject)
		check("from", d.From)
		for _, p := range d.Parts {
			for _, l := range p.Lines {
				check("line", l.Text)
			}
		}
		for _, a := range d.Attachments {
			check("attachment", a.Name)
		}
	})
}

// The plain-text property of the fuzz target, as a table: ASCII lines in,
// the same lines out.
func TestDecodePlainRoundTrip(t *testing.T) {
	for _, body := range []string{"one\n", "one\ntwo\n\nfour\n", "> a\n>> b\n", "tab\there\n"} {
		d := decodeArticle(art(basicHeaders, body))
		if got := d.Text(); got != body {
			t.Errorf("body %q came back as %q", body, got)
		}
	}
}

// A format=flowed body (RFC 3676) is shown as the paragraphs it was cut
// from, so that a page wraps them at its width: soft breaks (a line
// ending in a space) join lines of one quote depth, space-stuffing is
// removed, DelSp=yes drops the space of a soft break, and the signature
// separator stays a line of its own.
func TestDecodeFlowed(t *testing.T) {
	flowed := []string{"From: a@example", "Newsgroups: misc.test", "Subject: flowed", "Message-ID: <f@example>",
		"MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8; format=flowed"}
	for _, tc := range []struct {
		name  string
		raw   []byte
		lines []Line
	}{
		{
			name: "soft breaks, quotes, stuffing and signature",
			raw:  art(flowed, "Alice wrote:\n> one quoted \n> paragraph\n>> deeper \n>> still\n\nmy long \nparagraph goes \non\n From here\n -- not a sig\n-- \nsig \nline\n"),
			lines: []Line{{Text: "Alice wrote:"}, {Text: "> one quoted paragraph", Quote: 1}, {Text: ">> deeper still", Quote: 2},
				{Text: ""}, {Text: "my long paragraph goes on"}, {Text: "From here"}, {Text: "-- not a sig"},
				{Text: "-- ", Sig: true}, {Text: "sig line", Sig: true}},
		},
		{
			name:  "delsp",
			raw:   art([]string{"From: a@example", "Newsgroups: misc.test", "Subject: d", "Message-ID: <d@example>", "MIME-Version: 1.0", "Content-Type: text/plain; format=flowed; delsp=yes"}, "Donau\ndampf \nschiff\n"),
			lines: []Line{{Text: "Donau"}, {Text: "dampfschiff"}},
		},
		{
			name:  "a soft line changing quote depth ends its paragraph",
			raw:   art(flowed, "> quoted soft \nnot quoted\n"),
			lines: []Line{{Text: "> quoted soft ", Quote: 1}, {Text: "not quoted"}},
		},
		{
			name:  "an unquoted paragraph starting with > is not made a quote",
			raw:   art(flowed, " >not a quote\n"),
			lines: []Line{{Text: " >not a quote"}},
		},
		{
			name:  "fixed text is left as it is",
			raw:   art([]string{"From: a@example", "Newsgroups: misc.test", "Subject: x", "Message-ID: <x@example>"}, "trailing \nspace\n"),
			lines: []Line{{Text: "trailing "}, {Text: "space"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decodeArticle(tc.raw)
			if len(d.Parts) != 1 {
				t.Fatalf("parts %+v", d.Parts)
			}
			if diff := cmp.Diff(tc.lines, d.Parts[0].Lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
	// What newsweb posts reads back as what was typed.
	typed := strings.Repeat("a long paragraph of words ", 20) + "\n\n> " + strings.Repeat("quoted words ", 30) + "\n-- \nsig"
	body, err := bodyText(typed)
	if err != nil {
		t.Fatal(err)
	}
	d := decodeArticle(art(flowed, strings.ReplaceAll(body, "\r\n", "\n")))
	var got []string
	for _, l := range d.Parts[0].Lines {
		got = append(got, l.Text)
	}
	want := strings.Split(strings.ReplaceAll(typed, "words \n", "words\n"), "\n")
	want[0] = strings.TrimRight(want[0], " ")
	want[2] = strings.TrimRight(want[2], " ")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("posted text read back (-typed +shown):\n%s", diff)
	}
}
