package newsfeed

import (
	"testing"
	"time"
)

// FuzzArticleLogLine: the parser never panics, and a parsed line formats
// back to a line that parses to the same fields.
func FuzzArticleLogLine(f *testing.F) {
	for _, s := range []string{
		"2026-11-24T01:06:45.123Z <a@b> ingest accepted from=192.0.2.7:4211 size=2013 peers=inn1,inn2\n",
		"2026-11-24T01:06:45.123Z <a@b> peer=inn1 rejected code=437 reason=\"Bad \\\"Path\\\" x\"\n",
		"2026-11-24T01:06:45Z <a@b> inject refused",
		"2026-11-24T01:06:45.123Z <a@b> ingest accepted k=\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseArticleLogLine(s)
		if err != nil || l.Time.UTC().Year() > 9999 || l.Time.UTC().Year() < 0 {
			return
		}
		var kv []string
		for k, v := range l.Fields {
			kv = append(kv, k, v)
		}
		if len(kv) > 0 || len(l.Fields) == 0 {
			// Formatting needs who and verdict without spaces; the parser
			// guarantees that (they are space-separated fields).
			line := appendArticleLogLine(nil, l.Time, l.MessageID, l.Who, l.Verdict, kv...)
			l2, err := ParseArticleLogLine(string(line))
			if err != nil {
				t.Fatalf("%q parsed, formatted as %q, which does not parse: %v", s, line, err)
			}
			if !l2.Time.Equal(l.Time.Truncate(time.Millisecond)) || l2.MessageID != l.MessageID || l2.Who != l.Who ||
				l2.Verdict != l.Verdict || len(l2.Fields) != len(l.Fields) {
				t.Fatalf("%q -> %q -> %+v, want %+v", s, line, l2, l)
			}
			for k, v := range l.Fields {
				if l2.Fields[k] != v {
					t.Fatalf("%q: field %s %q came back as %q", s, k, v, l2.Fields[k])
				}
			}
		}
	})
}
