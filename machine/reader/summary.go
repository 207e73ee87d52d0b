package reader

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// A Summary is what threading and thread lists need of an article: the
// overview fields (RFC 3977 §8.4.2) plus In-Reply-To when the article's
// header was read. It is built from OVER/XOVER lines, from HDR answers
// merged by article number, or from HEAD.
type Summary struct {
	Number     int64     // article number in the group
	MessageID  string    // with angle brackets
	References []string  // message-ids from References, oldest first
	InReplyTo  string    // first message-id of In-Reply-To; only known from HEAD
	Subject    string    // as sent (MIME encoded-words are the display's business)
	From       string    // as sent
	Date       time.Time // zero when absent or unparseable
	Bytes      int64     // :bytes, 0 when unknown
	Lines      int64     // :lines, 0 when unknown
}

// Parents returns the message-ids the article names as its ancestors,
// oldest first: References, or when there is none In-Reply-To (RFC 5322
// §3.6.4 replies that only set In-Reply-To).
func (s Summary) Parents() []string {
	if len(s.References) > 0 {
		return s.References
	}
	if s.InReplyTo != "" {
		return []string{s.InReplyTo}
	}
	return nil
}

// parseDate is proto.ParseArticleDate, with the zero time for what it refuses.
func parseDate(v string) time.Time {
	if strings.TrimSpace(v) == "" {
		return time.Time{}
	}
	t, err := proto.ParseArticleDate(v)
	if err != nil {
		return time.Time{}
	}
	return t
}

// messageID returns v trimmed if it is an NNTP message-id, else "".
func messageID(v string) string {
	v = strings.TrimSpace(v)
	if proto.ValidNNTPMessageID(v) != nil {
		return ""
	}
	return v
}

// SummaryFromOverview converts one parsed OVER/XOVER line.
func SummaryFromOverview(o proto.Overview) Summary {
	return Summary{
		Number:     o.Number,
		MessageID:  messageID(o.MessageID),
		References: proto.ParseReferences(o.References),
		Subject:    o.Subject,
		From:       o.From,
		Date:       parseDate(o.Date),
		Bytes:      o.Bytes,
		Lines:      o.Lines,
	}
}

// SummaryFromHeader converts the header of article number n (from HEAD).
func SummaryFromHeader(n int64, h proto.Header) Summary {
	s := Summary{
		Number:     n,
		MessageID:  messageID(h.Get(proto.HeaderMessageID)),
		References: h.References(),
		Subject:    h.Subject(),
		From:       h.From(),
		Date:       parseDate(h.Get(proto.HeaderDate)),
	}
	if irt := proto.ParseReferences(h.Get("In-Reply-To")); len(irt) > 0 {
		s.InReplyTo = irt[0]
	}
	if v, err := h.Lines(); err == nil {
		s.Lines = v
	}
	if v, err := h.Bytes(); err == nil {
		s.Bytes = v
	}
	return s
}

// hdrFields are the header fields the HDR strategy asks for, in order.
var hdrFields = [...]string{"Message-ID", "References", "Subject", "From", "Date"}

// setField stores the value of one HDR field in s. XHDR's "(none)" (INN) and
// an empty value mean the article has no such field.
func (s *Summary) setField(field, v string) {
	if v == "(none)" {
		v = ""
	}
	switch field {
	case "Message-ID":
		s.MessageID = messageID(v)
	case "References":
		s.References = proto.ParseReferences(v)
	case "Subject":
		s.Subject = v
	case "From":
		s.From = v
	case "Date":
		s.Date = parseDate(v)
	}
}

// compareSummary is the canonical order of summaries: by message-id, then
// number, then every other field, so that sorting is deterministic whatever
// the input order (equal summaries are interchangeable).
func compareSummary(a, b *Summary) int {
	if c := strings.Compare(a.MessageID, b.MessageID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Number, b.Number); c != 0 {
		return c
	}
	if c := a.Date.Compare(b.Date); c != 0 {
		return c
	}
	if c := slices.Compare(a.References, b.References); c != 0 {
		return c
	}
	if c := strings.Compare(a.InReplyTo, b.InReplyTo); c != 0 {
		return c
	}
	if c := strings.Compare(a.Subject, b.Subject); c != 0 {
		return c
	}
	if c := strings.Compare(a.From, b.From); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Bytes, b.Bytes); c != 0 {
		return c
	}
	return cmp.Compare(a.Lines, b.Lines)
}

// MergeSummaries returns existing with newer appended, where an article of
// newer replaces the one of existing with the same number and message-id
// (an overlapping range fetched again), and any of existing with number 0
// and the same message-id (an article posted through us, put in the list
// before the server numbered it). Neither input is modified.
func MergeSummaries(existing, newer []Summary) []Summary {
	type key struct {
		n  int64
		id string
	}
	seen := make(map[key]bool, 2*len(newer))
	for i := range newer {
		seen[key{newer[i].Number, newer[i].MessageID}] = true
		seen[key{0, newer[i].MessageID}] = true
	}
	out := make([]Summary, 0, len(existing)+len(newer))
	for _, s := range existing {
		if !seen[key{s.Number, s.MessageID}] {
			out = append(out, s)
		}
	}
	return append(out, newer...)
}
