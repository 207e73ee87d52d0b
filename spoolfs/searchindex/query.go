package searchindex

// Query text: words and "quoted phrases", each of which must match; and
// the snippet that shows where a body matched.

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// term is one word or quoted phrase of a query.
type term struct {
	text  string   // lower-case, a phrase's words joined by single spaces: matched in subject and author
	words []string // its body words (eachWord): all must be in a body, adjacent when more than one
}

// parseTerms splits query text into terms: words separated by white
// space, and phrases in double quotes (an unclosed quote runs to the end).
// Terms are folded (fold); empty ones are dropped.
func parseTerms(s string) []term {
	var out []term
	add := func(text string) {
		text = strings.Join(strings.Fields(fold(text)), " ")
		if text != "" {
			out = append(out, term{text: text, words: wordsOf(text)})
		}
	}
	for s != "" {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			for _, w := range strings.Fields(s) {
				add(w)
			}
			break
		}
		for _, w := range strings.Fields(s[:i]) {
			add(w)
		}
		s = s[i+1:]
		j := strings.IndexByte(s, '"')
		if j < 0 {
			j = len(s)
		}
		add(s[:j])
		s = s[min(j+1, len(s)):]
	}
	return out
}

// span is where a term matched in a text.
type span struct{ start, end int }

// findTerms returns the spans of text where a term's words occur, in
// order; first, when set, stops at the first span.
func findTerms(text []byte, terms []term, first bool) []span {
	longest := 0
	for _, t := range terms {
		longest = max(longest, len(t.words))
	}
	if longest == 0 {
		return nil
	}
	// The last longest words seen, a ring.
	type word struct {
		start int
		w     []byte
	}
	ring := make([]word, longest)
	for k := range ring {
		ring[k].w = make([]byte, 0, maxWord+utf8.UTFMax)
	}
	seen := 0
	var out []span
	eachWord(text, func(start, end int, w []byte) bool {
		slot := &ring[seen%longest]
		slot.start, slot.w = start, append(slot.w[:0], w...)
		seen++
		for _, t := range terms {
			n := len(t.words)
			if n == 0 || n > seen {
				continue
			}
			ok := true
			for k, tw := range t.words {
				if string(ring[(seen-n+k)%longest].w) != tw {
					ok = false
					break
				}
			}
			if ok {
				out = append(out, span{ring[(seen-n)%longest].start, end})
				return !first
			}
		}
		return true
	})
	return out
}

// hasPhrase reports whether text holds t's words one after the other. It
// is findTerms for one term without the spans: a word-level KMP match, so
// that a phrase with a repeated word ("bye bye now") is not missed after
// a partial match.
func hasPhrase(text []byte, t term) bool {
	n := len(t.words)
	if n == 0 {
		return false
	}
	// fail[k]: the length of the longest proper prefix of words[:k+1]
	// that is also its suffix.
	fail := make([]int, n)
	for k, m := 1, 0; k < n; k++ {
		for m > 0 && t.words[k] != t.words[m] {
			m = fail[m-1]
		}
		if t.words[k] == t.words[m] {
			m++
		}
		fail[k] = m
	}
	m, found := 0, false
	eachWord(text, func(_, _ int, w []byte) bool {
		for m > 0 && string(w) != t.words[m] {
			m = fail[m-1]
		}
		if string(w) == t.words[m] {
			m++
		}
		found = m == n
		return !found
	})
	return found
}

// Fragment is a piece of a snippet: text shown as is, or, with Match set,
// a matched word or phrase to highlight. Text is plain (to be escaped).
type Fragment struct {
	Text  string `json:"text"`
	Match bool   `json:"match,omitempty"`
}

// Snippet sizes: the text shown before the first match, and in all.
const (
	snippetBefore = 60
	snippetLen    = 220
)

// snippet cuts the stretch of text around the first match of terms, with
// every match in it marked; nil when nothing matches.
func snippet(text []byte, terms []term) []Fragment {
	spans := findTerms(text, terms, false)
	if len(spans) == 0 {
		return nil
	}
	from := max(spans[0].start-snippetBefore, 0)
	// Start at a word: after a space, when there is one near.
	if from > 0 {
		if i := strings.IndexAny(string(text[from:spans[0].start]), " \n\t"); i >= 0 {
			from += i + 1
		}
	}
	for from > 0 && !utf8.RuneStart(text[from]) {
		from++
	}
	to := min(from+snippetLen, len(text))
	if to < spans[0].end {
		to = spans[0].end
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	if to < len(text) {
		if i := strings.LastIndexAny(string(text[spans[0].end:to]), " \n\t"); i >= 0 {
			to = spans[0].end + i
		}
	}
	for to > spans[0].end && isSpace(text[to-1]) {
		to--
	}
	var out []Fragment
	plain := func(s []byte, lead, trail bool) {
		t := flat(s)
		if lead {
			t = "…" + t
		}
		if trail {
			t += "…"
		}
		if t != "" {
			out = append(out, Fragment{Text: t})
		}
	}
	at := from
	for _, sp := range spans {
		if sp.start < at || sp.end > to {
			continue
		}
		plain(text[at:sp.start], at == from && from > 0, false)
		out = append(out, Fragment{Text: flat(text[sp.start:sp.end]), Match: true})
		at = sp.end
	}
	plain(text[at:to], at == from && from > 0, len(bytes.TrimRight(text[to:], " \n\t\r")) > 0)
	return out
}

// flat makes text one line: runs of white space become one space, and
// invalid UTF-8 is replaced.
func flat(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if !strings.ContainsAny(s, "\n\t\r") && !strings.Contains(s, "  ") {
		return s
	}
	var sb strings.Builder
	space := false
	for _, r := range s {
		if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
			if !space {
				sb.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		sb.WriteRune(r)
	}
	return sb.String()
}

// isSpace reports white space between words.
func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }
