package proto

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A Command is one NNTP command line: an upper-case keyword and its arguments.
// Multi-word commands keep their first word as Verb ("MODE", "LIST",
// "AUTHINFO") and the rest as arguments ("STREAM", "ACTIVE", "USER").
type Command struct {
	Verb string
	Args []string
}

// String returns the command line without CRLF. AUTHINFO PASS is shown with
// its password masked so that commands can be logged safely.
func (c Command) String() string {
	if c.Verb == "AUTHINFO" && len(c.Args) == 2 && strings.EqualFold(c.Args[0], "PASS") {
		return "AUTHINFO PASS ********"
	}
	return string(c.line(nil))
}

func (c Command) line(dst []byte) []byte {
	dst = append(dst, c.Verb...)
	for _, a := range c.Args {
		dst = append(dst, ' ')
		dst = append(dst, a...)
	}
	return dst
}

// Append appends the command line with CRLF to dst. It refuses commands that
// could not be sent safely: an empty or non-printable verb, arguments that are
// empty or hold whitespace, CR, LF or NUL, and lines over MaxCommandLine
// (RFC 3977 §3.1).
func (c Command) Append(dst []byte) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return dst, err
	}
	dst = c.line(dst)
	return append(dst, '\r', '\n'), nil
}

// Validate checks that the command can be sent as one line (see Append).
func (c Command) Validate() error {
	if c.Verb == "" {
		return fmt.Errorf("nntp: empty command")
	}
	n := len(c.Verb) + 2
	for i := 0; i < len(c.Verb); i++ {
		if b := c.Verb[i]; b <= ' ' || b >= 0x7f {
			return fmt.Errorf("nntp: command %q: keyword is not printable ASCII", c.Verb)
		}
	}
	for _, a := range c.Args {
		if a == "" {
			return fmt.Errorf("nntp: %s: empty argument", c.Verb)
		}
		for i := 0; i < len(a); i++ {
			if b := a[i]; b == ' ' || b == '\t' || b == '\r' || b == '\n' || b == 0 {
				return fmt.Errorf("nntp: %s: argument %q holds whitespace, CR, LF or NUL", c.Verb, a)
			}
		}
		n += 1 + len(a)
	}
	if n > MaxCommandLine {
		return fmt.Errorf("nntp: %s: command line of %d octets exceeds %d: %w", c.Verb, n, MaxCommandLine, ErrLineTooLong)
	}
	return nil
}

// Name is the command's full name for dispatch and MultiLine: the verb, or for
// MODE, LIST and AUTHINFO the verb and its first argument ("MODE STREAM",
// "LIST ACTIVE", "AUTHINFO USER"). Bare LIST is "LIST ACTIVE" (RFC 3977 §7.6.1).
func (c Command) Name() string {
	switch c.Verb {
	case "MODE", "AUTHINFO":
		if len(c.Args) > 0 {
			return c.Verb + " " + strings.ToUpper(c.Args[0])
		}
	case "LIST":
		if len(c.Args) > 0 {
			return "LIST " + strings.ToUpper(c.Args[0])
		}
		return "LIST ACTIVE"
	}
	return c.Verb
}

// ParseCommand parses one command line as a server reads it (RFC 3977 §3.1):
// the keyword is case-insensitive and returned upper case, arguments are
// separated by spaces or tabs and kept as sent. A trailing CRLF or LF is removed.
func ParseCommand(line []byte) (Command, error) {
	if len(line) > MaxCommandLine {
		return Command{}, fmt.Errorf("nntp: command line of %d octets exceeds %d: %w", len(line), MaxCommandLine, ErrLineTooLong)
	}
	line = TrimEOL(line)
	for _, b := range line {
		if b == 0 || b == '\r' || b == '\n' {
			return Command{}, fmt.Errorf("nntp: command line holds NUL, CR or LF")
		}
	}
	f := fields(string(line))
	if len(f) == 0 {
		return Command{}, fmt.Errorf("nntp: empty command line")
	}
	c := Command{Verb: strings.ToUpper(f[0])}
	if len(f) > 1 {
		c.Args = f[1:]
	}
	// Keywords that are part of the command name are case-insensitive too.
	switch c.Verb {
	case "MODE", "AUTHINFO", "LIST":
		if len(c.Args) > 0 {
			c.Args[0] = strings.ToUpper(c.Args[0])
		}
	}
	return c, nil
}

// IsMessageIDArg reports whether an ARTICLE/HEAD/BODY/STAT argument names a
// message-id (it starts with '<') rather than an article number.
func IsMessageIDArg(arg string) bool { return strings.HasPrefix(arg, "<") }

// Constructors for every command newsflow sends. Message-ids are passed with
// their angle brackets; Append validates the result.

// Capabilities is CAPABILITIES (RFC 3977 §5.2).
func Capabilities() Command { return Command{Verb: "CAPABILITIES"} }

// ModeReader is MODE READER (RFC 3977 §5.3).
func ModeReader() Command { return Command{Verb: "MODE", Args: []string{"READER"}} }

// ModeStream is MODE STREAM (RFC 4644 §2.3).
func ModeStream() Command { return Command{Verb: "MODE", Args: []string{"STREAM"}} }

// AuthinfoUser is AUTHINFO USER (RFC 4643 §2.3).
func AuthinfoUser(user string) Command {
	return Command{Verb: "AUTHINFO", Args: []string{"USER", user}}
}

// AuthinfoPass is AUTHINFO PASS (RFC 4643 §2.3).
func AuthinfoPass(pass string) Command {
	return Command{Verb: "AUTHINFO", Args: []string{"PASS", pass}}
}

// StartTLS is STARTTLS (RFC 4642).
func StartTLS() Command { return Command{Verb: "STARTTLS"} }

// Group is GROUP (RFC 3977 §6.1.1).
func Group(name string) Command { return Command{Verb: "GROUP", Args: []string{name}} }

// ListGroup is LISTGROUP with an optional group and range (RFC 3977 §6.1.2);
// pass "" to omit either.
func ListGroup(group, rng string) Command {
	c := Command{Verb: "LISTGROUP"}
	if group != "" {
		c.Args = append(c.Args, group)
		if rng != "" {
			c.Args = append(c.Args, rng)
		}
	}
	return c
}

// Range formats an article range for OVER, HDR and LISTGROUP: "n", "n-" when
// high < 0, or "n-m".
func Range(low, high int64) string {
	s := strconv.FormatInt(low, 10)
	switch {
	case high < 0:
		return s + "-"
	case high == low:
		return s
	default:
		return s + "-" + strconv.FormatInt(high, 10)
	}
}

// Article is ARTICLE by message-id or number (RFC 3977 §6.2.1).
func Article(idOrNumber string) Command {
	return Command{Verb: "ARTICLE", Args: []string{idOrNumber}}
}

// Head is HEAD by message-id or number (RFC 3977 §6.2.2).
func Head(idOrNumber string) Command { return Command{Verb: "HEAD", Args: []string{idOrNumber}} }

// Body is BODY by message-id or number (RFC 3977 §6.2.3).
func Body(idOrNumber string) Command { return Command{Verb: "BODY", Args: []string{idOrNumber}} }

// Stat is STAT by message-id or number (RFC 3977 §6.2.4).
func Stat(idOrNumber string) Command { return Command{Verb: "STAT", Args: []string{idOrNumber}} }

// Number formats an article number argument.
func Number(n int64) string { return strconv.FormatInt(n, 10) }

// Over is OVER with a range or message-id (RFC 3977 §8.3).
func Over(rangeOrID string) Command { return Command{Verb: "OVER", Args: []string{rangeOrID}} }

// XOver is the pre-RFC 3977 XOVER with a range.
func XOver(rng string) Command { return Command{Verb: "XOVER", Args: []string{rng}} }

// Hdr is HDR field with a range or message-id (RFC 3977 §8.5).
func Hdr(field, rangeOrID string) Command {
	return Command{Verb: "HDR", Args: []string{field, rangeOrID}}
}

// XHdr is the pre-RFC 3977 XHDR.
func XHdr(field, rangeOrID string) Command {
	return Command{Verb: "XHDR", Args: []string{field, rangeOrID}}
}

// List is LIST with a keyword (ACTIVE, NEWSGROUPS, OVERVIEW.FMT, HEADERS, ...)
// and an optional wildmat or argument (RFC 3977 §7.6, RFC 6048).
func List(keyword, arg string) Command {
	c := Command{Verb: "LIST", Args: []string{keyword}}
	if arg != "" {
		c.Args = append(c.Args, arg)
	}
	return c
}

// NewNews is NEWNEWS wildmat date time GMT (RFC 3977 §7.4) for since in UTC.
func NewNews(wildmat string, since time.Time) Command {
	since = since.UTC()
	return Command{Verb: "NEWNEWS", Args: []string{wildmat, since.Format("20060102"), since.Format("150405"), "GMT"}}
}

// Date is DATE (RFC 3977 §7.1).
func Date() Command { return Command{Verb: "DATE"} }

// ParseDate parses the text of a 111 response, "yyyymmddhhmmss" in UTC.
func ParseDate(r Response) (time.Time, error) {
	if r.Code != CodeDate {
		return time.Time{}, &ResponseError{Cmd: "DATE", Resp: r}
	}
	f := fields(r.Text)
	if len(f) == 0 {
		return time.Time{}, fmt.Errorf("nntp: empty 111 response")
	}
	t, err := time.Parse("20060102150405", f[0])
	if err != nil {
		return time.Time{}, fmt.Errorf("nntp: malformed 111 response %q: %w", r.Text, err)
	}
	return t, nil
}

// Post is POST (RFC 3977 §6.3.1).
func Post() Command { return Command{Verb: "POST"} }

// IHave is IHAVE (RFC 3977 §6.3.2).
func IHave(id string) Command { return Command{Verb: "IHAVE", Args: []string{id}} }

// Check is CHECK (RFC 4644 §2.4).
func Check(id string) Command { return Command{Verb: "CHECK", Args: []string{id}} }

// TakeThis is TAKETHIS (RFC 4644 §2.5); the article follows as a multi-line block.
func TakeThis(id string) Command { return Command{Verb: "TAKETHIS", Args: []string{id}} }

// Quit is QUIT (RFC 3977 §5.4).
func Quit() Command { return Command{Verb: "QUIT"} }
