package inntest

// For programs that are not tests (cmd/newsbench): an instance started in
// a directory the caller owns, and a standalone innfeed run as a process
// the caller watches while it works (so it can start a clock when innfeed
// is connected and read innfeed's resource usage when it exits).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// StartInstance creates and starts a private INN instance in dir, which
// must exist and be empty; it is for programs (benchmarks) rather than
// tests, which use Start. It fails with Available's error when INN cannot
// run here. Stop the instance with Close; dir is left for the caller to
// remove.
func StartInstance(dir string, opts Options) (*Server, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cred, _ := newsCredential()
	if err := reachableByNews(dir, cred); err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		sub := filepath.Join(dir, fmt.Sprintf("inn%d", attempt))
		if err := os.Mkdir(sub, 0o755); err != nil {
			return nil, fmt.Errorf("inntest: %w", err)
		}
		s := &Server{dir: layout{sub}, opts: opts, cred: cred}
		err := s.start()
		if err == nil {
			return s, nil
		}
		lastErr = err
		s.kill()
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	return nil, fmt.Errorf("inntest: start INN: %w", lastErr)
}

// reachableByNews makes dir searchable and checks that news can reach it
// through every parent.
func reachableByNews(dir string, cred *syscall.Credential) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("inntest: %w", err)
	}
	if cred == nil {
		return nil
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("inntest: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("inntest: user news cannot enter %s; use a directory under a world-searchable path", d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// LogTail returns the last lines of the instance's logs, for error
// messages.
func (s *Server) LogTail() string { return s.logTail() }

// InnfeedPeer is one peer of a standalone innfeed run and the articles to
// send it.
type InnfeedPeer struct {
	Name         string // peer name in innfeed.conf (and of its backlog file)
	Addr         string // receiving server, host:port on loopback
	Connections  int    // initial (= maximum) connections; default 1
	NoStreaming  bool   // IHAVE instead of CHECK/TAKETHIS
	MaxQueueSize int    // per-connection window; 0 keeps innfeed's default (20)
	Batch        []byte // "@token@ <msgid>" lines (see BatchLines)
}

// InnfeedProcess is a standalone innfeed (batch mode, -x) started by
// StartInnfeed.
type InnfeedProcess struct {
	s       *Server
	cmd     *exec.Cmd
	done    chan struct{}
	out     strings.Builder
	backlog string
	logFile string
	peers   []InnfeedPeer
	started time.Time
	waitErr error
}

// InnfeedExit is what a standalone innfeed left when it exited.
type InnfeedExit struct {
	Elapsed time.Duration    // wall time of the process
	Usage   *syscall.Rusage  // its resource usage (CPU time, peak RSS), from wait4
	Unsent  map[string]int   // per peer: batch lines still in its backlog
	Log     string           // innfeed's log file and output
	State   *os.ProcessState // how it exited
}

// StartInnfeed starts innfeed in batch mode with one peer block per peer
// and each peer's batch as its backlog file; innfeed sends every batch and
// exits. Extra is more innfeed.conf text placed before the peer blocks.
func (s *Server) StartInnfeed(peers []InnfeedPeer, extra string) (*InnfeedProcess, error) {
	work, err := s.scratchDir("innfeed")
	if err != nil {
		return nil, err
	}
	p := &InnfeedProcess{s: s, backlog: filepath.Join(work, "backlog"), logFile: filepath.Join(work, "innfeed.log"),
		peers: peers, done: make(chan struct{})}
	var conf strings.Builder
	conf.WriteString(innfeedGlobals)
	conf.WriteString(extra)
	if extra != "" && !strings.HasSuffix(extra, "\n") {
		conf.WriteString("\n")
	}
	files := map[string][]byte{}
	for _, pe := range peers {
		host, _, err := net.SplitHostPort(pe.Addr)
		if err != nil {
			return nil, fmt.Errorf("inntest: innfeed peer %s: %w", pe.Name, err)
		}
		port, err := loopbackPort(pe.Addr)
		if err != nil {
			return nil, fmt.Errorf("inntest: innfeed peer %s: %w", pe.Name, err)
		}
		n := max(pe.Connections, 1)
		writeInnfeedPeer(&conf, pe.Name, host, port, n, n, !pe.NoStreaming, pe.MaxQueueSize, 0, 0)
		files[filepath.Join(p.backlog, pe.Name)] = pe.Batch
	}
	files[filepath.Join(work, "innfeed.conf")] = []byte(conf.String())
	if err := s.writeOwned(files); err != nil {
		return nil, err
	}
	p.cmd = s.Command("innfeed", "-x", "-c", filepath.Join(work, "innfeed.conf"), "-b", p.backlog,
		"-l", p.logFile, "-S", filepath.Join(work, "innfeed.status"), "-p", filepath.Join(work, "innfeed.pid"))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("inntest: start innfeed: %w", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is innfeed's process id.
func (p *InnfeedProcess) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *InnfeedProcess) Exited() <-chan struct{} { return p.done }

// Wait waits for innfeed to exit (killing its process group when ctx ends
// first) and reports what it left. An error means it did not exit cleanly.
func (p *InnfeedProcess) Wait(ctx context.Context) (InnfeedExit, error) {
	var err error
	select {
	case <-p.done:
	case <-ctx.Done():
		p.Kill()
		err = fmt.Errorf("inntest: innfeed killed: %w", ctx.Err())
	}
	ex := InnfeedExit{Elapsed: time.Since(p.started), State: p.cmd.ProcessState, Unsent: map[string]int{}}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		ex.Usage = ru
	}
	ex.Log = readString(p.logFile) + p.out.String()
	for _, pe := range p.peers {
		n, uerr := countBacklog(p.backlog, pe.Name)
		if uerr != nil && err == nil {
			err = uerr
		}
		ex.Unsent[pe.Name] = n
	}
	if err == nil && p.waitErr != nil {
		err = fmt.Errorf("inntest: innfeed: %w\n%s", p.waitErr, ex.Log)
	}
	return ex, err
}

// Kill stops innfeed's process group at once and waits for it.
func (p *InnfeedProcess) Kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}
