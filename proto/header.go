package proto

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// MaxHeaderSection is the largest header section ParseHeaders accepts, in
// octets including line endings and the blank line. Real articles carry long
// Path, References and Xref fields, so this is far above RFC 5322's 998-octet
// line limit, but it bounds what a relay holds for one article.
const MaxHeaderSection = 256 << 10

// ErrMissingHeader is wrapped by accessors when the article lacks the field.
var ErrMissingHeader = errors.New("header field missing")

// A HeaderField is one field of an article's header section as received.
type HeaderField struct {
	// Name is the field name as written (any case), without the colon and
	// without the whitespace RFC 5322 §4.5 (obs-optional) tolerates before it.
	Name []byte
	// Raw is everything after the colon up to the field's final line ending:
	// the leading space and any folding (CRLF or LF followed by WSP) are kept.
	Raw []byte
	// off is the offset of Raw in the input given to ParseHeaders.
	off int
}

// Value returns the field body unfolded (RFC 5322 §2.2.3: each line ending
// that precedes whitespace is removed) with leading and trailing whitespace
// removed.
func (f HeaderField) Value() string { return string(unfold(nil, f.Raw)) }

// AppendValue is Value appending to dst, for callers that avoid allocation.
func (f HeaderField) AppendValue(dst []byte) []byte { return unfold(dst, f.Raw) }

func unfold(dst, raw []byte) []byte {
	raw = trimWSP(raw)
	if bytes.IndexByte(raw, '\n') < 0 {
		return append(dst, raw...)
	}
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			return append(dst, raw...)
		}
		line := raw[:i]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		dst = append(dst, line...)
		raw = raw[i+1:]
	}
	return dst
}

// Header is a parsed header section: its fields in order of appearance,
// repeated fields included. Its byte slices point into the parsed input.
type Header struct {
	Fields []HeaderField
}

// ParseHeaders parses the header section at the start of an article in wire
// or native form (RFC 5322 §2.2, RFC 5536 §3): lines end in CRLF or a
// tolerated bare LF, a line starting with space or tab continues the previous
// field, and an empty line ends the section. bodyOffset is the offset of the
// body, just after that empty line; if the input ends first (a HEAD reply),
// the whole input is the header section and bodyOffset is len(b).
//
// It refuses, with an error naming the line: a line without a colon, an empty
// or non-printable field name, a continuation before the first field, a NUL
// octet, and a section longer than MaxHeaderSection. The returned fields are
// sub-slices of b; the only allocation is the field slice (see Header.Parse
// to reuse one).
func ParseHeaders(b []byte) (h Header, bodyOffset int, err error) {
	h.Fields = make([]HeaderField, 0, 24)
	bodyOffset, err = h.Parse(b)
	return h, bodyOffset, err
}

// Parse is ParseHeaders into h, reusing the capacity of h.Fields so that a
// relay parsing article after article does not allocate. On error h is
// left empty.
func (h *Header) Parse(b []byte) (bodyOffset int, err error) {
	h.Fields = h.Fields[:0]
	off, err := h.parse(b)
	if err != nil {
		h.Fields = h.Fields[:0]
		return 0, err
	}
	return off, nil
}

func (h *Header) parse(b []byte) (int, error) {
	pos, lineNo := 0, 0
	for pos < len(b) {
		lineNo++
		if pos > MaxHeaderSection {
			return 0, fmt.Errorf("article header: section longer than %d octets", MaxHeaderSection)
		}
		end := len(b) // end of line content
		next := len(b)
		if i := bytes.IndexByte(b[pos:], '\n'); i >= 0 {
			end, next = pos+i, pos+i+1
			if end > pos && b[end-1] == '\r' {
				end--
			}
		}
		line := b[pos:end]
		if next > MaxHeaderSection {
			return 0, fmt.Errorf("article header: section longer than %d octets", MaxHeaderSection)
		}
		if len(line) == 0 {
			// The empty line ends the section.
			return next, checkHeaderNUL(b[:pos])
		}
		if line[0] == ' ' || line[0] == '\t' {
			// RFC 5322 §2.2.3 folding: the line belongs to the previous field.
			if len(h.Fields) == 0 {
				return 0, headerErr(b[:next], "article header: line %d %q: continuation line before the first field", lineNo, clip(line))
			}
			f := &h.Fields[len(h.Fields)-1]
			f.Raw = b[f.off:end]
			pos = next
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return 0, headerErr(b[:next], "article header: line %d %q has no colon", lineNo, clip(line))
		}
		name := line[:colon]
		for len(name) > 0 && (name[len(name)-1] == ' ' || name[len(name)-1] == '\t') {
			name = name[:len(name)-1]
		}
		if len(name) == 0 {
			return 0, headerErr(b[:next], "article header: line %d %q has an empty field name", lineNo, clip(line))
		}
		for _, c := range name {
			// RFC 5322 §3.6.8: ftext = %d33-57 / %d59-126
			if c <= ' ' || c >= 0x7f {
				return 0, headerErr(b[:next], "article header: line %d %q: field name holds %s", lineNo, clip(line), midChar(c))
			}
		}
		off := pos + colon + 1
		h.Fields = append(h.Fields, HeaderField{Name: name, Raw: b[off:end], off: off})
		pos = next
	}
	return len(b), checkHeaderNUL(b)
}

// headerErr reports a syntax error on the last line of sec, unless a NUL
// octet comes first (NULs are checked once per section, not per line).
func headerErr(sec []byte, format string, args ...any) error {
	if err := checkHeaderNUL(sec); err != nil {
		return err
	}
	return fmt.Errorf(format, args...)
}

// checkHeaderNUL refuses a NUL octet anywhere in the header section, with
// one vectorised scan rather than one per line.
func checkHeaderNUL(sec []byte) error {
	i := bytes.IndexByte(sec, 0)
	if i < 0 {
		return nil
	}
	return fmt.Errorf("article header: line %d holds a NUL octet", bytes.Count(sec[:i], []byte{'\n'})+1)
}

// Len returns the number of fields.
func (h Header) Len() int { return len(h.Fields) }

// Field returns the first field named name (ASCII case-insensitive).
func (h Header) Field(name string) (HeaderField, bool) {
	for _, f := range h.Fields {
		if EqualFoldASCII(f.Name, name) {
			return f, true
		}
	}
	return HeaderField{}, false
}

// Has reports whether a field named name is present.
func (h Header) Has(name string) bool {
	_, ok := h.Field(name)
	return ok
}

// Count returns how many fields are named name.
func (h Header) Count(name string) int {
	n := 0
	for _, f := range h.Fields {
		if EqualFoldASCII(f.Name, name) {
			n++
		}
	}
	return n
}

// Get returns the unfolded, trimmed value of the first field named name, or
// "" if there is none.
func (h Header) Get(name string) string {
	f, ok := h.Field(name)
	if !ok {
		return ""
	}
	return f.Value()
}

// Values returns the unfolded values of every field named name, in order.
func (h Header) Values(name string) []string {
	var out []string
	for _, f := range h.Fields {
		if EqualFoldASCII(f.Name, name) {
			out = append(out, f.Value())
		}
	}
	return out
}

// EqualFoldASCII reports whether b and s are equal but for the case of
// ASCII letters (field names, the domain part of a Message-ID); any other
// octet must match exactly. It does not allocate.
func EqualFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func trimWSP(b []byte) []byte {
	for len(b) > 0 && isWSPorEOL(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isWSPorEOL(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isWSPorEOL(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// Header field names newsflow reads (RFC 5536 §3).
const (
	HeaderMessageID  = "Message-ID"
	HeaderNewsgroups = "Newsgroups"
	HeaderPath       = "Path"
	HeaderFrom       = "From"
	HeaderSubject    = "Subject"
	HeaderDate       = "Date"
	HeaderReferences = "References"
	HeaderBytes      = "Bytes"
	HeaderLines      = "Lines"
	HeaderXref       = "Xref"
)

// MessageID returns the Message-ID field value, checked with ValidMessageID
// (RFC 5536 §3.1.3).
func (h Header) MessageID() (string, error) {
	f, ok := h.Field(HeaderMessageID)
	if !ok {
		return "", fmt.Errorf("article header: Message-ID: %w", ErrMissingHeader)
	}
	v := string(trimWSP(f.Raw))
	if bytes.IndexByte(f.Raw, '\n') >= 0 {
		v = f.Value()
	}
	if err := ValidMessageID(v); err != nil {
		return v, fmt.Errorf("article header: Message-ID: %w", err)
	}
	return v, nil
}

// Newsgroups returns the groups of the Newsgroups field, checked with
// ParseNewsgroups (RFC 5536 §3.1.4).
func (h Header) Newsgroups() ([]string, error) {
	f, ok := h.Field(HeaderNewsgroups)
	if !ok {
		return nil, fmt.Errorf("article header: Newsgroups: %w", ErrMissingHeader)
	}
	g, err := ParseNewsgroups(f.Value())
	if err != nil {
		return g, fmt.Errorf("article header: %w", err)
	}
	return g, nil
}

// Path returns the Path field value (RFC 5536 §3.1.5), "" if absent. See
// PathContains, PrependPath and PathIdentities.
func (h Header) Path() string { return h.Get(HeaderPath) }

// Subject returns the Subject field value, "" if absent.
func (h Header) Subject() string { return h.Get(HeaderSubject) }

// From returns the From field value, "" if absent.
func (h Header) From() string { return h.Get(HeaderFrom) }

// References returns the message-ids in the References field, in order; see
// ParseReferences.
func (h Header) References() []string { return ParseReferences(h.Get(HeaderReferences)) }

// Bytes returns the Bytes field (article size in octets, an INN extension
// carried in overview), or an error wrapping ErrMissingHeader.
func (h Header) Bytes() (int64, error) { return h.number(HeaderBytes) }

// Lines returns the Lines field (body lines, RFC 1036 §2.2.12).
func (h Header) Lines() (int64, error) { return h.number(HeaderLines) }

func (h Header) number(name string) (int64, error) {
	f, ok := h.Field(name)
	if !ok {
		return 0, fmt.Errorf("article header: %s: %w", name, ErrMissingHeader)
	}
	n, err := parseArticleNumber(f.Value())
	if err != nil {
		return 0, fmt.Errorf("article header: %s: %w", name, err)
	}
	return n, nil
}

// Xref returns the parsed Xref field (RFC 5536 §3.2.14).
func (h Header) Xref() (Xref, error) {
	f, ok := h.Field(HeaderXref)
	if !ok {
		return Xref{}, fmt.Errorf("article header: Xref: %w", ErrMissingHeader)
	}
	return ParseXref(f.Value())
}

// ValidGroupName checks a newsgroup name against RFC 5536 §3.1.4:
// components of letters, digits, "+", "-" and "_" separated by single dots.
// Tolerance: octets >= 0x80 (UTF-8 names, which RFC 5536 anticipates and
// some hierarchies use) are allowed in components.
func ValidGroupName(s string) error {
	if s == "" {
		return fmt.Errorf("newsgroup name is empty")
	}
	comp := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if comp == 0 {
				return fmt.Errorf("newsgroup name %q has an empty component", clipS(s))
			}
			comp = 0
			continue
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '+', c == '-', c == '_', c >= 0x80:
		default:
			return fmt.Errorf("newsgroup name %q holds %s", clipS(s), midChar(c))
		}
		comp++
	}
	if comp == 0 {
		return fmt.Errorf("newsgroup name %q has an empty component", clipS(s))
	}
	return nil
}

// ParseNewsgroups splits a Newsgroups field value at commas, allowing
// whitespace around them (RFC 5536 §3.1.4), and checks each name with
// ValidGroupName. Empty entries (",," or a trailing comma, seen in the wild)
// are skipped; a value with no group at all is an error.
func ParseNewsgroups(v string) ([]string, error) {
	var out []string
	v0 := v
	for len(v) > 0 {
		var g string
		if i := strings.IndexByte(v, ','); i >= 0 {
			g, v = v[:i], v[i+1:]
		} else {
			g, v = v, ""
		}
		g = strings.Trim(g, " \t\r\n")
		if g == "" {
			continue
		}
		if err := ValidGroupName(g); err != nil {
			return out, fmt.Errorf("Newsgroups %q: %w", clipS(v0), err)
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("Newsgroups %q: no newsgroup named", clipS(v0))
	}
	return out, nil
}

// ParseReferences returns the message-ids in a References field value
// (RFC 5536 §3.2.10) in order. It is tolerant, as readers must be: anything
// between message-ids is skipped (comments, stray words, missing spaces
// "<a@b><c@d>"), and a candidate is kept if it passes ValidNNTPMessageID and
// holds an "@"; a truncated last id is dropped.
func ParseReferences(v string) []string {
	var out []string
	for {
		i := strings.IndexByte(v, '<')
		if i < 0 {
			return out
		}
		v = v[i:]
		j := strings.IndexByte(v, '>')
		if j < 0 {
			return out
		}
		// A later '<' before the '>' restarts the candidate.
		if k := strings.LastIndexByte(v[:j], '<'); k > 0 {
			v = v[k:]
			j -= k
		}
		id := v[:j+1]
		v = v[j+1:]
		if ValidNNTPMessageID(id) == nil && strings.IndexByte(id, '@') > 0 {
			out = append(out, id)
		}
	}
}

// PathIdentities splits a Path field value (RFC 5536 §3.1.5) into its
// entries, newest first, without the empty entries of "!!" and with
// surrounding whitespace removed. Diagnostic entries such as ".POSTED" or
// ".SEEN.host" (RFC 5537 §3.2.1) are kept as written; the last entry is the
// tail ("not-for-mail" or a user name).
func PathIdentities(path string) []string {
	var out []string
	for path != "" {
		var e string
		if i := strings.IndexByte(path, '!'); i >= 0 {
			e, path = path[:i], path[i+1:]
		} else {
			e, path = path, ""
		}
		e = strings.Trim(e, " \t\r\n")
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}

// PathContains reports whether identity appears as an entry of the Path
// value (ASCII case-insensitive, as path identities are host names). A relay
// does not offer an article to a peer whose identity is already in its Path
// (RFC 5537 §3.3). It does not allocate.
func PathContains(path, identity string) bool {
	if identity == "" {
		return false
	}
	for path != "" {
		var e string
		if i := strings.IndexByte(path, '!'); i >= 0 {
			e, path = path[:i], path[i+1:]
		} else {
			e, path = path, ""
		}
		if strings.EqualFold(strings.Trim(e, " \t\r\n"), identity) {
			return true
		}
	}
	return false
}

// PrependPath returns the Path value with identity added at the front, as a
// relay does before passing an article on (RFC 5537 §3.2.1).
func PrependPath(path, identity string) string {
	return identity + "!" + strings.TrimLeft(path, " \t\r\n")
}

// PrependPathIdentity appends to dst a copy of article (the bytes h was
// parsed from) with identity and "!" inserted at the front of the Path
// field's body; every other byte is unchanged. It fails if the header has no
// Path field or identity is not a valid path identity (RFC 5536 §3.1.5).
func PrependPathIdentity(dst, article []byte, h Header, identity string) ([]byte, error) {
	if err := validPathIdentity(identity); err != nil {
		return dst, err
	}
	f, ok := h.Field(HeaderPath)
	if !ok {
		return dst, fmt.Errorf("article header: Path: %w", ErrMissingHeader)
	}
	at := f.off
	if at < 0 || at+len(f.Raw) > len(article) || !bytes.Equal(article[at:at+len(f.Raw)], f.Raw) {
		return dst, fmt.Errorf("article header: Path: header was not parsed from this article")
	}
	for at < len(article) && (article[at] == ' ' || article[at] == '\t') {
		at++
	}
	dst = append(dst, article[:at]...)
	if at == f.off {
		dst = append(dst, ' ') // "Path:x" -> "Path: id!x"
	}
	dst = append(dst, identity...)
	dst = append(dst, '!')
	return append(dst, article[at:]...), nil
}

// validPathIdentity: RFC 5536 §3.1.5 path-identity =
// ( ALPHA / DIGIT ) *( ALPHA / DIGIT / "-" / "." / ":" / "_" ).
func validPathIdentity(s string) error {
	if s == "" {
		return fmt.Errorf("path identity is empty")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || (c != '-' && c != '.' && c != ':' && c != '_')) {
			return fmt.Errorf("path identity %q: %s not allowed at offset %d (RFC 5536 §3.1.5)", clipS(s), midChar(c), i)
		}
	}
	return nil
}

// An Xref is a parsed Xref field (RFC 5536 §3.2.14): the server that numbered
// the article and where it is filed there.
type Xref struct {
	Server  string
	Entries []XrefEntry
}

// An XrefEntry is one "group:number" location of an Xref field.
type XrefEntry struct {
	Group  string
	Number int64
}

// ParseXref parses an Xref field value: a server name, then one or more
// "newsgroup:number" entries separated by whitespace.
func ParseXref(v string) (Xref, error) {
	f := fields(strings.NewReplacer("\r", " ", "\n", " ").Replace(v))
	if len(f) < 2 {
		return Xref{}, fmt.Errorf("Xref %q: want a server name and at least one group:number", clipS(v))
	}
	x := Xref{Server: f[0], Entries: make([]XrefEntry, 0, len(f)-1)}
	for _, e := range f[1:] {
		i := strings.LastIndexByte(e, ':')
		if i <= 0 {
			return Xref{}, fmt.Errorf("Xref %q: entry %q is not group:number", clipS(v), e)
		}
		n, err := parseArticleNumber(e[i+1:])
		if err != nil {
			return Xref{}, fmt.Errorf("Xref %q: entry %q: %w", clipS(v), e, err)
		}
		x.Entries = append(x.Entries, XrefEntry{Group: e[:i], Number: n})
	}
	return x, nil
}

// String formats x as an Xref field value.
func (x Xref) String() string {
	var b strings.Builder
	b.WriteString(x.Server)
	for _, e := range x.Entries {
		fmt.Fprintf(&b, " %s:%d", e.Group, e.Number)
	}
	return b.String()
}

// clipS shortens s for an error message.
func clipS(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
