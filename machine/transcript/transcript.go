// Package transcript reads, writes and replays NNTP sessions as
// human-readable, diffable text, one wire line per transcript line, and
// runs a machine package's transcript files as tests (Run). It is pure:
// recording a live connection is runtime/recorder's job.
//
// # Format
//
// A transcript is UTF-8 text with one entry per line (LF or CRLF endings):
//
//	# a comment (the "# " prefix is dropped; "#" alone is an empty comment)
//	C: CAPABILITIES            the client sent "CAPABILITIES\r\n"
//	S: 101 Capability list:    the server sent "101 Capability list:\r\n"
//	S:                         the server sent an empty line "\r\n"
//	C~ "AUTHINFO PASS x\n"     the client sent exactly these bytes (Go quoting)
//	S! eof                     the server closed its side (a read saw EOF)
//	C! eof                     the client closed the connection
//	@ +1.5s                    time advances by 1.5s (Go duration syntax, >= 0)
//	! tls                      the TLS handshake of STARTTLS happened here
//	! tls-fail bad certificate the TLS handshake failed with this reason
//	! error malformed          the machine's Receive failed with an error
//	                           whose text contains "malformed" (any error
//	                           when no text follows)
//	(an empty line)            ignored, kept for layout
//
// "C: " and "S: " lines carry the line's text; the CRLF that ended it on the
// wire is implied. Every other byte sequence uses the escaped form "C~ " or
// "S~ " followed by a Go double-quoted string (strconv.QuoteToASCII) holding
// the exact bytes, line ending included: lines ending in a bare LF or
// nothing, lines holding control or non-ASCII bytes, and lines ending in a
// space or tab (invisible in most editors). Format chooses the plain form
// whenever it is exact; Parse accepts either form for anything, so that
// Parse(Format(t)) == t for every transcript t, and Format(Parse(x)) == x for
// every x that Format produced.
//
// Entries are ordered as the bytes were seen by the recording side. Replay
// starts its clock at Epoch and advances it only at "@" lines.
//
// A comment "# do: ACTION" marks an owner's action at that point: Action,
// SplitActions and FirstAction find them for a test that calls the
// machine's owner-side methods there.
package transcript

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Epoch is the clock reading at the first line of every replayed transcript.
// Machines under replay should be created with it as their start time.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Side names an end of the connection.
type Side uint8

// The two sides; the zero Side means none.
const (
	Client Side = 1 // the side that connected ("C")
	Server Side = 2 // the side that accepted ("S")
)

// Peer returns the other side.
func (s Side) Peer() Side {
	switch s {
	case Client:
		return Server
	case Server:
		return Client
	}
	return 0
}

// String returns "C", "S" or "-".
func (s Side) String() string {
	switch s {
	case Client:
		return "C"
	case Server:
		return "S"
	}
	return "-"
}

// Kind says what an Entry records.
type Kind uint8

// Entry kinds; see the package comment for their text form.
const (
	Blank   Kind = iota // an empty line
	Comment             // "# text"
	Data                // "C: ", "S: ", "C~ ", "S~ ": bytes sent by Side
	EOF                 // "C! eof", "S! eof": Side closed
	Advance             // "@ +d": the clock moves on by D
	TLS                 // "! tls": the STARTTLS handshake succeeded
	TLSFail             // "! tls-fail text": the STARTTLS handshake failed
	Error               // "! error text": the machine reported an error
)

var kindNames = [...]string{"blank", "comment", "data", "eof", "advance", "tls", "tls-fail", "error"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// An Entry is one transcript line.
type Entry struct {
	Line int           // 1-based line in the parsed text; 0 when built in code
	Kind Kind          // what the line records
	Side Side          // Data and EOF: who sent or closed
	Data []byte        // Data: the exact bytes, line ending included
	Text string        // Comment, TLSFail, Error: the text after the keyword
	D    time.Duration // Advance: how far the clock moves
}

// A Transcript is a sequence of entries in wire order.
type Transcript []Entry

// Send returns a Data entry for a line sent by side; the CRLF is added.
func Send(side Side, line string) Entry {
	return Entry{Kind: Data, Side: side, Data: []byte(line + "\r\n")}
}

// Parse reads a transcript. Errors name the line.
func Parse(text []byte) (Transcript, error) {
	var t Transcript
	n := 0
	for len(text) > 0 {
		n++
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		e, err := parseLine(string(line))
		if err != nil {
			return nil, fmt.Errorf("transcript: line %d: %w", n, err)
		}
		e.Line = n
		t = append(t, e)
	}
	return t, nil
}

func parseLine(s string) (Entry, error) {
	if strings.ContainsAny(s, "\r\n") {
		return Entry{}, fmt.Errorf("carriage return inside a line")
	}
	if strings.TrimLeft(s, " \t") == "" {
		return Entry{Kind: Blank}, nil
	}
	switch s[0] {
	case '#':
		return Entry{Kind: Comment, Text: strings.TrimPrefix(s[1:], " ")}, nil
	case '@':
		rest, ok := strings.CutPrefix(s, "@ +")
		if !ok {
			return Entry{}, fmt.Errorf("time marker %q: want \"@ +<duration>\"", s)
		}
		d, err := time.ParseDuration(rest)
		if err != nil {
			return Entry{}, fmt.Errorf("time marker: %w", err)
		}
		if d < 0 {
			return Entry{}, fmt.Errorf("time marker %q: time cannot go back", s)
		}
		return Entry{Kind: Advance, D: d}, nil
	case '!':
		word, rest, _ := strings.Cut(s[1:], " ")
		if word != "" {
			return Entry{}, fmt.Errorf("marker %q: want \"! <keyword>\"", s)
		}
		word, text, _ := strings.Cut(rest, " ")
		switch word {
		case "tls":
			if text != "" {
				return Entry{}, fmt.Errorf("marker %q: tls takes no text", s)
			}
			return Entry{Kind: TLS}, nil
		case "tls-fail":
			return Entry{Kind: TLSFail, Text: text}, nil
		case "error":
			return Entry{Kind: Error, Text: text}, nil
		}
		return Entry{}, fmt.Errorf("unknown marker %q", s)
	case 'C', 'S':
		side := Client
		if s[0] == 'S' {
			side = Server
		}
		if len(s) < 2 {
			break
		}
		switch rest := s[2:]; s[1] {
		case ':':
			if rest != "" && rest[0] != ' ' {
				return Entry{}, fmt.Errorf("%q: want a space after %q", s, s[:2])
			}
			rest = strings.TrimPrefix(rest, " ")
			return Entry{Kind: Data, Side: side, Data: []byte(rest + "\r\n")}, nil
		case '~':
			q, ok := strings.CutPrefix(rest, " ")
			if !ok || !strings.HasPrefix(q, `"`) {
				return Entry{}, fmt.Errorf("%q: want a double-quoted string after %q", s, s[:2])
			}
			b, err := strconv.Unquote(q)
			if err != nil {
				return Entry{}, fmt.Errorf("%q: %w", s, err)
			}
			if b == "" {
				return Entry{}, fmt.Errorf("%q: empty data", s)
			}
			return Entry{Kind: Data, Side: side, Data: []byte(b)}, nil
		case '!':
			if rest != " eof" {
				return Entry{}, fmt.Errorf("%q: want %q", s, s[:2]+" eof")
			}
			return Entry{Kind: EOF, Side: side}, nil
		}
	}
	return Entry{}, fmt.Errorf("unknown line %q", s)
}

// Format writes t in the canonical text form, one line per entry, each
// ended by LF. It fails for entries that have no text form: data of no
// bytes, text holding CR or LF, negative time, an unknown kind or side.
func Format(t Transcript) ([]byte, error) {
	var b []byte
	for i, e := range t {
		var err error
		if b, err = AppendEntry(b, e); err != nil {
			return nil, fmt.Errorf("transcript: entry %d: %w", i+1, err)
		}
	}
	return b, nil
}

// AppendEntry appends the text line of e, LF included, to dst.
func AppendEntry(dst []byte, e Entry) ([]byte, error) {
	switch e.Kind {
	case Comment, TLSFail, Error:
		if strings.ContainsAny(e.Text, "\r\n") {
			return dst, fmt.Errorf("%s text %q holds CR or LF", e.Kind, e.Text)
		}
	}
	switch e.Kind {
	case Blank:
	case Comment:
		dst = append(dst, '#')
		if e.Text != "" {
			dst = append(dst, ' ')
			dst = append(dst, e.Text...)
		}
	case Data:
		if e.Side != Client && e.Side != Server {
			return dst, fmt.Errorf("data without a side")
		}
		if len(e.Data) == 0 {
			return dst, fmt.Errorf("%s data of no bytes", e.Side)
		}
		dst = append(dst, e.Side.String()...)
		if text, ok := plain(e.Data); ok {
			dst = append(dst, ':')
			if len(text) > 0 {
				dst = append(dst, ' ')
				dst = append(dst, text...)
			}
		} else {
			dst = append(dst, "~ "...)
			dst = strconv.AppendQuoteToASCII(dst, string(e.Data))
		}
	case EOF:
		if e.Side != Client && e.Side != Server {
			return dst, fmt.Errorf("eof without a side")
		}
		dst = append(dst, e.Side.String()...)
		dst = append(dst, "! eof"...)
	case Advance:
		if e.D < 0 {
			return dst, fmt.Errorf("negative time step %v", e.D)
		}
		dst = append(dst, "@ +"...)
		dst = append(dst, e.D.String()...)
	case TLS:
		dst = append(dst, "! tls"...)
	case TLSFail, Error:
		dst = append(dst, "! "...)
		dst = append(dst, e.Kind.String()...)
		if e.Text != "" {
			dst = append(dst, ' ')
			dst = append(dst, e.Text...)
		}
	default:
		return dst, fmt.Errorf("unknown entry kind %d", e.Kind)
	}
	return append(dst, '\n'), nil
}

// plain reports whether data is one CRLF-terminated line of printable ASCII
// (tabs allowed, not at the end) and returns its text.
func plain(data []byte) ([]byte, bool) {
	text, ok := bytes.CutSuffix(data, []byte("\r\n"))
	if !ok {
		return nil, false
	}
	for _, c := range text {
		if (c < ' ' && c != '\t') || c > '~' {
			return nil, false
		}
	}
	if n := len(text); n > 0 && (text[n-1] == ' ' || text[n-1] == '\t') {
		return nil, false
	}
	return text, true
}

// String returns the transcript's text form; entries that have none are
// shown as comments saying why.
func (t Transcript) String() string {
	var b []byte
	for _, e := range t {
		var err error
		if b, err = AppendEntry(b, e); err != nil {
			b = append(b, "# (unformattable: "...)
			b = append(b, strings.ReplaceAll(err.Error(), "\n", " ")...)
			b = append(b, ")\n"...)
		}
	}
	return string(b)
}

// Lines splits data into wire lines, each ending just after LF (the last
// may lack one), and returns one Data entry per line for side.
func Lines(side Side, data []byte) Transcript {
	var t Transcript
	for len(data) > 0 {
		n := len(data)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			n = i + 1
		}
		t = append(t, Entry{Kind: Data, Side: side, Data: bytes.Clone(data[:n])})
		data = data[n:]
	}
	return t
}
