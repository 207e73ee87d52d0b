package proto

import (
	"bytes"
	"fmt"
	"strconv"
)

// An HdrLine is one line of HDR (RFC 3977 §8.5) or XHDR output: the article
// number, 0 when the request named a message-id, and the field's value.
type HdrLine struct {
	Number int64
	Value  string
}

// ParseHdrLine parses "n value" (RFC 3977 §8.5.2). The separator is one
// space (a tab is tolerated); the value is the rest of the line as sent, and
// may be empty ("n" alone or "n "). INN's XHDR sends "(none)" for a missing
// field; that is returned as the value, for the caller to interpret. A
// trailing CRLF or LF is removed; a NUL, CR or LF inside the line is an
// error.
func ParseHdrLine(line []byte) (HdrLine, error) {
	line = TrimEOL(line)
	if err := checkLineOctets(line); err != nil {
		return HdrLine{}, fmt.Errorf("hdr line %q: %w", clip(line), err)
	}
	i := 0
	for i < len(line) && line[i] != ' ' && line[i] != '\t' {
		i++
	}
	n, err := parseArticleNumber(string(line[:i]))
	if err != nil {
		return HdrLine{}, fmt.Errorf("hdr line %q: %w", clip(line), err)
	}
	h := HdrLine{Number: n}
	if i < len(line) {
		h.Value = string(line[i+1:])
	}
	return h, nil
}

// AppendHdrLine appends h as "n value" with CRLF (for servers), with CR, LF
// and NUL in the value replaced by spaces (RFC 3977 §8.5.2 removes folding).
func AppendHdrLine(dst []byte, h HdrLine) []byte {
	dst = strconv.AppendInt(dst, h.Number, 10)
	dst = append(dst, ' ')
	for i := 0; i < len(h.Value); i++ {
		c := h.Value[i]
		if c == '\r' || c == '\n' || c == 0 {
			c = ' '
		}
		dst = append(dst, c)
	}
	return append(dst, '\r', '\n')
}

// checkLineOctets refuses NUL, CR and LF inside a list line: the Append
// functions never write them, and they cannot have come from a well-formed
// response.
func checkLineOctets(line []byte) error {
	for _, c := range [...]byte{0, '\r', '\n'} {
		if i := bytes.IndexByte(line, c); i >= 0 {
			return fmt.Errorf("%s at offset %d", midChar(c), i)
		}
	}
	return nil
}
