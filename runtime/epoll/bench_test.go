//go:build linux

package epoll

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/ingest"
	"github.com/newsflow/newsflow/runtime/goroutine"
	"github.com/newsflow/newsflow/runtime/testpeer/loopback"
	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

// feedRound sends n articles (cycling through arts) over conns new
// connections to the sink at addr with runtime r (for this runtime, spread
// over loops Loops), and returns the time and the process's CPU time (feeders and
// sink together) from the Feeds' start to their graceful end.
func feedRound(tb testing.TB, r rt, addr string, arts []stored, src machine.BodySource, n, conns, loops int) (wall, cpu time.Duration) {
	var cs []conn
	var ls []*Loop
	for i := 0; i < conns; i++ {
		if r.name == "epoll" {
			if len(ls) < loops {
				ls = append(ls, newLoop(tb, Options{Bodies: src}))
			}
			c, err := ls[i%loops].Dial(context.Background(), addr)
			if err != nil {
				tb.Fatal(err)
			}
			cs = append(cs, c)
		} else {
			cs = append(cs, r.dial(tb, addr, src))
		}
	}
	ready := make(chan *feed.Feed, conns)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			feedOne(tb, c, arts, n/conns, ready, start)
		}()
	}
	for range cs {
		<-ready
	}
	t0, cpu0 := time.Now(), cpuTime()
	close(start)
	wg.Wait()
	return time.Since(t0), cpuTime() - cpu0
}

// feedOne sets up one connection (handshake), says so on ready, waits for
// start and feeds n articles.
func feedOne(tb testing.TB, c conn, arts []stored, n int, ready chan<- *feed.Feed, start <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := handshake.New(time.Now(), handshake.Config{Stream: true})
	var hs handshake.Ready
	err := c.Run(ctx, h, func(time.Time) error {
		if e, ok := h.NextEvent(); ok {
			if rd, ok := e.(handshake.Ready); ok {
				hs = rd
				return ErrStop
			}
			return fmt.Errorf("handshake: %#v", e)
		}
		return nil
	})
	if err != nil || !hs.Streaming {
		tb.Errorf("handshake: %v, %#v", err, hs)
		ready <- nil
		return
	}
	f := feed.New(time.Now(), feed.Config{Streaming: true})
	offered, done := 0, 0
	ready <- f
	<-start
	err = c.Run(ctx, f, func(now time.Time) error {
		for {
			e, ok := f.NextEvent()
			if !ok {
				break
			}
			switch e := e.(type) {
			case feed.WantMore:
				for k := 0; k < e.N && offered < n; k++ {
					f.Offer(now, arts[offered%len(arts)].Article)
					offered++
				}
			case feed.Accepted, feed.Refused, feed.Deferred:
				done++
			case feed.Rejected, feed.Requeue:
				return fmt.Errorf("feed: %#v", e)
			}
		}
		if done == n {
			f.Close(now)
		}
		return nil
	})
	if err != nil || done != n {
		tb.Errorf("feed: %v after %d of %d articles", err, done, n)
	}
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFeed measures Feed connections (one, or four at once: on this
// runtime on one Loop, or two) into runtime/testpeer/nullpeer over loopback on each
// runtime, interleaved: six rounds, each runtime in turn (alternating
// which goes first), b.N articles per runtime in all. The
// articles come from a file as from the spool: 2 KB ones copied in with
// the commands (drive.BodyAppender), 500 KB ones by sendfile. It
// reports each runtime's median articles/s, MB/s and CPU time per article
// (feeder and sink, which share the process), and the ratio epoll /
// goroutine of articles/s.
func BenchmarkFeed(b *testing.B) {
	for _, size := range []struct {
		name  string
		n     int
		bytes int
		conns int
		loops int
	}{{"2KB", 2000, 2 << 10, 1, 1}, {"500KB", 40, 500 << 10, 1, 1},
		{"2KB-4conns-1loop", 2000, 2 << 10, 4, 1}, {"2KB-4conns-2loops", 2000, 2 << 10, 4, 2}} {
		b.Run(size.name, func(b *testing.B) {
			arts := makeArticles("bench", size.n, size.bytes)
			src := newFileStore(b, arts)
			var total int64
			for _, a := range arts {
				total += a.Size
			}
			avg := float64(total) / float64(len(arts))
			s, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const rounds = 6
			per := max(b.N/rounds/size.conns, 1) * size.conns
			rates := map[string][]float64{}
			cpus := map[string][]float64{}
			b.ResetTimer()
			for i := 0; i < rounds; i++ {
				order := runtimes
				if i%2 == 1 {
					order = []rt{runtimes[1], runtimes[0]}
				}
				for _, r := range order {
					wall, cpu := feedRound(b, r, s.Addr(), arts, src, per, size.conns, size.loops)
					rates[r.name] = append(rates[r.name], float64(per)/wall.Seconds())
					cpus[r.name] = append(cpus[r.name], float64(cpu.Microseconds())/float64(per))
				}
			}
			b.StopTimer()
			for _, r := range runtimes {
				rate := median(rates[r.name])
				b.ReportMetric(rate, r.name+"-art/s")
				b.ReportMetric(rate*avg/1e6, r.name+"-MB/s")
				b.ReportMetric(median(cpus[r.name]), r.name+"-cpu-us/art")
			}
			b.ReportMetric(median(rates["epoll"])/median(rates["goroutine"]), "epoll/goroutine")
		})
	}
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}

// idleServer serves ingest connections on runtime name and returns its
// address; every connection runs an Ingest until the test ends.
func idleServer(tb testing.TB, name string) string {
	tb.Helper()
	step := func(g *ingest.Ingest) func(time.Time) error {
		return func(now time.Time) error {
			for {
				if _, ok := g.NextEvent(); !ok {
					return nil
				}
			}
		}
	}
	if name == "epoll" {
		// The loop's own API: no goroutine per connection.
		l := newLoop(tb, Options{})
		ln, err := l.Listen("127.0.0.1:0", func(now time.Time, c *Conn) {
			g := ingest.New(now, ingest.Config{PathHost: "relay.example"})
			c.Start(nil, g, step(g), nil)
		})
		if err != nil {
			tb.Fatal(err)
		}
		return ln.Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := loopback.Serve(tb, func(nc net.Conn) {
		c := goroutine.New(nc, goroutine.Options{})
		defer c.Close()
		g := ingest.New(time.Now(), ingest.Config{PathHost: "relay.example"})
		c.Run(ctx, g, step(g))
	})
	tb.Cleanup(cancel) // runs before Serve's cleanup waits for the handlers
	return addr
}

// idleCost opens n connections to a fresh ingest server on runtime name,
// waits until each was greeted, and returns the growth of the Go heap and
// stacks and of the process's resident set, per connection. The clients
// are bare sockets (a descriptor each, no Go objects), so what grows is
// the server side.
func idleCost(tb testing.TB, name string, n int) (goBytes, rssBytes float64) {
	addr := idleServer(tb, name)
	ap, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	sa := &unix.SockaddrInet4{Port: ap.Port, Addr: [4]byte{127, 0, 0, 1}}
	settle := func() (uint64, uint64) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse + ms.StackInuse, rss(tb)
	}
	go0, rss0 := settle()
	fds := make([]int, 0, n)
	tb.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	greeting := make([]byte, 256)
	for i := 0; i < n; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			tb.Fatal(err)
		}
		fds = append(fds, fd)
		if err := unix.Connect(fd, sa); err != nil {
			tb.Fatal(err)
		}
		if k, err := unix.Read(fd, greeting); err != nil || !strings.HasPrefix(string(greeting[:k]), "200 ") {
			tb.Fatalf("greeting %q, %v", greeting[:k], err)
		}
	}
	go1, rss1 := settle()
	return (float64(go1) - float64(go0)) / float64(n), (float64(rss1) - float64(rss0)) / float64(n)
}

// rss is the process's resident set size in bytes.
func rss(tb testing.TB) uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		tb.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// idleChildEnv makes the test binary a child that measures idle
// connections on one runtime and prints the figures (see TestMain).
const idleChildEnv = "NEWSFLOW_EPOLL_IDLE_CHILD"

// TestMain runs the idle-memory child when asked to, else the tests.
func TestMain(m *testing.M) {
	if spec := os.Getenv(idleChildEnv); spec != "" {
		name, count, _ := strings.Cut(spec, ":")
		n, _ := strconv.Atoi(count)
		var tb childTB
		debug.FreeOSMemory()
		goB, rssB := idleCost(&tb, name, n)
		fmt.Printf("idle %s %.0f %.0f\n", name, goB, rssB)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childTB is the testing.TB of the idle-memory child: failures exit.
type childTB struct{ testing.TB }

func (childTB) Helper()                      {}
func (childTB) Cleanup(func())               {}
func (childTB) Fatal(args ...any)            { fmt.Println(args...); os.Exit(2) }
func (childTB) Fatalf(f string, args ...any) { fmt.Printf(f+"\n", args...); os.Exit(2) }
func (childTB) Errorf(f string, args ...any) { fmt.Printf(f+"\n", args...); os.Exit(2) }
func (childTB) Skip(args ...any)             { fmt.Println(args...); os.Exit(3) }
func (childTB) Logf(f string, args ...any)   {}
func (childTB) Name() string                 { return "idle child" }

// BenchmarkIdleConns reports the memory one idle ingest connection costs
// on each runtime, with 1,000 connections, each measured in a fresh
// process (the test binary re-run as a child) so that one runtime's
// garbage does not blur the other's resident set; three rounds per
// runtime, interleaved, medians reported. The work is fixed: b.N is not
// used (run it with -benchtime=1x).
func BenchmarkIdleConns(b *testing.B) {
	const n = 1000
	goB := map[string][]float64{}
	rssB := map[string][]float64{}
	{
		for round := 0; round < 3; round++ {
			for _, r := range runtimes {
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d", idleChildEnv, r.name, n))
				out, err := cmd.CombinedOutput()
				var name string
				var g, rs float64
				if _, serr := fmt.Sscanf(string(out), "idle %s %f %f", &name, &g, &rs); err != nil || serr != nil {
					b.Fatalf("child: %v %v: %s", err, serr, out)
				}
				goB[name] = append(goB[name], g)
				rssB[name] = append(rssB[name], rs)
			}
		}
	}
	for _, r := range runtimes {
		b.ReportMetric(median(goB[r.name]), r.name+"-go-bytes/conn")
		b.ReportMetric(median(rssB[r.name]), r.name+"-rss-bytes/conn")
	}
}

// TestIdleMemory checks that an idle ingest connection costs this runtime
// clearly less Go memory than runtime/goroutine, which has two goroutines
// and a 64 KiB read buffer per connection.
func TestIdleMemory(t *testing.T) {
	const n = 200
	g, _ := idleCost(t, "goroutine", n)
	e, _ := idleCost(t, "epoll", n)
	t.Logf("Go heap+stacks per idle ingest connection: goroutine %.0f bytes, epoll %.0f bytes", g, e)
	if e*4 > g {
		t.Errorf("epoll %.0f bytes per connection, goroutine %.0f: want less than a quarter", e, g)
	}
}
