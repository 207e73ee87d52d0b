package newsfeed

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestIngestMemoryBounded has 20 upstream connections each send 15 MB of
// an article they never finish, against the default max_buffered_bytes
// (256 MB), in a child process of its own, and holds the child's peak
// RSS (VmHWM) to the budget plus 64 MB. The relay's sum of buffered
// octets passes the budget by no more than what each connection holds
// outside its article's chunks (one read, a slab). Under -race only the
// buffered octets are held to it (the detector multiplies the RSS).
func TestIngestMemoryBounded(t *testing.T) {
	if os.Getenv("NEWSFLOW_INGEST_MEMORY_CHILD") != "" {
		ingestMemoryChild(t)
		return
	}
	if testing.Short() {
		t.Skip("moves 300 MB through loopback")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestIngestMemoryBounded$", "-test.v")
	cmd.Env = append(os.Environ(), "NEWSFLOW_INGEST_MEMORY_CHILD=1", "GOMAXPROCS=2")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var hwm, buffered, budget int64
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.Index(l, "MEMORY "); i >= 0 {
			fmt.Sscanf(l[i:], "MEMORY vmhwm=%d buffered_peak=%d budget=%d", &hwm, &buffered, &budget)
		}
	}
	if hwm == 0 {
		t.Fatalf("child reported no figures:\n%s", out)
	}
	t.Logf("peak RSS %d MB, buffered peak %d MB, budget %d MB", hwm>>20, buffered>>20, budget>>20)
	if limit := budget + 64<<20; hwm > limit && !raceBuild {
		t.Errorf("peak RSS %d MB over the budget plus 64 MB (%d MB)", hwm>>20, limit>>20)
	}
	if limit := budget + 20*128<<10; buffered > limit {
		t.Errorf("buffered octets peaked at %d, over the budget %d and 128 KiB a connection", buffered, budget)
	}
}

// ingestMemoryChild is the child's side: the relay at its defaults, 20
// senders of unfinished 15 MB articles, the figures on standard output.
func ingestMemoryChild(t *testing.T) {
	h := startRelay(t, relayConfig(t, t.TempDir(), ""), nil)
	addr := h.r.Addr().String()
	const conns, each = 20, 15 << 20
	line := bytes.Repeat([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd\r\n"), 1024) // 64 KiB
	var sentAll atomic.Int32
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			peak.Store(max(peak.Load(), h.r.limits.buffered.Load()))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if g, _ := br.ReadString('\n'); !strings.HasPrefix(g, "200") {
			t.Fatalf("greeting %q", g)
		}
		go func() {
			id := "<mem" + strconv.Itoa(i) + "@t>"
			head := string(testArticle(id, "misc.test", "up!x", 0))
			fmt.Fprintf(c, "TAKETHIS %s\r\n%s", id, strings.ReplaceAll(head, "\n", "\r\n"))
			for sent := 0; sent < each; sent += len(line) {
				if _, err := c.Write(line); err != nil {
					return // closed at the end of the test
				}
			}
			sentAll.Add(1)
		}()
	}
	// Every sender has sent its 15 MB or waits on a connection the relay
	// stopped reading (budget full).
	waitFor(t, 120*time.Second, "every sender to finish or be held", func() bool {
		l := &h.r.limits
		l.mu.Lock()
		held := len(l.held)
		l.mu.Unlock()
		return int(sentAll.Load())+held >= conns
	}, nil)
	close(stop)
	hwm := vmHWM(t)
	fmt.Printf("MEMORY vmhwm=%d buffered_peak=%d budget=%d\n", hwm, peak.Load(), int64(h.r.cfg.MaxBufferedBytes))
}

// vmHWM is this process's peak resident set size, from /proc/self/status.
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}
