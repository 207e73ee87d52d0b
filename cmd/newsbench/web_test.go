package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"
)

// A report of Debian's wrk --latency (one thread, two connections, with
// the errors lines wrk adds when some requests failed): the figures
// newsbench web takes from it.
func TestParseWrk(t *testing.T) {
	report := `Running 1s test @ http://127.0.0.1:36281/
  1 threads and 2 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    22.17ms    8.40ms  44.62ms   61.80%
    Req/Sec    88.80     29.73   141.00     70.00%
  Latency Distribution
     50%   20.14ms
     75%   28.36ms
     90%   34.18ms
     99%   44.62ms
  89 requests in 1.01s, 5.17MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:     88.46
Transfer/sec:      5.14MB
`
	got, err := parseWrk(report)
	if err != nil {
		t.Fatal(err)
	}
	want := wrkResult{rps: 88.46, requests: 89, p50: 20140 * time.Microsecond, p99: 44620 * time.Microsecond, bad: 7}
	if got != want {
		t.Errorf("parseWrk: %+v, want %+v", got, want)
	}
	if _, err := parseWrk("Running 1s test @ http://127.0.0.1:1/\n"); err == nil {
		t.Error("a report without figures: no error")
	}
}

// -pin re-executes newsbench web under taskset on the server's CPU, its
// arguments kept and wrk's CPU added; the run's medians are the middle
// run's figures.
func TestWebPinAndRuns(t *testing.T) {
	got := pinnedArgs("/bin/newsbench", 0, 1, []string{"-duration", "2s", "-runs", "5"})
	want := []string{"-c", "0", "/bin/newsbench", "web", "-duration", "2s", "-runs", "5", "-wrk-cpu", "1"}
	if !slices.Equal(got, want) {
		t.Errorf("pinnedArgs: %q, want %q", got, want)
	}
	if s := pinnedSetup("1"); s.wrkThreads() != 1 || s.wrkCPU != "1" {
		t.Errorf("pinned setup: %+v, wrk -t%d", s, s.wrkThreads())
	}
	if s := sharedSetup("taskset is not installed"); s.wrkThreads() != 2 || !regexp.MustCompile(`^shared: .*\(-pin asked for, but taskset is not installed\)$`).MatchString(s.desc) {
		t.Errorf("shared setup: %+v, wrk -t%d", s, s.wrkThreads())
	}
	k := kindResult{runs: []wrkResult{
		{rps: 30, p50: 3 * time.Millisecond, p99: 9 * time.Millisecond},
		{rps: 10, p50: 1 * time.Millisecond, p99: 7 * time.Millisecond},
		{rps: 20, p50: 2 * time.Millisecond, p99: 8 * time.Millisecond},
	}}
	k.medianRuns()
	if k.rps != 20 || k.p50 != 2*time.Millisecond || k.p99 != 8*time.Millisecond {
		t.Errorf("medians of three runs: %v req/s, p50 %v, p99 %v; want 20, 2ms, 8ms", k.rps, k.p50, k.p99)
	}
}

// newsbench web, small and short, in the shared setup (the pinned one
// re-executes the newsbench binary, which a test binary is not): the
// setup line, a row for each page kind with each run's p99, and the
// result lines.
func TestWebSmall(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Fatalf("wrk is needed (Debian: apt-get install wrk): %v", err)
	}
	var out, errb bytes.Buffer
	args := []string{"-pin=false", "-articles", "200", "-conns", "4", "-duration", "1s", "-runs", "2", "-views", "100", "-search-articles", "1000"}
	if err := benchWeb(args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	for _, re := range []string{
		`(?m)^setup: shared: server GOMAXPROCS=\d+ and wrk -t2, both on every CPU$`,
		`(?m)^cached pages: wrk -t2 -c4, 2 runs of 1s per kind`,
		`(?m)^article\s+\d+\s+\S+\s+\S+\s+\S+ \S+\s+`,
		`(?m)^group list\s+\d+\s+\S+\s+\S+\s+\S+ \S+\s+`,
		`(?m)^result web setup "shared"$`,
		`(?m)^result web thread_list_API_p99_max_us \d+$`,
		`(?m)^result web group_server_waited_pct [\d.]+$`,
		`(?m)^result web article_wrk_waited_pct [\d.]+$`,
		`(?m)^result web commands_per_1000_views_warm \d+$`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("no match for %s in:\n%s", re, out.String())
		}
	}
}
