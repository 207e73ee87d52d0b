package proto

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// innArticle is the shape of an article as INN 2.7 stores and serves it
// (wire format), with a folded References field.
const innArticle = "Path: news.example.net!feeder.example.org!.POSTED.192.0.2.7!not-for-mail\r\n" +
	"From: Alice Example <alice@example.org>\r\n" +
	"Newsgroups: misc.test,alt.test\r\n" +
	"Subject: Re: testing, 1 2 3\r\n" +
	"Date: Tue, 14 Mar 2023 09:26:53 +0100\r\n" +
	"Organization: Example News\r\n" +
	"Message-ID: <u6p1ad$3kq$1@news.example.org>\r\n" +
	"References: <a1@example.org>\r\n" +
	" <b2@example.org>\r\n" +
	"\t<c3@example.org>\r\n" +
	"Lines: 2\r\n" +
	"Injection-Info: news.example.org; posting-host=\"192.0.2.7\";\r\n" +
	"\tlogging-data=\"4242\"; mail-complaints-to=\"usenet@news.example.org\"\r\n" +
	"Xref: news.example.net misc.test:1234 alt.test:99\r\n" +
	"\r\n" +
	"Body line one.\r\n" +
	"..dot-stuffed line\r\n"

type fieldView struct{ Name, Raw, Value string }

func viewFields(h Header) []fieldView {
	var out []fieldView
	for _, f := range h.Fields {
		out = append(out, fieldView{string(f.Name), string(f.Raw), f.Value()})
	}
	return out
}

func TestParseHeaders(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []fieldView
		wantBody int // -1: len(in)
	}{
		{
			name:     "CRLF with body",
			in:       "Subject: hi\r\nFrom: a@b\r\n\r\nbody\r\n",
			want:     []fieldView{{"Subject", " hi", "hi"}, {"From", " a@b", "a@b"}},
			wantBody: len("Subject: hi\r\nFrom: a@b\r\n\r\n"),
		},
		{
			name:     "bare LF tolerated",
			in:       "Subject: hi\nFrom: a@b\n\nbody\n",
			want:     []fieldView{{"Subject", " hi", "hi"}, {"From", " a@b", "a@b"}},
			wantBody: len("Subject: hi\nFrom: a@b\n\n"),
		},
		{
			name:     "folded field: raw kept, value unfolded",
			in:       "Subject: a\r\n  b\r\n\tc\r\nX: y\r\n\r\n",
			want:     []fieldView{{"Subject", " a\r\n  b\r\n\tc", "a  b\tc"}, {"X", " y", "y"}},
			wantBody: len("Subject: a\r\n  b\r\n\tc\r\nX: y\r\n\r\n"),
		},
		{
			name:     "repeated fields kept in order",
			in:       "Received: 1\r\nX: a\r\nreceived: 2\r\n\r\n",
			want:     []fieldView{{"Received", " 1", "1"}, {"X", " a", "a"}, {"received", " 2", "2"}},
			wantBody: len("Received: 1\r\nX: a\r\nreceived: 2\r\n\r\n"),
		},
		{
			name:     "header only (HEAD reply), no blank line",
			in:       "Subject: hi\r\nFrom: a@b\r\n",
			want:     []fieldView{{"Subject", " hi", "hi"}, {"From", " a@b", "a@b"}},
			wantBody: -1,
		},
		{
			name:     "last line without ending",
			in:       "Subject: hi",
			want:     []fieldView{{"Subject", " hi", "hi"}},
			wantBody: -1,
		},
		{
			name:     "obsolete whitespace before colon, empty value, no space after colon",
			in:       "Subject : x\r\nKeywords:\r\nX:y\r\n\r\n",
			want:     []fieldView{{"Subject", " x", "x"}, {"Keywords", "", ""}, {"X", "y", "y"}},
			wantBody: len("Subject : x\r\nKeywords:\r\nX:y\r\n\r\n"),
		},
		{
			name:     "empty input",
			in:       "",
			want:     nil,
			wantBody: 0,
		},
		{
			name:     "empty header section",
			in:       "\r\nbody",
			want:     nil,
			wantBody: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, body, err := ParseHeaders([]byte(tc.in))
			if err != nil {
				t.Fatalf("ParseHeaders: %v", err)
			}
			if diff := cmp.Diff(tc.want, viewFields(h)); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			want := tc.wantBody
			if want < 0 {
				want = len(tc.in)
			}
			if body != want {
				t.Errorf("bodyOffset = %d, want %d", body, want)
			}
		})
	}
}

func TestParseHeadersErrors(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"no colon", "Subject: a\r\nThis is not a header\r\n\r\n", `line 2 "This is not a header" has no colon`},
		{"empty name", ": x\r\n\r\n", "line 1 \": x\" has an empty field name"},
		{"space in name", "Sub ject: x\r\n\r\n", "field name holds whitespace"},
		{"continuation first", " folded\r\nA: b\r\n\r\n", "line 1 \" folded\": continuation line before the first field"},
		{"NUL in value", "Subject: a\x00b\r\n\r\n", "line 1 holds a NUL octet"},
		{"NUL in name", "Sub\x00: x\r\n\r\n", "line 1 holds a NUL octet"},
		{"control in name", "Sub\x01: x\r\n\r\n", "control octet 0x01"},
		{"too long", "X: " + strings.Repeat("a", MaxHeaderSection) + "\r\n\r\n", "section longer than"},
		{"too many lines", strings.Repeat("X: a\r\n", MaxHeaderSection/6+1) + "\r\n", "section longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseHeaders([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseHeaders error = %v, want containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestHeaderSectionAtLimit(t *testing.T) {
	// A section of exactly MaxHeaderSection octets is accepted, body included after it.
	line := "X: " + strings.Repeat("a", MaxHeaderSection-len("X: \r\n\r\n")) + "\r\n"
	in := line + "\r\nbody"
	h, body, err := ParseHeaders([]byte(in))
	if err != nil {
		t.Fatalf("ParseHeaders at the limit: %v", err)
	}
	if h.Len() != 1 || body != MaxHeaderSection {
		t.Errorf("got %d fields, body at %d; want 1 and %d", h.Len(), body, MaxHeaderSection)
	}
}

func TestHeaderAccessors(t *testing.T) {
	h, body, err := ParseHeaders([]byte(innArticle))
	if err != nil {
		t.Fatal(err)
	}
	if got := innArticle[body:]; got != "Body line one.\r\n..dot-stuffed line\r\n" {
		t.Errorf("body = %q", got)
	}
	id, err := h.MessageID()
	if err != nil || id != "<u6p1ad$3kq$1@news.example.org>" {
		t.Errorf("MessageID = %q, %v", id, err)
	}
	groups, err := h.Newsgroups()
	if diff := cmp.Diff([]string{"misc.test", "alt.test"}, groups); diff != "" || err != nil {
		t.Errorf("Newsgroups err=%v diff:\n%s", err, diff)
	}
	if got := h.Path(); got != "news.example.net!feeder.example.org!.POSTED.192.0.2.7!not-for-mail" {
		t.Errorf("Path = %q", got)
	}
	if diff := cmp.Diff([]string{"<a1@example.org>", "<b2@example.org>", "<c3@example.org>"}, h.References()); diff != "" {
		t.Errorf("References diff:\n%s", diff)
	}
	if got := h.Subject(); got != "Re: testing, 1 2 3" {
		t.Errorf("Subject = %q", got)
	}
	if got := h.From(); got != "Alice Example <alice@example.org>" {
		t.Errorf("From = %q", got)
	}
	if n, err := h.Lines(); n != 2 || err != nil {
		t.Errorf("Lines = %d, %v", n, err)
	}
	if _, err := h.Bytes(); !errors.Is(err, ErrMissingHeader) {
		t.Errorf("Bytes error = %v, want ErrMissingHeader", err)
	}
	x, err := h.Xref()
	wantX := Xref{Server: "news.example.net", Entries: []XrefEntry{{"misc.test", 1234}, {"alt.test", 99}}}
	if diff := cmp.Diff(wantX, x); diff != "" || err != nil {
		t.Errorf("Xref err=%v diff:\n%s", err, diff)
	}
	if x.String() != "news.example.net misc.test:1234 alt.test:99" {
		t.Errorf("Xref.String = %q", x.String())
	}
	d, err := h.Date()
	if err != nil || d.UTC().Format("2006-01-02 15:04:05") != "2023-03-14 08:26:53" {
		t.Errorf("Date = %v, %v", d, err)
	}
	if got := h.Get("injection-info"); got != `news.example.org; posting-host="192.0.2.7";	logging-data="4242"; mail-complaints-to="usenet@news.example.org"` {
		t.Errorf("Get(injection-info) = %q", got)
	}
	if !h.Has("XREF") || h.Has("Control") || h.Count("message-id") != 1 {
		t.Errorf("Has/Count wrong")
	}
	if got := h.Values("nonesuch"); got != nil {
		t.Errorf("Values(nonesuch) = %q", got)
	}
}

func TestValidGroupName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"misc.test", true},
		{"comp.lang.c++", true},
		{"alt.2600", true},
		{"alt.fan.dr-who", true},
		{"de.alt.test_1", true},
		{"control", true},
		{"fr.comp.réseaux", true}, // UTF-8 tolerated
		{"", false},
		{".misc", false},
		{"misc.", false},
		{"misc..test", false},
		{"misc test", false},
		{"misc,test", false},
		{"misc*", false},
		{"misc:test", false},
		{"alt.!bang", false},
	}
	for _, tc := range tests {
		if err := ValidGroupName(tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidGroupName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestParseNewsgroups(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"misc.test", []string{"misc.test"}, ""},
		{"misc.test,alt.test", []string{"misc.test", "alt.test"}, ""},
		{"misc.test, alt.test ,\r\n comp.x", []string{"misc.test", "alt.test", "comp.x"}, ""},
		{"misc.test,,alt.test,", []string{"misc.test", "alt.test"}, ""},
		{"", nil, "no newsgroup named"},
		{" , ", nil, "no newsgroup named"},
		{"misc.test,bad group", nil, `newsgroup name "bad group" holds whitespace`},
	}
	for _, tc := range tests {
		got, err := ParseNewsgroups(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseNewsgroups(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" || err != nil {
			t.Errorf("ParseNewsgroups(%q) err=%v diff:\n%s", tc.in, err, diff)
		}
	}
}

func TestParseReferences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"<a@b>", []string{"<a@b>"}},
		{"<a@b> <c@d>", []string{"<a@b>", "<c@d>"}},
		{"<a@b><c@d>", []string{"<a@b>", "<c@d>"}},
		{"junk <a@b> (comment) more junk <c@d> trailing", []string{"<a@b>", "<c@d>"}},
		{"<a@b> <broken <c@d>", []string{"<a@b>", "<c@d>"}},
		{"<a@b> <no-at> <c d@e> <c@d>", []string{"<a@b>", "<c@d>"}},
		{"<a@b> <truncat", []string{"<a@b>"}},
		{"<a@b>\r\n\t<c@d>", []string{"<a@b>", "<c@d>"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, ParseReferences(tc.in)); diff != "" {
			t.Errorf("ParseReferences(%q) diff:\n%s", tc.in, diff)
		}
	}
}

func TestPath(t *testing.T) {
	path := "news.example.net!feeder.example.org!.POSTED.192.0.2.7!!not-for-mail"
	want := []string{"news.example.net", "feeder.example.org", ".POSTED.192.0.2.7", "not-for-mail"}
	if diff := cmp.Diff(want, PathIdentities(path)); diff != "" {
		t.Errorf("PathIdentities diff:\n%s", diff)
	}
	tests := []struct {
		path, id string
		want     bool
	}{
		{path, "news.example.net", true},
		{path, "FEEDER.example.org", true},
		{path, "not-for-mail", true},
		{path, "example.org", false},
		{path, "news.example", false},
		{path, "", false},
		{"a ! b!c", "b", true},
		{"", "a", false},
	}
	for _, tc := range tests {
		if got := PathContains(tc.path, tc.id); got != tc.want {
			t.Errorf("PathContains(%q, %q) = %v, want %v", tc.path, tc.id, got, tc.want)
		}
	}
	if got := PrependPath(" a!b", "me.example"); got != "me.example!a!b" {
		t.Errorf("PrependPath = %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { PathContains(path, "nothere") }); n != 0 {
		t.Errorf("PathContains allocates %v times", n)
	}
}

func TestPrependPathIdentity(t *testing.T) {
	tests := []struct{ name, in, id, want, wantErr string }{
		{"usual", "From: a\r\nPath: b!c\r\n\r\nbody\r\n", "me", "From: a\r\nPath: me!b!c\r\n\r\nbody\r\n", ""},
		{"no space", "Path:b\n\nx\n", "me", "Path: me!b\n\nx\n", ""},
		{"tab", "Path:\tb\r\n\r\n", "me.example", "Path:\tme.example!b\r\n\r\n", ""},
		{"folded", "Path: a!\r\n b\r\n\r\n", "me", "Path: me!a!\r\n b\r\n\r\n", ""},
		{"missing", "From: a\r\n\r\n", "me", "", "Path: header field missing"},
		{"bad identity", "Path: a\r\n\r\n", "me!you", "", `path identity "me!you": '!' not allowed`},
		{"identity starting with a dot", "Path: a\r\n\r\n", ".me", "", "not allowed at offset 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _, err := ParseHeaders([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			got, err := PrependPathIdentity([]byte("prefix:"), []byte(tc.in), h, tc.id)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("prefix:"+tc.want, string(got)); diff != "" {
				t.Errorf("diff:\n%s", diff)
			}
		})
	}
	// A header parsed from other bytes is refused rather than splicing garbage.
	h, _, _ := ParseHeaders([]byte("Path: a\r\n\r\n"))
	if _, err := PrependPathIdentity(nil, []byte("Path: x\r\n\r\n"), h, "me"); err == nil {
		t.Errorf("PrependPathIdentity with a foreign header: no error")
	}
}

func TestParseXref(t *testing.T) {
	tests := []struct {
		in      string
		want    Xref
		wantErr string
	}{
		{"host a.b:1", Xref{"host", []XrefEntry{{"a.b", 1}}}, ""},
		{"host  a.b:1\t c:22 ", Xref{"host", []XrefEntry{{"a.b", 1}, {"c", 22}}}, ""},
		{"host", Xref{}, "want a server name"},
		{"host a.b", Xref{}, "not group:number"},
		{"host a.b:x", Xref{}, "bad article number"},
	}
	for _, tc := range tests {
		got, err := ParseXref(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseXref(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" || err != nil {
			t.Errorf("ParseXref(%q) err=%v diff:\n%s", tc.in, err, diff)
		}
	}
}

func FuzzParseHeaders(f *testing.F) {
	f.Add([]byte(innArticle))
	f.Add([]byte("Subject: a\n  b\nX: y\n\nbody"))
	f.Add([]byte("no colon\r\n\r\n"))
	f.Add([]byte(" cont\r\n"))
	f.Add([]byte("A: \x00\r\n"))
	f.Add([]byte("\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := ParseHeaders(b)
		if err != nil {
			if h.Len() != 0 || body != 0 {
				t.Fatalf("error %v with %d fields, body %d", err, h.Len(), body)
			}
			return
		}
		if body < 0 || body > len(b) {
			t.Fatalf("bodyOffset %d outside 0..%d", body, len(b))
		}
		// Re-serialising the fields reproduces the header section exactly,
		// modulo line endings (normalised to LF) and whitespace before colons.
		var re []byte
		for _, f := range h.Fields {
			if len(f.Name) == 0 || strings.ContainsAny(string(f.Name), ": \t\r\n\x00") {
				t.Fatalf("bad field name %q", f.Name)
			}
			if len(f.Raw) > 0 && (f.Raw[len(f.Raw)-1] == '\n') {
				t.Fatalf("raw value %q ends in LF", f.Raw)
			}
			if v := f.Value(); strings.Contains(v, "\n") {
				t.Fatalf("unfolded value %q holds LF", v)
			}
			re = append(re, f.Name...)
			re = append(re, ':')
			re = append(re, f.Raw...)
			re = append(re, '\n')
		}
		h2, _, err := ParseHeaders(re)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", re, err)
		}
		if diff := cmp.Diff(values(h), values(h2)); diff != "" {
			t.Fatalf("re-parse changed values (-first +second):\n%s", diff)
		}
	})
}

func values(h Header) []string {
	var out []string
	for _, f := range h.Fields {
		out = append(out, string(f.Name)+"="+f.Value())
	}
	return out
}

func BenchmarkParseHeaders(b *testing.B) {
	art := []byte(innArticle)
	b.SetBytes(int64(len(art)))
	b.ReportAllocs()
	for b.Loop() {
		h, _, err := ParseHeaders(art)
		if err != nil || h.Len() != 11 {
			b.Fatal(err, h.Len())
		}
	}
}

// BenchmarkHeaderParse is ParseHeaders reusing one Header, as a relay does.
func BenchmarkHeaderParse(b *testing.B) {
	art := []byte(innArticle)
	var h Header
	b.SetBytes(int64(len(art)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Parse(art); err != nil || h.Len() != 11 {
			b.Fatal(err, h.Len())
		}
	}
}

func TestHeaderParseReuse(t *testing.T) {
	var h Header
	art := []byte(innArticle)
	if _, err := h.Parse(art); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(50, func() { _, _ = h.Parse(art) }); n != 0 {
		t.Errorf("Header.Parse reusing fields allocates %v times", n)
	}
	if _, err := h.Parse([]byte("bad line\r\n\r\n")); err == nil || h.Len() != 0 {
		t.Errorf("after an error: %v, %d fields", err, h.Len())
	}
}

// BenchmarkValidateArticle is the relay's per-article work: parse the
// header and decide.
func BenchmarkValidateArticle(b *testing.B) {
	art := []byte(innArticle)
	opts := ValidateOptions{MessageID: "<u6p1ad$3kq$1@news.example.org>", PathIdentity: "me.example"}
	b.SetBytes(int64(len(art)))
	b.ReportAllocs()
	for b.Loop() {
		h, _, err := ParseHeaders(art)
		if err != nil {
			b.Fatal(err)
		}
		if err := ValidateArticle(h, opts); err != nil {
			b.Fatal(err)
		}
	}
}
