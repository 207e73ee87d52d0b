package proto

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseNZB(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("testdata", "nzb", "real.nzb"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseNZB(bytes.NewReader(doc), NZBLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := &NZB{
		Meta: []NZBMeta{{"title", "Linux ISO & friends"}, {"password", `se"cret`}, {"category", "Software"}},
		Files: []NZBFile{
			{
				Poster: "Joe Bloggs <bloggs@nowhere.example>", Date: 1071674882,
				Subject: `Here's your file!  abc-mr2a.r01 (1/2)`,
				Groups:  []string{"alt.binaries.newzbin", "alt.binaries.mojo"},
				Segments: []NZBSegment{
					{1, 102394, "<123456789abcdef@news.newzbin.com>"},
					{2, 4501, "<987654321fedbca@news.newzbin.com>"},
				},
			},
			{
				Poster: "poster@example.com (Poster)", Date: 1700000000,
				Subject: `[02/15] - "big file.part01.rar" yEnc (1/3) 2100000`,
				Groups:  []string{"alt.binaries.test"},
				Segments: []NZBSegment{
					{1, 739811, "<part1of3.aaa@example>"},
					{2, 0, "<part2of3.bbb@example>"},
					{3, 620000, "<part3of3.ccc@example>"},
				},
			},
		},
		Notes: []string{
			"file 2: segment 2 has no bytes=",
			"file 2: dropped duplicate segment 1 (<part1of3.dup@example>)",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if name := got.Files[1].Filename(); name != "big file.part01.rar" {
		t.Errorf("Filename = %q", name)
	}
	if v, ok := got.MetaValue("password"); !ok || v != `se"cret` {
		t.Errorf("password meta = %q, %v", v, ok)
	}
	if b := got.Files[1].Bytes(); b != 739811+620000 {
		t.Errorf("Bytes = %d", b)
	}
}

func TestParseNZBShapes(t *testing.T) {
	seg := `<segment bytes="10" number="1">a@b</segment>`
	file := func(segs string) string {
		return `<file poster="p" date="1" subject="s"><groups><group>g</group></groups><segments>` + segs + `</segments></file>`
	}
	for _, tc := range []struct {
		name    string
		doc     string
		limits  NZBLimits
		wantErr string
		limit   bool // the error is ErrNZBLimit
	}{
		{name: "no DOCTYPE, no namespace, no head", doc: `<nzb>` + file(seg) + `</nzb>`},
		{name: "ISO-8859-1 declared", doc: "<?xml version=\"1.0\" encoding=\"iso-8859-1\"?>\n<nzb>" + file(seg) + "</nzb>"},
		{name: "billion laughs: custom entities are not expanded",
			doc: `<?xml version="1.0"?><!DOCTYPE nzb [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">` +
				`<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">]><nzb><head><meta type="title">&lol2;</meta></head></nzb>`,
			wantErr: "nzb: XML syntax error on line 1: invalid character entity &lol2;"},
		{name: "billion laughs in an attribute",
			doc:     `<!DOCTYPE nzb [<!ENTITY lol "lol">]><nzb><file subject="&lol;"></file></nzb>`,
			wantErr: "nzb: XML syntax error on line 1: invalid character entity &lol;"},
		{name: "external entity (XXE) is not fetched",
			doc:     `<!DOCTYPE nzb [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><nzb><head><meta type="t">&xxe;</meta></head></nzb>`,
			wantErr: "nzb: XML syntax error on line 1: invalid character entity &xxe;"},
		{name: "document at the byte limit", doc: `<nzb>` + file(seg) + `</nzb>`, limits: NZBLimits{MaxBytes: int64(len(`<nzb>` + file(seg) + `</nzb>`))}},
		{name: "document over the byte limit", doc: `<nzb>` + file(seg) + `</nzb> `, limits: NZBLimits{MaxBytes: int64(len(`<nzb>` + file(seg) + `</nzb>`))},
			wantErr: "nzb: document larger than 154 bytes: nzb: limit exceeded", limit: true},
		{name: "too many files", doc: `<nzb>` + file(seg) + file(seg) + file(seg) + `</nzb>`, limits: NZBLimits{MaxFiles: 2},
			wantErr: "nzb: more than 2 files: nzb: limit exceeded", limit: true},
		{name: "too many segments", doc: `<nzb>` + file(seg+seg) + file(seg) + `</nzb>`, limits: NZBLimits{MaxSegments: 2},
			wantErr: "nzb: more than 2 segments: nzb: limit exceeded", limit: true},
		{name: "message-id with a space", doc: `<nzb>` + file(`<segment bytes="1" number="1">a b@c</segment>`) + `</nzb>`,
			wantErr: `nzb: file 1 ("s"): segment 1: message-id "a b@c" holds ' '`},
		{name: "message-id with CRLF (command injection)", doc: `<nzb>` + file(`<segment bytes="1" number="1">a@b&#xD;&#xA;QUIT</segment>`) + `</nzb>`,
			wantErr: `nzb: file 1 ("s"): segment 1: message-id "a@b\r\nQUIT" holds '\r'`},
		{name: "message-id with > inside", doc: `<nzb>` + file(`<segment bytes="1" number="1">&lt;a>b@c&gt;</segment>`) + `</nzb>`,
			wantErr: `nzb: file 1 ("s"): segment 1: message-id "a>b@c" holds '>'`},
		{name: "empty message-id", doc: `<nzb>` + file(`<segment bytes="1" number="1">  </segment>`) + `</nzb>`,
			wantErr: `nzb: file 1 ("s"): segment 1: empty message-id`},
		{name: "segment without number", doc: `<nzb>` + file(`<segment bytes="1">a@b</segment>`) + `</nzb>`,
			wantErr: `nzb: file 1 ("s"): segment with bad number=""`},
		{name: "nested 32 deep: accepted", doc: `<nzb>` + file(seg) + `<x>` + strings.Repeat("<a>", 30) + strings.Repeat("</a>", 30) + `</x></nzb>`},
		{name: "nested 33 deep: refused", doc: `<nzb>` + file(seg) + strings.Repeat("<a>", 32) + strings.Repeat("</a>", 32) + `</nzb>`,
			wantErr: "nzb: elements nested deeper than 32 (an NZB nests 4 deep): nzb: limit exceeded", limit: true},
		{name: "segment of 256 MiB: accepted", doc: `<nzb>` + file(`<segment bytes="268435456" number="1">a@b</segment>`) + `</nzb>`},
		{name: "segment larger than any article", doc: `<nzb>` + file(`<segment bytes="9223372036854775807" number="1">a@b</segment>`) + `</nzb>`,
			wantErr: `nzb: file 1 ("s"): segment 1 of bytes=9223372036854775807, larger than any article (268435456): nzb: limit exceeded`, limit: true},
		{name: "segment bytes beyond int64", doc: `<nzb>` + file(`<segment bytes="99999999999999999999" number="1">a@b</segment>`) + `</nzb>`,
			wantErr: `nzb: file 1 ("s"): segment 1 of bytes=99999999999999999999, larger than any article (268435456): nzb: limit exceeded`, limit: true},
		{name: "wrong root", doc: `<html><nzb/></html>`, wantErr: "nzb: root element is <html>, not <nzb>"},
		{name: "empty document", doc: ``, wantErr: "nzb: no <nzb> element"},
		{name: "unclosed element", doc: `<nzb><file>`, wantErr: "nzb: XML syntax error on line 1: unexpected EOF"},
		{name: "unknown encoding", doc: `<?xml version="1.0" encoding="ebcdic"?><nzb/>`,
			wantErr: `nzb: xml: opening charset "ebcdic": nzb: unsupported encoding "ebcdic"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := ParseNZB(strings.NewReader(tc.doc), tc.limits)
			if got := errString(err); got != tc.wantErr {
				t.Fatalf("error %q, want %q", got, tc.wantErr)
			}
			if errors.Is(err, ErrNZBLimit) != tc.limit {
				t.Errorf("errors.Is(err, ErrNZBLimit) = %v", !tc.limit)
			}
			if err == nil && (len(n.Files) != 1 || len(n.Files[0].Segments) != 1 || n.Files[0].Segments[0].MessageID != "<a@b>") {
				t.Errorf("parsed %+v", n)
			}
		})
	}
}

func TestNZBFilename(t *testing.T) {
	for _, tc := range []struct{ subject, want string }{
		{`"name.ext" yEnc (1/12)`, "name.ext"},
		{`[02/15] - "big file.part01.rar" yEnc (1/3) 2100000`, "big file.part01.rar"},
		{`Here's your file!  abc-mr2a.r01 (1/2)`, "abc-mr2a.r01"},
		{`abc.par2 yEnc (1/1)`, "abc.par2"},
		{`some post [1/5] yEnc`, "some post"},
		{`"" empty quotes x.bin`, "x.bin"},
		{`"../../etc/passwd" yEnc (1/1)`, "../../etc/passwd"}, // not sanitised: the caller's job
		{``, ``},
	} {
		f := NZBFile{Subject: tc.subject}
		if got := f.Filename(); got != tc.want {
			t.Errorf("Filename(%q) = %q, want %q", tc.subject, got, tc.want)
		}
	}
}

// nzbRoundTrip checks that marshalling a parsed NZB and parsing it again
// gives the same NZB (Notes aside: the second document has nothing left to
// note).
func nzbRoundTrip(t *testing.T, n *NZB) {
	t.Helper()
	doc := AppendNZB(nil, n)
	again, err := ParseNZB(bytes.NewReader(doc), NZBLimits{})
	if err != nil {
		t.Fatalf("parse of marshalled NZB: %v\n%s", err, doc)
	}
	if diff := cmp.Diff(n, again, cmpopts.IgnoreFields(NZB{}, "Notes"), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("parse(marshal(n)) != n (-n +again):\n%s", diff)
	}
}

func TestNZBRoundTrip(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("testdata", "nzb", "real.nzb"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := ParseNZB(bytes.NewReader(doc), NZBLimits{})
	if err != nil {
		t.Fatal(err)
	}
	nzbRoundTrip(t, n)
	nzbRoundTrip(t, &NZB{Meta: []NZBMeta{{"t\tab", "a\r\nb & <c> \"d\" 'e'"}}, Files: []NZBFile{{Subject: "x\ty", Segments: []NZBSegment{{Number: 1, MessageID: "<a&b@c>"}}}}})
}

// TestParseNZBHostileMemory: hostile documents are refused allocating a
// small part of their own size: a million nested elements at the first
// one too deep (the decoder keeps a record of every open element), and
// 8 MiB of text, or one tag of 8 MiB, after 1 MiB (the decoder holds a
// text or tag whole).
func TestParseNZBHostileMemory(t *testing.T) {
	const depth = 1 << 20
	for _, tc := range []struct {
		name, doc, wantErr string
	}{
		{"nested", "<nzb>" + strings.Repeat("<a>", depth) + strings.Repeat("</a>", depth) + "</nzb>", "nested deeper"},
		{"text", "<nzb>" + strings.Repeat("x", 8<<20) + "</nzb>", "bytes of text or of one tag"},
		{"text before the root", strings.Repeat("x", 8<<20), "bytes of text or of one tag"},
		{"tag", `<nzb><file subject="` + strings.Repeat("x", 8<<20) + `"></file></nzb>`, "bytes of text or of one tag"},
	} {
		doc := []byte(tc.doc)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := ParseNZB(bytes.NewReader(doc), NZBLimits{})
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrNZBLimit) || !strings.Contains(err.Error(), tc.wantErr) {
			t.Fatalf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(doc)/2) {
			t.Errorf("%s: parsing a %d-byte document allocated %d bytes; want at most half its size", tc.name, len(doc), alloc)
		}
	}
}

// FuzzNZB: ParseNZB never panics on any input, and for every document it
// accepts, no file's size is negative and
// parse(AppendNZB(parse(doc))) == parse(doc).
func FuzzNZB(f *testing.F) {
	if doc, err := os.ReadFile(filepath.Join("testdata", "nzb", "real.nzb")); err == nil {
		f.Add(doc)
	}
	f.Add([]byte(`<nzb><file subject="&quot;a.b&quot; yEnc (1/1)"><groups><group> g </group></groups><segments><segment number="2">x@y</segment><segment number="1" bytes="5">&lt;z@y&gt;</segment></segments></file></nzb>`))
	f.Add([]byte(`<!DOCTYPE nzb [<!ENTITY lol "lol">]><nzb>&lol;</nzb>`))
	f.Add([]byte(`<nzb><x><a><a><a><a><a><a><a><a></a></a></a></a></a></a></a></a></x></nzb>`))
	f.Add([]byte(`<nzb><file subject="s"><segments><segment bytes="9223372036854775807" number="1">a@b</segment></segments></file></nzb>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		n, err := ParseNZB(bytes.NewReader(doc), NZBLimits{MaxBytes: 1 << 16, MaxFiles: 50, MaxSegments: 500, MaxDepth: 8, MaxSegmentBytes: 1 << 20})
		if err != nil {
			return
		}
		for _, f := range n.Files {
			if f.Bytes() < 0 {
				t.Fatalf("file %q of %d bytes", f.Subject, f.Bytes())
			}
		}
		nzbRoundTrip(t, n)
	})
}

// A document that is no NZB at all is ErrNotNZB; an NZB over a limit is
// not.
func TestNZBNotNZB(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want bool
	}{
		{``, true},
		{`<html><body>login</body></html>`, true},
		{`<nzb xmlns="http://www.newzbin.com/DTD/2003/nzb"></nzb>`, false},
	} {
		_, err := ParseNZB(strings.NewReader(tc.doc), NZBLimits{})
		if got := errors.Is(err, ErrNotNZB); got != tc.want {
			t.Errorf("ParseNZB(%q): errors.Is(%v, ErrNotNZB) = %v, want %v", tc.doc, err, got, tc.want)
		}
	}
	_, err := ParseNZB(strings.NewReader(`<nzb><a><b><c><d><e><f><g><h><i><j></j></i></h></g></f></e></d></c></b></a></nzb>`), NZBLimits{MaxDepth: 4})
	if !errors.Is(err, ErrNZBLimit) || errors.Is(err, ErrNotNZB) {
		t.Errorf("deep NZB: %v: want ErrNZBLimit only", err)
	}
}
