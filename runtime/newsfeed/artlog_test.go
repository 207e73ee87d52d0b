package newsfeed

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// readArticleLog decodes every line of the log's files, oldest first.
func readArticleLog(t *testing.T, path string, keep int) []ArticleLogLine {
	t.Helper()
	files := articleLogFiles(path, keep)
	var out []ArticleLogLine
	for i := len(files) - 1; i >= 0; i-- {
		f, err := os.Open(files[i])
		if err != nil {
			t.Fatal(err)
		}
		var rd ArticleLogReader
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			evs, err := rd.Line(sc.Text())
			if err != nil {
				t.Fatalf("%s: %v", files[i], err)
			}
			out = append(out, evs...)
		}
		f.Close()
	}
	return out
}

// TestArticleLogLine: an article's line is written once every peer has
// answered, with the answers on it; what the log says reads back as the
// events that were recorded.
func TestArticleLogLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "news")
	a, err := openArticleLog(path, 0, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 24, 1, 6, 45, 123e6, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	a.add(t0, "<a@b>", "ingest", "accepted", "from", "news1", "size", "2013", "peers", "inn1,inn2,sink")
	a.add(ms(1), "<r@b>", "ingest", "rejected", "from", "192.0.2.7", "reason", `Bad "Path" x`)
	a.add(ms(2), "<f@b>", "ingest", "refused", "from", "news1")
	a.add(ms(3), "<i@b>", "inject", "accepted", "size", "10", "peers", "")
	a.add(ms(4), "<a@b>", "peer=inn1", "accepted", "code", "239")
	a.add(ms(5), "<a@b>", "peer=sink", "deferred", "code", "431")
	a.add(ms(6), "<a@b>", "peer=inn2", "refused", "code", "438")
	a.add(ms(7), "<a@b>", "peer=sink", "rejected", "code", "439", "reason", "no")
	a.add(ms(8), "<a@b>", "peer=inn1", "accepted", "code", "239") // after the line: a line of its own
	if ms, n := a.latency("inn1"); ms != 4 || n != 1 {
		t.Errorf("inn1 latency %d ms over %d answers, want 4 over 1", ms, n)
	}
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	wantText := "* 2026-11-24 peers=inn1,inn2,sink\n" +
		"01:06:45.124 <r@b> 192.0.2.7 - reason=\"Bad \\\"Path\\\" x\"\n" +
		"01:06:45.125 <f@b> news1 =\n" +
		"01:06:45.126 <i@b> inject + 10\n" +
		"01:06:45.130 <a@b> >sink - code=439 reason=no\n" +
		"01:06:45.123 <a@b> news1 + 2013 +=-\n" +
		"01:06:45.131 <a@b> >inn1 + code=239\n"
	if d := cmp.Diff(wantText, string(b)); d != "" {
		t.Errorf("the log (-want +got):\n%s", d)
	}
	type ev struct{ id, who, verdict, fields string }
	var got []ev
	for _, l := range readArticleLog(t, path, 0) {
		got = append(got, ev{l.MessageID, l.Who, l.Verdict, fmt.Sprint(l.Fields)})
	}
	want := []ev{
		{"<r@b>", "ingest", "rejected", `map[from:192.0.2.7 reason:Bad "Path" x]`},
		{"<f@b>", "ingest", "refused", "map[from:news1]"},
		{"<i@b>", "inject", "accepted", "map[from:inject peers: size:10]"},
		{"<a@b>", "peer=sink", "rejected", "map[code:439 reason:no]"},
		{"<a@b>", "ingest", "accepted", "map[from:news1 peers:inn1,inn2,sink size:2013]"},
		{"<a@b>", "peer=inn1", "accepted", "map[]"},
		{"<a@b>", "peer=inn2", "refused", "map[]"},
		{"<a@b>", "peer=sink", "rejected", "map[]"},
		{"<a@b>", "peer=inn1", "accepted", "map[code:239]"},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(ev{})); d != "" {
		t.Errorf("events read back (-want +got):\n%s", d)
	}
	var rd ArticleLogReader
	for _, bad := range []string{"01:00:00.000 <a@b> x +", "* 2026-13-01 peers=", "x <a@b> ingest +"} {
		if _, err := rd.Line(bad); err == nil {
			t.Errorf("Line(%q): no error", bad)
		}
	}
	rd.Line("* 2026-11-24 peers=a")
	for _, bad := range []string{"01:00:00.000 a@b x +", "01:00:00.000 <a@b> x + 1 ++", "01:00:00.000 <a@b> x ! 1",
		`01:00:00.000 <a@b> >p - k="x`, "01:00:00.000 * nostats x"} {
		if _, err := rd.Line(bad); err == nil {
			t.Errorf("Line(%q): no error", bad)
		}
	}
}

// TestArticleLogPendingWritten: an article some peer does not answer is
// written with q for it at close, and its answer comes on a line of its
// own.
func TestArticleLogPendingWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "news")
	a, err := openArticleLog(path, 0, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 24, 23, 59, 59, 0, time.UTC)
	a.add(t0, "<a@b>", "ingest", "accepted", "from", "news1", "size", "5", "peers", "up,down")
	a.add(t0.Add(time.Second), "<a@b>", "peer=up", "accepted")
	if evs := a.pendingEvents("<a@b>"); len(evs) != 3 || evs[2].Verdict != "queued" {
		t.Errorf("pending events: %+v", evs)
	}
	a.mu.Lock()
	a.writePendingLocked(t0.Add(pendingWait+time.Second), maxPending)
	a.mu.Unlock()
	a.add(t0.Add(2*time.Hour), "<a@b>", "peer=down", "accepted", "code", "239")
	a.close()
	var verdicts []string
	for _, l := range readArticleLog(t, path, 0) {
		verdicts = append(verdicts, l.Time.Format("01-02T15")+" "+l.Who+" "+l.Verdict)
	}
	want := []string{"11-24T23 ingest accepted", "11-24T23 peer=up accepted", "11-24T23 peer=down queued", "11-25T01 peer=down accepted"}
	if d := cmp.Diff(want, verdicts); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestArticleLogRotate: past the size the file is rotated, and only keep
// old files stay; every file starts with its header, and the lines read
// back in order.
func TestArticleLogRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "news")
	a, err := openArticleLog(path, 200, 2, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	for i := range 20 {
		a.add(now.Add(time.Duration(i)*time.Second), fmt.Sprintf("<%d@b>", i), "ingest", "accepted", "from", strings.Repeat("x", i%3+1), "size", "1")
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
	for _, l := range readArticleLog(t, path, 2) {
		if !l.Time.After(last) {
			t.Errorf("line at %v not after %v", l.Time, last)
		}
		last = l.Time
	}
	if want := now.Add(19 * time.Second); !last.Equal(want) {
		t.Errorf("newest line at %v, want %v", last, want)
	}
}

// TestArticleLogSize: with 20 peers, every one answering, an article
// takes at most 100 octets of log, so 100 MB hold a million articles.
// The message-ids are 40 octets, a common length ("<" + 24 random
// characters + "@news.example.org>" is 43); the feeder is named news1.
func TestArticleLogSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "news")
	a, err := openArticleLog(path, 0, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var peers []string
	for i := range 20 {
		peers = append(peers, fmt.Sprintf("peer%02d", i))
	}
	list := strings.Join(peers, ",")
	t0 := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	const n = 10000
	for i := range n {
		id := fmt.Sprintf("<%025x@news.example>", i)
		at := t0.Add(time.Duration(i) * time.Millisecond)
		a.add(at, id, "ingest", "accepted", "from", "news1", "size", "12345", "peers", list)
		for j, p := range peers {
			v := "accepted"
			if j%5 == 0 {
				v = "refused"
			}
			a.add(at.Add(time.Millisecond), id, "peer="+p, v, "code", "239")
		}
	}
	a.close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	per := float64(fi.Size()) / n
	t.Logf("%d articles at 20 peers: %d octets, %.1f octets an article; 100 MB hold %.0f articles", n, fi.Size(), per, 100e6/per)
	if per > 100 {
		t.Errorf("%.1f octets an article, want at most 100", per)
	}
}
