package proto

import (
	"errors"
	"fmt"
	"strconv"
)

// Response codes newsflow acts on (RFC 3977 §3.2 and the commands' sections,
// RFC 4643 AUTHINFO, RFC 4644 streaming).
const (
	CodeHelp            = 100 // help text follows
	CodeCapabilities    = 101 // capability list follows
	CodeDate            = 111 // server date and time
	CodePostingOK       = 200 // greeting: posting allowed
	CodeNoPosting       = 201 // greeting: posting prohibited
	CodeStreamingOK     = 203 // RFC 4644 §2.3: MODE STREAM accepted
	CodeClosing         = 205 // connection closing
	CodeGroupSelected   = 211 // GROUP / LISTGROUP
	CodeListFollows     = 215 // LIST
	CodeArticleFollows  = 220 // ARTICLE
	CodeHeadFollows     = 221 // HEAD (and XHDR in INN)
	CodeBodyFollows     = 222 // BODY
	CodeArticleExists   = 223 // STAT
	CodeOverFollows     = 224 // OVER / XOVER
	CodeHdrFollows      = 225 // HDR
	CodeNewNewsFollows  = 230 // NEWNEWS
	CodeNewGroups       = 231 // NEWGROUPS
	CodeTransferOK      = 235 // IHAVE: article transferred
	CodeCheckSend       = 238 // RFC 4644: CHECK: send it
	CodeTakeThisOK      = 239 // RFC 4644: TAKETHIS: accepted
	CodePosted          = 240 // POST: article received
	CodeAuthOK          = 281 // AUTHINFO accepted
	CodeSendArticle     = 335 // IHAVE: send the article
	CodeSendPost        = 340 // POST: send the article
	CodePassRequired    = 381 // AUTHINFO USER: password required
	CodeContinueTLS     = 382 // STARTTLS: begin negotiation
	CodeUnavailable     = 400 // service temporarily unavailable / closing
	CodeWrongMode       = 401 // RFC 3977 §3.2.1: wrong mode (INN: "401 MODE-READER")
	CodeInternalFault   = 403 // internal fault
	CodeNoSuchGroup     = 411 // no such newsgroup
	CodeNoGroup         = 412 // no newsgroup selected
	CodeCurrentInvalid  = 420 // current article number invalid
	CodeNoNext          = 421 // no next article
	CodeNoPrev          = 422 // no previous article
	CodeNoSuchNumber    = 423 // no article with that number
	CodeNoSuchID        = 430 // no article with that message-id
	CodeCheckLater      = 431 // RFC 4644: CHECK: try again later
	CodeNotWanted       = 435 // IHAVE: article not wanted
	CodeTransferLater   = 436 // IHAVE: transfer failed, try again later
	CodeTransferReject  = 437 // IHAVE: rejected, do not retry
	CodeCheckNotWanted  = 438 // RFC 4644: CHECK: not wanted
	CodeTakeThisReject  = 439 // RFC 4644: TAKETHIS: rejected
	CodePostingDenied   = 440 // POST: posting not permitted
	CodePostingFailed   = 441 // POST: posting failed
	CodeAuthRequired    = 480 // authentication required
	CodeAuthRejected    = 481 // authentication failed
	CodeAuthOutOfOrder  = 482 // authentication commands out of sequence
	CodeEncryptRequired = 483 // encryption required
	CodeUnknownCommand  = 500 // unknown command
	CodeSyntaxError     = 501 // syntax error
	CodeNotPermitted    = 502 // permission denied / service permanently unavailable
	CodeUnsupported     = 503 // feature not supported
	CodeBase64Error     = 504 // error in base64 encoding
)

// MaxResponseLine is the longest response line RFC 3977 §3.1 allows,
// including CRLF.
const MaxResponseLine = 512

// MaxCommandLine is the longest command line RFC 3977 §3.1 allows,
// including CRLF.
const MaxCommandLine = 512

// ErrLineTooLong reports a line longer than the configured limit.
var ErrLineTooLong = errors.New("nntp: line too long")

// A Response is one parsed status line: a three-digit code and the text after it.
type Response struct {
	Code int
	Text string // everything after the code and one separating space, without CRLF
}

// Class is the first digit of the code: 1 informative, 2 success, 3 continue,
// 4 temporary failure, 5 permanent failure.
func (r Response) Class() int { return r.Code / 100 }

// String returns the response as it appears on the wire, without CRLF.
func (r Response) String() string {
	if r.Text == "" {
		return strconv.Itoa(r.Code)
	}
	return strconv.Itoa(r.Code) + " " + r.Text
}

// A ResponseError is a response that its receiver did not expect; it carries
// the response so callers can act on the code.
type ResponseError struct {
	Cmd  string // the command that drew it, e.g. "GROUP"
	Resp Response
}

func (e *ResponseError) Error() string {
	if e.Cmd == "" {
		return fmt.Sprintf("nntp: unexpected response %q", e.Resp.String())
	}
	return fmt.Sprintf("nntp: %s: unexpected response %q", e.Cmd, e.Resp.String())
}

// ParseResponse parses one status line (RFC 3977 §3.2): three digits, then
// end of line or a space (a tab is tolerated) and text. A trailing CRLF or LF is
// removed. Lines longer than MaxResponseLine are not refused here: servers do
// send long 2xx text, and the reader that split the line enforces its own limit.
func ParseResponse(line []byte) (Response, error) {
	line = TrimEOL(line)
	if len(line) < 3 {
		return Response{}, fmt.Errorf("nntp: malformed response %q: shorter than a status code", line)
	}
	code := 0
	for i := 0; i < 3; i++ {
		c := line[i]
		if c < '0' || c > '9' {
			return Response{}, fmt.Errorf("nntp: malformed response %q: status code is not three digits", clip(line))
		}
		code = code*10 + int(c-'0')
	}
	if line[0] < '1' || line[0] > '5' {
		return Response{}, fmt.Errorf("nntp: malformed response %q: status class %c outside 1-5", clip(line), line[0])
	}
	if len(line) == 3 {
		return Response{Code: code}, nil
	}
	if line[3] != ' ' && line[3] != '\t' {
		return Response{}, fmt.Errorf("nntp: malformed response %q: no space after status code", clip(line))
	}
	return Response{Code: code, Text: string(line[4:])}, nil
}

// AppendResponse appends a status line with CRLF to dst (the server side).
func AppendResponse(dst []byte, code int, text string) []byte {
	dst = strconv.AppendInt(dst, int64(code), 10)
	if text != "" {
		dst = append(dst, ' ')
		dst = append(dst, text...)
	}
	return append(dst, '\r', '\n')
}

// MultiLine reports whether a response with code to the command named verb
// (upper case, e.g. "LISTGROUP", "XOVER") is followed by a multi-line block,
// by the table of RFC 3977 §3.1 and the commands' sections (plus XOVER, XHDR
// and LIST variants as deployed).
func MultiLine(verb string, code int) bool {
	switch code {
	case CodeHelp:
		return verb == "HELP"
	case CodeCapabilities:
		return verb == "CAPABILITIES"
	case CodeGroupSelected:
		return verb == "LISTGROUP" // GROUP's 211 is one line
	case CodeListFollows:
		return verb == "LIST"
	case CodeArticleFollows:
		return verb == "ARTICLE"
	case CodeHeadFollows:
		return verb == "HEAD" || verb == "XHDR"
	case CodeBodyFollows:
		return verb == "BODY"
	case CodeOverFollows:
		return verb == "OVER" || verb == "XOVER"
	case CodeHdrFollows:
		return verb == "HDR"
	case CodeNewNewsFollows:
		return verb == "NEWNEWS"
	case CodeNewGroups:
		return verb == "NEWGROUPS"
	}
	return false
}

// StreamID returns the message-id that RFC 4644 streaming responses (238, 239,
// 431, 438, 439) carry as their first word, or "" if there is none.
func (r Response) StreamID() string {
	t := r.Text
	for i := 0; i < len(t); i++ {
		if t[i] == ' ' || t[i] == '\t' {
			return t[:i]
		}
	}
	return t
}

// GroupInfo is the data of a 211 response to GROUP or LISTGROUP.
type GroupInfo struct {
	Count int64  // estimated number of articles
	Low   int64  // reported low water mark
	High  int64  // reported high water mark
	Name  string // group name
}

// ParseGroupResponse parses the text of a 211 response: "count low high name".
func ParseGroupResponse(r Response) (GroupInfo, error) {
	if r.Code != CodeGroupSelected {
		return GroupInfo{}, &ResponseError{Cmd: "GROUP", Resp: r}
	}
	f := fields(r.Text)
	if len(f) < 4 {
		return GroupInfo{}, fmt.Errorf("nntp: malformed 211 response %q: want count low high group", r.Text)
	}
	var g GroupInfo
	var err error
	if g.Count, err = parseArticleNumber(f[0]); err != nil {
		return GroupInfo{}, fmt.Errorf("nntp: 211 count: %w", err)
	}
	if g.Low, err = parseArticleNumber(f[1]); err != nil {
		return GroupInfo{}, fmt.Errorf("nntp: 211 low: %w", err)
	}
	if g.High, err = parseArticleNumber(f[2]); err != nil {
		return GroupInfo{}, fmt.Errorf("nntp: 211 high: %w", err)
	}
	g.Name = f[3]
	return g, nil
}

// ArticleInfo is the data of a 220/221/222/223 response: number and message-id.
type ArticleInfo struct {
	Number    int64
	MessageID string
}

// ParseArticleResponse parses "n <message-id>" from a 220, 221, 222 or 223
// response (RFC 3977 §6.2). The number is 0 when the article was asked for by
// message-id outside a group.
func ParseArticleResponse(r Response) (ArticleInfo, error) {
	switch r.Code {
	case CodeArticleFollows, CodeHeadFollows, CodeBodyFollows, CodeArticleExists:
	default:
		return ArticleInfo{}, &ResponseError{Cmd: "ARTICLE", Resp: r}
	}
	f := fields(r.Text)
	if len(f) < 2 {
		return ArticleInfo{}, fmt.Errorf("nntp: malformed %d response %q: want number and message-id", r.Code, r.Text)
	}
	n, err := parseArticleNumber(f[0])
	if err != nil {
		return ArticleInfo{}, fmt.Errorf("nntp: %d article number: %w", r.Code, err)
	}
	return ArticleInfo{Number: n, MessageID: f[1]}, nil
}

// parseArticleNumber parses a non-negative decimal article number (RFC 3977
// §6: 1 to 2,147,483,647, but real servers exceed it, so any int64 is taken).
func parseArticleNumber(s string) (int64, error) {
	if s == "" || len(s) > 18 {
		return 0, fmt.Errorf("bad article number %q", s)
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad article number %q", s)
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// fields splits s at runs of spaces and tabs (RFC 3977 §3.1 argument separators).
func fields(s string) []string {
	var out []string
	start := -1
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// TrimEOL removes one trailing CRLF or LF (a line as LineBuffer returns it).
func TrimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// clip shortens b for an error message.
func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
