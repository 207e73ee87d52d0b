package inntest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// BatchLines returns an innfeed/innxmit batch for msgids: one
// "@token@ <msgid>" line per article, in the given order. It fails if INN
// does not store one of them.
func (s *Server) BatchLines(msgids []string) ([]byte, error) {
	toks, err := s.Tokens(msgids)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, id := range msgids {
		tok, ok := toks[id]
		if !ok {
			return nil, fmt.Errorf("inntest: batch: article %s not stored", id)
		}
		fmt.Fprintf(&b, "%s %s\n", tok, id)
	}
	return b.Bytes(), nil
}

// InnfeedOptions configures one standalone innfeed run.
type InnfeedOptions struct {
	// Addr is the receiving server, host:port on loopback.
	Addr string
	// Peer is the peer's name in innfeed.conf; default "inntest-peer".
	Peer string
	// Connections is how many connections innfeed opens (in batch mode it
	// opens initial-connections and no more); default 1.
	Connections int
	// NoStreaming makes innfeed use IHAVE instead of CHECK/TAKETHIS.
	NoStreaming bool
	// MaxQueueSize is innfeed's per-connection window; 0 keeps its default
	// (20).
	MaxQueueSize int
	// NoCheckHigh and NoCheckLow tune the switch to TAKETHIS without CHECK
	// (percent accepted); 0 keeps innfeed's defaults (95 and 90).
	NoCheckHigh, NoCheckLow float64
	// Extra is more innfeed.conf text (key: value lines) placed before the
	// peer block, for tuning beyond these fields. innfeed refuses a key
	// defined twice, so it must not repeat one the harness sets (see
	// innfeedGlobals: initial-sleep, dynamic-method, ...).
	Extra string
	// Timeout bounds the run; default 2 minutes.
	Timeout time.Duration
}

// InnfeedResult is what a standalone innfeed run left behind.
type InnfeedResult struct {
	// Elapsed is the wall time of the innfeed process alone.
	Elapsed time.Duration
	// Unsent counts batch lines innfeed left in its backlog (not sent or
	// deferred); 0 after a complete run.
	Unsent int
	// Log is innfeed's log file and output: errors, and more with
	// "debug-level" in Extra. (Its statistics go to syslog.)
	Log string
}

// runSeq numbers the scratch directories of feeder runs.
var runSeq atomic.Int64

// RunInnfeed feeds the articles named in batch ("@token@ <msgid>" lines, see
// BatchLines) from this server's spool to opts.Addr with innfeed in batch
// mode (-x): innfeed sends the whole batch and exits.
func (s *Server) RunInnfeed(ctx context.Context, batch []byte, opts InnfeedOptions) (InnfeedResult, error) {
	var res InnfeedResult
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return res, fmt.Errorf("inntest: innfeed: %w", err)
	}
	port, err := loopbackPort(opts.Addr)
	if err != nil {
		return res, fmt.Errorf("inntest: innfeed: %w", err)
	}
	if opts.Peer == "" {
		opts.Peer = "inntest-peer"
	}
	if opts.Connections <= 0 {
		opts.Connections = 1
	}
	work, err := s.scratchDir("innfeed")
	if err != nil {
		return res, err
	}
	backlog := filepath.Join(work, "backlog")
	var conf strings.Builder
	conf.WriteString(innfeedGlobals)
	conf.WriteString(opts.Extra)
	if opts.Extra != "" && !strings.HasSuffix(opts.Extra, "\n") {
		conf.WriteString("\n")
	}
	writeInnfeedPeer(&conf, opts.Peer, host, port, opts.Connections, opts.Connections,
		!opts.NoStreaming, opts.MaxQueueSize, opts.NoCheckHigh, opts.NoCheckLow)
	files := map[string][]byte{
		filepath.Join(work, "innfeed.conf"): []byte(conf.String()),
		filepath.Join(backlog, opts.Peer):   batch,
	}
	if err := s.writeOwned(files); err != nil {
		return res, err
	}
	logFile := filepath.Join(work, "innfeed.log")
	ctx, cancel := withTimeout(ctx, opts.Timeout)
	defer cancel()
	cmd := s.Command("innfeed", "-x", "-c", filepath.Join(work, "innfeed.conf"), "-b", backlog,
		"-l", logFile, "-S", filepath.Join(work, "innfeed.status"), "-p", filepath.Join(work, "innfeed.pid"))
	out, elapsed, err := s.runBounded(ctx, cmd)
	res.Elapsed = elapsed
	res.Log = readString(logFile) + out
	unsent, uerr := countBacklog(backlog, opts.Peer)
	res.Unsent = unsent
	if err != nil {
		return res, fmt.Errorf("inntest: innfeed: %w\n%s", err, res.Log)
	}
	return res, uerr
}

// countBacklog counts the article lines innfeed left for peer: the
// untouched batch, what remains of .input past its checkpoint, and .output.
func countBacklog(dir, peer string) (int, error) {
	n := 0
	for _, name := range []string{peer, peer + ".output"} {
		lines, err := readLines(filepath.Join(dir, name))
		if err != nil {
			return 0, fmt.Errorf("inntest: innfeed backlog: %w", err)
		}
		n += len(lines)
	}
	data, err := os.ReadFile(filepath.Join(dir, peer+".input"))
	if errors.Is(err, os.ErrNotExist) {
		return n, nil
	}
	if err != nil {
		return 0, fmt.Errorf("inntest: innfeed backlog: %w", err)
	}
	// The first line of an .input file is the byte offset innfeed has
	// checkpointed; lines after that offset are still to send.
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	off, err := strconv.Atoi(strings.TrimSpace(string(first)))
	if err != nil || off < len(first)+1 || off > len(data) {
		off = len(first) + 1
		if off > len(data) {
			off = len(data)
		}
		rest = data[off:]
	} else {
		rest = data[off:]
	}
	for _, l := range strings.Split(string(rest), "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n, nil
}

// InnxmitOptions configures one innxmit run.
type InnxmitOptions struct {
	// Addr is the receiving server, host:port on loopback.
	Addr string
	// NoStreaming stops innxmit from trying MODE STREAM (-s).
	NoStreaming bool
	// NoCheck sends TAKETHIS without CHECK when streaming (-c).
	NoCheck bool
	// Timeout bounds the run; default 2 minutes.
	Timeout time.Duration
}

// InnxmitResult is what an innxmit run reported and left behind.
type InnxmitResult struct {
	Elapsed time.Duration // wall time of the innxmit process
	Unsent  int           // batch lines innxmit wrote back as not sent
	Output  string        // innxmit's statistics (-v) and errors
}

// RunInnxmit sends the articles in batch ("@token@ <msgid>" lines) from
// this server's spool to opts.Addr with innxmit.
func (s *Server) RunInnxmit(ctx context.Context, batch []byte, opts InnxmitOptions) (InnxmitResult, error) {
	var res InnxmitResult
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return res, fmt.Errorf("inntest: innxmit: %w", err)
	}
	port, err := loopbackPort(opts.Addr)
	if err != nil {
		return res, fmt.Errorf("inntest: innxmit: %w", err)
	}
	work, err := s.scratchDir("innxmit")
	if err != nil {
		return res, err
	}
	file := filepath.Join(work, "batch")
	if err := s.writeOwned(map[string][]byte{file: batch}); err != nil {
		return res, err
	}
	// -a always rewrites the batch with what was not sent; -v prints
	// statistics; -t bounds the connect.
	args := []string{"-a", "-v", "-l", "-t", "10", "-P", strconv.Itoa(port)}
	if opts.NoStreaming {
		args = append(args, "-s")
	}
	if opts.NoCheck {
		args = append(args, "-c")
	}
	args = append(args, host, file)
	ctx, cancel := withTimeout(ctx, opts.Timeout)
	defer cancel()
	out, elapsed, err := s.runBounded(ctx, s.Command("innxmit", args...))
	res.Elapsed, res.Output = elapsed, out
	lines, lerr := readLines(file)
	res.Unsent = len(lines)
	if err != nil {
		return res, fmt.Errorf("inntest: innxmit: %w\n%s", err, out)
	}
	return res, lerr
}

// SendFileFeed sends what INN has queued for a FeedFile site with innxmit:
// it moves the site's batch file aside, has innd reopen it (ctlinnd flush),
// and runs innxmit on the moved batch.
func (s *Server) SendFileFeed(ctx context.Context, site string) (InnxmitResult, error) {
	var feed *Feed
	for i := range s.opts.Feeds {
		if s.opts.Feeds[i].Name == site && s.opts.Feeds[i].Kind == FeedFile {
			feed = &s.opts.Feeds[i]
		}
	}
	if feed == nil {
		return InnxmitResult{}, fmt.Errorf("inntest: no FeedFile site %q", site)
	}
	// Flush first so every accepted article is in the file, then move it
	// and flush again so innd starts a new one.
	if _, err := s.Ctlinnd("flush", site); err != nil {
		return InnxmitResult{}, err
	}
	path := filepath.Join(s.dir.outgoing(), site)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data = nil
	} else if err != nil {
		return InnxmitResult{}, fmt.Errorf("inntest: %w", err)
	} else {
		if err := os.Remove(path); err != nil {
			return InnxmitResult{}, fmt.Errorf("inntest: %w", err)
		}
		if _, err := s.Ctlinnd("flush", site); err != nil {
			return InnxmitResult{}, err
		}
	}
	return s.RunInnxmit(ctx, data, InnxmitOptions{Addr: feed.Addr, NoStreaming: feed.NoStreaming})
}

// scratchDir makes a new directory owned by news inside the instance.
func (s *Server) scratchDir(kind string) (string, error) {
	dir := s.dir.path("tmp", fmt.Sprintf("%s-%d", kind, runSeq.Add(1)))
	if err := os.MkdirAll(filepath.Join(dir, "backlog"), 0o755); err != nil {
		return "", fmt.Errorf("inntest: %w", err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "backlog")} {
		if err := s.chown(d); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// writeOwned writes files owned by news.
func (s *Server) writeOwned(files map[string][]byte) error {
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return fmt.Errorf("inntest: %w", err)
		}
		if err := s.chown(name); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) chown(path string) error {
	if s.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
		return fmt.Errorf("inntest: %w", err)
	}
	return nil
}

// runBounded runs cmd until it exits or ctx ends (then its process group is
// killed), returning its combined output and wall time.
func (s *Server) runBounded(ctx context.Context, cmd *exec.Cmd) (string, time.Duration, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return "", 0, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("%s killed: %w", filepath.Base(cmd.Path), ctx.Err())
	}
	return out.String(), time.Since(start), err
}

func readString(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}
