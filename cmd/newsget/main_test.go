package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// TestExitStatus: 0 when every file is complete, 1 when one is not, 2 for
// a mistake or a refused NZB, 3 when a quota stops the download; the
// summary says what happened and the plain progress lines appear when
// stderr is not a terminal.
func TestExitStatus(t *testing.T) {
	s := nntptest.Start(t, nntptest.Options{})
	s.AddGroup(nntptest.Group{Name: "alt.binaries.newsflow"})
	p := poster.Posting{Name: "e.bin", Data: poster.RandomData(5, 9000), PartSize: 3000, Group: "alt.binaries.newsflow", IDPrefix: "exit"}
	for n := 1; n <= 2; n++ { // part 3 is missing
		if err := s.AddArticle(nntptest.Article{MessageID: p.MessageID(n), Raw: p.Article(n)}); err != nil {
			t.Fatal(err)
		}
	}
	whole := poster.Posting{Name: "w.bin", Data: p.Data[:6000], PartSize: 3000, Group: p.Group, IDPrefix: "exitw"}
	for n := 1; n <= 2; n++ {
		s.AddArticle(nntptest.Article{MessageID: whole.MessageID(n), Raw: whole.Article(n)})
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	url := "nntp://" + s.HostPort()
	quota := write("quota.toml", []byte(fmt.Sprintf("daily_quota = 100\n[[server]]\nhost = \"127.0.0.1\"\nport = %d\n", s.Port())))
	for i, tc := range []struct {
		args []string
		code int
		out  string // regexp on stdout
		err  string // regexp on stderr
	}{
		{[]string{"-server", url, "-progress", "1ms", write("w.nzb", poster.NZB(whole))}, 0,
			`(?m)^complete: w.bin \(6000 bytes\)\nsummary: files 1 complete, 0 incomplete; \d+ bytes received, 6000 written; segments 2 done, 0 missing; requests 2; retries: none; [\d.]+ MiB/s in`,
			`(?m)^newsget: files \d/1 segments \d/2`},
		{[]string{"-q", "-server", url, write("p.nzb", poster.NZB(p))}, 1,
			`(?m)^incomplete: e.bin.part: 1 of 3 segments missing on every server\n  missing segment 3 bytes 6000-8999 \(3000 bytes\)$`, `^$|segment missing`},
		{[]string{"-q", "-server", "nntp://127.0.0.1:1?connections=x", "a.nzb"}, 2, ``, `connections="x" is not a number`},
		{[]string{"-q", "-server", url, write("bad.nzb", []byte("<nzb><file"))}, 2, `(?m)^refused: .*bad.nzb: nzb: `, ``},
		{[]string{"-q", "-server", url}, 2, ``, `usage: newsget`},
		{[]string{"-q", "-server", url, "-rate", "fast", "a.nzb"}, 2, ``, `(?m)^newsget: -rate: bad size "fast"`},
		{[]string{"-q", "-config", quota, "-o", filepath.Join(dir, "q"), write("w2.nzb", poster.NZB(whole))}, 3,
			`(?m)^stopped: daily quota of 100 B reached`, ``},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := tc.args
			if !contains(args, "-o") {
				args = append([]string{"-o", filepath.Join(dir, fmt.Sprintf("out%d", i))}, args...)
			}
			code := Main(args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout.String(), stderr.String())
			}
			if !regexp.MustCompile(tc.out).MatchString(stdout.String()) {
				t.Errorf("stdout does not match %s:\n%s", tc.out, stdout.String())
			}
			if tc.err != "" && !regexp.MustCompile(tc.err).MatchString(stderr.String()) {
				t.Errorf("stderr does not match %s:\n%s", tc.err, stderr.String())
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestProgressBar(t *testing.T) {
	p := newsget.Progress{Files: 3, FilesDone: 1, Segments: 10, Done: 4, Received: 10e6, TotalBytes: 30e6, Elapsed: 2 * time.Second, Connections: 8}
	var m speedMeter
	speed, eta := m.add(p)
	want := "[############------------------]  40% files 1/3 4.8 MiB/s ETA 4s conns 8"
	if got := progressBar(p, speed, eta, 30); got != want {
		t.Errorf("progressBar:\n got %q\nwant %q", got, want)
	}
	if got := progressLine(p, speed, eta); !strings.HasPrefix(got, "newsget: files 1/3 segments 4/10 (0 missing) 9.5 MiB 4.8 MiB/s ETA 4s") {
		t.Errorf("progressLine: %q", got)
	}
}

// TestManyMissing: an NZB of many segments that no server has (here
// 20,000; the NZB limit is 1,000,000) prints a
// summary of a few lines, not a line per segment on stdout or stderr, and
// the .incomplete sidecar lists every missing segment.
func TestManyMissing(t *testing.T) {
	const n = 20_000
	s := nntptest.Start(t, nntptest.Options{}) // empty: every BODY is 430
	var nzb bytes.Buffer
	nzb.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<nzb><file subject="&quot;many.bin&quot; yEnc (1/1)" date="1700000000"><groups><group>alt.test</group></groups><segments>`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&nzb, `<segment bytes="700000" number="%d">%d@many</segment>`, i, i)
	}
	nzb.WriteString("</segments></file></nzb>\n")
	dir := t.TempDir()
	nzbPath := filepath.Join(dir, "many.nzb")
	if err := os.WriteFile(nzbPath, nzb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var stdout, stderr bytes.Buffer
	code := Main([]string{"-q", "-o", filepath.Join(dir, "out"), "-server", "nntp://" + s.HostPort() + "?pipeline=20", nzbPath}, &stdout, &stderr)
	runtime.ReadMemStats(&after)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr.String())
	}
	if lines := strings.Count(stdout.String(), "\n"); lines > newsget.MaxMissingListed+5 {
		t.Errorf("stdout has %d lines for one incomplete file:\n%.2000s", lines, stdout.String())
	}
	if lines := strings.Count(stderr.String(), "\n"); lines > 2*newsget.MaxMissingListed+10 {
		t.Errorf("stderr has %d lines for one incomplete file:\n%.2000s", lines, stderr.String())
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("... and %d more missing segments, listed in ", n-newsget.MaxMissingListed)) {
		t.Errorf("stdout does not say how many more are missing:\n%.2000s", stdout.String())
	}
	side, err := os.ReadFile(filepath.Join(dir, "out", "many.bin.incomplete"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(side), "missing segment "); got != n {
		t.Errorf("the sidecar lists %d missing segments, want %d", got, n)
	}
	// A generous bound: the heap in use after the run (the Engine is
	// gone) stays near what it was, and the run allocated well under 20 KB
	// per segment.
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 64<<20 {
		t.Errorf("heap in use grew by %d MB", grew>>20)
	}
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 20<<10 {
		t.Errorf("%d bytes allocated per segment", per)
	}
}
