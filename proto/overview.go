package proto

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// An OverviewFmtField is one line of LIST OVERVIEW.FMT (RFC 3977 §8.4).
type OverviewFmtField struct {
	// Name is the header name ("Subject") or, for a metadata item, the item
	// with its leading colon (":bytes"). The old forms "Bytes:" and "Lines:"
	// in positions six and seven are reported as ":bytes" and ":lines".
	Name string
	// Full is set for "Name:full": the overview field then starts with the
	// header name, a colon and a space (RFC 3977 §8.4.2).
	Full bool
}

// OverviewFmt is the field order of overview lines after the article number.
// Its first seven fields are those of RFC 3977 §8.4.2, in order, as
// ParseOverviewFmt ensures; the overview functions rely on that.
type OverviewFmt []OverviewFmtField

// DefaultOverviewFmt is the format of RFC 3977 §8.4.2 plus "Xref:full", what
// INN serves by default.
var DefaultOverviewFmt = OverviewFmt{
	{Name: "Subject"}, {Name: "From"}, {Name: "Date"}, {Name: "Message-ID"},
	{Name: "References"}, {Name: ":bytes"}, {Name: ":lines"}, {Name: "Xref", Full: true},
}

// overviewFixed are the seven fields every overview starts with, in order
// (RFC 3977 §8.4.2).
var overviewFixed = [7]string{"Subject", "From", "Date", "Message-ID", "References", ":bytes", ":lines"}

// ParseOverviewFmt parses the lines of a LIST OVERVIEW.FMT response (without
// line endings; a trailing CRLF or LF is tolerated). RFC 3977 §8.4.2: the
// first seven must be Subject:, From:, Date:, Message-ID:, References:, then
// :bytes and :lines (or the older Bytes: and Lines:); later lines are
// "Name:full" or ":metadata". A later "Name:" without "full" is accepted as
// older servers send it, and is taken as not full.
func ParseOverviewFmt(lines []string) (OverviewFmt, error) {
	var out OverviewFmt
	for i, l := range lines {
		l = strings.TrimRight(l, " \t\r\n")
		l = strings.TrimLeft(l, " \t")
		if l == "" {
			continue
		}
		var f OverviewFmtField
		if l[0] == ':' {
			f.Name = strings.ToLower(l)
			if len(l) == 1 {
				return nil, fmt.Errorf("overview format line %d: empty metadata name", i+1)
			}
		} else {
			c := strings.IndexByte(l, ':')
			if c <= 0 {
				return nil, fmt.Errorf("overview format line %d %q: want Name: or :metadata", i+1, clipS(l))
			}
			f.Name = l[:c]
			switch suf := l[c+1:]; {
			case suf == "":
			case strings.EqualFold(suf, "full"):
				f.Full = true
			default:
				return nil, fmt.Errorf("overview format line %d %q: unknown suffix %q", i+1, clipS(l), suf)
			}
			if strings.EqualFold(f.Name, "Bytes") && len(out) == 5 {
				f = OverviewFmtField{Name: ":bytes"}
			} else if strings.EqualFold(f.Name, "Lines") && len(out) == 6 {
				f = OverviewFmtField{Name: ":lines"}
			}
		}
		for _, c := range []byte(f.Name) {
			if c <= ' ' || c >= 0x7f {
				return nil, fmt.Errorf("overview format line %d %q: name holds %s", i+1, clipS(l), midChar(c))
			}
		}
		if n := len(out); n < len(overviewFixed) {
			if !strings.EqualFold(f.Name, overviewFixed[n]) {
				return nil, fmt.Errorf("overview format line %d %q: RFC 3977 §8.4.2 wants %s here", i+1, clipS(l), overviewFixed[n])
			}
			f.Name = overviewFixed[n]
			f.Full = false
		}
		out = append(out, f)
	}
	if len(out) < len(overviewFixed) {
		return nil, fmt.Errorf("overview format: %d fields, RFC 3977 §8.4.2 requires the first %d", len(out), len(overviewFixed))
	}
	return out, nil
}

// An Overview is one line of OVER/XOVER output (RFC 3977 §8.3).
type Overview struct {
	Number     int64 // 0 when asked for by message-id (RFC 3977 §8.3.2)
	Subject    string
	From       string
	Date       string
	MessageID  string
	References string
	Bytes      int64 // 0 if the server left it empty
	Lines      int64 // 0 if the server left it empty
	Extra      []OverviewExtra
}

// An OverviewExtra is a field after the seventh, named by the format.
type OverviewExtra struct {
	Name  string // from the format; "" for fields beyond what the format lists
	Value string // without the "Name: " prefix of a full field
}

// ExtraValue returns the value of the extra field name (case-insensitive),
// e.g. "Xref".
func (o Overview) ExtraValue(name string) (string, bool) {
	for _, e := range o.Extra {
		if strings.EqualFold(e.Name, name) {
			return e.Value, true
		}
	}
	return "", false
}

// ParseOverviewLine parses one overview line (tab-separated, RFC 3977
// §8.3.2) with format f (DefaultOverviewFmt if nil). The article number and
// the seven fixed fields must be present; missing trailing extra fields are
// absent from Extra, and fields beyond the format are kept with an empty
// Name. Empty :bytes and :lines are 0. A full field's "Name:" prefix (and one
// space after it) is removed when present. A trailing CRLF or LF is removed;
// a NUL, CR or LF inside the line is an error.
func ParseOverviewLine(line []byte, f OverviewFmt) (Overview, error) {
	if f == nil {
		f = DefaultOverviewFmt
	}
	line = TrimEOL(line)
	if err := checkLineOctets(line); err != nil {
		return Overview{}, fmt.Errorf("overview line %q: %w", clip(line), err)
	}
	s := string(line) // one allocation; fields are substrings
	var o Overview
	num, rest, ok := strings.Cut(s, "\t")
	if !ok {
		return Overview{}, fmt.Errorf("overview line %q: no tab after the article number", clipS(s))
	}
	n, err := parseArticleNumber(num)
	if err != nil {
		return Overview{}, fmt.Errorf("overview line %q: %w", clipS(s), err)
	}
	o.Number = n
	nf := 0
	for i := 0; ok; i++ {
		var v string
		v, rest, ok = strings.Cut(rest, "\t")
		nf++
		if i >= len(f) {
			o.Extra = append(o.Extra, OverviewExtra{Value: v})
			continue
		}
		if i < len(overviewFixed) {
			// RFC 3977 §8.4.2: the first seven fields are fixed by position.
			switch i {
			case 0:
				o.Subject = v
			case 1:
				o.From = v
			case 2:
				o.Date = v
			case 3:
				o.MessageID = v
			case 4:
				o.References = v
			default: // :bytes, :lines
				var n int64
				if v != "" {
					if n, err = parseArticleNumber(strings.TrimSpace(v)); err != nil {
						return Overview{}, fmt.Errorf("overview line %q: %s: %w", clipS(s), overviewFixed[i], err)
					}
				}
				if i == 5 {
					o.Bytes = n
				} else {
					o.Lines = n
				}
			}
			continue
		}
		name := f[i].Name
		if f[i].Full && len(v) > len(name) && v[len(name)] == ':' && strings.EqualFold(v[:len(name)], name) {
			v = strings.TrimPrefix(v[len(name)+1:], " ")
		}
		o.Extra = append(o.Extra, OverviewExtra{Name: name, Value: v})
	}
	if nf < len(overviewFixed) {
		return Overview{}, fmt.Errorf("overview line %q: %d fields after the number, want at least %d", clipS(s), nf, len(overviewFixed))
	}
	return o, nil
}

// AppendOverviewLine appends o as an overview line in format f
// (DefaultOverviewFmt if nil), with CRLF, for servers. RFC 3977 §8.3.2: TAB,
// CR and LF in values become spaces (NUL too). Extra values are matched to
// the format by name; a full field is written as "Name: value", or empty if
// the value is empty; trailing format fields o does not hold are left out.
// Numbers must not be negative.
func AppendOverviewLine(dst []byte, o Overview, f OverviewFmt) []byte {
	if f == nil {
		f = DefaultOverviewFmt
	}
	dst = strconv.AppendInt(dst, o.Number, 10)
	// Extra fields are written up to the last one o holds, so that a line
	// parsed without trailing fields comes back the same.
	n := len(overviewFixed)
	for i := n; i < len(f); i++ {
		if _, ok := o.ExtraValue(f[i].Name); ok {
			n = i + 1
		}
	}
	for _, e := range o.Extra {
		if e.Name == "" {
			n = len(f)
		}
	}
	for i, ff := range f[:min(n, len(f))] {
		dst = append(dst, '\t')
		switch i {
		case 0:
			dst = appendOverviewValue(dst, o.Subject)
		case 1:
			dst = appendOverviewValue(dst, o.From)
		case 2:
			dst = appendOverviewValue(dst, o.Date)
		case 3:
			dst = appendOverviewValue(dst, o.MessageID)
		case 4:
			dst = appendOverviewValue(dst, o.References)
		case 5:
			dst = strconv.AppendInt(dst, o.Bytes, 10)
		case 6:
			dst = strconv.AppendInt(dst, o.Lines, 10)
		default:
			v, _ := o.ExtraValue(ff.Name)
			if ff.Full && v != "" {
				dst = append(dst, ff.Name...)
				dst = append(dst, ':', ' ')
			}
			dst = appendOverviewValue(dst, v)
		}
	}
	for _, e := range o.Extra {
		if e.Name == "" {
			dst = append(dst, '\t')
			dst = appendOverviewValue(dst, e.Value)
		}
	}
	return append(dst, '\r', '\n')
}

// appendOverviewValue appends v with TAB, CR, LF and NUL replaced by spaces.
func appendOverviewValue(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\t' || c == '\r' || c == '\n' || c == 0 {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}

// PayloadLines splits a decoded multi-line block payload into its lines,
// without line endings (CRLF or a bare LF), for the list parsers that take
// lines.
func PayloadLines(payload []byte) []string {
	var out []string
	for len(payload) > 0 {
		i := bytes.IndexByte(payload, '\n')
		if i < 0 {
			out = append(out, string(payload))
			break
		}
		out = append(out, string(TrimEOL(payload[:i+1])))
		payload = payload[i+1:]
	}
	return out
}
