package newsweb

// The request heads the front (front.go) serves itself, and the parser
// that reads them.
//
// The front takes only the plainest HTTP/1.1 requests (RFC 9112): GET or
// HEAD of an origin-form target, CRLF line ends, one Host, no body (no
// Transfer-Encoding, a Content-Length of 0 at most), no Expect, no
// Upgrade, no obsolete line folding, nothing but visible ASCII in the
// target and no control character in a header value. Whatever else comes
// (another method, HTTP/1.0, a doubtful byte) is not refused here: the
// connection, with the bytes already read, goes to net/http, which
// answers it as it always did (an error page included). So the parser
// needs to be exact only in what it accepts: FuzzParseHead checks that
// net/http reads every head it accepts the same way.

import (
	"bytes"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// headVerdict is what parseHead made of the buffered bytes.
type headVerdict uint8

const (
	headIncomplete headVerdict = iota // no blank line yet: read more
	headOK                            // a head the front serves
	headHandoff                       // anything else: net/http's to answer
)

// requestHead is a request head the front serves. A connection keeps one
// and parses each head into it (parseHead): the header map and the
// values' array are reused, so a handler must not keep the header (or
// the URL, see frontConn.answer) past its answer.
type requestHead struct {
	method string // "GET" or "HEAD"
	target string // origin-form: path and query
	url    url.URL
	host   string // the Host header (removed from header, as net/http does)
	close  bool   // Connection: close
	header http.Header
	values []string // the array header's values are slices of
}

// Bounds on what a requestHead keeps for the next head: a map or array
// grown for a head of many lines is dropped (a map never shrinks).
const keptHeaderLines = 32

// headScan is how far parseHead read into a head that was incomplete:
// the lines before next end in CRLF and are not blank, and lines counts
// them. The next call, with more bytes, goes on from there: a head sent a
// byte at a time would otherwise cost time quadratic in its length (a
// 32 KiB head of short lines, about 1.5 s of CPU). The zero value starts
// at the beginning; parseHead resets it when it returns a head or hands
// one off.
type headScan struct{ next, lines int }

// parseHead reads the request head at the start of b into h, going on
// from sc (see headScan). With headOK it returns the head's length in
// bytes (the blank line included); with any other verdict h holds
// nothing of use. A head longer than max without its blank line is
// headHandoff (net/http answers 431).
func parseHead(h *requestHead, b []byte, max int, sc *headScan) (int, headVerdict) {
	end, lines, verdict := scanHead(b, max, sc)
	if verdict != headOK {
		return 0, verdict
	}
	if !parseLines(h, b, end, lines) {
		return 0, headHandoff
	}
	return end, headOK
}

// scanHead finds the blank line that ends the head at the start of b,
// every line ending in CRLF (a bare LF is net/http's to read): the
// head's length and its lines before the blank one.
func scanHead(b []byte, max int, sc *headScan) (end, lines int, verdict headVerdict) {
	i, lines := sc.next, sc.lines
	for i < len(b) && i <= max {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			break
		}
		j += i
		if j == i || b[j-1] != '\r' {
			*sc = headScan{}
			return 0, 0, headHandoff
		}
		if j == i+1 { // "\r\n": the blank line
			*sc = headScan{}
			if lines == 0 || j+1 > max {
				return 0, 0, headHandoff
			}
			return j + 1, lines, headOK
		}
		lines++
		i = j + 1
	}
	if len(b) > max {
		*sc = headScan{}
		return 0, 0, headHandoff
	}
	*sc = headScan{next: i, lines: lines}
	return 0, 0, headIncomplete
}

// parseLines parses the head b[:end] of lines lines (the blank one left
// out), found by scanHead, into h; false when it is net/http's to answer.
func parseLines(h *requestHead, b []byte, end, lines int) bool {
	// One string for the whole head: every name and value is a slice of it.
	s := string(b[:end-2])
	line, rest, _ := strings.Cut(s, "\r\n")
	method, line, _ := strings.Cut(line, " ")
	target, proto, _ := strings.Cut(line, " ")
	if (method != http.MethodGet && method != http.MethodHead) || proto != "HTTP/1.1" || !plainTarget(target) {
		return false
	}
	if err := parseTarget(&h.url, target); err != nil {
		return false // a bad escape: net/http's 400
	}
	h.method, h.target, h.host, h.close = method, target, "", false
	if h.header == nil || len(h.header) > keptHeaderLines {
		h.header = make(http.Header, min(lines-1, keptHeaderLines))
	} else {
		clear(h.header)
	}
	// One array for every value, as textproto does.
	if cap(h.values) < lines-1 || cap(h.values) > keptHeaderLines {
		h.values = make([]string, lines-1)
	}
	values := h.values[:lines-1]
	hosts := 0
	for rest != "" {
		line, rest, _ = strings.Cut(rest, "\r\n")
		name, value, ok := strings.Cut(line, ":")
		if !ok || !validFieldName(name) {
			return false // no colon, a space before it, a folded line
		}
		value = strings.Trim(value, " \t")
		if !validFieldValue(value) {
			return false
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		switch key {
		case "Host":
			if hosts++; hosts > 1 || !plainHost(value) {
				return false
			}
			h.host = value
			continue
		case "Content-Length":
			if value != "0" || h.header[key] != nil {
				return false
			}
		case "Transfer-Encoding", "Expect", "Upgrade", "Te", "Http2-Settings":
			return false
		case "Connection":
			for list := value; list != ""; {
				var t string
				t, list, _ = strings.Cut(list, ",")
				switch t = strings.TrimSpace(t); {
				case strings.EqualFold(t, "close"):
					h.close = true
				case strings.EqualFold(t, "upgrade"):
					return false
				}
			}
		}
		if v := h.header[key]; v != nil {
			h.header[key] = append(v, value)
			continue
		}
		values[0] = value
		h.header[key], values = values[:1:1], values[1:]
	}
	return hosts == 1 // HTTP/1.1 without Host: net/http's 400
}

// parseTarget sets u to the URL of target, an origin-form target
// (plainTarget), exactly as url.ParseRequestURI makes it (FuzzParseTarget
// checks), without allocating for a target of the usual kind: a path of
// bytes that need no escape, then perhaps a query. Others are parsed by
// url.ParseRequestURI.
func parseTarget(u *url.URL, target string) error {
	path, query, hasQuery := strings.Cut(target, "?")
	if plainPath(path) && (!hasQuery || query != "") { // "/a?" is ForceQuery
		*u = url.URL{Path: path, RawQuery: query}
		return nil
	}
	p, err := url.ParseRequestURI(target)
	if err != nil {
		return err
	}
	*u = *p
	return nil
}

// plainPath reports whether p is a path whose bytes url leaves as they
// are (no escapes, nothing its path encoding would escape), so that its
// Path is p and its RawPath empty.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~$&+,/:;=@", c) >= 0) {
			return false
		}
	}
	return true
}

// plainTarget reports whether t is an origin-form target of visible ASCII
// (RFC 9112 §3.2.1), short of what ServeHTTP refuses as too long.
func plainTarget(t string) bool {
	if t == "" || t[0] != '/' || len(t) > maxURL {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c >= 0x7f || c == '#' {
			return false
		}
	}
	return true
}

// plainHost reports whether v is a host[:port] of the plain kind (names,
// IPv4, bracketed IPv6): anything else goes to net/http's checks.
func plainHost(v string) bool { return alnumOr(v, ".-:[]_") }

// validFieldName reports whether n is a token (RFC 9110 §5.1).
func validFieldName(n string) bool { return alnumOr(n, "!#$%&'*+-.^_`|~") }

// alnumOr reports whether s is not empty and holds only ASCII letters,
// digits and bytes of extra.
func alnumOr(s, extra string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// validFieldValue reports whether v holds no control character but HTAB
// (RFC 9110 §5.5; obs-text, bytes from 0x80, is allowed as net/http does).
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
