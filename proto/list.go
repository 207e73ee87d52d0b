package proto

import (
	"fmt"
	"strconv"
	"strings"
)

// An ActiveGroup is one line of LIST ACTIVE (RFC 3977 §7.6.3, RFC 6048 §3.1).
type ActiveGroup struct {
	Name   string
	High   int64
	Low    int64
	Status string // "y", "n", "m", "x", "j" or "=other.group"
}

// Active group statuses (RFC 3977 §7.6.3; x, j and = are INN's, RFC 6048
// §3.1 and active(5)).
const (
	StatusPosting   = "y" // posting allowed
	StatusNoPosting = "n" // posting not allowed
	StatusModerated = "m" // posts go to the moderator
	StatusNoLocal   = "x" // no local posting, articles not accepted from peers
	StatusJunk      = "j" // articles filed in junk, only passed on
)

// AliasOf returns the group an "=group" status files articles in, or "".
func (g ActiveGroup) AliasOf() string {
	if strings.HasPrefix(g.Status, "=") {
		return g.Status[1:]
	}
	return ""
}

// ParseActiveLine parses "group high low status" (fields separated by runs
// of spaces or tabs). The group name is checked with ValidGroupName and the
// status must be y, n, m, x, j or "=" and a valid group name. A trailing
// CRLF or LF is removed.
func ParseActiveLine(line []byte) (ActiveGroup, error) {
	s := string(TrimEOL(line))
	f := fields(s)
	if len(f) != 4 {
		return ActiveGroup{}, fmt.Errorf("active line %q: %d fields, want group high low status", clipS(s), len(f))
	}
	if err := ValidGroupName(f[0]); err != nil {
		return ActiveGroup{}, fmt.Errorf("active line %q: %w", clipS(s), err)
	}
	g := ActiveGroup{Name: f[0], Status: f[3]}
	var err error
	if g.High, err = parseArticleNumber(f[1]); err != nil {
		return ActiveGroup{}, fmt.Errorf("active line %q: high: %w", clipS(s), err)
	}
	if g.Low, err = parseArticleNumber(f[2]); err != nil {
		return ActiveGroup{}, fmt.Errorf("active line %q: low: %w", clipS(s), err)
	}
	if err := validStatus(g.Status); err != nil {
		return ActiveGroup{}, fmt.Errorf("active line %q: %w", clipS(s), err)
	}
	return g, nil
}

func validStatus(st string) error {
	switch st {
	case StatusPosting, StatusNoPosting, StatusModerated, StatusNoLocal, StatusJunk:
		return nil
	}
	if strings.HasPrefix(st, "=") {
		if err := ValidGroupName(st[1:]); err != nil {
			return fmt.Errorf("status %q: %w", clipS(st), err)
		}
		return nil
	}
	return fmt.Errorf("unknown status %q (want y, n, m, x, j or =group)", clipS(st))
}

// AppendActiveLine appends g as INN writes it, with the numbers zero-padded
// to ten digits ("misc.test 0000000012 0000000001 y"), and CRLF. Numbers
// must not be negative.
func AppendActiveLine(dst []byte, g ActiveGroup) []byte {
	dst = append(dst, g.Name...)
	dst = append(dst, ' ')
	dst = appendPadded(dst, g.High)
	dst = append(dst, ' ')
	dst = appendPadded(dst, g.Low)
	dst = append(dst, ' ')
	dst = append(dst, g.Status...)
	return append(dst, '\r', '\n')
}

func appendPadded(dst []byte, n int64) []byte {
	var b [20]byte
	d := strconv.AppendInt(b[:0], n, 10)
	for i := len(d); i < 10; i++ {
		dst = append(dst, '0')
	}
	return append(dst, d...)
}

// A GroupDescription is one line of LIST NEWSGROUPS (RFC 3977 §7.6.6).
type GroupDescription struct {
	Name        string
	Description string
}

// ParseNewsgroupsLine parses "group<whitespace>description". The description
// is everything after the run of spaces or tabs that follows the name, and
// may be empty. The name is not checked beyond holding no whitespace, since
// descriptions are listed for groups of any spelling. A trailing CRLF or LF
// is removed; a NUL, CR or LF inside the line is an error.
func ParseNewsgroupsLine(line []byte) (GroupDescription, error) {
	line = TrimEOL(line)
	if err := checkLineOctets(line); err != nil {
		return GroupDescription{}, fmt.Errorf("newsgroups line %q: %w", clip(line), err)
	}
	s := string(line)
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		if s == "" {
			return GroupDescription{}, fmt.Errorf("newsgroups line is empty")
		}
		return GroupDescription{Name: s}, nil
	}
	if i == 0 {
		return GroupDescription{}, fmt.Errorf("newsgroups line %q starts with whitespace, not a group name", clipS(s))
	}
	return GroupDescription{Name: s[:i], Description: strings.TrimLeft(s[i:], " \t")}, nil
}

// AppendNewsgroupsLine appends "group<TAB>description" with CRLF, as INN
// does; CR, LF and NUL in the description become spaces.
func AppendNewsgroupsLine(dst []byte, g GroupDescription) []byte {
	dst = append(dst, g.Name...)
	dst = append(dst, '\t')
	for i := 0; i < len(g.Description); i++ {
		c := g.Description[i]
		if c == '\r' || c == '\n' || c == 0 {
			c = ' '
		}
		dst = append(dst, c)
	}
	return append(dst, '\r', '\n')
}

// ParseListHeadersLine parses one line of LIST HEADERS (RFC 3977 §8.6): a
// header name ("Subject"), a metadata item (":bytes") or ":" for "any
// header". Only the first word counts (RFC 3977 allows nothing else, and
// LIST HEADERS RANGE/MSGID replies have no more). A trailing CRLF or LF is
// removed.
func ParseListHeadersLine(line []byte) (string, error) {
	f := fields(string(TrimEOL(line)))
	if len(f) == 0 {
		return "", fmt.Errorf("list headers line is empty")
	}
	for _, c := range []byte(f[0]) {
		if c < ' ' || c >= 0x7f {
			return "", fmt.Errorf("list headers line %q: name holds %s", clipS(f[0]), midChar(c))
		}
	}
	if f[0][0] != ':' && strings.IndexByte(f[0], ':') >= 0 {
		return "", fmt.Errorf("list headers line %q: colon inside a header name", clipS(f[0]))
	}
	return f[0], nil
}

// AppendListHeadersLine appends one LIST HEADERS line with CRLF.
func AppendListHeadersLine(dst []byte, name string) []byte {
	dst = append(dst, name...)
	return append(dst, '\r', '\n')
}
