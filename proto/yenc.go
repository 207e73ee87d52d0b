package proto

// yEnc 1.3 headers, trailers and the checks made on a decoded part.
//
// A yEnc part inside an article body looks like this (yEnc 1.3, "Version 1.3
// - 05-Mar-2002", sections "Multi-part binaries" and "Critical characters"):
//
//	=ybegin part=3 total=12 line=128 size=9000000 name=some file.bin
//	=ypart begin=1536001 end=2304000
//	...encoded lines...
//	=yend size=768000 part=3 pcrc32=1a2b3c4d crc32=5e6f7a8b
//
// Single-part posts leave out part=, total= and the =ypart line; their =yend
// carries crc32= of the whole file. name= is always the rest of the line and
// may contain spaces. The streaming decoder is in yenc_decode.go, the encoder
// in yenc_encode.go.

import (
	"errors"
	"fmt"
	"strconv"
)

// Errors of the yEnc codec; the errors returned wrap one of these with detail.
var (
	// ErrYencHeader reports a malformed =ybegin, =ypart or =yend line.
	ErrYencHeader = errors.New("yenc: malformed header")
	// ErrYencMissing reports a body without =ybegin, or a part without =yend.
	ErrYencMissing = errors.New("yenc: missing header or trailer")
	// ErrYencOverflow reports more data than the part's declared size: the
	// decoder refuses to write it.
	ErrYencOverflow = errors.New("yenc: data beyond the part's declared size")
	// ErrYencSize reports a decoded size that differs from the declared one.
	ErrYencSize = errors.New("yenc: size mismatch")
	// ErrYencCRC reports a CRC-32 that differs from the trailer's.
	ErrYencCRC = errors.New("yenc: crc32 mismatch")
)

// yencError is an error of one of the kinds above with its own message, so
// that messages read "yenc: part 3 crc32 mismatch: want ..., got ..." while
// errors.Is still finds the kind.
type yencError struct {
	kind error
	msg  string
}

func (e *yencError) Error() string { return e.msg }
func (e *yencError) Unwrap() error { return e.kind }

// yencErrorf formats a message for an error of the given kind.
func yencErrorf(kind error, format string, args ...any) error {
	return &yencError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// MaxYencControlLine is the longest =ybegin/=ypart/=yend line, in octets
// without the line ending, that the decoder accepts.
const MaxYencControlLine = 1024

// maxYencSize bounds size=, begin= and end= so that offsets stay far from
// int64 overflow.
const maxYencSize = 1 << 62

// A YencPart describes one yEnc part: what its header and trailer declare and
// what the decoder has computed so far.
type YencPart struct {
	Name      string // name= of =ybegin as sent; NOT sanitised, callers must clean it before using it as a path
	Size      int64  // size= of =ybegin: the size of the whole file
	Line      int    // line= of =ybegin (informational)
	Part      int    // part= of =ybegin, 0 if absent
	Total     int    // total= of =ybegin, 0 if absent
	Multipart bool   // a =ypart line was seen
	Begin     int64  // first byte of this part in the file, 1-based (=ypart begin=, or 1)
	End       int64  // last byte of this part in the file, 1-based inclusive (=ypart end=, or Size)

	HasHeader  bool  // =ybegin was seen
	HasTrailer bool  // =yend was seen
	EndSize    int64 // size= of =yend, -1 if absent
	EndPart    int   // part= of =yend, 0 if absent
	HasPCRC32  bool
	PCRC32     uint32 // pcrc32= of =yend: CRC-32 of this part
	HasCRC32   bool
	CRC32      uint32 // crc32= of =yend: CRC-32 of the whole file

	Decoded int64  // bytes decoded so far
	CRC     uint32 // CRC-32 (IEEE) of the bytes decoded so far
}

// Offset is the 0-based file offset where this part's data belongs.
func (p YencPart) Offset() int64 { return p.Begin - 1 }

// PartSize is the number of bytes this part declares: End-Begin+1.
func (p YencPart) PartSize() int64 { return p.End - p.Begin + 1 }

// number is the part number used in messages: part= if given, else 1.
func (p YencPart) number() int {
	if p.Part > 0 {
		return p.Part
	}
	return 1
}

// verify checks a finished part: header and trailer present, decoded size as
// declared by both, and the CRC the trailer gives for this part.
func (p YencPart) verify() error {
	if !p.HasHeader {
		return yencErrorf(ErrYencMissing, "yenc: no =ybegin line in body")
	}
	n := p.number()
	if !p.HasTrailer {
		return yencErrorf(ErrYencMissing, "yenc: part %d: no =yend line (truncated body?)", n)
	}
	if p.Decoded != p.PartSize() {
		return yencErrorf(ErrYencSize, "yenc: part %d: decoded %d bytes, header declares %d", n, p.Decoded, p.PartSize())
	}
	if p.EndSize >= 0 && p.EndSize != p.PartSize() {
		return yencErrorf(ErrYencSize, "yenc: part %d: =yend size=%d, header declares %d", n, p.EndSize, p.PartSize())
	}
	if p.EndPart != 0 && p.Part != 0 && p.EndPart != p.Part {
		return yencErrorf(ErrYencHeader, "yenc: part %d: =yend says part=%d", n, p.EndPart)
	}
	// pcrc32 is this part's CRC. crc32 is the whole file's, which equals the
	// part's only when the part is the whole file.
	switch {
	case p.HasPCRC32:
		if p.CRC != p.PCRC32 {
			return yencErrorf(ErrYencCRC, "yenc: part %d crc32 mismatch: want %08x, got %08x", n, p.PCRC32, p.CRC)
		}
	case p.HasCRC32 && p.Begin == 1 && p.End == p.Size:
		if p.CRC != p.CRC32 {
			return yencErrorf(ErrYencCRC, "yenc: part %d crc32 mismatch: want %08x, got %08x", n, p.CRC32, p.CRC)
		}
	}
	return nil
}

// yencKeyword splits a control line ("=ybegin ...") into its keyword
// ("begin") and the parameters after it.
func yencKeyword(line []byte) (kw, params []byte) {
	rest := line[2:] // after "=y"
	for i, c := range rest {
		if c == ' ' || c == '\t' {
			return rest[:i], rest[i+1:]
		}
	}
	return rest, nil
}

// yencTrimRight removes trailing CR, LF, spaces and tabs.
func yencTrimRight(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case '\r', '\n', ' ', '\t':
			b = b[:len(b)-1]
		default:
			return b
		}
	}
	return b
}

func yencTrimLeft(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// yencNextParam returns the next "key=value" token of a parameter list.
// A key "name" takes the rest of the line as its value (yEnc 1.3: name= is
// last and may contain spaces).
func yencNextParam(s []byte) (key, val, rest []byte, ok bool) {
	s = yencTrimLeft(s)
	if len(s) == 0 {
		return nil, nil, nil, false
	}
	if len(s) >= 5 && string(s[:5]) == "name=" {
		return s[:4], yencTrimRight(yencTrimLeft(s[5:])), nil, true
	}
	end := len(s)
	for i, c := range s {
		if c == ' ' || c == '\t' {
			end = i
			break
		}
	}
	tok, rest := s[:end], s[end:]
	for i, c := range tok {
		if c == '=' {
			return tok[:i], tok[i+1:], rest, true
		}
	}
	return tok, nil, rest, true
}

// yencParseInt parses a non-negative decimal no larger than maxYencSize.
func yencParseInt(what string, v []byte) (int64, error) {
	if len(v) == 0 || len(v) > 19 {
		return 0, yencErrorf(ErrYencHeader, "yenc: bad %s=%q", what, v)
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, yencErrorf(ErrYencHeader, "yenc: bad %s=%q", what, v)
		}
		n = n*10 + int64(c-'0')
	}
	if n > maxYencSize {
		return 0, yencErrorf(ErrYencHeader, "yenc: %s=%d too large", what, n)
	}
	return n, nil
}

// yencParseCRC parses 1 to 8 hex digits, either case, with an optional 0x.
func yencParseCRC(what string, v []byte) (uint32, error) {
	if len(v) > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X') {
		v = v[2:]
	}
	if len(v) == 0 || len(v) > 8 {
		return 0, yencErrorf(ErrYencHeader, "yenc: bad %s=%q", what, v)
	}
	n, err := strconv.ParseUint(string(v), 16, 32)
	if err != nil {
		return 0, yencErrorf(ErrYencHeader, "yenc: bad %s=%q", what, v)
	}
	return uint32(n), nil
}

// parseBegin fills p from the parameters of a =ybegin line.
func (p *YencPart) parseBegin(params []byte) error {
	hasSize := false
	for {
		k, v, rest, ok := yencNextParam(params)
		if !ok {
			break
		}
		params = rest
		switch string(k) {
		case "name":
			p.Name = string(v)
		case "size":
			n, err := yencParseInt("size", v)
			if err != nil {
				return err
			}
			p.Size, hasSize = n, true
		case "part", "total":
			n, err := yencParseInt(string(k), v)
			if err != nil {
				return err
			}
			if n > 1<<30 {
				return yencErrorf(ErrYencHeader, "yenc: %s=%d too large", k, n)
			}
			if string(k) == "part" {
				p.Part = int(n)
			} else {
				p.Total = int(n)
			}
		case "line":
			// Informational only: a bad value is ignored.
			if n, err := yencParseInt("line", v); err == nil && n < 1<<20 {
				p.Line = int(n)
			}
		}
	}
	if !hasSize {
		return yencErrorf(ErrYencHeader, "yenc: =ybegin without size=")
	}
	p.HasHeader = true
	p.EndSize = -1
	return nil
}

// parsePart fills the part range from a =ypart line.
func (p *YencPart) parsePart(params []byte) error {
	var begin, end int64
	var hasBegin, hasEnd bool
	for {
		k, v, rest, ok := yencNextParam(params)
		if !ok {
			break
		}
		params = rest
		switch string(k) {
		case "begin":
			n, err := yencParseInt("begin", v)
			if err != nil {
				return err
			}
			begin, hasBegin = n, true
		case "end":
			n, err := yencParseInt("end", v)
			if err != nil {
				return err
			}
			end, hasEnd = n, true
		}
	}
	if !hasBegin || !hasEnd {
		return yencErrorf(ErrYencHeader, "yenc: part %d: =ypart without begin= and end=", p.number())
	}
	// The part must lie inside the file: the caller writes it at Begin-1.
	if begin < 1 || end < begin || end > p.Size {
		return yencErrorf(ErrYencHeader, "yenc: part %d: =ypart begin=%d end=%d outside file size %d", p.number(), begin, end, p.Size)
	}
	p.Begin, p.End, p.Multipart = begin, end, true
	return nil
}

// headerDone fixes the part range when data or =yend follows =ybegin without
// a =ypart line: that is only legal for a single-part post.
func (p *YencPart) headerDone() error {
	if p.Multipart {
		return nil
	}
	if p.Part > 1 || p.Total > 1 {
		return yencErrorf(ErrYencHeader, "yenc: part %d of %d has no =ypart line", p.Part, p.Total)
	}
	p.Begin, p.End = 1, p.Size
	return nil
}

// parseEnd fills the trailer fields from a =yend line.
func (p *YencPart) parseEnd(params []byte) error {
	for {
		k, v, rest, ok := yencNextParam(params)
		if !ok {
			break
		}
		params = rest
		switch string(k) {
		case "size":
			n, err := yencParseInt("=yend size", v)
			if err != nil {
				return err
			}
			p.EndSize = n
		case "part":
			n, err := yencParseInt("=yend part", v)
			if err != nil {
				return err
			}
			if n > 1<<30 {
				return yencErrorf(ErrYencHeader, "yenc: =yend part=%d too large", n)
			}
			p.EndPart = int(n)
		case "pcrc32":
			n, err := yencParseCRC("pcrc32", v)
			if err != nil {
				return err
			}
			p.PCRC32, p.HasPCRC32 = n, true
		case "crc32":
			n, err := yencParseCRC("crc32", v)
			if err != nil {
				return err
			}
			p.CRC32, p.HasCRC32 = n, true
		}
	}
	p.HasTrailer = true
	return nil
}
