package main

import (
	"bytes"
	"regexp"
	"testing"
)

// TestWebSearchSmall runs newsbench web-search over 2,000 articles: the
// table's rows and every result line are there.
func TestWebSearchSmall(t *testing.T) {
	var out, errb bytes.Buffer
	if err := benchWebSearch([]string{"-articles", "2000", "-queries", "20"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	for _, re := range []string{
		`(?m)^body search, 20 queries: p50 / p95\s+\S+ / \S+$`,
		`(?m)^body file\s+[\d.]+ MB \(\d+ bytes an article\)$`,
		`(?m)^result web_search body_p95_us \d+$`,
		`(?m)^result web_search index_articles_per_s \d+$`,
		`(?m)^result web_search load_ms \d+$`,
		`(?m)^result web_search heap_bytes -?\d+$`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("no match for %s in:\n%s", re, out.String())
		}
	}
}
