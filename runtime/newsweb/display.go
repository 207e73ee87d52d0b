package newsweb

// Display decoding: an article as received (RFC 5536 header, MIME body) to
// text a page can show. Everything here produces plain strings; the
// templates escape them, so nothing in an article can become markup.
//
// Header fields are unfolded (proto) and their RFC 2047 encoded-words
// decoded; raw 8-bit header text that is not UTF-8 is read as
// Windows-1252, the usual Usenet case. The body follows its MIME structure
// (RFC 2045/2046): Content-Transfer-Encoding quoted-printable and base64 are
// undone, the charset is converted to UTF-8 (golang.org/x/text), multipart
// bodies are walked to a depth and part count limit, text parts are shown,
// and other parts are listed as attachments (never served). In
// multipart/alternative the text/plain part is preferred. yEnc bodies are
// listed as binary rather than shown as noise.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"

	"github.com/newsflow/newsflow/proto"
)

// Limits of display decoding.
const (
	maxDisplayText = 2 << 20 // bytes of text shown per article
	maxParts       = 64      // MIME parts walked per article
	maxNesting     = 8       // multipart nesting depth
)

// Line is one line of body text with its quote depth (the number of
// leading '>' marks, RFC 3676 §4.5 style) and whether it is part of the
// signature (after a "-- " line, RFC 3676 §4.3).
type Line struct {
	Text  string `json:"text"`
	Quote int    `json:"quote,omitempty"`
	Sig   bool   `json:"sig,omitempty"`
}

// Part is one shown text part.
type Part struct {
	Type  string `json:"type"`           // media type, e.g. text/plain
	Note  string `json:"note,omitempty"` // e.g. "HTML shown as source"
	Lines []Line `json:"lines"`
}

// Attachment is a part that is not shown.
type Attachment struct {
	Name string `json:"name,omitempty"`
	Type string `json:"type"`
	Size int    `json:"size"` // decoded bytes
}

// Display is an article decoded for display.
type Display struct {
	MessageID    string       `json:"message_id"`
	From         string       `json:"from"`
	Subject      string       `json:"subject"`
	Date         string       `json:"date"` // RFC 3339 when parseable, else as sent
	DateText     string       `json:"-"`    // for pages: "2006-01-02 15:04 UTC"
	Newsgroups   []string     `json:"newsgroups"`
	References   []string     `json:"references,omitempty"`
	Organization string       `json:"organization,omitempty"`
	Parts        []Part       `json:"parts"`
	Attachments  []Attachment `json:"attachments,omitempty"`
	Truncated    bool         `json:"truncated,omitempty"`
	Problem      string       `json:"problem,omitempty"` // why the article was shown raw
}

// Text returns the shown text of every part, lines joined by newlines.
func (d *Display) Text() string {
	var b strings.Builder
	for i, p := range d.Parts {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, l := range p.Lines {
			b.WriteString(l.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// decodeArticle decodes raw (as received, CRLF or LF) for display.
func decodeArticle(raw []byte) *Display {
	d := &Display{}
	h, off, err := proto.ParseHeaders(raw)
	if err != nil {
		d.Problem = "the header could not be parsed: " + err.Error()
		d.Parts = []Part{{Type: "text/plain", Lines: textLines(toUTF8(raw, ""), new(int))}}
		return d
	}
	d.MessageID = h.Get(proto.HeaderMessageID)
	d.From = decodeHeader(h.Get(proto.HeaderFrom))
	d.Subject = decodeHeader(h.Get(proto.HeaderSubject))
	d.Date = h.Get(proto.HeaderDate)
	d.DateText = d.Date
	if t, err := proto.ParseArticleDate(d.Date); err == nil {
		d.Date = t.UTC().Format(time.RFC3339)
		d.DateText = t.UTC().Format("2006-01-02 15:04 UTC")
	}
	d.Newsgroups, _ = proto.ParseNewsgroups(h.Get(proto.HeaderNewsgroups))
	d.References = h.References()
	d.Organization = decodeHeader(h.Get("Organization"))

	body := crlfToLF(raw[off:])
	mh := textproto.MIMEHeader{}
	for _, name := range []string{"Content-Type", "Content-Transfer-Encoding", "Content-Disposition"} {
		if v := h.Get(name); v != "" {
			mh.Set(name, v)
		}
	}
	if h.Get("MIME-Version") == "" && mh.Get("Content-Type") == "" {
		mh = textproto.MIMEHeader{} // plain Usenet text
	}
	budget := maxDisplayText
	w := walker{d: d, budget: &budget, parts: maxParts}
	w.entity(mh, body, 0)
	if len(d.Parts) == 0 && len(d.Attachments) == 0 {
		d.Parts = []Part{{Type: "text/plain"}}
	}
	return d
}

// walker walks a MIME entity tree.
type walker struct {
	d      *Display
	budget *int
	parts  int
}

// entity handles one MIME entity with header mh and (still encoded) body.
func (w *walker) entity(mh textproto.MIMEHeader, body []byte, depth int) {
	if w.parts <= 0 {
		w.d.Truncated = true
		return
	}
	w.parts--
	ctype, params, err := mime.ParseMediaType(mh.Get("Content-Type"))
	if err != nil || ctype == "" {
		ctype, params = "text/plain", map[string]string{}
	}
	if strings.HasPrefix(ctype, "multipart/") && params["boundary"] != "" && depth < maxNesting {
		w.multipart(ctype, params["boundary"], body, depth)
		return
	}
	data, cteErr := decodeCTE(mh.Get("Content-Transfer-Encoding"), body)
	name := params["name"]
	if _, dp, err := mime.ParseMediaType(mh.Get("Content-Disposition")); err == nil && dp["filename"] != "" {
		name = dp["filename"]
	}
	disposition, _, _ := mime.ParseMediaType(mh.Get("Content-Disposition"))
	if !strings.HasPrefix(ctype, "text/") || disposition == "attachment" {
		w.d.Attachments = append(w.d.Attachments, Attachment{Name: decodeHeader(name), Type: ctype, Size: len(data)})
		return
	}
	if ybegin(data) {
		w.d.Attachments = append(w.d.Attachments, Attachment{Name: ybeginName(data), Type: "application/x-yenc", Size: len(data)})
		return
	}
	p := Part{Type: ctype}
	if cteErr != nil {
		p.Note = "transfer encoding damaged: " + cteErr.Error()
	}
	if ctype == "text/html" {
		p.Note = "HTML part, shown as source text"
	}
	if len(data) > *w.budget {
		data, w.d.Truncated = data[:*w.budget], true
	}
	*w.budget -= len(data)
	text := toUTF8(data, params["charset"])
	if ctype == "text/plain" && strings.EqualFold(params["format"], "flowed") {
		text = unflow(text, strings.EqualFold(params["delsp"], "yes"))
	}
	p.Lines = textLines(text, new(int))
	w.d.Parts = append(w.d.Parts, p)
}

// multipart walks the parts of a multipart body (RFC 2046 §5.1). In
// multipart/alternative only the first text/plain part is shown when there
// is one (the parts are equivalent; RFC 2046 §5.1.4).
func (w *walker) multipart(ctype, boundary string, body []byte, depth int) {
	type rawPart struct {
		h    textproto.MIMEHeader
		body []byte
	}
	var parts []rawPart
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	for len(parts) < maxParts {
		p, err := r.NextRawPart()
		if err != nil {
			break
		}
		b, _ := io.ReadAll(io.LimitReader(p, maxDisplayText+1))
		parts = append(parts, rawPart{h: p.Header, body: b})
	}
	if len(parts) == 0 {
		// Not really multipart: show the body as text.
		w.entity(textproto.MIMEHeader{}, body, depth+1)
		return
	}
	if ctype == "multipart/alternative" {
		for _, p := range parts {
			if t, _, _ := mime.ParseMediaType(p.h.Get("Content-Type")); t == "text/plain" || p.h.Get("Content-Type") == "" {
				w.entity(p.h, p.body, depth+1)
				return
			}
		}
	}
	for _, p := range parts {
		w.entity(p.h, p.body, depth+1)
	}
}

// decodeCTE undoes a Content-Transfer-Encoding (RFC 2045 §6). Unknown and
// identity encodings (7bit, 8bit, binary) return the body as it is; a
// damaged encoding returns what could be decoded and the error.
func decodeCTE(cte string, body []byte) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
		if err != nil {
			return out, fmt.Errorf("quoted-printable: %w", err)
		}
		return out, nil
	case "base64":
		clean := bytes.Map(func(r rune) rune {
			if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, body)
		out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
		n, err := base64.StdEncoding.Decode(out, clean)
		if err != nil {
			return out[:n], fmt.Errorf("base64: %w", err)
		}
		return out[:n], nil
	}
	return body, nil
}

// charsetEncoding finds a charset by its MIME or WHATWG label.
func charsetEncoding(label string) encoding.Encoding {
	label = strings.ToLower(strings.TrimSpace(label))
	if label == "" {
		return nil
	}
	e, err := htmlindex.Get(label)
	if err != nil {
		return nil
	}
	return e
}

// toUTF8 converts text in charset to UTF-8. With no charset (or us-ascii,
// which is often a lie) valid UTF-8 stays as it is and anything else is
// read as Windows-1252; an unknown charset is treated the same way.
func toUTF8(b []byte, charset string) string {
	cs := strings.ToLower(strings.TrimSpace(charset))
	if cs == "" || cs == "us-ascii" || cs == "ascii" || cs == "utf-8" || cs == "utf8" {
		if utf8.Valid(b) {
			return string(b)
		}
		cs = "windows-1252"
	}
	e := charsetEncoding(cs)
	if e == nil {
		if utf8.Valid(b) {
			return string(b)
		}
		e = charmap.Windows1252
	}
	out, err := e.NewDecoder().Bytes(b)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(out)
}

// wordDecoder decodes RFC 2047 encoded-words with any charset x/text knows.
var wordDecoder = &mime.WordDecoder{
	CharsetReader: func(charset string, input io.Reader) (io.Reader, error) {
		e := charsetEncoding(charset)
		if e == nil {
			return nil, fmt.Errorf("unknown charset %q", charset)
		}
		return e.NewDecoder().Reader(input), nil
	},
}

// decodeHeader decodes a header field body for display: RFC 2047
// encoded-words, raw 8-bit text, and control characters removed.
func decodeHeader(v string) string {
	if !utf8.ValidString(v) {
		v = toUTF8([]byte(v), "windows-1252")
	}
	if strings.Contains(v, "=?") {
		if dec, err := wordDecoder.DecodeHeader(v); err == nil {
			v = dec
		}
	}
	return cleanText(v)
}

// displayName is the name part of a From field ("Jane Doe" of
// "Jane Doe <jane@example.com>"), or the whole field when it has none.
func displayName(from string) string {
	from = decodeHeader(from)
	if a, err := mail.ParseAddress(from); err == nil {
		if a.Name != "" {
			return a.Name
		}
		return a.Address
	}
	return from
}

// cleanText removes control characters other than tab (terminal escapes,
// NUL, bidirectional overrides) so text cannot disguise itself.
func cleanText(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s // printable ASCII, the common case
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return r
		case r < 0x20, r == 0x7f, unicode.Is(unicode.Bidi_Control, r):
			return -1
		}
		return r
	}, s)
}

// textLines splits text into display lines with quote depths and the
// signature marked. sig carries "inside the signature" across calls.
func textLines(text string, sig *int) []Line {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return nil
	}
	raw := strings.Split(text, "\n")
	out := make([]Line, 0, len(raw))
	for _, l := range raw {
		l = strings.TrimSuffix(l, "\r")
		if l == "-- " {
			*sig = 1
		}
		out = append(out, Line{Text: cleanText(l), Quote: quoteDepth(l), Sig: *sig > 0})
	}
	return out
}

// unflow joins the lines of a format=flowed text (RFC 3676 §4) into the
// paragraphs they were cut from, so that a page wraps them at its own
// width: a line ending in a space is soft and goes on with the next line
// of the same quote depth; the signature separator "-- " is never soft;
// the space-stuffing after the quote marks (or at the start of an
// unquoted line) is removed; with delsp, the space of a soft break is
// dropped. Quoted paragraphs come out as "> " lines of their depth's
// marks; an unquoted one starting with ">" keeps a leading space, so that
// it does not read as a quote.
func unflow(text string, delsp bool) string {
	lines := strings.Split(text, "\n")
	var out []string
	var para strings.Builder
	depth, open := 0, false
	flush := func() {
		if !open {
			return
		}
		t := para.String()
		switch {
		case depth > 0:
			t = strings.Repeat(">", depth) + " " + t
		case strings.HasPrefix(t, ">"):
			t = " " + t
		}
		out = append(out, t)
		para.Reset()
		open = false
	}
	for _, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		d := 0
		for d < len(l) && l[d] == '>' {
			d++
		}
		rest := strings.TrimPrefix(l[d:], " ")
		if rest == "-- " {
			flush()
			out = append(out, l)
			continue
		}
		if open && d != depth {
			flush()
		}
		soft := strings.HasSuffix(rest, " ")
		if soft && delsp {
			rest = rest[:len(rest)-1]
		}
		para.WriteString(rest)
		depth, open = d, true
		if !soft {
			flush()
		}
	}
	flush()
	return strings.Join(out, "\n")
}

// quoteDepth counts leading quote marks: ">", "> >", ">>" are 1, 2, 2.
func quoteDepth(l string) int {
	n := 0
	for _, r := range l {
		switch r {
		case '>':
			n++
		case ' ':
			if n == 0 {
				return 0
			}
		default:
			return n
		}
	}
	return n
}

// crlfToLF turns CRLF line ends into LF.
func crlfToLF(b []byte) []byte {
	if !bytes.Contains(b, []byte("\r\n")) {
		return b
	}
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}

// ybegin reports a yEnc body (a "=ybegin " line among the first lines).
func ybegin(b []byte) bool {
	head := b[:min(len(b), 1024)]
	return bytes.HasPrefix(head, []byte("=ybegin ")) || bytes.Contains(head, []byte("\n=ybegin "))
}

// ybeginName returns the name= of the =ybegin line.
func ybeginName(b []byte) string {
	i := bytes.Index(b, []byte("=ybegin "))
	if i < 0 {
		return ""
	}
	line := b[i:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	if k := bytes.Index(line, []byte(" name=")); k >= 0 {
		return cleanText(string(line[k+6:]))
	}
	return ""
}
