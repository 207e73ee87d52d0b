package proto

// Theory of operation
//
// UUDecoder decodes one uuencoded file from the raw bytes of an NNTP
// multi-line body, like YencDecoder: it removes dot-stuffing, stops at the
// terminating "." line (RFC 3977 §3.1.1) and reports how much of the input
// the body used. The format (POSIX uuencode, historical form):
//
//	begin 644 name of file.bin
//	M<60 characters: 45 bytes>
//	...
//	`
//	end
//
// Each data line starts with a length character (count+32; "`" or space
// for 0), then 4 characters per 3 bytes, each carrying 6 bits as value+32
// with "`" standing for 0 as well as space. Lines are short (61 characters
// for 45 bytes), so the decoder collects each line in a fixed buffer and
// decodes it when its LF arrives; the decoded bytes wait in a small buffer
// until dst has room. Nothing is allocated per line.
//
// Tolerated sloppiness: CRLF or bare LF; trailing white space stripped by
// mail or news software (missing characters count as zero); extra
// characters after the ones the length calls for (old per-line checksums);
// blank lines inside the data; text before "begin" and after "end"; a
// begin line with any octal mode.

import (
	"bytes"
	"errors"
	"fmt"
)

// Errors of the UU codec; the errors returned wrap one of these.
var (
	// ErrUUMissing reports a body without "begin", or data without "end".
	ErrUUMissing = errors.New("uu: missing begin or end line")
	// ErrUUData reports a data line with a character outside " " to "`".
	ErrUUData = errors.New("uu: invalid data line")
)

// uuMaxLine bounds the line buffer. Data lines need at most 85 characters;
// the rest of a longer line is ignored, and a begin line's name is cut there.
const uuMaxLine = 1024

// A UUFile describes the file a UUDecoder found.
type UUFile struct {
	Name     string // name from the begin line as sent; NOT sanitised, callers must clean it before using it as a path
	Mode     uint32 // permission bits from the begin line (octal in the text)
	HasBegin bool
	HasEnd   bool
	Size     int64 // bytes decoded so far
}

// UU phases.
const (
	uuBefore uint8 = iota
	uuData
	uuAfter
)

// A UUDecoder decodes one uuencoded file from a raw NNTP body. The zero
// value is ready; Reset prepares it for the next body.
type UUDecoder struct {
	file    UUFile
	st      uint8 // ysLineStart, ysDot, ysDotCR or ysCtrl (collecting a line)
	phase   uint8
	done    bool
	err     error
	lineLen int
	line    [uuMaxLine]byte
	pend    [64]byte // decoded bytes of the last line not yet written
	pendOff int
	pendN   int
}

// Reset prepares the decoder for a new body.
func (d *UUDecoder) Reset() { *d = UUDecoder{} }

// Done reports whether the body's terminating "." line has been consumed
// and every decoded byte delivered.
func (d *UUDecoder) Done() bool { return d.done && d.pendOff == d.pendN }

// File returns what is known of the file so far.
func (d *UUDecoder) File() UUFile { return d.file }

// Verify returns the decoding error if Feed reported one, and otherwise
// checks that both the begin and the end line were seen.
func (d *UUDecoder) Verify() error {
	if d.err != nil {
		return d.err
	}
	if !d.file.HasBegin {
		return yencErrorf(ErrUUMissing, "uu: no begin line in body")
	}
	if !d.file.HasEnd {
		return yencErrorf(ErrUUMissing, "uu: %s: no end line (truncated body?)", d.file.Name)
	}
	return nil
}

// Feed decodes the body bytes in src and appends the decoded data to dst,
// never beyond cap(dst). It returns the extended dst and how many bytes of
// src it consumed: fewer than len(src) with a nil error when the body
// ended or dst is full (call again with room). Decoded bytes of a line may
// wait for room: call Feed until it returns no output, even with empty src
// at the end of input, and until Done. A bad data line
// returns an error once; the decoder then skips to the end of the body.
func (d *UUDecoder) Feed(dst, src []byte) (out []byte, consumed int, err error) {
	i := 0
	for {
		if d.pendOff < d.pendN {
			n := copy(dst[len(dst):cap(dst)], d.pend[d.pendOff:d.pendN])
			dst = dst[:len(dst)+n]
			d.pendOff += n
			if d.pendOff < d.pendN {
				return dst, i, nil
			}
		}
		if i >= len(src) || d.done {
			return dst, i, err
		}
		switch d.st {
		case ysLineStart:
			d.lineLen = 0
			if src[i] == '.' {
				d.st = ysDot
				i++
				continue
			}
			d.st = ysCtrl
		case ysDot:
			switch src[i] {
			case '\r':
				d.st = ysDotCR
				i++
			case '\n':
				d.done = true
				i++
			default:
				d.st = ysCtrl // the dot was stuffing
			}
		case ysDotCR:
			if src[i] == '\n' {
				d.done = true
				i++
				continue
			}
			d.line[0], d.lineLen = '\r', 1 // stuffed content that begins with CR
			d.st = ysCtrl
		case ysCtrl:
			rest := src[i:]
			j := bytes.IndexByte(rest, '\n')
			if j >= 0 {
				rest = rest[:j]
			}
			d.lineLen += copy(d.line[d.lineLen:], rest) // the excess of a long line is dropped
			if j < 0 {
				i = len(src)
				continue
			}
			i += j + 1
			d.st = ysLineStart
			if e := d.lineDone(yencTrimRight(d.line[:d.lineLen])); e != nil {
				d.err, d.phase, err = e, uuAfter, e
				return dst, i, err
			}
		}
	}
}

// lineDone acts on one complete line (unstuffed, without trailing white
// space).
func (d *UUDecoder) lineDone(l []byte) error {
	switch d.phase {
	case uuBefore:
		if name, mode, ok := uuParseBegin(l); ok {
			d.file.Name, d.file.Mode, d.file.HasBegin = name, mode, true
			d.phase = uuData
		}
	case uuData:
		if string(l) == "end" {
			d.file.HasEnd = true
			d.phase = uuAfter
			return nil
		}
		if len(l) == 0 {
			return nil
		}
		n, err := uuDecodeLine(d.pend[:], l)
		if err != nil {
			return yencErrorf(ErrUUData, "uu: %s: line %q: %v", d.file.Name, l, err)
		}
		d.pendOff, d.pendN = 0, n
		d.file.Size += int64(n)
	}
	return nil
}

// uuParseBegin parses "begin MODE NAME": MODE 1 to 4 octal digits, NAME the
// rest of the line.
func uuParseBegin(l []byte) (name string, mode uint32, ok bool) {
	if !bytes.HasPrefix(l, []byte("begin ")) {
		return "", 0, false
	}
	s := yencTrimLeft(l[len("begin "):])
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '7' {
		mode = mode<<3 | uint32(s[j]-'0')
		j++
	}
	if j == 0 || j > 4 || j == len(s) || (s[j] != ' ' && s[j] != '\t') {
		return "", 0, false
	}
	nm := yencTrimLeft(s[j:])
	if len(nm) == 0 {
		return "", 0, false
	}
	return string(nm), mode, true
}

// uuDecodeLine decodes one data line into dst (64 bytes suffice) and
// returns the number of bytes.
func uuDecodeLine(dst []byte, l []byte) (int, error) {
	for _, c := range l {
		if c < ' ' || c > '`' {
			return 0, yencErrorf(ErrUUData, "invalid character %#02x", c)
		}
	}
	n := int(l[0]-' ') & 63
	chars := l[1:]
	val := func(k int) byte {
		if k < len(chars) {
			return (chars[k] - ' ') & 63
		}
		return 0 // stripped trailing spaces
	}
	for o, k := 0, 0; o < n; o, k = o+3, k+4 {
		a, b, c, e := val(k), val(k+1), val(k+2), val(k+3)
		t := [3]byte{a<<2 | b>>4, b<<4 | c>>2, c<<6 | e}
		copy(dst[o:n], t[:])
	}
	return n, nil
}

// UUOptions controls UUEncode.
type UUOptions struct {
	Name string // file name for the begin line; CR, LF and NUL become "_"
	Mode uint32 // permission bits; 0 means 0644
	Wire bool   // NNTP wire form: dot-stuffed and terminated by ".\r\n"
}

// UUEncode appends data uuencoded (begin line, 45-byte lines with "`" for
// zero, a zero-length line, end) with CRLF line endings to dst.
func UUEncode(dst, data []byte, opts UUOptions) []byte {
	mode := opts.Mode
	if mode == 0 {
		mode = 0o644
	}
	dst = fmt.Appendf(dst, "begin %o ", mode&0o7777)
	for i := 0; i < len(opts.Name); i++ {
		c := opts.Name[i]
		if c == '\r' || c == '\n' || c == 0 {
			c = '_'
		}
		dst = append(dst, c)
	}
	dst = append(dst, '\r', '\n')
	enc := func(v byte) byte {
		if v == 0 {
			return '`'
		}
		return v + ' '
	}
	for len(data) > 0 {
		n := min(len(data), 45)
		if opts.Wire && enc(byte(n)) == '.' {
			dst = append(dst, '.') // RFC 3977 §3.1.1 dot-stuffing
		}
		dst = append(dst, enc(byte(n)))
		for k := 0; k < n; k += 3 {
			var t [3]byte
			copy(t[:], data[k:n])
			dst = append(dst, enc(t[0]>>2), enc((t[0]<<4|t[1]>>4)&63), enc((t[1]<<2|t[2]>>6)&63), enc(t[2]&63))
		}
		dst = append(dst, '\r', '\n')
		data = data[n:]
	}
	dst = append(dst, "`\r\nend\r\n"...)
	if opts.Wire {
		dst = append(dst, '.', '\r', '\n')
	}
	return dst
}
