package newsweb

import (
	"net/url"
	"strings"
)

// Links in article bodies. linkify cuts a block of body text into plain
// text and http(s) URLs; the template writes the URLs as links with
// rel="nofollow noopener ugc" and escapes everything, so an article can add
// a link and nothing else. Only http and https are linked (never
// javascript:, data: or news: with odd hosts), only when the URL parses
// with a host, and never longer than maxLinkLen. Trailing punctuation that
// usually ends a sentence, and a closing parenthesis without its opening
// one, stay outside the link ("see https://x.example/a." links
// https://x.example/a).

// maxLinkLen bounds one linked URL; longer ones stay text.
const maxLinkLen = 2048

// maxLinks bounds the links made in one block; the rest stay text.
const maxLinks = 200

// segment is a piece of body text: plain when URL is "", else a link
// whose text is the URL as written.
type segment struct {
	Text string
	URL  string
}

// linkify splits text into segments. Joining the segments' Text gives
// text back unchanged.
func linkify(text string) []segment {
	var out []segment
	rest := text
	links := 0
	for links < maxLinks {
		i := urlStart(rest)
		if i < 0 {
			break
		}
		n := urlLen(rest[i:])
		u := rest[i : i+n]
		if !linkable(u) {
			// Not a link: keep the scheme as text and look further on.
			skip := i + strings.Index(rest[i:], "://") + 3
			out = appendText(out, rest[:skip])
			rest = rest[skip:]
			continue
		}
		out = appendText(out, rest[:i])
		out = append(out, segment{Text: u, URL: u})
		links++
		rest = rest[i+n:]
	}
	return appendText(out, rest)
}

// appendText adds plain text, merging it with a plain segment before it.
func appendText(out []segment, s string) []segment {
	if s == "" {
		return out
	}
	if n := len(out); n > 0 && out[n-1].URL == "" {
		out[n-1].Text += s
		return out
	}
	return append(out, segment{Text: s})
}

// urlStart is the index of the next "http://" or "https://" (in any case)
// that does not continue a word, or -1.
func urlStart(s string) int {
	off := 0
	for {
		i := indexFold(s[off:], "http")
		if i < 0 {
			return -1
		}
		at := off + i
		tail := s[at+4:]
		if len(tail) > 0 && (tail[0] == 's' || tail[0] == 'S') {
			tail = tail[1:]
		}
		if strings.HasPrefix(tail, "://") && (at == 0 || !wordByte(s[at-1])) {
			return at
		}
		off = at + 4
	}
}

// indexFold is strings.Index for an ASCII lower-case needle, ignoring case.
func indexFold(s, needle string) int {
	for i := 0; i+len(needle) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(needle)], needle) {
			return i
		}
	}
	return -1
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// urlLen is the length of the URL at the start of s: up to white space, a
// quote, angle bracket or control character, less trailing punctuation and
// unbalanced closing brackets.
func urlLen(s string) int {
	n := 0
	for n < len(s) {
		c := s[n]
		if c <= ' ' || c == '"' || c == '<' || c == '>' || c == '`' || c == 0x7f {
			break
		}
		n++
	}
	for n > 0 {
		switch s[n-1] {
		case '.', ',', ';', ':', '!', '?', '\'', '*':
			n--
			continue
		case ')':
			if strings.Count(s[:n], "(") < strings.Count(s[:n], ")") {
				n--
				continue
			}
		case ']':
			if strings.Count(s[:n], "[") < strings.Count(s[:n], "]") {
				n--
				continue
			}
		}
		break
	}
	return n
}

// linkable reports whether u is an http(s) URL with a host that may be a
// link.
func linkable(u string) bool {
	if len(u) > maxLinkLen {
		return false
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" || p.User != nil {
		return false
	}
	s := strings.ToLower(p.Scheme)
	return s == "http" || s == "https"
}
