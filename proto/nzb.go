package proto

// NZB 1.1 (newzbin's DTD "-//newzBin//DTD NZB 1.1//EN"): the list of files,
// groups and segment message-ids a downloader fetches.
//
//	<nzb xmlns="http://www.newzbin.com/DTD/2003/nzb">
//	  <head><meta type="title">Some title</meta></head>
//	  <file poster="a@b (c)" date="1700000000" subject="&quot;x.rar&quot; yEnc (1/2)">
//	    <groups><group>alt.binaries.test</group></groups>
//	    <segments>
//	      <segment bytes="739811" number="1">part1of2.abc@news.example</segment>
//	    </segments>
//	  </file>
//	</nzb>
//
// ParseNZB reads the document as a stream of XML tokens (encoding/xml),
// keeping only what it needs, under limits on bytes, files and segments. It
// never expands custom entities: encoding/xml in strict mode knows only the
// five predefined ones and character references, and refuses any other
// "&name;" (so "billion laughs" documents fail at the first reference).
// It refuses elements nested deeper than MaxDepth at the first one, so a
// document of millions of nested elements costs no more than its first
// few (the decoder keeps a record of every open element), and a text or
// tag longer than 1 MiB (the decoder holds each whole). What it keeps is
// what an NZB means: files, groups, segments, meta values.

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrNZBLimit reports a document beyond one of the NZBLimits.
var ErrNZBLimit = errors.New("nzb: limit exceeded")

// ErrNotNZB reports a document that is no NZB at all: it has no root
// element, or its root element is not <nzb> (errors.Is).
var ErrNotNZB = errors.New("nzb: not an NZB document")

// notNZBError is an ErrNotNZB that says what the document is instead.
type notNZBError string

func (e notNZBError) Error() string        { return string(e) }
func (e notNZBError) Is(target error) bool { return target == ErrNotNZB }

// NZBLimits bounds what ParseNZB accepts. Zero fields take the defaults.
type NZBLimits struct {
	MaxBytes    int64 // size of the document; default 64 MiB
	MaxFiles    int   // <file> elements; default 100,000
	MaxSegments int   // <segment> elements over all files; default 1,000,000
	// MaxDepth bounds how deeply elements nest; default 32 (an NZB's
	// segments are at depth 4).
	MaxDepth int
	// MaxSegmentBytes bounds a segment's bytes=; default 256 MiB, more
	// than any news server keeps in one article. A larger value refuses
	// the document: summed, such sizes would wrap a job's size.
	MaxSegmentBytes int64
}

// Defaults of NZBLimits.
const (
	DefaultNZBMaxBytes    = 64 << 20
	DefaultNZBMaxFiles    = 100_000
	DefaultNZBMaxSegments = 1_000_000
	DefaultNZBMaxDepth    = 32
	DefaultNZBMaxSegBytes = 256 << 20
)

// maxNZBNotes bounds NZB.Notes.
const maxNZBNotes = 100

// An NZB is a parsed NZB document.
type NZB struct {
	Meta  []NZBMeta // <head><meta type=...> in document order
	Files []NZBFile
	// Notes lists irregularities that were tolerated, such as duplicate
	// segments dropped or missing bytes= attributes, for logs.
	Notes []string
}

// An NZBMeta is one <meta type="...">value</meta> of the head ("title",
// "password", "tag", "category", ...).
type NZBMeta struct {
	Type  string
	Value string
}

// An NZBFile is one <file>: a posted file and its segments.
type NZBFile struct {
	Poster  string
	Date    int64  // Unix seconds; 0 if absent or not a number
	Subject string // as posted; see Filename
	Groups  []string
	// Segments are sorted by Number, without duplicates.
	Segments []NZBSegment
}

// An NZBSegment is one article holding one part of a file.
type NZBSegment struct {
	Number    int   // 1-based part number
	Bytes     int64 // size of the article as the poster saw it; 0 if absent
	MessageID string
}

// MetaValue returns the value of the first meta element of the given type.
func (n *NZB) MetaValue(typ string) (string, bool) {
	for _, m := range n.Meta {
		if m.Type == typ {
			return m.Value, true
		}
	}
	return "", false
}

// Bytes is the sum of the segments' bytes= values.
func (f *NZBFile) Bytes() int64 {
	var n int64
	for _, s := range f.Segments {
		n += s.Bytes
	}
	return n
}

// Filename derives the file's name from its subject by the usual posting
// convention `prefix "name.ext" yEnc (1/12)`: the first non-empty quoted
// string; failing that, the subject without a trailing "yEnc" and "(1/12)"
// or "[1/12]" counters, and of what remains the last word containing a dot
// (or all of it).
//
// The result is NOT sanitised: it may contain "/", "..", control
// characters or be empty. Callers must clean it before using it as a path.
func (f *NZBFile) Filename() string {
	s := f.Subject
	if i := strings.IndexByte(s, '"'); i >= 0 {
		if j := strings.IndexByte(s[i+1:], '"'); j > 0 {
			return s[i+1 : i+1+j]
		}
	}
	s = strings.TrimSpace(s)
	for {
		t := strings.TrimSpace(strings.TrimSuffix(s, "yEnc"))
		if k := strings.LastIndexAny(t, "(["); k >= 0 && nzbIsCounter(t[k:]) {
			t = strings.TrimSpace(t[:k])
		}
		if t == s {
			break
		}
		s = t
	}
	words := strings.Fields(s)
	for i := len(words) - 1; i >= 0; i-- {
		if strings.Contains(words[i], ".") {
			return words[i]
		}
	}
	return s
}

// nzbIsCounter reports whether s is "(n/m)" or "[n/m]".
func nzbIsCounter(s string) bool {
	if len(s) < 5 || !(s[0] == '(' && s[len(s)-1] == ')' || s[0] == '[' && s[len(s)-1] == ']') {
		return false
	}
	a, b, ok := strings.Cut(s[1:len(s)-1], "/")
	_, err1 := strconv.Atoi(strings.TrimSpace(a))
	_, err2 := strconv.Atoi(strings.TrimSpace(b))
	return ok && err1 == nil && err2 == nil
}

// nzbMaxRun bounds the bytes between two "<": the decoder holds a text
// or a tag whole, and no text or tag of an NZB comes near this.
const nzbMaxRun = 1 << 20

// errNZBRun refuses a document with a longer run than nzbMaxRun.
var errNZBRun = fmt.Errorf("nzb: more than %d bytes of text or of one tag (an NZB has no such thing): %w", nzbMaxRun, ErrNZBLimit)

// nzbLimitReader fails with ErrNZBLimit instead of returning EOF early when
// the document is larger than its limit, and with errNZBRun when a text
// or tag runs longer than nzbMaxRun.
type nzbLimitReader struct {
	r    io.Reader
	left int64
	run  int // bytes since the last "<"
}

func (l *nzbLimitReader) Read(p []byte) (int, error) {
	n, err := l.read(p)
	if i := bytes.LastIndexByte(p[:n], '<'); i >= 0 {
		l.run = n - 1 - i
	} else {
		l.run += n
	}
	if l.run > nzbMaxRun {
		return 0, errNZBRun
	}
	return n, err
}

func (l *nzbLimitReader) read(p []byte) (int, error) {
	if l.left <= 0 {
		// One more byte decides between "exactly at the limit" and "over".
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, ErrNZBLimit
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// nzbLatin1Reader turns ISO-8859-1 into UTF-8 (each byte is its own code
// point); many older NZBs declare encoding="iso-8859-1".
type nzbLatin1Reader struct {
	r   io.Reader
	buf []byte
	out []byte
}

func (l *nzbLatin1Reader) Read(p []byte) (int, error) {
	for len(l.out) == 0 {
		if l.buf == nil {
			l.buf = make([]byte, 4096)
		}
		n, err := l.r.Read(l.buf)
		for _, c := range l.buf[:n] {
			l.out = utf8.AppendRune(l.out, rune(c))
		}
		if n == 0 {
			return 0, err
		}
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	return n, nil
}

// nzbCharset handles the encodings real NZBs declare besides UTF-8.
func nzbCharset(label string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return r, nil
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "windows-1252", "cp1252":
		// windows-1252 differs only in 0x80-0x9f; read as Latin-1.
		return &nzbLatin1Reader{r: r}, nil
	}
	return nil, fmt.Errorf("nzb: unsupported encoding %q", label)
}

// nzbParser holds the state of one ParseNZB.
type nzbParser struct {
	nzb      NZB
	limits   NZBLimits
	segments int
	dropped  int // notes not kept
}

func (p *nzbParser) note(format string, args ...any) {
	if len(p.nzb.Notes) < maxNZBNotes {
		p.nzb.Notes = append(p.nzb.Notes, fmt.Sprintf(format, args...))
	} else {
		p.dropped++
	}
}

// ParseNZB reads an NZB document from r. It tolerates what real NZBs do
// (missing bytes=, unsorted or duplicate segments, which it sorts and
// drops with a note, odd white space, a DOCTYPE or none, ISO-8859-1) and
// refuses hostile input with an error: undefined entities, documents,
// file counts or segment counts over limits, message-ids that could not be
// sent in a command (control characters, spaces, "<" or ">" inside).
//
// Names derived from the document (Subject, Filename, meta values) are not
// sanitised; see NZBFile.Filename.
func ParseNZB(r io.Reader, limits NZBLimits) (*NZB, error) {
	if limits.MaxBytes <= 0 {
		limits.MaxBytes = DefaultNZBMaxBytes
	}
	if limits.MaxFiles <= 0 {
		limits.MaxFiles = DefaultNZBMaxFiles
	}
	if limits.MaxSegments <= 0 {
		limits.MaxSegments = DefaultNZBMaxSegments
	}
	if limits.MaxDepth <= 0 {
		limits.MaxDepth = DefaultNZBMaxDepth
	}
	if limits.MaxSegmentBytes <= 0 {
		limits.MaxSegmentBytes = DefaultNZBMaxSegBytes
	}
	p := &nzbParser{limits: limits}
	dec := xml.NewDecoder(&nzbLimitReader{r: r, left: limits.MaxBytes})
	dec.Strict = true
	dec.CharsetReader = nzbCharset

	var (
		path    []string // local names of the open elements
		text    []byte   // character data of the current leaf
		file    *NZBFile
		seg     NZBSegment
		metaTyp string
		sawRoot bool
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, errNZBRun) {
				return nil, errNZBRun
			}
			if errors.Is(err, ErrNZBLimit) {
				return nil, fmt.Errorf("nzb: document larger than %d bytes: %w", limits.MaxBytes, ErrNZBLimit)
			}
			return nil, fmt.Errorf("nzb: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			if len(path) >= limits.MaxDepth {
				return nil, fmt.Errorf("nzb: elements nested deeper than %d (an NZB nests 4 deep): %w", limits.MaxDepth, ErrNZBLimit)
			}
			path = append(path, name)
			text = text[:0]
			switch {
			case len(path) == 1:
				if name != "nzb" {
					return nil, notNZBError(fmt.Sprintf("nzb: root element is <%s>, not <nzb>", name))
				}
				sawRoot = true
			case nzbAt(path, "nzb", "head", "meta"):
				metaTyp = nzbAttr(t, "type")
			case nzbAt(path, "nzb", "file"):
				if len(p.nzb.Files) >= limits.MaxFiles {
					return nil, fmt.Errorf("nzb: more than %d files: %w", limits.MaxFiles, ErrNZBLimit)
				}
				p.nzb.Files = append(p.nzb.Files, NZBFile{
					Poster:  strings.TrimSpace(nzbAttr(t, "poster")),
					Subject: strings.TrimSpace(nzbAttr(t, "subject")),
				})
				file = &p.nzb.Files[len(p.nzb.Files)-1]
				if d, err := strconv.ParseInt(strings.TrimSpace(nzbAttr(t, "date")), 10, 64); err == nil && d > 0 {
					file.Date = d
				}
			case nzbAt(path, "nzb", "file", "segments", "segment"):
				p.segments++
				if p.segments > limits.MaxSegments {
					return nil, fmt.Errorf("nzb: more than %d segments: %w", limits.MaxSegments, ErrNZBLimit)
				}
				if err := p.startSegment(t, file, &seg); err != nil {
					return nil, err
				}
			}
		case xml.CharData:
			switch {
			case nzbAt(path, "nzb", "head", "meta"), nzbAt(path, "nzb", "file", "groups", "group"),
				nzbAt(path, "nzb", "file", "segments", "segment"):
				text = append(text, t...)
			}
		case xml.EndElement:
			switch {
			case nzbAt(path, "nzb", "head", "meta"):
				p.nzb.Meta = append(p.nzb.Meta, NZBMeta{Type: metaTyp, Value: string(bytes.TrimSpace(text))})
			case nzbAt(path, "nzb", "file", "groups", "group"):
				if g := bytes.TrimSpace(text); len(g) > 0 {
					file.Groups = append(file.Groups, string(g))
				}
			case nzbAt(path, "nzb", "file", "segments", "segment"):
				id, err := nzbMessageID(text)
				if err != nil {
					return nil, fmt.Errorf("nzb: file %d (%q): segment %d: %w", len(p.nzb.Files), file.Subject, seg.Number, err)
				}
				seg.MessageID = id
				file.Segments = append(file.Segments, seg)
			case nzbAt(path, "nzb", "file"):
				p.fileDone(file, len(p.nzb.Files))
				file = nil
			}
			path = path[:len(path)-1]
		}
	}
	if !sawRoot {
		return nil, notNZBError("nzb: no <nzb> element")
	}
	if p.dropped > 0 {
		p.nzb.Notes = append(p.nzb.Notes, fmt.Sprintf("%d more notes dropped", p.dropped))
	}
	return &p.nzb, nil
}

// startSegment reads the attributes of a <segment>.
func (p *nzbParser) startSegment(t xml.StartElement, file *NZBFile, seg *NZBSegment) error {
	num := strings.TrimSpace(nzbAttr(t, "number"))
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > 1<<30 {
		return fmt.Errorf("nzb: file %d (%q): segment with bad number=%q", len(p.nzb.Files), file.Subject, num)
	}
	*seg = NZBSegment{Number: n}
	b := strings.TrimSpace(nzbAttr(t, "bytes"))
	if v, err := strconv.ParseInt(b, 10, 64); (err == nil || errors.Is(err, strconv.ErrRange)) && v > p.limits.MaxSegmentBytes {
		return fmt.Errorf("nzb: file %d (%q): segment %d of bytes=%s, larger than any article (%d): %w",
			len(p.nzb.Files), file.Subject, n, b, p.limits.MaxSegmentBytes, ErrNZBLimit)
	} else if err == nil && v >= 0 {
		seg.Bytes = v
	} else if b == "" {
		p.note("file %d: segment %d has no bytes=", len(p.nzb.Files), n)
	} else {
		p.note("file %d: segment %d has bad bytes=%q", len(p.nzb.Files), n, b)
	}
	return nil
}

// fileDone sorts the file's segments and drops duplicate numbers, keeping
// the first one listed.
func (p *nzbParser) fileDone(f *NZBFile, index int) {
	if len(f.Segments) == 0 {
		p.note("file %d (%q) has no segments", index, f.Subject)
		return
	}
	slices.SortStableFunc(f.Segments, func(a, b NZBSegment) int { return a.Number - b.Number })
	out := f.Segments[:1]
	for _, s := range f.Segments[1:] {
		if s.Number == out[len(out)-1].Number {
			p.note("file %d: dropped duplicate segment %d (%s)", index, s.Number, s.MessageID)
			continue
		}
		out = append(out, s)
	}
	f.Segments = out
}

// nzbAt reports whether the open elements are exactly want.
func nzbAt(path []string, want ...string) bool {
	return slices.Equal(path, want)
}

// nzbAttr returns the value of the attribute with the given local name.
func nzbAttr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// nzbMessageID checks a segment's message-id and returns it in angle
// brackets. NZBs usually leave the brackets out. The id ends up in a BODY
// or ARTICLE command line, so anything that could break that line is
// refused (RFC 3977 §3.6: no controls, spaces, or ">" inside).
func nzbMessageID(text []byte) (string, error) {
	id := bytes.TrimSpace(text)
	id = bytes.TrimPrefix(id, []byte("<"))
	id = bytes.TrimSuffix(id, []byte(">"))
	if len(id) == 0 {
		return "", errors.New("empty message-id")
	}
	if len(id) > 248 { // RFC 3977 §3.6: at most 250 octets with brackets
		return "", fmt.Errorf("message-id of %d octets", len(id)+2)
	}
	for _, c := range id {
		if c <= ' ' || c == 0x7f || c == '<' || c == '>' {
			return "", fmt.Errorf("message-id %q holds %q", id, c)
		}
	}
	return "<" + string(id) + ">", nil
}

// AppendNZB appends n as an NZB 1.1 document (UTF-8, with the DOCTYPE) to
// dst. Notes are not written. ParseNZB of the result gives n back.
func AppendNZB(dst []byte, n *NZB) []byte {
	dst = append(dst, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<!DOCTYPE nzb PUBLIC "-//newzBin//DTD NZB 1.1//EN" "http://www.newzbin.com/DTD/nzb/nzb-1.1.dtd">`+"\n"+
		`<nzb xmlns="http://www.newzbin.com/DTD/2003/nzb">`+"\n"...)
	if len(n.Meta) > 0 {
		dst = append(dst, " <head>\n"...)
		for _, m := range n.Meta {
			dst = append(dst, `  <meta type="`...)
			dst = nzbEscape(dst, m.Type)
			dst = append(dst, `">`...)
			dst = nzbEscape(dst, m.Value)
			dst = append(dst, "</meta>\n"...)
		}
		dst = append(dst, " </head>\n"...)
	}
	for _, f := range n.Files {
		dst = append(dst, ` <file poster="`...)
		dst = nzbEscape(dst, f.Poster)
		dst = append(dst, `" date="`...)
		dst = strconv.AppendInt(dst, f.Date, 10)
		dst = append(dst, `" subject="`...)
		dst = nzbEscape(dst, f.Subject)
		dst = append(dst, "\">\n  <groups>\n"...)
		for _, g := range f.Groups {
			dst = append(dst, "   <group>"...)
			dst = nzbEscape(dst, g)
			dst = append(dst, "</group>\n"...)
		}
		dst = append(dst, "  </groups>\n  <segments>\n"...)
		for _, s := range f.Segments {
			dst = append(dst, `   <segment bytes="`...)
			dst = strconv.AppendInt(dst, s.Bytes, 10)
			dst = append(dst, `" number="`...)
			dst = strconv.AppendInt(dst, int64(s.Number), 10)
			dst = append(dst, `">`...)
			dst = nzbEscape(dst, strings.TrimSuffix(strings.TrimPrefix(s.MessageID, "<"), ">"))
			dst = append(dst, "</segment>\n"...)
		}
		dst = append(dst, "  </segments>\n </file>\n"...)
	}
	return append(dst, "</nzb>\n"...)
}

// nzbEscape appends s escaped for XML text and attribute values. TAB, LF
// and CR become character references so attribute values keep them;
// characters XML cannot carry become U+FFFD.
func nzbEscape(dst []byte, s string) []byte {
	for _, r := range s {
		switch {
		case r == '&':
			dst = append(dst, "&amp;"...)
		case r == '<':
			dst = append(dst, "&lt;"...)
		case r == '>':
			dst = append(dst, "&gt;"...)
		case r == '"':
			dst = append(dst, "&quot;"...)
		case r == '\'':
			dst = append(dst, "&apos;"...)
		case r == '\t':
			dst = append(dst, "&#x9;"...)
		case r == '\n':
			dst = append(dst, "&#xA;"...)
		case r == '\r':
			dst = append(dst, "&#xD;"...)
		case r < 0x20 || r == utf8.RuneError || (r >= 0xd800 && r <= 0xdfff) || r == 0xfffe || r == 0xffff:
			dst = utf8.AppendRune(dst, '\uFFFD')
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}
