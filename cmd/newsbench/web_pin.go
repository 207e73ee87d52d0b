package main

// Where newsbench web's two sides run.
//
// On a small machine the server and wrk compete for the same cores, and
// a request's latency then includes the time the scheduler gives wrk's
// threads instead of the server (on 2 cores, wrk -t2 against a server
// with GOMAXPROCS=2: p99 of 4-6 ms with a p50 of 0.3 ms). That is a
// figure of the machine more than of newsweb, and it moves with whatever
// else runs. So by default (-pin) the cached-page load runs pinned: the
// benchmark re-executes itself under taskset on the first CPU it may use,
// with GOMAXPROCS=1 (newsweb and the nntptest server it reads from are
// that process), and runs wrk with one thread under taskset on the
// second. -pin=false keeps the shared setup: GOMAXPROCS as the runtime
// chooses and wrk -t2, both on every core. Without taskset or with fewer
// than two CPUs the run falls back to shared and says why.

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// webSetup is where wrk runs, and the line that tells the reader.
type webSetup struct {
	// wrkCPU is the CPU taskset pins wrk to (with one thread); "" when
	// wrk runs unpinned with two threads.
	wrkCPU string
	desc   string
}

// wrkThreads is wrk's -t for the setup.
func (s webSetup) wrkThreads() int {
	if s.wrkCPU != "" {
		return 1
	}
	return 2
}

// sharedSetup describes the unpinned setup; why, when not "", is why
// pinning was not done although asked for.
func sharedSetup(why string) webSetup {
	d := fmt.Sprintf("shared: server GOMAXPROCS=%d and wrk -t2, both on every CPU", runtime.GOMAXPROCS(0))
	if why != "" {
		d += " (-pin asked for, but " + why + ")"
	}
	return webSetup{desc: d}
}

// pinnedSetup describes the setup of the re-executed, pinned process.
func pinnedSetup(wrkCPU string) webSetup {
	return webSetup{wrkCPU: wrkCPU, desc: fmt.Sprintf("pinned: server (newsweb and nntptest, one process) on CPU %s with GOMAXPROCS=%d; wrk -t1 on CPU %s",
		allowedCPUs(), runtime.GOMAXPROCS(0), wrkCPU)}
}

// pinCPUs picks the server's CPU and wrk's: the first two this process
// may run on. why says what is missing when pinning cannot be done.
func pinCPUs() (server, wrk int, why string) {
	if _, err := exec.LookPath("taskset"); err != nil {
		return 0, 0, "taskset is not installed (Debian: util-linux)"
	}
	cpus, err := affinity()
	if err != nil {
		return 0, 0, "the CPU affinity is unknown: " + err.Error()
	}
	if len(cpus) < 2 {
		return 0, 0, fmt.Sprintf("this process may use %d CPU", len(cpus))
	}
	return cpus[0], cpus[1], ""
}

// affinity is the CPUs this process may run on, in order.
func affinity() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// allowedCPUs lists the CPUs this process may run on ("?" when unknown).
func allowedCPUs() string {
	cpus, err := affinity()
	if err != nil {
		return "?"
	}
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// pinnedArgs are the arguments that re-execute newsbench web pinned:
// taskset's, then the benchmark's own with -wrk-cpu added.
func pinnedArgs(self string, server, wrk int, args []string) []string {
	out := []string{"-c", strconv.Itoa(server), self, "web"}
	out = append(out, args...)
	return append(out, "-wrk-cpu", strconv.Itoa(wrk))
}

// runPinned re-executes newsbench web with args under taskset on server's
// CPU with GOMAXPROCS=1, wrk to run on wrk's; its report is this one's.
func runPinned(server, wrk int, args []string, stdout, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	cmd := exec.Command(taskset, pinnedArgs(self, server, wrk, args)...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pinned run: %w", err)
	}
	return nil
}
