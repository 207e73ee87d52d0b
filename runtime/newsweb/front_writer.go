package newsweb

// The front's ResponseWriter, and how an answer becomes bytes.
//
// A handler's answer is kept until the handler returns, then written out
// whole, with a Content-Length, in one piece (front.go sends it with one
// write). Two ways in:
//
//   - Server.write hands a *response over as it is (answer): its header
//     values were made once for every view of the page, so the front
//     appends them as strings, with the security headers as one block
//     made at start. No header map is filled, cloned, sorted or checked.
//   - Anything else (http.Error, a redirect of ServeMux, promhttp) goes
//     through the http.ResponseWriter methods: the header map and the body
//     are kept and written as net/http writes them (sorted headers,
//     Content-Length, a sniffed Content-Type when none was set).
//
// Both add Date (RFC 9110 §6.6.1) and, when the connection is to close,
// Connection: close.

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// securityHeaders are set by ServeHTTP on every answer, in this order.
var securityHeaders = [...]struct {
	key   string
	value []string
}{
	{"Content-Security-Policy", cspValue},
	{"Referrer-Policy", referrerPolicy},
	{"X-Content-Type-Options", nosniff},
	{"X-Frame-Options", denyFrames},
}

// securityBlock is securityHeaders as header lines.
var securityBlock = func() string {
	var b strings.Builder
	for _, h := range securityHeaders {
		b.WriteString(h.key + ": " + h.value[0] + "\r\n")
	}
	return b.String()
}()

// frontWriter is the http.ResponseWriter of one request on the front. One
// is kept per connection and reset for each request: a handler must not
// use its ResponseWriter after it returns (net/http's rule too).
type frontWriter struct {
	header http.Header
	status int
	body   []byte // what the handler wrote, kept until it returns

	// answered is set by answer: the response is ans, and the header
	// map and body are not used.
	answered bool
	ans      frontAnswer

	// deadline is the request's bound, kept for the next request while
	// it is not armed (requestDeadline).
	deadline *lazyDeadline
}

// frontAnswer is an answer of Server.write: the values it would have put
// in the header map.
type frontAnswer struct {
	status int
	ctype  string
	cache  string
	gzip   bool
	vary   string // "" for none
	etag   string // "" for none
	clen   string
	body   []byte
}

// reset makes w ready for the next request.
func (w *frontWriter) reset() {
	clear(w.header)
	w.status = 0
	w.body = w.body[:0]
	if cap(w.body) > frontKeepOut {
		w.body = nil
	}
	w.answered = false
	w.ans = frontAnswer{}
}

// Header is the header map of the answer.
func (w *frontWriter) Header() http.Header { return w.header }

// WriteHeader records the status; like net/http, only the first counts.
func (w *frontWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// Write keeps p for the answer.
func (w *frontWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

// answer takes a's values as the response. It reports false, and takes
// nothing, when the header map holds more than ServeHTTP's security
// headers (someone set another header): the caller then writes through
// the map.
func (w *frontWriter) answer(a frontAnswer) bool {
	if len(w.header) != len(securityHeaders) || w.status != 0 {
		return false
	}
	w.answered, w.ans = true, a
	return true
}

// appendResponse appends the whole response to dst: status line, header
// lines, Date, Connection: close when closing, and the body unless the
// request was HEAD or the status has none.
func (w *frontWriter) appendResponse(dst []byte, date []byte, head, closing bool) []byte {
	if w.answered {
		return w.ans.appendTo(dst, date, head, closing)
	}
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	dst = appendStatusLine(dst, status)
	bodyAllowed := status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
	if bodyAllowed && w.header.Get("Content-Length") == "" {
		w.header["Content-Length"] = []string{strconv.Itoa(len(w.body))}
	}
	if bodyAllowed && len(w.body) > 0 && w.header["Content-Type"] == nil {
		w.header["Content-Type"] = []string{http.DetectContentType(w.body)}
	}
	w.header.Del("Date")
	w.header.Del("Connection")
	b := headerBuffer{dst}
	w.header.Write(&b)
	dst = appendTail(b.b, date, closing)
	if bodyAllowed && !head {
		dst = append(dst, w.body...)
	}
	return dst
}

// appendTo appends a's response; see appendResponse.
func (a *frontAnswer) appendTo(dst []byte, date []byte, head, closing bool) []byte {
	dst = appendStatusLine(dst, a.status)
	dst = appendHeader(dst, "Cache-Control", a.cache)
	if a.gzip {
		dst = appendHeader(dst, "Content-Encoding", "gzip")
	}
	notModified := a.status == http.StatusNotModified
	if !notModified {
		dst = appendHeader(dst, "Content-Length", a.clen)
	}
	dst = append(dst, securityBlock...)
	if !notModified {
		dst = appendHeader(dst, "Content-Type", a.ctype)
	}
	if a.etag != "" {
		dst = appendHeader(dst, "Etag", a.etag)
	}
	if a.vary != "" {
		dst = appendHeader(dst, "Vary", a.vary)
	}
	dst = appendTail(dst, date, closing)
	if !notModified && !head {
		dst = append(dst, a.body...)
	}
	return dst
}

// appendStatusLine appends "HTTP/1.1 <code> <reason>".
func appendStatusLine(dst []byte, status int) []byte {
	switch status {
	case http.StatusOK:
		return append(dst, "HTTP/1.1 200 OK\r\n"...)
	case http.StatusNotModified:
		return append(dst, "HTTP/1.1 304 Not Modified\r\n"...)
	}
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, ' ')
	dst = append(dst, http.StatusText(status)...)
	return append(dst, "\r\n"...)
}

// appendHeader appends one header line.
func appendHeader(dst []byte, key, value string) []byte {
	dst = append(dst, key...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

// appendTail appends Date, Connection: close when closing, and the blank
// line.
func appendTail(dst, date []byte, closing bool) []byte {
	dst = append(dst, "Date: "...)
	dst = append(dst, date...)
	dst = append(dst, "\r\n"...)
	if closing {
		dst = append(dst, "Connection: close\r\n"...)
	}
	return append(dst, "\r\n"...)
}

// headerBuffer lets http.Header.Write append to a byte slice.
type headerBuffer struct{ b []byte }

func (h *headerBuffer) Write(p []byte) (int, error) {
	h.b = append(h.b, p...)
	return len(p), nil
}

func (h *headerBuffer) WriteString(s string) (int, error) {
	h.b = append(h.b, s...)
	return len(s), nil
}

// appendHTTPDate appends t as the Date header has it (RFC 9110 §5.6.7).
func appendHTTPDate(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, http.TimeFormat)
}
