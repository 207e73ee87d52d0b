package main

// newsfeed's side of newsbench feed: the binary, a spool per article set
// with every peer's copies in backlog, and one timed run of the relay as a
// child process.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

// buildNewsfeed returns the newsfeed binary: -newsfeed, or one built from
// this module into the work directory (once per newsbench run).
func (b *feedBench) buildNewsfeed(ctx context.Context) (string, error) {
	if b.o.newsfeed != "" {
		return b.o.newsfeed, nil
	}
	out := filepath.Join(b.work, "newsfeed")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/newsflow/newsflow/cmd/newsfeed")
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building newsfeed (run newsbench inside the newsflow module, or pass -newsfeed BINARY): %w\n%s", err, msg.Bytes())
	}
	return out, nil
}

// epollAvailable reports whether the relay accepts runtime = "epoll".
func epollAvailable() bool {
	_, err := newsfeed.ParseConfig("probe", []byte("spool = \"/nonexistent\"\nruntime = \"epoll\"\n"))
	return err == nil
}

// peerName names the i-th peer of newsfeed's and innfeed's configuration.
func peerName(i int) string { return fmt.Sprintf("sink%d", i) }

// relayConfig is newsfeed's configuration for a run: the spool, and one
// peer per sink port (ports of 0 make peers for inject, which never
// connects).
func relayConfig(spool, rt string, ports []int, conns int, admin bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen = \"127.0.0.1:0\"\nspool = %q\npathhost = \"newsbench-relay.invalid\"\n", spool)
	fmt.Fprintf(&b, "runtime = %q\nstats_interval = \"1h\"\n", rt)
	if admin {
		b.WriteString("admin = \"127.0.0.1:0\"\npprof = true\n")
	}
	for i, p := range ports {
		if p == 0 {
			p = 9 // never dialed
		}
		fmt.Fprintf(&b, "\n[[peer]]\nname = %q\nhost = \"127.0.0.1\"\nport = %d\nconnections = %d\n", peerName(i), p, conns)
	}
	return b.String()
}

// prepareSpool stores the set in a new newsfeed spool with `newsfeed
// inject` (no relay running, so every peer's copies go to its backlog
// files) and keeps a copy of the backlog directory, which each run
// restores.
func (b *feedBench) prepareSpool(ctx context.Context, set *articleSet, peers int) (string, error) {
	dir := filepath.Join(b.work, "newsfeed-"+set.label)
	spool := filepath.Join(dir, "spool")
	if err := os.MkdirAll(spool, 0o755); err != nil {
		return "", err
	}
	cfg := filepath.Join(dir, "inject.toml")
	if err := os.WriteFile(cfg, []byte(relayConfig(spool, runtimeGo, make([]int, peers), 1, false)), 0o644); err != nil {
		return "", err
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, b.bin, "inject", "-config", cfg, "/dev/stdin")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("newsfeed inject: %w", err)
	}
	werr := set.writeRnews(stdin)
	stdin.Close()
	if err := cmd.Wait(); err != nil || werr != nil {
		return "", fmt.Errorf("newsfeed inject: %v %v\n%s", err, werr, out.Bytes())
	}
	want := fmt.Sprintf("total: accepted %d refused 0 rejected 0", set.len())
	if !strings.Contains(out.String(), want) {
		return "", fmt.Errorf("newsfeed inject: want %q, got:\n%s", want, out.Bytes())
	}
	b.say("stored %d x %s articles in newsfeed's spool (%d peers' backlogs) in %.1fs", set.len(), set.label, peers, time.Since(start).Seconds())
	if err := copyTree(filepath.Join(spool, "backlog"), filepath.Join(dir, "backlog.saved")); err != nil {
		return "", err
	}
	return spool, nil
}

// copyTree copies the regular files of src into dst (a new directory).
func copyTree(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// restoreBacklog puts the saved backlog files back, as they were after
// inject.
func restoreBacklog(spool string) error {
	bl := filepath.Join(spool, "backlog")
	if err := os.RemoveAll(bl); err != nil {
		return err
	}
	return copyTree(filepath.Join(filepath.Dir(spool), "backlog.saved"), bl)
}

// startSinks starts n holding sinks.
func startSinks(n int) ([]*nullpeer.Sink, error) {
	var sinks []*nullpeer.Sink
	for range n {
		s, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{Hold: true})
		if err != nil {
			closeSinks(sinks)
			return nil, err
		}
		sinks = append(sinks, s)
	}
	return sinks, nil
}

func closeSinks(sinks []*nullpeer.Sink) {
	for _, s := range sinks {
		s.Close()
	}
}

// timeSinks waits until the feeder has opened want connections to each
// sink (or exited, or the context ended), releases the greetings, and
// waits until every sink has taken n articles. It returns the time from
// the release to the last article, and the totals.
func timeSinks(ctx context.Context, sinks []*nullpeer.Sink, conns int, n int64, exited <-chan struct{}, what string) (measure, error) {
	ready := make(chan error, 1)
	go func() {
		for _, s := range sinks {
			if err := s.WaitConns(ctx, int64(conns)); err != nil {
				ready <- err
				return
			}
		}
		ready <- nil
	}()
	select {
	case err := <-ready:
		if err != nil {
			return measure{}, fmt.Errorf("%s did not connect: %w", what, err)
		}
	case <-exited:
		return measure{}, fmt.Errorf("%s exited before connecting to every sink", what)
	}
	start := time.Now()
	for _, s := range sinks {
		s.Release()
	}
	done := make(chan error, 1)
	go func() {
		for _, s := range sinks {
			if err := s.Wait(ctx, n); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var err error
	select {
	case err = <-done:
	case <-exited:
		// It may have finished just now: look once more.
		select {
		case err = <-done:
		case <-time.After(time.Second):
			err = fmt.Errorf("%s exited with articles unsent", what)
		}
	}
	m := measure{elapsed: time.Since(start)}
	for _, s := range sinks {
		m.articles += s.Articles()
		m.bytes += s.Bytes()
	}
	return m, err
}

// runSender measures the sink's ceiling: the in-memory TAKETHIS stream
// into as many sinks, over as many connections, as the feeders use.
func (b *feedBench) runSender(ctx context.Context, c feedCase) (measure, error) {
	sinks := make([]*nullpeer.Sink, 0, c.peers)
	defer func() { closeSinks(sinks) }()
	var addrs []string
	for range c.peers {
		s, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{})
		if err != nil {
			return measure{}, err
		}
		sinks = append(sinks, s)
		addrs = append(addrs, s.Addr())
	}
	res, err := pushTakethis(ctx, addrs, c.set, b.o.conns)
	m := measure{elapsed: res.elapsed}
	for _, s := range sinks {
		m.articles += s.Articles()
		m.bytes += s.Bytes()
	}
	if err == nil && m.articles != int64(c.set.len()*c.peers) {
		err = fmt.Errorf("sinks took %d articles, want %d", m.articles, c.set.len()*c.peers)
	}
	return m, err
}

// runNewsfeed runs the relay (runtime rt) as a child process on the set's
// spool with its backlog restored, peers = the case's sinks, and times
// the replay of the backlog to the sinks.
func (b *feedBench) runNewsfeed(ctx context.Context, c feedCase, bin, rt string, last bool) (measure, error) {
	spool := b.spools[c.set.label]
	if err := restoreBacklog(spool); err != nil {
		return measure{}, err
	}
	sinks, err := startSinks(c.peers)
	if err != nil {
		return measure{}, err
	}
	defer closeSinks(sinks)
	ports := make([]int, len(sinks))
	for i, s := range sinks {
		ports[i] = s.Port()
	}
	profile := b.o.profile != "" && last
	dir := filepath.Dir(spool)
	cfg := filepath.Join(dir, "run.toml")
	if err := os.WriteFile(cfg, []byte(relayConfig(spool, rt, ports, b.o.conns, profile)), 0o644); err != nil {
		return measure{}, err
	}
	logName := filepath.Join(dir, "newsfeed-"+c.name+"-"+rt+"-"+filepath.Base(bin)+".log")
	logf, err := os.Create(logName)
	if err != nil {
		return measure{}, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return measure{}, fmt.Errorf("start newsfeed: %w", err)
	}
	rss := watchRSS(cmd.Process.Pid)
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stop := func() {
		select {
		case <-exited:
			return
		default:
		}
		syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	defer stop()

	var prof *profiler
	if profile {
		prof = startProfiler(ctx, spool, b.o.profile, c.name+"-"+rt, b.results[c.name][feederNFGo])
	}
	m, err := timeSinks(ctx, sinks, b.o.conns, int64(c.set.len()), exited, "newsfeed")
	if prof != nil {
		if perr := prof.finish(); perr != nil {
			b.say("profile: %v", perr)
		} else {
			b.say("profiles of newsfeed (%s, %s) in %s", c.name, rt, b.o.profile)
		}
	}
	stop()
	m.cpu, m.maxRSS = childCPU(cmd.ProcessState), rss.finish()
	if err == nil && waitErr != nil {
		err = fmt.Errorf("newsfeed: %w", waitErr)
	}
	if err != nil {
		return m, fmt.Errorf("%w\n%s", err, tail(logName, 20))
	}
	if want := int64(c.set.len() * c.peers); m.articles != want {
		b.notes = append(b.notes, fmt.Sprintf("%s newsfeed %s: the sinks took %d articles for %d (resends)", c.name, rt, m.articles, want))
	}
	return m, nil
}

// tail returns the last n lines of a file.
func tail(name string, n int) string {
	data, _ := os.ReadFile(name)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "--- " + name + "\n" + strings.Join(lines, "\n")
}

// profiler fetches newsfeed's CPU profile for the run (pprof on its admin
// listener) and its allocation profile after it.
type profiler struct {
	admin string
	dir   string
	name  string
	cpu   chan error
}

// startProfiler starts a CPU profile long enough for the run (as long as
// the longest earlier round, at least a second).
func startProfiler(ctx context.Context, spool, dir, name string, earlier []measure) *profiler {
	p := &profiler{dir: dir, name: name, cpu: make(chan error, 1)}
	secs := 1
	for _, m := range earlier {
		secs = max(secs, int(m.elapsed.Seconds()+0.999))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.cpu <- err
		return p
	}
	// The relay writes its admin address once it listens.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, admin, err := newsfeed.ReadAddrs(spool); err == nil && admin != "" {
			p.admin = admin
			break
		}
	}
	if p.admin == "" {
		p.cpu <- errors.New("no admin address from newsfeed")
		return p
	}
	go func() {
		p.cpu <- fetch(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.admin, secs),
			filepath.Join(dir, name+".cpu.pprof"))
	}()
	return p
}

// finish saves the allocation profile and waits for the CPU profile.
func (p *profiler) finish() error {
	var aerr error
	if p.admin != "" {
		aerr = fetch(context.Background(), "http://"+p.admin+"/debug/pprof/allocs", filepath.Join(p.dir, p.name+".allocs.pprof"))
	}
	return errors.Join(<-p.cpu, aerr)
}

func fetch(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(bufio.NewReader(io.LimitReader(resp.Body, 512)))
		return fmt.Errorf("%s: %s: %s", url, resp.Status, msg)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
