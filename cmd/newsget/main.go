// Command newsget downloads the files of NZB documents from news servers,
// verified, like NZBGet.
//
//	newsget [-config FILE] [-server URL]... [-o DIR] [-overwrite] [-rate BYTES] [-no-unpack] [-no-cleanup] [-v] FILE.nzb...
//	newsget unpack [-password PW] [-no-cleanup] DIR
//	newsget par2 verify|repair [-j WORKERS] FILE.par2
//	newsget serve [-config FILE] [-listen ADDR]   (the download daemon, runtime/newsget/serve)
//
// A server URL is nntp://[user:pass@]host[:port] or nntps://... (TLS from
// the first byte) with query parameters connections=, level=, group=,
// optional=1, retention= (days), join_group=1, pipeline=, starttls=1,
// verify=0, ca=FILE, ip=4|6. The TOML configuration has the same keys per
// [[server]] and download_dir, queue_dir, rate, daily_quota, monthly_quota,
// quota_day, article_retries (see runtime/newsget.Config).
//
// After the download (PAR2 recovery volumes held back), each job is
// post-processed (runtime/newsget/postproc): verified against its PAR2
// sets from the download's yEnc CRCs, repaired with just enough recovery
// volumes fetched, its RAR, 7z and zip archives unpacked into the download
// directory (password from the NZB's <meta type="password"> or
// {{password}} in its name) and, once every one is unpacked and verified,
// its volumes and PAR2 files removed.
//
// Exit status: 0 when every file is complete and verified, or repaired
// (and unpacked); 1 when some file is incomplete and could not be
// repaired (its missing segments and byte ranges are in the summary and
// in NAME.incomplete) or an archive failed to unpack; 2 for a usage or configuration
// mistake, a refused NZB or no usable server; 3 when a quota stopped the
// download (rerun after it resets to resume).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine/volumes"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/version"
)

func main() {
	if version.Asked(os.Args[1:]) {
		fmt.Println(version.String("newsget"))
		return
	}
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// serverList collects repeated -server flags.
type serverList []string

// String joins the URLs (flag.Value).
func (s *serverList) String() string { return strings.Join(*s, " ") }

// Set adds a URL (flag.Value).
func (s *serverList) Set(v string) error { *s = append(*s, v); return nil }

// usage lists the download's synopsis and every subcommand.
const usage = `usage: newsget [-config FILE] [-server URL]... [-o DIR] [-overwrite] [-rate BYTES] [-connect-tries N] FILE.nzb...
       newsget serve [-config FILE] [-listen ADDR]    the download daemon (SABnzbd API and page)
       newsget unpack [-password PW] [-no-cleanup] DIR unpack the RAR, 7z and zip archives in DIR
       newsget par2 verify|repair [-j WORKERS] FILE.par2
       newsget config [-check] [-config FILE]         the effective configuration, or its mistakes
       newsget -version
Each subcommand's -h lists its flags. The download's flags:
`

// Main runs newsget with args and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return serveMain(args[1:], stdout, stderr)
		case "unpack":
			return unpackMain(args[1:], stdout, stderr)
		case "par2":
			return par2Main(args[1:], stdout, stderr)
		case "config":
			return configMain(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("newsget", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `file` (TOML)")
	var servers serverList
	fs.Var(&servers, "server", "server `URL` nntp://[user:pass@]host[:port][?connections=N&...] (repeatable)")
	out := fs.String("o", "", "download `directory` (default: download_dir of the config, or .)")
	overwrite := fs.Bool("overwrite", false, "replace existing files of the same name")
	rate := fs.String("rate", "", "speed limit in bytes per second over all connections (\"20M\")")
	verbose := fs.Bool("v", false, "log every event")
	quiet := fs.Bool("q", false, "no progress display and no log (the summary only)")
	noUnpack := fs.Bool("no-unpack", false, "leave archives packed (config: unpack = false)")
	noCleanup := fs.Bool("no-cleanup", false, "keep archives and PAR2 files after unpacking (config: cleanup = false)")
	interval := fs.Duration("progress", 0, "plain progress line interval when not on a terminal (default 5s)")
	connectTries := fs.Int("connect-tries", 3, "give up a server that has not once connected after `N` failed tries in a row (3: about 30 s); the download stops when no server is left")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	cfg, err := loadConfig(*config, servers)
	if err != nil {
		printErr(stderr, err)
		return 2
	}
	if err := cfg.Check(); err != nil {
		printErr(stderr, err)
		return 2
	}
	if *out != "" {
		cfg.DownloadDir = *out
	}
	if *rate != "" {
		if err := cfg.Rate.UnmarshalText([]byte(*rate)); err != nil {
			fmt.Fprintf(stderr, "newsget: -rate: %v\n", err)
			return 2
		}
	}
	if err := cfg.ResolveDirs(); err != nil {
		printErr(stderr, err)
		return 2
	}
	var list []newsget.Job
	for _, name := range fs.Args() {
		data, err := os.ReadFile(name)
		if err != nil {
			printErr(stderr, err)
			return 2
		}
		list = append(list, newsget.Job{Name: name, NZB: data, HoldRecovery: true})
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	var logOut io.Writer = stderr
	var term *progressTerm
	if !*quiet && isTerminal(stderr) {
		term = &progressTerm{w: stderr} // log lines above the bar, never through it
		logOut = term
	}
	if *quiet && !*verbose {
		logOut = io.Discard // -q: the summary on stdout is all
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	if *connectTries < 1 {
		fmt.Fprintf(stderr, "newsget: -connect-tries %d: want 1 or more\n", *connectTries)
		return 2
	}
	engOpts := newsget.Options{Overwrite: *overwrite, Log: logger, MaxStartFailures: *connectTries}
	pp := postOptions{unpack: !*noUnpack && (cfg.Unpack == nil || *cfg.Unpack)}
	pp.cleanup = !*noCleanup && (cfg.Cleanup == nil || *cfg.Cleanup)
	pp.maxRatio = cfg.UnpackMaxRatio
	ctx, cancel, interrupted := interruptContext()
	defer cancel()
	// Direct unpack: RAR sets extracted while they download (direct.go);
	// the Engine's notes go to them, not to the fetches of recovery
	// volumes (postprocessJobs uses engOpts as it is here).
	dlOpts := engOpts
	var direct directUnpacks
	if pp.unpack && (cfg.DirectUnpack == nil || *cfg.DirectUnpack) {
		direct = startDirect(ctx, cfg, list, logger)
		defer direct.stop()
		direct.hook(&dlOpts)
	}
	eng, err := newsget.New(cfg, dlOpts)
	if err != nil {
		printErr(stderr, err)
		return 2
	}
	defer eng.Close()

	stopProgress := func() {}
	if !*quiet {
		stopProgress = startProgress(eng, stderr, term, *interval)
	}
	// list is not used after this call, so a large NZB's bytes need not
	// stay live through the whole download: post-processing reads the
	// files again.
	sum, err := eng.Download(ctx, list)
	stopProgress()
	if code := interrupted(); code != 0 {
		fmt.Fprintln(stderr, "newsget: interrupted; what arrived is kept: the same command resumes")
		return code
	}
	if err != nil {
		printErr(stderr, err)
		return 2
	}
	// The fetches of recovery volumes open the job queue again.
	eng.Close()
	printSummary(stdout, sum)
	done := true
	if sum.Quota == "" && sum.Fatal == "" {
		done = postprocessJobs(ctx, cfg, engOpts, fs.Args(), sum, pp, direct, stdout, stderr)
	}
	if code := interrupted(); code != 0 {
		fmt.Fprintln(stderr, "newsget: interrupted during post-processing; the same command finishes it")
		return code
	}
	switch {
	case sum.Quota != "":
		return 3
	case len(sum.JobErrs) > 0 || sum.Fatal != "":
		return 2
	case done:
		return 0
	}
	return 1
}

// loadConfig is the configuration file (none: the defaults) with the
// -server URLs added to its servers.
func loadConfig(file string, servers []string) (*newsget.Config, error) {
	cfg := &newsget.Config{}
	if file != "" {
		c, err := newsget.LoadConfig(file)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	for _, u := range servers {
		sc, err := newsget.ParseServerURL(u)
		if err != nil {
			return nil, fmt.Errorf("-server: %w", err)
		}
		cfg.Servers = append(cfg.Servers, sc)
	}
	return cfg, nil
}

// printErr writes "newsget: " and the error, once: errors from package
// newsget already start with that prefix.
func printErr(w io.Writer, err error) {
	fmt.Fprintf(w, "newsget: %s\n", strings.TrimPrefix(err.Error(), "newsget: "))
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// startProgress shows progress until the returned function is called: a
// bar redrawn in place on term (the terminal, nil when w is not one), a
// plain line every interval otherwise.
func startProgress(eng *newsget.Engine, w io.Writer, term *progressTerm, interval time.Duration) func() {
	tty := term != nil
	every := interval
	if every <= 0 {
		every = 5 * time.Second
	}
	if tty {
		every = 250 * time.Millisecond
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	var meter speedMeter
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				if tty {
					term.draw("")
				}
				return
			case <-t.C:
				p := eng.Progress()
				speed, eta := meter.add(p)
				if tty {
					term.draw(progressBar(p, speed, eta, 30))
				} else {
					fmt.Fprintln(w, progressLine(p, speed, eta))
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

// progressBar draws "[#####-----] 42% files 1/3 12.3 MiB/s ETA 12s" with
// the current speed and the time left at it (speedMeter). Sizes and
// speeds are in the units of the configuration's grammar (K, M, G are
// powers of 1024: rate = "2M" shows as 2.0 MiB/s).
func progressBar(p newsget.Progress, speed float64, eta time.Duration, width int) string {
	frac := 0.0
	if p.Segments > 0 {
		frac = float64(p.Done+p.Failed) / float64(p.Segments)
	}
	n := int(frac * float64(width))
	return fmt.Sprintf("[%s%s] %3.0f%% files %d/%d %s ETA %s conns %d", strings.Repeat("#", n),
		strings.Repeat("-", width-n), frac*100, p.FilesDone, p.Files, formatSpeed(speed), eta, p.Connections)
}

// progressLine is the plain periodic line.
func progressLine(p newsget.Progress, speed float64, eta time.Duration) string {
	s := fmt.Sprintf("newsget: files %d/%d segments %d/%d (%d missing) %s %s ETA %s retries %d",
		p.FilesDone, p.Files, p.Done, p.Segments, p.Failed, newsget.FormatBytes(p.Received), formatSpeed(speed), eta, p.Retries)
	if p.QuotaReached != "" {
		s += " (" + p.QuotaReached + ")"
	}
	return s
}

// formatSpeed writes bytes per second in MiB/s, the unit of rate = "2M".
func formatSpeed(bps float64) string {
	return fmt.Sprintf("%.1f MiB/s", bps/(1<<20))
}

// printSummary writes the end-of-run summary.
func printSummary(w io.Writer, s *newsget.Summary) {
	complete, incomplete := 0, 0
	missing := 0
	held, heldBytes := 0, int64(0)
	for _, f := range s.Files {
		if f.Held {
			held++
			heldBytes += f.Source.Bytes()
			continue
		}
		if f.Complete {
			complete++
		} else {
			incomplete++
		}
		missing += len(f.Missing)
	}
	for _, e := range s.JobErrs {
		fmt.Fprintf(w, "refused: %s\n", e)
	}
	// Jobs with a whole PAR2 index: their incomplete files go to repair.
	repairable := map[string]bool{}
	for _, f := range s.Files {
		if p, ok := volumes.ParsePar2Name(f.Name); ok && p.Index && f.Complete {
			repairable[f.Job] = true
		}
	}
	for _, f := range s.Files {
		if f.Held {
			continue
		}
		if f.Complete {
			state := "complete"
			if f.Already {
				state = "already complete"
			}
			if f.Removed {
				fmt.Fprintf(w, "%s: %s (%d bytes; unpacked and removed)\n", state, f.Name, f.Size)
				continue
			}
			fmt.Fprintf(w, "%s: %s (%d bytes)\n", state, f.Name, f.Size)
			continue
		}
		if repairable[f.Job] {
			fmt.Fprintf(w, "incomplete: %s: %s; to be repaired from its PAR2 set\n", f.Name, f.Err)
		} else {
			fmt.Fprintf(w, "incomplete: %s: %s\n", f.Name, f.Err)
		}
		listed := f.Missing[:min(len(f.Missing), newsget.MaxMissingListed)]
		for _, line := range strings.Split(strings.TrimSpace(newsget.FormatMissing(listed)), "\n") {
			if line != "" {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
		if more := len(f.Missing) - len(listed); more > 0 {
			fmt.Fprintf(w, "  ... and %d more missing segments, listed in %s\n", more, strings.TrimSuffix(f.Path, ".part")+".incomplete")
		}
	}
	if held > 0 {
		fmt.Fprintf(w, "held back: %s (%s), fetched only when a repair needs them\n", plural(held, "PAR2 recovery volume"), newsget.FormatBytes(heldBytes))
	}
	for _, sv := range s.Servers {
		fmt.Fprintf(w, "server given up: %s\n", sv)
	}
	secs := s.Elapsed.Seconds()
	speed := 0.0
	if secs > 0 {
		speed = float64(s.Received) / secs
	}
	var retries []string
	keys := make([]string, 0, len(s.Retries))
	for k := range s.Retries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		retries = append(retries, fmt.Sprintf("%s %d", k, s.Retries[k]))
	}
	if len(retries) == 0 {
		retries = []string{"none"}
	}
	fmt.Fprintf(w, "summary: files %d complete, %d incomplete; %d bytes received, %d written; segments %d done, %d missing; requests %d; retries: %s; %s in %s\n",
		complete, incomplete, s.Received, s.Decoded, s.Stats.Done, missing, s.Stats.Requests, strings.Join(retries, ", "),
		formatSpeed(speed), s.Elapsed.Round(time.Millisecond))
	if s.Quota != "" {
		fmt.Fprintf(w, "stopped: %s\n", s.Quota)
	}
	if s.Fatal != "" {
		fmt.Fprintf(w, "stopped: %s\n", s.Fatal)
	}
}
