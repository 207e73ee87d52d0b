package inntest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binDir is where Debian's inn2 installs INN's programs.
const binDir = "/usr/lib/news/bin"

// InstallHint says how to get INN, for messages about its absence.
const InstallHint = "install it with `apt-get install inn2` (Debian; if its setup fails on a host without a domain name, put `domain: localdomain` into /etc/news/inn.conf and run `dpkg --configure -a`), or run `sudo bash .ci/run`"

// startTimeout bounds how long Start waits for innd or nnrpd to listen.
const startTimeout = 30 * time.Second

// Available reports why a private INN cannot be started here, or nil if it
// can: INN's programs are installed and this process may run them as news.
// The error says how to fix it.
func Available() error {
	for _, p := range []string{"innd", "nnrpd", "ctlinnd", "makedbz", "grephistory", "sm", "innfeed", "innxmit"} {
		if _, err := os.Stat(filepath.Join(binDir, p)); err != nil {
			return fmt.Errorf("inntest: INN not installed (%w): %s", err, InstallHint)
		}
	}
	if _, err := newsCredential(); err != nil {
		return err
	}
	return nil
}

// newsCredential returns the credential to run INN's programs with: nil when
// this process already is news, news's ids when it is root.
func newsCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("news")
	if err != nil {
		return nil, fmt.Errorf("inntest: no user news: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("inntest: user news has ids %q/%q", u.Uid, u.Gid)
	}
	switch os.Geteuid() {
	case int(uid):
		return nil, nil
	case 0:
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(gid)}}, nil
	}
	return nil, fmt.Errorf("inntest: INN runs as user news, so INN-backed tests run as root (or news), e.g. with `sudo bash .ci/run`; this is uid %d", os.Geteuid())
}

// Server is one running private INN instance.
type Server struct {
	tb         testing.TB
	dir        layout
	opts       Options
	cred       *syscall.Credential
	port       int
	readerPort int

	innd  *exec.Cmd
	nnrpd *exec.Cmd
	// inndDone and nnrpdDone are closed when the process has been waited for.
	inndDone, nnrpdDone chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Start creates and starts a private INN instance for the test, and stops it
// when the test ends. It skips the test when INN is missing and fails it when
// INN does not start, with the log tail in the message.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if err := Available(); err != nil {
		tb.Skipf("skipping INN-backed test: %v", err)
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		tb.Fatal(err)
	}
	cred, _ := newsCredential()
	var lastErr error
	// A free port found by listening may be taken by someone else before
	// innd binds it; a few attempts with fresh ports make that harmless.
	for attempt := 0; attempt < 3; attempt++ {
		dir, err := instanceDir(tb, cred)
		if err != nil {
			tb.Fatal(err)
		}
		s := &Server{tb: tb, dir: layout{dir}, opts: opts, cred: cred}
		err = s.start()
		if err == nil {
			tb.Cleanup(func() {
				err := s.Close()
				// After the shutdown, so innd has written everything.
				if err != nil || tb.Failed() {
					s.dumpLogs()
				}
				if err != nil {
					tb.Errorf("inntest: close: %v", err)
				}
			})
			return s
		}
		lastErr = err
		s.kill()
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	tb.Fatalf("inntest: start INN: %v", lastErr)
	return nil
}

// errAddrInUse marks a start that failed because the chosen port was taken.
var errAddrInUse = errors.New("port already in use")

// instanceDir makes a fresh directory for one instance, reachable by news.
func instanceDir(tb testing.TB, cred *syscall.Credential) (string, error) {
	dir := tb.TempDir()
	// testing makes the directory and its per-test parent 0700; news must
	// be able to walk through both.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			return "", fmt.Errorf("inntest: %w", err)
		}
	}
	if cred != nil {
		for d := filepath.Dir(filepath.Dir(dir)); ; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err != nil {
				return "", fmt.Errorf("inntest: %w", err)
			}
			if fi.Mode().Perm()&0o001 == 0 {
				return "", fmt.Errorf("inntest: user news cannot enter %s; set TMPDIR to a directory under a world-searchable path", d)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return dir, nil
}

// start writes the configuration, builds the history and starts innd (and
// nnrpd when asked), waiting until they accept connections.
func (s *Server) start() error {
	if err := s.configure(); err != nil {
		return err
	}
	return s.launch()
}

// configure writes the instance's files and makes its empty history.
func (s *Server) configure() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.port = port
	if err := writeConfig(s.dir, s.opts, port); err != nil {
		return err
	}
	if err := s.chownAll(); err != nil {
		return err
	}
	mk := s.Command("makedbz", "-i", "-o", "-s", "300000")
	mk.Dir = s.dir.db()
	if out, err := mk.CombinedOutput(); err != nil {
		return fmt.Errorf("makedbz: %w: %s", err, out)
	}
	return nil
}

// launch starts innd on the configured instance, and nnrpd if asked.
func (s *Server) launch() error {
	port := s.port
	// -d keeps innd in the foreground with its messages on stdout (there is
	// no syslog to rely on); -c 0 accepts articles of any age; -u writes the
	// news log unbuffered; -N disables Perl and Python filters.
	s.innd = s.Command("innd", "-d", "-c", "0", "-u", "-N", "-P", strconv.Itoa(port))
	if err := s.spawn(s.innd, "innd.out", &s.inndDone); err != nil {
		return err
	}
	if err := s.waitListening("innd", s.Addr(), s.inndDone, s.dir.path("run", "innd.pid")); err != nil {
		return err
	}
	if s.opts.Reader {
		if err := s.startReader(); err != nil {
			return err
		}
	}
	return nil
}

// startReader starts a standalone nnrpd (-D daemon, -f foreground) on a
// second free port.
func (s *Server) startReader() error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		s.readerPort = port
		s.nnrpd = s.Command("nnrpd", "-D", "-f", "-4", "127.0.0.1", "-p", strconv.Itoa(port))
		if err := s.spawn(s.nnrpd, "nnrpd.out", &s.nnrpdDone); err != nil {
			return err
		}
		lastErr = s.waitListening("nnrpd", s.ReaderAddr(), s.nnrpdDone, "")
		if lastErr == nil {
			return nil
		}
		stopGroup(s.nnrpd, s.nnrpdDone, 0)
		if !errors.Is(lastErr, errAddrInUse) {
			break
		}
	}
	return lastErr
}

// spawn starts cmd in its own process group with stdout and stderr appended
// to the named file in the log directory.
func (s *Server) spawn(cmd *exec.Cmd, logName string, done *chan struct{}) error {
	f, err := os.OpenFile(s.dir.path("log", logName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("inntest: %w", err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("inntest: start %s: %w", cmd.Path, err)
	}
	ch := make(chan struct{})
	*done = ch
	go func() {
		cmd.Wait()
		f.Close()
		close(ch)
	}()
	return nil
}

// waitListening waits until the server at addr sends a greeting (and
// pidFile, if named, exists), the process exits, or startTimeout passes.
func (s *Server) waitListening(name, addr string, done <-chan struct{}, pidFile string) error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			tail := s.logTail()
			err := fmt.Errorf("%s exited during start-up\n%s", name, tail)
			if strings.Contains(tail, "in use") {
				err = fmt.Errorf("%w: %w", errAddrInUse, err)
			}
			return err
		default:
		}
		ok := true
		if pidFile != "" {
			if _, err := os.Stat(pidFile); err != nil {
				ok = false
			}
		}
		if ok && greets(addr) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening on %s after %v\n%s", name, addr, startTimeout, s.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// greets reports whether a server at addr accepts a connection and sends a
// response line (any code: a refusal also proves the daemon is serving).
func greets(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && len(line) >= 3 && line[0] >= '1' && line[0] <= '5'
}

// freePort asks the kernel for a free port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("inntest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// chownAll gives the instance directory to news.
func (s *Server) chownAll() error {
	if s.cred == nil {
		return nil
	}
	return filepath.Walk(s.dir.dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("inntest: %w", err)
		}
		return nil
	})
}

// Command prepares one of INN's programs (by name, from /usr/lib/news/bin)
// to run as news against this instance's configuration.
func (s *Server) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Env = append(s.Env(), "PATH="+binDir+":/usr/bin:/bin", "HOME="+s.dir.dir, "LC_ALL=C")
	cmd.Dir = s.dir.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	return cmd
}

// Addr is innd's feed address, "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// ReaderAddr is the standalone nnrpd's address; empty unless Options.Reader.
func (s *Server) ReaderAddr() string {
	if s.readerPort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.readerPort))
}

// Dir is the instance's directory (etc, db, run, log, spool inside).
func (s *Server) Dir() string { return s.dir.dir }

// PathHost is the name INN adds to Path header fields.
func (s *Server) PathHost() string { return s.opts.PathHost }

// Env is the environment that points INN's tools at this instance.
func (s *Server) Env() []string { return []string{"INNCONF=" + s.dir.innconf()} }

// Ctlinnd runs ctlinnd with args (e.g. "flush", "site") and returns its
// output.
func (s *Server) Ctlinnd(args ...string) (string, error) {
	out, err := s.Command("ctlinnd", append([]string{"-t", "20"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("inntest: ctlinnd %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// Tokens maps each message-ID that INN stores to its storage token
// ("@...@"); message-IDs unknown to the history, or remembered without an
// article, are absent from the map.
func (s *Server) Tokens(msgids []string) (map[string]string, error) {
	toks := map[string]string{}
	if len(msgids) == 0 {
		return toks, nil
	}
	for _, id := range msgids {
		if strings.ContainsAny(id, " \t\r\n") {
			return nil, fmt.Errorf("inntest: message-ID %q has white space", id)
		}
	}
	input := strings.Join(msgids, "\n") + "\n"
	// grephistory -s prints tokens without message-IDs, skipping any it
	// lacks; -i prints the message-IDs it lacks. When the two account for
	// every message-ID the tokens line up with the rest, in order.
	tokOut, err := s.grephistory(input, "-s")
	if err != nil {
		return nil, err
	}
	missOut, err := s.grephistory(input, "-i")
	if err != nil {
		return nil, err
	}
	tokens := strings.Fields(tokOut)
	missing := map[string]bool{}
	for _, id := range strings.Fields(missOut) {
		missing[id] = true
	}
	var present []string
	for _, id := range msgids {
		if !missing[id] {
			present = append(present, id)
		}
	}
	if len(present) == len(tokens) {
		for i, id := range present {
			toks[id] = tokens[i]
		}
		return toks, nil
	}
	// Some message-IDs are remembered without a token: ask one by one.
	for _, id := range present {
		out, err := s.Command("grephistory", "-e", id).Output()
		if err != nil {
			continue
		}
		if t := strings.TrimSpace(string(out)); strings.HasPrefix(t, "@") {
			toks[id] = t
		}
	}
	return toks, nil
}

func (s *Server) grephistory(input, flag string) (string, error) {
	cmd := s.Command("grephistory", flag)
	cmd.Stdin = strings.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("inntest: grephistory %s: %w: %s", flag, err, stderr.Bytes())
	}
	return string(out), nil
}

// HasArticle reports whether INN stores an article with this message-ID.
func (s *Server) HasArticle(msgid string) bool {
	toks, err := s.Tokens([]string{msgid})
	return err == nil && toks[msgid] != ""
}

// Article returns the stored article in native form (LF line ends, no dot
// stuffing, no terminating dot line), read with sm.
func (s *Server) Article(msgid string) ([]byte, error) {
	toks, err := s.Tokens([]string{msgid})
	if err != nil {
		return nil, err
	}
	tok, ok := toks[msgid]
	if !ok {
		return nil, fmt.Errorf("inntest: article %s not stored", msgid)
	}
	var stderr bytes.Buffer
	cmd := s.Command("sm", tok)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("inntest: sm %s (%s): %w: %s", tok, msgid, err, stderr.Bytes())
	}
	return out, nil
}

// Close stops nnrpd and innd (ctlinnd shutdown, then signals) and waits for
// them. Start registers it with the test's cleanup; calling it earlier is
// fine, and later calls return the first result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.stop() })
	return s.closeErr
}

func (s *Server) stop() error {
	var errs []error
	if s.nnrpd != nil {
		stopGroup(s.nnrpd, s.nnrpdDone, 5*time.Second)
	}
	if s.innd != nil {
		select {
		case <-s.inndDone:
			errs = append(errs, fmt.Errorf("innd had already exited\n%s", s.logTail()))
		default:
			if _, err := s.Ctlinnd("shutdown", "inntest"); err != nil {
				errs = append(errs, err)
			}
			select {
			case <-s.inndDone:
			case <-time.After(20 * time.Second):
				errs = append(errs, errors.New("innd did not exit 20s after ctlinnd shutdown"))
			}
			// Children innd spawned (nnrpd for MODE READER, innfeed) share
			// its process group.
			stopGroup(s.innd, s.inndDone, 5*time.Second)
		}
	}
	return errors.Join(errs...)
}

// kill stops whatever a failed start left running.
func (s *Server) kill() {
	if s.nnrpd != nil {
		stopGroup(s.nnrpd, s.nnrpdDone, 0)
	}
	if s.innd != nil {
		stopGroup(s.innd, s.inndDone, 0)
	}
}

// stopGroup sends SIGTERM to cmd's process group, waits up to grace for the
// leader to be reaped, then SIGKILLs the group. Stragglers of the group are
// always sent SIGKILL.
func stopGroup(cmd *exec.Cmd, done <-chan struct{}, grace time.Duration) {
	if cmd.Process == nil {
		return
	}
	pgid := cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	<-done
}

// logFiles are the instance's logs worth showing, in order.
var logFiles = []string{"innd.out", "errlog", "news.notice", "news.err", "nnrpd.out", "innfeed.log", "news"}

// logTail returns the last lines of the instance's logs.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, name := range logFiles {
		data, err := os.ReadFile(s.dir.path("log", name))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 25 {
			lines = lines[len(lines)-25:]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", name, len(lines), strings.Join(lines, "\n"))
	}
	if b.Len() == 0 {
		return "(INN logs are empty)"
	}
	return b.String()
}

// dumpLogs writes the log tail to the test log, for failed tests.
func (s *Server) dumpLogs() {
	s.tb.Logf("inntest: INN instance %s logs:\n%s", s.dir.dir, s.logTail())
}

// readLines returns the non-empty lines of a file; a missing file has none.
func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}

// withTimeout is ctx with d added, or with a default bound when d is zero.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		d = 2 * time.Minute
	}
	return context.WithTimeout(ctx, d)
}
