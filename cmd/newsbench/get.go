package main

// newsbench get: newsget against NZBGet (Debian nzbget, run headless with a
// generated configuration) downloading the same NZB from the same loopback
// server: by default the nnrpd of a private INN (runtime/testpeer/inntest), else a
// runtime/testpeer/nntptest server. The files are random data in yEnc parts (700 KiB
// by default, like real posts); both downloaders must produce them byte for
// byte. newsget runs as a child process (this binary re-executed, driving
// runtime/newsget exactly as cmd/newsget does) so that both sides are
// measured the same way: wall time from start to exit, CPU time (user +
// system) of the child from wait4. Rounds alternate the two; the table
// shows the median.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
	"github.com/newsflow/newsflow/runtime/testpeer/poster"
)

// newsgetChildEnv, when set, makes this binary play newsget (the child
// process of newsbench get): its value is the JSON of [url, dir, nzb].
const newsgetChildEnv = "NEWSBENCH_NEWSGET_CHILD"

func init() {
	register("get", "newsget vs NZBGet: the same NZB from the same loopback server", benchGet)
	if v := os.Getenv(newsgetChildEnv); v != "" {
		os.Exit(newsgetChild(v))
	}
}

// getOptions are newsbench get's flags.
type getOptions struct {
	sizeMiB, partKiB, files int
	conns, rounds           int
	server                  string
	nzbget                  string
	keep                    bool
}

func benchGet(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("newsbench get", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o getOptions
	fs.IntVar(&o.sizeMiB, "size", 200, "total size in `MiB`")
	fs.IntVar(&o.partKiB, "part", 700, "yEnc part size in `KiB`")
	fs.IntVar(&o.files, "files", 4, "number of files the size is split into")
	fs.IntVar(&o.conns, "connections", 8, "connections for both downloaders")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds (the table shows the median)")
	fs.StringVar(&o.server, "server", "auto", "`auto` (INN if installed, else nntptest), inn or nntptest")
	fs.StringVar(&o.nzbget, "nzbget", "nzbget", "the NZBGet `program`")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.files < 1 || o.sizeMiB < 1 || o.partKiB < 1 || o.rounds < 1 {
		return errors.New("-size, -part, -files and -rounds must be positive")
	}
	work, err := os.MkdirTemp("", "newsbench-get-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(stderr, "newsbench get: work directory %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	var ps []poster.Posting
	per := o.sizeMiB << 20 / o.files
	for i := 0; i < o.files; i++ {
		ps = append(ps, poster.Posting{Name: fmt.Sprintf("bench%02d.bin", i+1), Data: poster.RandomData(uint64(1000+i), per),
			PartSize: o.partKiB << 10, Group: "alt.binaries.newsbench", IDPrefix: fmt.Sprintf("nb%d-%d", time.Now().UnixNano(), i)})
	}
	nzb := filepath.Join(work, "bench.nzb")
	if err := os.WriteFile(nzb, poster.NZB(ps...), 0o644); err != nil {
		return err
	}

	useINN := o.server == "inn" || (o.server == "auto" && inntest.Available() == nil)
	if o.server == "inn" {
		if err := inntest.Available(); err != nil {
			return fmt.Errorf("INN: %v", err)
		}
	}
	if !useINN {
		if o.server == "auto" {
			fmt.Fprintf(stderr, "newsbench get: INN not available (%v); serving from runtime/testpeer/nntptest\n", inntest.Available())
		}
		s, err := nntptest.New(nntptest.Options{})
		if err != nil {
			return err
		}
		defer s.Close()
		s.AddGroup(nntptest.Group{Name: "alt.binaries.newsbench"})
		if err := serveArticles(s, ps); err != nil {
			return err
		}
		return runGet(o, "nntptest", s.HostPort(), ps, nzb, work, stdout, stderr)
	}
	// runtime/testpeer/inntest is a test harness: it takes a testing.TB and stops
	// INN when the test ends. So the comparison runs as the one test of
	// testing.Main, which exits the process when it is done (status 1 if
	// it failed); testing's own chatter goes to stderr.
	os.Stdout = os.Stderr
	testing.Main(func(_, _ string) (bool, error) { return true, nil }, []testing.InternalTest{{
		Name: "newsbench-get",
		F: func(t *testing.T) {
			srv := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: "alt.binaries.newsbench"}}})
			fmt.Fprintf(stderr, "newsbench get: posting %d MiB to a private INN...\n", o.sizeMiB)
			if err := postINN(srv.Addr(), ps); err != nil {
				t.Fatal(err)
			}
			if err := runGet(o, "inn-nnrpd", srv.ReaderAddr(), ps, nzb, work, stdout, stderr); err != nil {
				t.Fatal(err)
			}
		},
	}}, nil, nil)
	return nil // not reached: testing.Main exits
}

// postINN feeds the postings to innd with IHAVE (RFC 3977 §6.3.2).
func postINN(addr string, ps []poster.Posting) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Minute))
	r := bufio.NewReader(nc)
	w := bufio.NewWriterSize(nc, 1<<20)
	expect := func(code string) error {
		if err := w.Flush(); err != nil {
			return err
		}
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, code) {
			return fmt.Errorf("innd said %q (%v), want %s", strings.TrimSpace(line), err, code)
		}
		return nil
	}
	if err := expect("200"); err != nil {
		return err
	}
	for _, p := range ps {
		for n := 1; n <= p.Parts(); n++ {
			fmt.Fprintf(w, "IHAVE %s\r\n", p.MessageID(n))
			if err := expect("335"); err != nil {
				return err
			}
			for _, line := range bytes.SplitAfter(p.Article(n), []byte("\r\n")) {
				if len(line) > 0 && line[0] == '.' {
					w.WriteByte('.')
				}
				w.Write(line)
			}
			w.WriteString(".\r\n")
			if err := expect("235"); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(w, "QUIT\r\n")
	return w.Flush()
}

// getRun is one downloader's measured run.
type getRun struct {
	wall, cpu time.Duration
}

// runGet runs the rounds and prints the report.
func runGet(o getOptions, server, addr string, ps []poster.Posting, nzb, work string, stdout, stderr io.Writer) error {
	var total int64
	for _, p := range ps {
		total += int64(len(p.Data))
	}
	name := fmt.Sprintf("get-%dM-%dk", o.sizeMiB, o.partKiB)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	_, nzbErr := exec.LookPath(o.nzbget)
	if nzbErr != nil {
		fmt.Fprintf(stderr, "newsbench get: NZBGet skipped: %s not found (install it with: apt-get install nzbget)\n", o.nzbget)
	}
	var ng, nz []getRun
	for round := 0; round < o.rounds; round++ {
		dir := filepath.Join(work, fmt.Sprintf("newsget-%d", round))
		arg, _ := json.Marshal([]string{fmt.Sprintf("nntp://%s?connections=%d", addr, o.conns), dir, nzb})
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), newsgetChildEnv+"="+string(arg))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		r, err := timed(cmd)
		if err != nil {
			return fmt.Errorf("newsget: %v\n%s", err, out.String())
		}
		if err := checkFiles(dir, ps); err != nil {
			return fmt.Errorf("newsget: %v", err)
		}
		os.RemoveAll(dir)
		ng = append(ng, r)
		fmt.Fprintf(stderr, "round %d: newsget %.2fs wall, %.2fs cpu\n", round+1, r.wall.Seconds(), r.cpu.Seconds())

		if nzbErr != nil {
			continue
		}
		r, err = runNZBGet(o, addr, nzb, filepath.Join(work, fmt.Sprintf("nzbget-%d", round)), ps)
		if err != nil {
			return fmt.Errorf("nzbget: %v", err)
		}
		nz = append(nz, r)
		fmt.Fprintf(stderr, "round %d: nzbget  %.2fs wall, %.2fs cpu\n", round+1, r.wall.Seconds(), r.cpu.Seconds())
	}
	t := Table{Header: []string{"case", "downloader", "server", "wall s", "MB/s", "cpu s", "MB/cpu-s"}}
	row := func(tool string, rs []getRun) (float64, float64) {
		var walls, cpus []float64
		for _, r := range rs {
			walls = append(walls, r.wall.Seconds())
			cpus = append(cpus, r.cpu.Seconds())
		}
		w, c := Median(walls), Median(cpus)
		t.Add(name, tool, server, strconv.FormatFloat(w, 'f', 2, 64), f1(float64(total)/w/1e6), strconv.FormatFloat(c, 'f', 2, 64),
			f1(float64(total)/c/1e6))
		return w, c
	}
	gw, gc := row("newsget", ng)
	var zw, zc float64
	if len(nz) > 0 {
		zw, zc = row("nzbget", nz)
	}
	fmt.Fprintf(stdout, "%d files, %d MiB in %d KiB yEnc parts, %d connections, median of %d rounds\n",
		len(ps), o.sizeMiB, o.partKiB, o.conns, o.rounds)
	t.Print(stdout)
	if len(nz) > 0 {
		// value = newsget / NZBGet: MB/s above 1 and CPU seconds below 1
		// favour newsget.
		Ratio(stdout, name, "mb_per_s", float64(total)/gw, float64(total)/zw)
		Ratio(stdout, name, "cpu_s", gc, zc)
	}
	return nil
}

// timed runs cmd and returns its wall and CPU time.
func timed(cmd *exec.Cmd) (getRun, error) {
	start := time.Now()
	err := cmd.Run()
	r := getRun{wall: time.Since(start)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return r, err
}

// serveArticles adds every part of the postings to s.
func serveArticles(s *nntptest.Server, ps []poster.Posting) error {
	for _, p := range ps {
		for n := 1; n <= p.Parts(); n++ {
			if err := s.AddArticle(nntptest.Article{MessageID: p.MessageID(n), Raw: p.Article(n)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFiles verifies that dir holds every posting's data.
func checkFiles(dir string, ps []poster.Posting) error {
	for _, p := range ps {
		b, err := os.ReadFile(filepath.Join(dir, p.Name))
		if err != nil {
			return err
		}
		if sha256.Sum256(b) != sha256.Sum256(p.Data) {
			return fmt.Errorf("%s differs from the posted file", p.Name)
		}
	}
	return nil
}

// runNZBGet downloads the NZB with NZBGet in standalone mode (it exits when
// the queue is done) with a configuration that leaves out everything but
// downloading and CRC checks: no par, no unpack, no web server.
func runNZBGet(o getOptions, addr, nzb, dir string, ps []poster.Posting) (getRun, error) {
	host, port, _ := net.SplitHostPort(addr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return getRun{}, err
	}
	conf := fmt.Sprintf(`MainDir=%s
DestDir=${MainDir}/dst
InterDir=${MainDir}/inter
NzbDir=${MainDir}/nzb
QueueDir=${MainDir}/queue
TempDir=${MainDir}/tmp
ScriptDir=${MainDir}/scripts
LockFile=${MainDir}/nzbget.lock
LogFile=${MainDir}/nzbget.log
WebDir=
ConfigTemplate=
Server1.Active=yes
Server1.Name=bench
Server1.Level=0
Server1.Host=%s
Server1.Port=%s
Server1.Encryption=no
Server1.Connections=%d
Server1.JoinGroup=no
ControlIP=127.0.0.1
ControlPort=0
AppendCategoryDir=no
DupeCheck=no
ContinuePartial=no
DirectWrite=yes
ArticleCache=0
WriteBuffer=1024
CrcCheck=yes
ParCheck=manual
ParRepair=no
ParRename=no
RarRename=no
Unpack=no
HealthCheck=none
OutputMode=loggable
WriteLog=none
DetailTarget=none
DebugTarget=none
InfoTarget=none
NzbLog=no
KeepHistory=0
UpdateCheck=none
DiskSpace=0
`, dir, host, port, o.conns)
	cf := filepath.Join(dir, "nzbget.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
		return getRun{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.nzbget, "-c", cf, nzb)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	r, err := timed(cmd)
	if err != nil {
		return r, fmt.Errorf("%v\n%s", err, lastLines(out.String(), 20))
	}
	dst := filepath.Join(dir, "dst", "bench")
	if err := checkFiles(dst, ps); err != nil {
		return r, fmt.Errorf("%v\n%s", err, lastLines(out.String(), 20))
	}
	os.RemoveAll(dir)
	return r, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// newsgetChild is the child process: download the NZB into dir from the
// server URL with runtime/newsget, as cmd/newsget does (no progress
// display), and exit 0 only when every file is complete.
func newsgetChild(arg string) int {
	var a []string
	if err := json.Unmarshal([]byte(arg), &a); err != nil || len(a) != 3 {
		fmt.Fprintf(os.Stderr, "newsbench: bad %s\n", newsgetChildEnv)
		return 2
	}
	sc, err := newsget.ParseServerURL(a[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg := &newsget.Config{DownloadDir: a[1], Servers: []newsget.ServerConfig{sc}}
	if err := cfg.Check(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := cfg.ResolveDirs(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	data, err := os.ReadFile(a[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	eng, err := newsget.New(cfg, newsget.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer eng.Close()
	sum, err := eng.Download(context.Background(), []newsget.Job{{Name: a[2], NZB: data}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if !sum.Complete() {
		fmt.Fprintf(os.Stderr, "incomplete: %+v %s %v\n", sum.Files, sum.Fatal, sum.JobErrs)
		return 1
	}
	return 0
}
