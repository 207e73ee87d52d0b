// Command newsfeed is newsflow's transit feeder: it takes articles from
// upstream servers (MODE STREAM, CHECK, TAKETHIS, IHAVE) and from files,
// stores each once, and feeds every peer that wants it, like INN's innfeed.
//
//	newsfeed [-config FILE] [-v]              run the relay
//	newsfeed inject [-config FILE] FILE...    store rnews batches or article files
//	newsfeed demo [-n N] [-v] [-cluster]      run the relay against two loopback peers
//	newsfeed status [-config FILE] [-admin ADDR] [-json]
//	                                          print per-peer state from the admin listener
//	newsfeed innd-channel [-config FILE]      innd's channel feed (newsfeeds Tc,Wnm*), in innfeed's place
//	newsfeed ctl [-config FILE] VERB [PEER]   pause, resume, kick, flush a peer; reload, reopen
//	newsfeed trace [-config FILE] MESSAGE-ID  where did an article go
//	newsfeed report [-config FILE] [-since 24h] [-json]
//	                                          the daily summary from the article log
//	newsfeed config [-config FILE | -check FILE]
//	                                          print the effective configuration, or check a file
//
// With no -config, newsfeed runs an embedded default: ingest on
// 127.0.0.1:1119, the spool under $XDG_STATE_HOME/newsflow (or
// ~/.local/state/newsflow), no peers.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/newsfeed/cluster"
	"github.com/newsflow/newsflow/runtime/version"
)

func main() {
	if version.Asked(os.Args[1:]) {
		fmt.Println(version.String("newsfeed"))
		return
	}
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs newsfeed with args and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "inject":
			return inject(args[1:], stdout, stderr)
		case "demo":
			return demo(args[1:], stdout, stderr)
		case "status":
			return status(args[1:], stdout, stderr)
		case "innd-channel":
			return inndChannel(args[1:], os.Stdin, stderr)
		case "ctl":
			return ctl(args[1:], stdout, stderr)
		case "trace":
			return trace(args[1:], stdout, stderr)
		case "config":
			return config(args[1:], stdout, stderr)
		case "report":
			return report(args[1:], stdout, stderr)
		case "help", "-h", "-help", "--help":
			usage(stderr)
			return 0
		}
	}
	return run(args, stderr)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  newsfeed [-config FILE] [-v]              run the relay (embedded default without -config)
  newsfeed inject [-config FILE] FILE...    store rnews batches or single article files
  newsfeed demo [-n N] [-v] [-cluster]      run the relay against two loopback peers
                                            (-cluster: 3 embedded NATS servers, two nodes, kills)
  newsfeed status [-config FILE] [-admin ADDR] [-json] [-wait DURATION [-drained]]
  newsfeed innd-channel [-config FILE] [-sm PROGRAM] [-backlog FILE] [-log FILE] [-v]
                                            innd's channel feed in innfeed's place (newsfeeds Tc,Wnm*)
  newsfeed ctl [-config FILE] pause PEER | resume PEER | kick PEER | flush PEER | drop PEER
                                            | reload | reopen
  newsfeed trace [-config FILE] [-json] MESSAGE-ID
  newsfeed report [-config FILE] [-since DURATION] [-json]
                                            the daily summary from the article log (innreport)
  newsfeed config [-config FILE]            print the effective configuration, every default filled in
  newsfeed config -check FILE               report every mistake in FILE (FILE:LINE: KEY: ...)
`)
}

func logger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsfeed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `file` (TOML); the embedded default when empty")
	verbose := fs.Bool("v", false, "log debug messages")
	fs.Usage = func() { usage(stderr); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "newsfeed: unexpected argument %q\n", fs.Arg(0))
		usage(stderr)
		return 2
	}
	cfg, err := newsfeed.LoadConfig(*config)
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed: %v\n", err)
		return 2
	}
	out := stderr
	opts := newsfeed.Options{}
	reopen := func() {}
	if cfg.LogFile != "" {
		lf, err := cfg.OpenLogFile()
		if err != nil {
			fmt.Fprintf(stderr, "newsfeed: %v\n", err)
			return 1
		}
		defer lf.Close()
		out, opts.ReopenLog = lf, lf.Reopen
		reopen = func() { lf.Reopen() }
	}
	log := logger(out, *verbose)
	opts.Logger = log
	if cfg.Cluster != nil {
		defer onSignal(syscall.SIGUSR1, reopen)()
		return runCluster(cfg, log)
	}
	r, err := newsfeed.Open(cfg, opts)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	defer onSignal(syscall.SIGHUP, func() { r.ReloadConfig() })()
	defer onSignal(syscall.SIGUSR1, func() { r.Reopen() })()
	if err := r.Run(ctx); err != nil {
		log.Error("stopped with an error", "err", err)
		return 1
	}
	log.Info("stopped cleanly")
	return 0
}

// runCluster runs newsfeed as a node of a cluster on NATS JetStream
// ([cluster] in the configuration).
func runCluster(cfg *newsfeed.Config, log *slog.Logger) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n, err := cluster.Open(ctx, cfg, cluster.Options{Logger: log})
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	if err := n.Run(ctx); err != nil {
		log.Error("stopped with an error", "err", err)
		return 1
	}
	log.Info("stopped cleanly")
	return 0
}

func inject(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsfeed inject", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `file` (TOML); the embedded default when empty")
	verbose := fs.Bool("v", false, "log debug messages")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: newsfeed inject [-config FILE] FILE...")
		return 2
	}
	cfg, err := newsfeed.LoadConfig(*config)
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed: %v\n", err)
		return 2
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if cfg.Cluster != nil {
		// A cluster node's store is JetStream: hand the articles to the
		// node running with this configuration.
		return injectRemote(ctx, cfg, fs.Args(), stdout, stderr)
	}
	r, err := newsfeed.Open(cfg, newsfeed.Options{Logger: log, NoConnect: true})
	if errors.Is(err, syscall.EWOULDBLOCK) {
		// A relay runs on this spool: hand it the articles over its
		// ingest listener instead.
		return injectRemote(ctx, cfg, fs.Args(), stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed inject: %v\n", err)
		return 1
	}
	inject := func(name string) (newsfeed.InjectResult, error) { return r.InjectFile(ctx, name) }
	return injectFiles(fs.Args(), inject, r.Close, stdout, stderr)
}

// injectFiles injects each file with inject, printing its notes and
// counts, then calls done (when set) and prints the total. It returns 1
// when a file or done failed or an article was rejected.
func injectFiles(files []string, inject func(name string) (newsfeed.InjectResult, error), done func() error, stdout, stderr io.Writer) int {
	var total newsfeed.InjectResult
	failed := false
	for _, name := range files {
		res, err := inject(name)
		printInjectNotes(stdout, res)
		fmt.Fprintf(stdout, "%s: %s\n", name, res)
		if err != nil {
			fmt.Fprintf(stderr, "newsfeed inject: %s: %v\n", name, err)
			failed = true
		}
		total.Add(res)
	}
	if done != nil {
		if err := done(); err != nil {
			fmt.Fprintf(stderr, "newsfeed inject: %v\n", err)
			failed = true
		}
	}
	fmt.Fprintf(stdout, "total: %s\n", total)
	if failed || total.Rejected > 0 {
		return 1
	}
	return 0
}

// printInjectNotes prints a line for each article inject did not store:
// "refused <id>: already in history".
func printInjectNotes(w io.Writer, res newsfeed.InjectResult) {
	for _, n := range res.Notes {
		fmt.Fprintln(w, n)
	}
	if res.Unnoted > 0 {
		fmt.Fprintf(w, "... and %d more refused or rejected\n", res.Unnoted)
	}
}

func injectRemote(ctx context.Context, cfg *newsfeed.Config, files []string, stdout, stderr io.Writer) int {
	listen, _, err := newsfeed.ReadAddrs(cfg.Spool)
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed inject: the spool is in use, and %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "the spool is in use: offering the articles to the running newsfeed on %s\n", listen)
	// One session per file, so that each file's counts are printed as
	// without a running relay.
	inject := func(name string) (newsfeed.InjectResult, error) {
		return newsfeed.InjectRemote(ctx, listen, []string{name}, int(cfg.MaxArticleSize))
	}
	return injectFiles(files, inject, nil, stdout, stderr)
}

func demo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsfeed demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 200, "number of sample articles")
	verbose := fs.Bool("v", false, "show the relay's log")
	clustered := fs.Bool("cluster", false, "show cluster mode: 3 embedded NATS servers, two newsfeed nodes, one killed")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts := DemoOptions{Articles: *n}
	if *verbose {
		opts.Log = stderr
	}
	run := Demo
	if *clustered {
		run = DemoCluster
	}
	if err := run(context.Background(), stdout, opts); err != nil {
		fmt.Fprintf(stderr, "newsfeed demo: %v\n", err)
		return 1
	}
	return 0
}

func status(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsfeed status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `file` whose admin address to ask")
	admin := fs.String("admin", "", "admin listener `host:port` (overrides the configuration's)")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	wait := fs.Duration("wait", 0, "keep asking for up to this long until newsfeed answers")
	drained := fs.Bool("drained", false, "with -wait: also wait until no peer has articles queued")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	deadline := time.Now().Add(*wait)
	for {
		body, st, err := fetchStatus(*config, *admin)
		if err == nil && (!*drained || isDrained(st)) {
			if *asJSON {
				stdout.Write(body)
			} else {
				printStatus(stdout, st, time.Now())
			}
			return 0
		}
		if time.Now().After(deadline) || errors.Is(err, errAdminUnset) {
			if err == nil {
				err = errors.New("peers still have articles queued")
				printStatus(stdout, st, time.Now())
			}
			fmt.Fprintf(stderr, "newsfeed status: %v\n", err)
			return 1
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// isDrained reports whether no configured peer has articles queued (a
// removed peer's queue waits for the stop).
func isDrained(st newsfeed.Status) bool {
	for _, p := range st.Peers {
		if p.Queued != 0 && !p.Removed {
			return false
		}
	}
	return true
}

// fetchStatus asks the admin listener: -admin, else the configuration's
// admin address, else (port 0 or none) the one the running relay wrote in
// its spool.
func fetchStatus(config, admin string) ([]byte, newsfeed.Status, error) {
	var st newsfeed.Status
	addr, _, err := adminAddr(config, admin)
	if err != nil {
		return nil, st, err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/status.json")
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err) {
			return nil, st, errNoRelay(addr)
		}
		return nil, st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, st, fmt.Errorf("%s: %s", addr, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, st, fmt.Errorf("%s: %w", addr, err)
	}
	return body, st, nil
}

// errAdminUnset: the configuration has no admin listener to ask.
var errAdminUnset = errors.New("status, ctl and trace need an admin listener (set admin, see newsfeed.toml(5), or pass -admin HOST:PORT)")

// adminAddr is the admin listener to ask: admin, else the configuration's
// admin address, else (port 0) the one the running relay wrote in its
// spool. cfg is nil when admin was given.
func adminAddr(config, admin string) (string, *newsfeed.Config, error) {
	if admin != "" {
		return admin, nil, nil
	}
	cfg, err := newsfeed.LoadConfig(config)
	if err != nil {
		// The running relay keeps the configuration it loaded: it can
		// still be asked, at its admin address.
		return "", nil, fmt.Errorf("%w\n(a running relay keeps the configuration it loaded; to ask it before the file is fixed, pass -admin HOST:PORT)", err)
	}
	addr := cfg.Admin
	if addr == "" {
		// Without admin the relay has no admin listener to ask.
		return "", cfg, fmt.Errorf("admin is not set in %s: %w", cfg.Source, errAdminUnset)
	}
	if strings.HasSuffix(addr, ":0") {
		_, running, err := newsfeed.ReadAddrs(cfg.Spool)
		if err != nil || running == "" {
			return "", cfg, fmt.Errorf("no relay answering: admin is %s (a port chosen at start) and no running newsfeed wrote its admin address to %s (is newsfeed running with %s?)",
				addr, newsfeed.AddrFile(cfg.Spool), cfg.Source)
		}
		addr = running
	}
	return addr, cfg, nil
}

// errNoRelay is the answer when nothing listens at the admin address.
func errNoRelay(addr string) error {
	return fmt.Errorf("no relay answering at %s (is newsfeed running, with this admin address?)", addr)
}

// printStatus prints st as of now.
func printStatus(w io.Writer, st newsfeed.Status, now time.Time) {
	acc := "accepting"
	if !st.Accepting {
		acc = "NOT accepting: " + st.NotReason
	}
	fmt.Fprintf(w, "newsfeed %s on %s, up since %s, %s\n", st.PathHost, st.Listen, st.Started.Format(time.RFC3339), acc)
	fmt.Fprintf(w, "ingest: connections %d open %d accepted %d refused %d deferred %d rejected %d\n",
		st.Ingest.Connections, st.Ingest.Open, st.Ingest.Accepted, st.Ingest.Refused, st.Ingest.Deferred, st.Ingest.Rejected)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// The columns from OFFERED to QUEUED add up as the man page says:
	// offered = accepted + refused + rejected + dropped + missing + too
	// old + lost + queued (deferred articles are in queued).
	fmt.Fprintln(tw, "PEER\tOFFERED\tACCEPTED\tREFUSED\tREJECTED\tDEFERRED\tDROPPED\tMISSING\tTOO OLD\tLOST\tQUEUED\tBACKLOG\tCONNECTIONS")
	for _, p := range st.Peers {
		conns := ""
		var retries []string
		for i, c := range p.Connections {
			if i > 0 {
				conns += ", "
			}
			conns += fmt.Sprintf("#%d", c.ID)
			if r := retryIn(c.RetryAt, now); r != "" {
				retries = append(retries, r)
			}
			// Connections down for the same error show it once, after
			// the last of them, with their retries in their order:
			// "#1, #2 waiting, retry in 3s/1m12s (ERROR)".
			if c.Error != "" && i+1 < len(p.Connections) && p.Connections[i+1].State == c.State && p.Connections[i+1].Error == c.Error {
				continue
			}
			conns += " " + c.State
			if len(retries) > 0 {
				conns += ", retry in " + strings.Join(retries, "/")
				retries = retries[:0]
			}
			if c.Error != "" {
				conns += " (" + c.Error + ")"
			}
		}
		name := p.Name
		if p.Paused {
			name += " (paused)"
		}
		if p.Removed {
			name += " (removed)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%dB\t%s\n", name, p.Offered, p.Accepted, p.Refused,
			p.Rejected, p.Deferred, p.Dropped, p.Missing, p.TooOld, p.Lost, p.Queued, p.BacklogArticle, p.BacklogBytes, conns)
	}
	tw.Flush()
	if len(st.Peers) == 0 {
		fmt.Fprintln(w, "no peers configured")
	}
	// Errors the connections have since recovered from: history, with
	// their time and age.
	for _, p := range st.Peers {
		for _, c := range p.Connections {
			if c.LastErr == "" || c.Error != "" {
				continue
			}
			age := ""
			if at, err := time.Parse(time.RFC3339, c.LastErrAt); err == nil {
				age = fmt.Sprintf(" (%s ago)", now.Sub(at).Round(time.Second))
			}
			fmt.Fprintf(w, "last error: %s #%d at %s%s: %s\n", p.Name, c.ID, c.LastErrAt, age, c.LastErr)
		}
	}
}

// retryIn says how long until at (a connection's RetryAt), to the second
// ("<1s" under one): "" without a retry time.
func retryIn(at string, now time.Time) string {
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return ""
	}
	d := t.Sub(now)
	if d < time.Second {
		return "<1s"
	}
	return d.Round(time.Second).String()
}
