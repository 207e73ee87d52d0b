package newsfeed

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestArticleLogLine: format -> parse is identity, quoted values included.
func TestArticleLogLine(t *testing.T) {
	now := time.Date(2026, 11, 24, 1, 6, 45, 123e6, time.UTC)
	cases := []struct {
		who, verdict string
		kv           []string
		want         string
	}{
		{"ingest", "accepted", []string{"from", "192.0.2.7:4211", "size", "2013", "peers", "inn1,inn2"},
			"2026-11-24T01:06:45.123Z <a@b> ingest accepted from=192.0.2.7:4211 size=2013 peers=inn1,inn2\n"},
		{"peer=inn1", "rejected", []string{"code", "437", "reason", `Bad "Path" x`},
			"2026-11-24T01:06:45.123Z <a@b> peer=inn1 rejected code=437 reason=\"Bad \\\"Path\\\" x\"\n"},
		{"ingest", "accepted", []string{"peers", ""},
			"2026-11-24T01:06:45.123Z <a@b> ingest accepted peers=\"\"\n"},
		{"inject", "refused", nil, "2026-11-24T01:06:45.123Z <a@b> inject refused\n"},
	}
	for _, c := range cases {
		got := string(appendArticleLogLine(nil, now, "<a@b>", c.who, c.verdict, c.kv...))
		if got != c.want {
			t.Errorf("format:\n got %q\nwant %q", got, c.want)
			continue
		}
		l, err := ParseArticleLogLine(got)
		if err != nil {
			t.Errorf("parse %q: %v", got, err)
			continue
		}
		want := ArticleLogLine{Time: now, MessageID: "<a@b>", Who: c.who, Verdict: c.verdict, Fields: map[string]string{}}
		for i := 0; i+1 < len(c.kv); i += 2 {
			want.Fields[c.kv[i]] = c.kv[i+1]
		}
		if diff := cmp.Diff(want, l); diff != "" {
			t.Errorf("parse %q (-want +got):\n%s", got, diff)
		}
	}
	for _, bad := range []string{"", "x <a@b> ingest accepted", "2026-11-24T01:06:45.123Z a@b ingest accepted",
		"2026-11-24T01:06:45.123Z <a@b> ingest accepted k", `2026-11-24T01:06:45.123Z <a@b> ingest accepted k="x`,
		`2026-11-24T01:06:45.123Z <a@b> ingest accepted k="x"y`} {
		if _, err := ParseArticleLogLine(bad); err == nil {
			t.Errorf("ParseArticleLogLine(%q): no error", bad)
		}
	}
}

// TestArticleLogRotate: past the size the file is rotated, and only keep
// old files stay; every line is in one of the files, newest file first.
func TestArticleLogRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "news")
	a, err := openArticleLog(path, 200, 2, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	for i := range 20 {
		a.add(now.Add(time.Duration(i)*time.Second), "<a@b>", "ingest", "accepted", "n", strings.Repeat("x", i%3+1))
	}
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	files := articleLogFiles(path, 2)
	if diff := cmp.Diff([]string{path, path + ".1", path + ".2"}, files); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Errorf("%s.3 kept beyond article_log_keep = 2", path)
	}
	var last time.Time
	for i := len(files) - 1; i >= 0; i-- { // oldest first: times rise
		b, err := os.ReadFile(files[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, ln := range strings.SplitAfter(string(b), "\n") {
			if ln == "" {
				continue
			}
			l, err := ParseArticleLogLine(ln)
			if err != nil {
				t.Fatal(err)
			}
			if !l.Time.After(last) {
				t.Errorf("%s: line at %v not after %v", files[i], l.Time, last)
			}
			last = l.Time
		}
	}
	if want := now.Add(19 * time.Second); !last.Equal(want) {
		t.Errorf("newest line at %v, want %v", last, want)
	}
}
