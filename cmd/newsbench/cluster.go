package main

// newsbench cluster: newsfeed's single node (spoolfs) against cluster mode
// on NATS JetStream with one NATS server (replicas 1) and with three
// (replicas 3), end to end: TAKETHIS into newsfeed's ingest, stored,
// queued, and fed to one peer (a sink). newsfeed runs as a child process;
// the NATS servers are embedded in newsbench, so their CPU time is
// newsbench's own (measured with getrusage, less the pusher and sink,
// which the single-node case measures alone).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed/cluster"
	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

func init() {
	register("cluster", "newsfeed single node vs cluster mode on NATS JetStream (replicas 1 and 3)", runCluster)
}

// clusterCase is one configuration measured.
type clusterCase struct {
	name     string // "single", "cluster-r1", "cluster-r3"
	servers  int    // embedded NATS servers (0: spoolfs)
	replicas int
}

var clusterCases = []clusterCase{{"single", 0, 0}, {"cluster-r1", 1, 1}, {"cluster-r3", 3, 3}}

func runCluster(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("newsbench cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	smallN := fs.Int("small", 20000, "number of 2 KB articles")
	largeN := fs.Int("large", 300, "number of 500 KB articles")
	conns := fs.Int("conns", 4, "upstream connections into newsfeed")
	shards := fs.Int("shards", 4, "article streams in cluster mode")
	bin := fs.String("newsfeed", "", "newsfeed `binary` (default: built from this module)")
	keep := fs.Bool("keep", false, "keep the work directory")
	profile := fs.String("profile", "", "write CPU profiles of newsfeed and of the embedded NATS servers per case into `dir`")
	only := fs.String("cases", "", "comma-separated `cases` to run (single, cluster-r1, cluster-r3; default all); ratios need single")
	binary := fs.Bool("binary", false, "500 KB articles with bodies of random octets in lines of 128, as yEnc binaries are, instead of repeated text (which NATS compresses in its RAFT log at replicas 3)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cases := clusterCases
	if *only != "" {
		cases = nil
		for _, c := range clusterCases {
			if slices.Contains(strings.Split(*only, ","), c.name) {
				cases = append(cases, c)
			}
		}
		if len(cases) == 0 {
			return fmt.Errorf("-cases %q: none of single, cluster-r1, cluster-r3", *only)
		}
	}
	work, err := os.MkdirTemp("", "newsbench-cluster-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(work)
	}
	ctx := context.Background()
	if *bin == "" {
		*bin = filepath.Join(work, "newsfeed")
		out, err := exec.Command("go", "build", "-o", *bin, "github.com/newsflow/newsflow/cmd/newsfeed").CombinedOutput()
		if err != nil {
			return fmt.Errorf("building newsfeed (run inside the newsflow module, or pass -newsfeed): %w\n%s", err, out)
		}
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	fmt.Fprintf(stdout, "newsbench cluster: ingest -> store -> 1 peer, %d upstream connections, loopback, %s, load %s\n",
		*conns, cpuModel(), loadAvg())
	fmt.Fprintf(stdout, "%-11s %-6s %9s %10s %8s %19s %22s\n", "case", "size", "articles", "art/s", "MB/s", "newsfeed CPU ms/art", "nats+bench CPU ms/art")
	sets := []*articleSet{newArticleSet(*smallN, 2<<10, run+"s", time.Now()), newArticleSet(*largeN, 500<<10, run+"l", time.Now())}
	if *binary {
		sets[1].body = binaryBody(len(sets[1].body))
	}
	results := map[string]measure{}
	for _, set := range sets {
		for _, c := range cases {
			m, self, err := clusterOnce(ctx, work, *bin, c, set, *conns, *shards, *profile)
			if err != nil {
				return fmt.Errorf("%s %s: %w", c.name, set.label, err)
			}
			results[c.name+"/"+set.label] = m
			// cpuPer1k is seconds per 1000 articles: milliseconds per article.
			selfPerArt := self.Seconds() * 1000 / float64(max(1, m.articles))
			fmt.Fprintf(stdout, "%-11s %-6s %9d %10.0f %8.1f %19.3f %22.3f\n", c.name, set.label, m.articles, m.artPerSec(), m.mbPerSec(), m.cpuPer1k(), selfPerArt)
		}
	}
	for _, set := range sets {
		single, ok := results["single/"+set.label]
		if !ok {
			continue
		}
		for _, c := range cases {
			m, ok := results[c.name+"/"+set.label]
			if !ok || c.servers == 0 {
				continue
			}
			fmt.Fprintf(stdout, "ratio %s-%s art_per_s %.2f\n", c.name, set.label, m.artPerSec()/single.artPerSec())
		}
	}
	return nil
}

// clusterOnce measures one case: the set pushed into a fresh newsfeed
// (and fresh NATS servers), timed from the first TAKETHIS to the last
// article at the nullpeer.
func clusterOnce(ctx context.Context, work, bin string, c clusterCase, set *articleSet, conns, shards int, profile string) (measure, time.Duration, error) {
	dir, err := os.MkdirTemp(work, c.name+"-"+set.label+"-")
	if err != nil {
		return measure{}, 0, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	sk, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{})
	if err != nil {
		return measure{}, 0, err
	}
	defer sk.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return measure{}, 0, err
	}
	addr := l.Addr().String()
	l.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "listen = %q\nspool = %q\npathhost = \"bench.invalid\"\nstats_interval = \"1h\"\nmax_article_size = \"2M\"\n", addr, filepath.Join(dir, "spool"))
	if profile != "" {
		fmt.Fprintf(&b, "admin = \"127.0.0.1:0\"\npprof = true\n")
	}
	_, sinkPort, _ := net.SplitHostPort(sk.Addr())
	fmt.Fprintf(&b, "[[peer]]\nname = \"sink\"\nhost = \"127.0.0.1\"\nport = %s\nconnections = 4\n", sinkPort)
	var nats *cluster.Embedded
	if c.servers > 0 {
		nats, err = cluster.StartEmbedded(filepath.Join(dir, "nats"), c.servers)
		if err != nil {
			return measure{}, 0, err
		}
		defer nats.Shutdown()
		if err := nats.WaitJetStream(30 * time.Second); err != nil {
			return measure{}, 0, err
		}
		fmt.Fprintf(&b, "[cluster]\nnats = [\"%s\"]\nnode = \"bench\"\nreplicas = %d\nshards = %d\n",
			strings.Join(nats.URLs(), `", "`), c.replicas, shards)
	}
	conf := filepath.Join(dir, "newsfeed.toml")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		return measure{}, 0, err
	}
	logf, err := os.Create(filepath.Join(dir, "newsfeed.log"))
	if err != nil {
		return measure{}, 0, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-config", conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return measure{}, 0, err
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	if err := waitDial(ctx, addr); err != nil {
		return measure{}, 0, fmt.Errorf("newsfeed did not listen: %w\n%s", err, tail(logf.Name(), 10))
	}
	var prof *profiler
	if profile != "" {
		prof = startProfiler(ctx, filepath.Join(dir, "spool"), profile, c.name+"-"+set.label, []measure{{elapsed: 4 * time.Second}})
	}
	var natsProf *os.File
	if profile != "" && c.servers > 0 {
		// newsbench's own profile: the embedded NATS servers (and the
		// pusher and sink) for the measured span.
		natsProf, err = os.Create(filepath.Join(profile, c.name+"-"+set.label+".nats.cpu.pprof"))
		if err != nil {
			return measure{}, 0, err
		}
		defer natsProf.Close()
		if err := pprof.StartCPUProfile(natsProf); err != nil {
			return measure{}, 0, err
		}
		// Stopped below once the sink has everything; this stop (a no-op
		// then) writes the profile of a run that failed, a stall's too.
		defer pprof.StopCPUProfile()
	}
	before := selfCPU()
	start := time.Now()
	// A push that fails (newsfeed refused articles or closed a
	// connection) ends the wait for the sink: those articles never come,
	// and the run would hang until its timeout.
	wctx, failed := context.WithCancelCause(ctx)
	defer failed(nil)
	pushErr := make(chan error, 1)
	go func() {
		res, err := pushTakethis(ctx, []string{addr}, set, conns)
		if err == nil && res.accepted != set.len() {
			err = fmt.Errorf("%d of %d accepted; e.g. %v", res.accepted, set.len(), res.refused)
		}
		if err == nil {
			fmt.Fprintf(os.Stderr, "  %s %s: every 239 after %v\n", c.name, set.label, res.elapsed.Round(time.Millisecond))
		}
		if err != nil {
			failed(fmt.Errorf("push: %w", err))
		}
		pushErr <- err
	}()
	if err := sk.Wait(wctx, int64(set.len())); err != nil {
		if cause := context.Cause(wctx); cause != nil {
			err = cause
		}
		return measure{}, 0, fmt.Errorf("the sink got %d of %d: %w\n%s", sk.Articles(), set.len(), err, tail(logf.Name(), 10))
	}
	m := measure{elapsed: time.Since(start), articles: sk.Articles(), bytes: sk.Bytes()}
	if natsProf != nil {
		pprof.StopCPUProfile()
	}
	if nats != nil {
		if n := nats.SlowConsumers(); n > 0 {
			fmt.Fprintf(os.Stderr, "  %s %s: NATS cut off %d slow consumer(s)\n", c.name, set.label, n)
		}
	}
	self := selfCPU() - before
	if err := <-pushErr; err != nil {
		return measure{}, 0, err
	}
	if prof != nil {
		if err := prof.finish(); err != nil {
			fmt.Fprintf(os.Stderr, "profile: %v\n", err)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	m.cpu = childCPU(cmd.ProcessState)
	return m, self, nil
}

// waitDial waits until addr takes connections.
func waitDial(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// selfCPU is newsbench's own CPU time so far (user + system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// binaryBody is a wire-form body of about n octets that compresses no
// better than a yEnc-encoded binary: lines of 128 random octets (any but
// NUL, CR and LF; no '.' first, so nothing needs stuffing) and CRLF.
func binaryBody(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	body := make([]byte, 0, n+130)
	for len(body) < n {
		for i := range 128 {
			c := byte(r.IntN(256))
			for c == 0 || c == '\r' || c == '\n' || (i == 0 && c == '.') {
				c = byte(r.IntN(256))
			}
			body = append(body, c)
		}
		body = append(body, '\r', '\n')
	}
	return body
}
