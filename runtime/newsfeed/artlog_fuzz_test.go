package newsfeed

import (
	"strings"
	"testing"
)

// FuzzArticleLogLine: the reader never panics on any sequence of lines,
// and an article line's answers name only peers of the table.
func FuzzArticleLogLine(f *testing.F) {
	for _, s := range []string{
		"* 2026-11-24 peers=inn1,inn2\n01:06:45.123 <a@b> news1 + 2013 +=\n",
		"* 2026-11-24 peers=inn1\n01:06:45.123 <a@b> >inn1 - code=437 reason=\"Bad \\\"Path\\\" x\"\n",
		"* 2026-11-24 peers=\n01:06:45.123 <a@b> inject + 10\n01:00:00.000 * stats peer name=a run=1 offered=3\n",
		"* 2026-11-24 peers=a\n01:06:45.123 <a@b> x - k=\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var rd ArticleLogReader
		for _, line := range strings.Split(s, "\n") {
			evs, err := rd.Line(line)
			if err != nil {
				continue
			}
			for _, e := range evs {
				if name := e.Peer(); name != "" && e.MessageID == "" {
					t.Fatalf("%q: an answer without a message-id", line)
				}
			}
		}
	})
}
