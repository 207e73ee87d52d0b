package proto

import (
	"hash/crc32"
	"strconv"
)

// YencOptions controls YencEncode. The zero value encodes a single-part post
// with 128-character lines.
type YencOptions struct {
	Name  string // name= of =ybegin; CR, LF and NUL are replaced by "_"
	Line  int    // encoded characters per line (a line may be one longer when it ends in an escape); 0 means 128
	Part  int    // part number for a multipart post; 0 means single-part (no part=, no =ypart)
	Total int    // total= of a multipart post; 0 leaves it out
	Begin int64  // 1-based offset of data in the file (multipart); 0 means 1
	Size  int64  // size of the whole file; 0 means Begin-1+len(data)

	HasFileCRC bool   // write crc32= (the whole file's CRC) in a multipart trailer
	FileCRC    uint32 // that CRC; a single-part trailer always carries crc32= of data

	// KeepLeadingDot leaves "." at the start of a line unescaped, as many
	// encoders do; on the wire such a line is then dot-stuffed.
	KeepLeadingDot bool
	// Wire produces the NNTP wire form: dot-stuffed lines and the ".\r\n"
	// terminator (RFC 3977 §3.1.1), ready to follow a 222 or 220 status line
	// or to be posted.
	Wire bool
}

// YencEncode appends data, yEnc-encoded (yEnc 1.3) with header, optional
// =ypart line and trailer, to dst. Lines end in CRLF. It escapes NUL, LF, CR
// and "=", TAB and SPACE at the start and end of a line, and "." at the
// start of a line (the yEnc 1.3 recommendation, so that NNTP dot-stuffing
// never touches data lines) unless KeepLeadingDot is set.
func YencEncode(dst, data []byte, opts YencOptions) []byte {
	line := opts.Line
	if line <= 0 {
		line = 128
	}
	begin := opts.Begin
	if begin <= 0 {
		begin = 1
	}
	size := opts.Size
	if size <= 0 {
		size = begin - 1 + int64(len(data))
	}
	multi := opts.Part > 0

	dst = append(dst, "=ybegin "...)
	if multi {
		dst = append(dst, "part="...)
		dst = strconv.AppendInt(dst, int64(opts.Part), 10)
		if opts.Total > 0 {
			dst = append(dst, " total="...)
			dst = strconv.AppendInt(dst, int64(opts.Total), 10)
		}
		dst = append(dst, ' ')
	}
	dst = append(dst, "line="...)
	dst = strconv.AppendInt(dst, int64(line), 10)
	dst = append(dst, " size="...)
	dst = strconv.AppendInt(dst, size, 10)
	dst = append(dst, " name="...)
	for i := 0; i < len(opts.Name); i++ {
		c := opts.Name[i]
		if c == '\r' || c == '\n' || c == 0 {
			c = '_'
		}
		dst = append(dst, c)
	}
	dst = append(dst, '\r', '\n')
	if multi {
		dst = append(dst, "=ypart begin="...)
		dst = strconv.AppendInt(dst, begin, 10)
		dst = append(dst, " end="...)
		dst = strconv.AppendInt(dst, begin-1+int64(len(data)), 10)
		dst = append(dst, '\r', '\n')
	}

	col := 0
	last := len(data) - 1
	for i, b := range data {
		e := b + 42
		esc := false
		switch e {
		case 0, '\n', '\r', '=':
			esc = true
		case '\t', ' ':
			// At the start of a line, or last on it: the line's last
			// character if it alone brings the line to its length.
			esc = col == 0 || col >= line-1 || i == last
		case '.':
			esc = col == 0 && !opts.KeepLeadingDot
			if !esc && col == 0 && opts.Wire {
				dst = append(dst, '.') // RFC 3977 §3.1.1 dot-stuffing
			}
		}
		if esc {
			dst = append(dst, '=', e+64)
			col += 2
		} else {
			dst = append(dst, e)
			col++
		}
		if col >= line && i != last {
			dst = append(dst, '\r', '\n')
			col = 0
		}
	}
	if len(data) > 0 {
		dst = append(dst, '\r', '\n')
	}

	crc := crc32.ChecksumIEEE(data)
	dst = append(dst, "=yend size="...)
	dst = strconv.AppendInt(dst, int64(len(data)), 10)
	if multi {
		dst = append(dst, " part="...)
		dst = strconv.AppendInt(dst, int64(opts.Part), 10)
		dst = append(dst, " pcrc32="...)
		dst = yencAppendHex(dst, crc)
		if opts.HasFileCRC {
			dst = append(dst, " crc32="...)
			dst = yencAppendHex(dst, opts.FileCRC)
		}
	} else {
		dst = append(dst, " crc32="...)
		dst = yencAppendHex(dst, crc)
	}
	dst = append(dst, '\r', '\n')
	if opts.Wire {
		dst = append(dst, '.', '\r', '\n')
	}
	return dst
}

// yencAppendHex appends v as 8 lowercase hex digits.
func yencAppendHex(dst []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for s := 28; s >= 0; s -= 4 {
		dst = append(dst, digits[v>>uint(s)&15])
	}
	return dst
}
