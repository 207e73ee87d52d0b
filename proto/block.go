package proto

// Provisional multi-line block code (RFC 3977 §3.1.1). The block helper
// replaces this file with the incremental, fast implementation; the exported
// API below is the contract other packages code against.

// DefaultMaxLine is the default longest line, in octets including the line
// ending, that a BlockDecoder accepts.
const DefaultMaxLine = 64 << 10

// A BlockDecoder undoes dot-stuffing of one multi-line block incrementally:
// input may be split at any byte boundary. Output keeps each line's ending
// bytes as received (CRLF, or a tolerated bare LF). The terminating ".\r\n"
// is consumed and not output.
type BlockDecoder struct {
	maxLine int
	lineLen int // octets of the current line seen so far
	state   int // 0 line start, 1 in line, 2 after leading '.', 3 after ".\r"
	done    bool
}

// NewBlockDecoder returns a decoder that refuses lines longer than maxLine
// octets (0 means DefaultMaxLine) with an error wrapping ErrLineTooLong.
func NewBlockDecoder(maxLine int) *BlockDecoder {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &BlockDecoder{maxLine: maxLine}
}

// Reset prepares the decoder for the next block.
func (d *BlockDecoder) Reset() { *d = BlockDecoder{maxLine: d.maxLine} }

// Done reports whether the terminator has been seen.
func (d *BlockDecoder) Done() bool { return d.done }

// Decode appends the payload decoded from src to dst. It returns the extended
// dst, how many bytes of src it consumed (all of them unless the block ended
// inside src: the rest belongs to what follows the block), and whether the
// terminator was seen.
func (d *BlockDecoder) Decode(dst, src []byte) (out []byte, n int, done bool, err error) {
	for n < len(src) && !d.done {
		c := src[n]
		n++
		d.lineLen++
		if d.lineLen > d.maxLine {
			return dst, n, false, errLine(d.maxLine)
		}
		switch d.state {
		case 0:
			if c == '.' {
				d.state = 2
				continue
			}
			dst = append(dst, c)
			d.state = 1
			if c == '\n' {
				d.state, d.lineLen = 0, 0
			}
		case 1:
			dst = append(dst, c)
			if c == '\n' {
				d.state, d.lineLen = 0, 0
			}
		case 2:
			switch c {
			case '\r':
				d.state = 3
			case '\n':
				d.done = true
			default:
				dst = append(dst, c) // ".." -> "."; ".x" tolerated as "x"
				d.state = 1
			}
		case 3:
			if c == '\n' {
				d.done = true
				continue
			}
			dst = append(dst, '\r', c)
			d.state = 1
		}
	}
	return dst, n, d.done, nil
}

// A BlockEncoder dot-stuffs a payload incrementally; Close terminates it.
type BlockEncoder struct {
	midLine bool // false at the start of a line
}

// Append appends p, dot-stuffed, to dst.
func (e *BlockEncoder) Append(dst, p []byte) []byte {
	for _, c := range p {
		if !e.midLine && c == '.' {
			dst = append(dst, '.')
		}
		dst = append(dst, c)
		e.midLine = c != '\n'
	}
	return dst
}

// Close appends a CRLF if the payload did not end a line, then the
// terminator ".\r\n", and resets the encoder.
func (e *BlockEncoder) Close(dst []byte) []byte {
	if e.midLine {
		dst = append(dst, '\r', '\n')
	}
	*e = BlockEncoder{}
	return append(dst, '.', '\r', '\n')
}

// AppendBlock appends payload as a complete dot-stuffed, terminated block.
func AppendBlock(dst, payload []byte) []byte {
	var e BlockEncoder
	return e.Close(e.Append(dst, payload))
}
