package main

// newsbench web's load phases: wrk (Debian's), a separate process, drives
// each page kind for a fixed time with keep-alive connections and
// "Accept-Encoding: gzip" (what browsers send), cycling through the kind's
// paths, every page read once before (warm caches). The server runs in
// this process, so a CPU profile (-cpuprofile) is the server's alone.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// wrkScript cycles each wrk thread through the paths in NEWSBENCH_PATHS,
// starting at a different place per thread.
const wrkScript = `
local paths = {}
for line in io.lines(os.getenv("NEWSBENCH_PATHS")) do paths[#paths + 1] = line end
local i = math.random(#paths)
wrk.headers["Accept-Encoding"] = "gzip"
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
`

// wrkResult is one wrk run's summary.
type wrkResult struct {
	rps      float64
	requests int
	p50, p99 time.Duration
	bad      int // non-2xx/3xx answers and socket errors
	// waited is how long wrk's threads waited for a CPU (runDelay, read
	// every 100 ms while it ran: the last moments may be missing).
	waited time.Duration
}

// runWrk loads base with paths for d over conns connections, wrk
// running as setup says (web_pin.go).
func runWrk(setup webSetup, dir, base string, paths []string, conns int, d time.Duration) (wrkResult, error) {
	bin, err := exec.LookPath("wrk")
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk not found (Debian: apt-get install wrk): %w", err)
	}
	list := filepath.Join(dir, "paths")
	if err := os.WriteFile(list, []byte(strings.Join(paths, "\n")+"\n"), 0o644); err != nil {
		return wrkResult{}, err
	}
	script := filepath.Join(dir, "cycle.lua")
	if err := os.WriteFile(script, []byte(wrkScript), 0o644); err != nil {
		return wrkResult{}, err
	}
	args := []string{"-t" + strconv.Itoa(setup.wrkThreads()), "-c" + strconv.Itoa(conns), "-d" + strconv.Itoa(max(1, int(d.Seconds()))) + "s",
		"--latency", "-s", script, base}
	if setup.wrkCPU != "" {
		taskset, err := exec.LookPath("taskset")
		if err != nil {
			return wrkResult{}, fmt.Errorf("wrk on CPU %s: %w", setup.wrkCPU, err)
		}
		args = append([]string{"-c", setup.wrkCPU, bin}, args...)
		bin = taskset
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "NEWSBENCH_PATHS="+list)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w", err)
	}
	done, waited := make(chan struct{}), make(chan time.Duration, 1)
	go func() { // taskset execs wrk: the process is wrk's
		pid, last := strconv.Itoa(cmd.Process.Pid), time.Duration(0)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				waited <- last
				return
			case <-tick.C:
				last = max(last, runDelay(pid))
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	w := <-waited
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w: %s", err, errb.String())
	}
	r, err := parseWrk(out.String())
	r.waited = w
	return r, err
}

// parseWrk reads the numbers of wrk --latency's report.
func parseWrk(s string) (wrkResult, error) {
	var r wrkResult
	var haveRPS bool
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && (f[0] == "50%" || f[0] == "99%"):
			d, err := time.ParseDuration(f[1])
			if err != nil {
				return r, fmt.Errorf("wrk: latency %q: %w", f[1], err)
			}
			if f[0] == "50%" {
				r.p50 = d
			} else {
				r.p99 = d
			}
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %w", sc.Text(), err)
			}
			r.rps, haveRPS = v, true
		case len(f) >= 4 && f[1] == "requests" && f[2] == "in":
			r.requests, _ = strconv.Atoi(f[0])
		case len(f) == 5 && f[0] == "Non-2xx":
			n, _ := strconv.Atoi(f[4])
			r.bad += n
		case len(f) > 2 && f[0] == "Socket" && f[1] == "errors:":
			for i := 2; i+1 < len(f); i += 2 {
				n, _ := strconv.Atoi(strings.TrimSuffix(f[i+1], ","))
				r.bad += n
			}
		}
	}
	if !haveRPS || r.p99 == 0 {
		return r, fmt.Errorf("wrk: no figures in its report:\n%s", s)
	}
	return r, nil
}
