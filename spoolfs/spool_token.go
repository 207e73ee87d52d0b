package spoolfs

import (
	"errors"
	"fmt"
)

// A Token addresses one stored article: the segment file it lives in, the
// offset of its first wire byte in that file and its length in bytes. The
// bytes at [Off, Off+Len) of the segment are the article exactly as it goes
// on the wire, so a Token is all a sender needs for sendfile.
type Token struct {
	Seg uint32 // segment number, 1-based; 0 only in the zero Token
	Off uint64 // offset of the wire article in the segment file
	Len uint32 // length of the wire article, terminator included
}

// tokenTextLen is the length of a token's text form: '@', 32 hex digits, '@'.
const tokenTextLen = 1 + 8 + 16 + 8 + 1

// ErrBadToken is wrapped by ParseToken for text that is not a token.
var ErrBadToken = errors.New("spool: malformed token")

// IsZero reports whether t is the zero Token, which addresses nothing.
func (t Token) IsZero() bool { return t == Token{} }

// String returns the token's text form, INN-like: '@', then segment (8 hex
// digits), offset (16) and length (8) in upper case, then '@', for example
// "@0000000100000000DEADBEEF0000ABCD@". Backlog files store this form.
func (t Token) String() string { return string(t.appendText(make([]byte, 0, tokenTextLen))) }

// AppendText appends the text form of t to b (encoding.TextAppender).
func (t Token) AppendText(b []byte) ([]byte, error) { return t.appendText(b), nil }

// MarshalText returns the text form of t (encoding.TextMarshaler).
func (t Token) MarshalText() ([]byte, error) { return t.AppendText(nil) }

// UnmarshalText parses the text form (encoding.TextUnmarshaler).
func (t *Token) UnmarshalText(b []byte) error {
	v, err := ParseToken(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

const hexDigits = "0123456789ABCDEF"

func (t Token) appendText(b []byte) []byte {
	b = append(b, '@')
	b = appendHex(b, uint64(t.Seg), 8)
	b = appendHex(b, t.Off, 16)
	b = appendHex(b, uint64(t.Len), 8)
	return append(b, '@')
}

func appendHex(b []byte, v uint64, digits int) []byte {
	for i := digits - 1; i >= 0; i-- {
		b = append(b, hexDigits[(v>>(uint(i)*4))&0xf])
	}
	return b
}

// ParseToken parses the text form written by Token.String. Hex digits may be
// in either case; anything else (other lengths, missing '@', the zero token)
// is an error wrapping ErrBadToken.
func ParseToken(s string) (Token, error) {
	if len(s) != tokenTextLen || s[0] != '@' || s[len(s)-1] != '@' {
		return Token{}, fmt.Errorf("%w: %q", ErrBadToken, s)
	}
	seg, ok1 := parseHex(s[1:9])
	off, ok2 := parseHex(s[9:25])
	n, ok3 := parseHex(s[25:33])
	t := Token{Seg: uint32(seg), Off: off, Len: uint32(n)}
	if !ok1 || !ok2 || !ok3 || t.IsZero() {
		return Token{}, fmt.Errorf("%w: %q", ErrBadToken, s)
	}
	return t, nil
}

func parseHex(s string) (uint64, bool) {
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}

// A Position is a place in the spool: a segment and a byte offset in it. The
// end of the spool and the starting point of a Scan are Positions.
type Position struct {
	Seg uint32 // segment number
	Off int64  // byte offset in the segment file
}

// Less reports whether p comes before q.
func (p Position) Less(q Position) bool {
	return p.Seg < q.Seg || p.Seg == q.Seg && p.Off < q.Off
}
