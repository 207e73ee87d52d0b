// Command newsweb is a web reader for Usenet: it serves newsgroups as HTML
// pages and a JSON API, reading from one or more NNTP servers by priority
// through caches, so that many readers cost the servers few commands.
//
// Usage:
//
//	newsweb [-config FILE] [-listen ADDR] [-admin ADDR] [-server URL]... [-ca FILE] [-debug] [-addr-file FILE]
//
// A server URL is nntp://[user:pass@]host[:port] or nntps://... (implicit
// TLS), with optional ?priority=N (lower is asked first) and
// &connections=N. -server adds to the servers of the configuration file.
// Pages are at /, the API under /api/. Prometheus metrics are at /metrics
// on the admin listener (-admin, or admin in the configuration; none when
// unset), never on the public one: they name the backend servers.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	mreader "github.com/newsflow/newsflow/machine/reader"
	"github.com/newsflow/newsflow/runtime/newsweb"
	"github.com/newsflow/newsflow/runtime/version"
)

// noServerHelp is printed when no server is configured.
const noServerHelp = `newsweb: no news server configured.
Pass at least one with -server, for example:
  newsweb -server nntp://news.example.com
  newsweb -server 'nntps://user:pass@news.example.com?priority=1&connections=4' -server nntp://backup.example.com?priority=2
or list them in a TOML file given with -config:
  [[server]]
  url = "nntps://news.example.com"
`

// list is a repeatable flag.
type list []string

// String joins the values (flag.Value).
func (l *list) String() string { return strings.Join(*l, " ") }

// Set appends a value (flag.Value).
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if version.Asked(os.Args[1:]) {
		fmt.Println(version.String("newsweb"))
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "config" {
		os.Exit(configCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// run is newsweb; it returns the exit status.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsweb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		servers  list
		confPath = fs.String("config", "", "TOML configuration `file`")
		listen   = fs.String("listen", "", "HTTP `address` to serve on (default "+defaultListen+")")
		caFile   = fs.String("ca", "", "PEM `file` of certificates to trust for -server TLS connections")
		debug    = fs.Bool("debug", false, "log at debug level (background refresh, coalescing, failover)")
		addrFile = fs.String("addr-file", "", "write the address actually listened on to `file` (useful with port 0)")
		admin    = fs.String("admin", "", "admin HTTP `address` serving /metrics (default none; keep it private)")
		adminOut = fs.String("admin-addr-file", "", "write the admin address actually listened on to `file`")
	)
	fs.Var(&servers, "server", "NNTP server `URL` (nntp:// or nntps://, ?priority=N&connections=N); repeatable")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: newsweb [-config FILE] [-listen ADDR] [-server URL]...\n       newsweb config [-config FILE] | newsweb config -check FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "newsweb: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	// load reads the configuration file (none: the defaults) with the
	// flags' overrides, at start and on SIGHUP.
	load := func() (config, error) {
		var cfg config
		if *confPath != "" {
			var err error
			if cfg, err = loadConfig(*confPath); err != nil {
				return config{}, err
			}
		}
		if *listen != "" {
			if err := checkAddr(*listen); err != nil {
				return config{}, fmt.Errorf("-listen: %w", err)
			}
			cfg.Listen = *listen
		}
		if *admin != "" {
			if err := checkAddr(*admin); err != nil {
				return config{}, fmt.Errorf("-admin: %w", err)
			}
			cfg.Admin = *admin
		}
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		fmt.Fprintf(stderr, "newsweb: %v\n", err)
		return 2
	}
	searchSet := cfg.SearchDir != ""
	cfg = cfg.withDefaults()
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // parseConfig checked it
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	var serverCfgs []newsweb.ServerConfig
	for i := range cfg.Servers {
		sc, err := cfg.serverConfig(i)
		if err != nil {
			fmt.Fprintf(stderr, "newsweb: %v\n", err)
			return 2
		}
		serverCfgs = append(serverCfgs, sc)
	}
	var extraTLS *tls.Config
	if *caFile != "" {
		var err error
		if extraTLS, err = trustFile(*caFile); err != nil {
			fmt.Fprintf(stderr, "newsweb: -ca: %v\n", err)
			return 2
		}
	}
	for _, u := range servers {
		sc, err := newsweb.ParseServerURL(u)
		if err != nil {
			fmt.Fprintf(stderr, "newsweb: -server: %v\n", err)
			return 2
		}
		sc.TLSConfig = extraTLS
		if sc.Name == "" {
			sc.Name = fmt.Sprintf("server%d", len(serverCfgs)+1)
		}
		serverCfgs = append(serverCfgs, sc)
	}
	if len(serverCfgs) == 0 {
		fmt.Fprint(stderr, noServerHelp)
		return 2
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := newsweb.NewMetrics(reg)
	timeout := time.Duration(cfg.RequestTimeout)
	var cluster *newsweb.Cluster
	if len(cfg.Cluster.NATS) > 0 {
		cc := cfg.cacheConfig().WithDefaults()
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var err error
		cluster, err = newsweb.NewCluster(cctx, newsweb.ClusterOptions{URLs: cfg.Cluster.NATS,
			ArticleTTL: cc.Article, ThreadsTTL: cc.Threads, Logger: log})
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "newsweb: [cluster]: %v\n", err)
			return 1
		}
		defer cluster.Close()
	}
	var svcs []*newsweb.Service
	for _, sc := range serverCfgs {
		svcs = append(svcs, newsweb.NewService(sc, newsweb.ServiceOptions{
			RequestTimeout: timeout,
			Scheduler: mreader.SchedulerConfig{
				Aging:    time.Duration(cfg.Queue.PriorityAging),
				Capacity: [3]int{cfg.Queue.Capacity, cfg.Queue.Capacity, cfg.Queue.Capacity},
			},
			Client:  mreader.Config{ThreadLimit: cfg.ThreadLimit},
			Logger:  log,
			Metrics: metrics,
		}))
	}
	fed := newsweb.NewFederated(svcs, newsweb.FederatedOptions{
		Cache:             cfg.cacheConfig(),
		ArticleCacheBytes: int64(cfg.Cache.ArticleBytes),
		ThreadLimit:       cfg.ThreadLimit,
		Cluster:           cluster,
		FetchTimeout:      timeout,
		ServerTimeout:     time.Duration(cfg.ServerTimeout),
		Logger:            log,
		Metrics:           metrics,
	})
	defer fed.Close()
	posting, err := cfg.posting()
	if err != nil {
		fmt.Fprintf(stderr, "newsweb: %v\n", err)
		return 2
	}
	var search *newsweb.Search
	switch {
	case !*cfg.Search:
	case cfg.SearchDir == "":
		log.Warn("search is off: no state directory is known (set search_dir, or HOME, or STATE_DIRECTORY)")
	default:
		search, err = newsweb.NewSearch(fed, newsweb.SearchOptions{Dir: cfg.SearchDir, MaxBytes: int64(cfg.SearchBytes),
			Bodies: cfg.SearchBodies, Logger: log})
		switch {
		case err != nil && searchSet:
			fmt.Fprintf(stderr, "newsweb: search_dir: %v\n", err)
			return 1
		case err != nil:
			log.Warn("search is off: the default index directory cannot be used; set search_dir", "err", err)
			search = nil
		default:
			defer search.Close()
		}
	}
	var visitsFile string
	if posting != nil {
		visitsFile = cfg.Posting.VisitsFile
		if visitsFile == "" {
			log.Warn("readers' visits are kept in memory only: no state directory is known (set posting.visits_file, or HOME, or STATE_DIRECTORY)")
		}
		if cfg.Posting.LogoutsFile == "" && cfg.Posting.Users != "" {
			log.Warn("logouts are kept in memory only: a restart lets logged-out sessions back in until they expire; no state directory is known (set posting.logouts_file, or HOME, or STATE_DIRECTORY)")
		}
	}
	handler := newsweb.New(fed, newsweb.Options{Site: cfg.Site, Timeout: timeout, PerPage: cfg.PerPage, Logger: log,
		Registerer: reg, Posting: posting, Search: search, HiddenGroups: cfg.hiddenGroups(), VisitsFile: visitsFile})
	defer handler.Close()

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "newsweb: listen: %v%s\n", err, inUseHint(err, cfg.Listen, "-listen", "listen"))
		return 1
	}
	addr := ln.Addr().String()
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(addr+"\n"), 0o644); err != nil {
			fmt.Fprintf(stderr, "newsweb: -addr-file: %v\n", err)
			return 1
		}
	}
	if cfg.Admin != "" {
		// The admin listener: /metrics names the backend servers, so it
		// is served apart from the public pages.
		aln, err := net.Listen("tcp", cfg.Admin)
		if err != nil {
			fmt.Fprintf(stderr, "newsweb: admin listen: %v%s\n", err, inUseHint(err, cfg.Admin, "-admin", "admin"))
			return 1
		}
		if *adminOut != "" {
			if err := os.WriteFile(*adminOut, []byte(aln.Addr().String()+"\n"), 0o644); err != nil {
				fmt.Fprintf(stderr, "newsweb: -admin-addr-file: %v\n", err)
				return 1
			}
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		asrv := newsweb.NewHTTPServer(cfg.Admin, mux)
		go asrv.Serve(aln)
		defer asrv.Close()
		log.Info("newsweb admin", "addr", "http://"+aln.Addr().String()+"/metrics")
	}
	names := make([]string, 0, len(svcs))
	for _, s := range fed.Services() {
		c := s.Config()
		names = append(names, fmt.Sprintf("%s(priority %d, %d connections, %s)", c.Name, c.Priority, c.Connections, c.TLS))
	}
	state := []any{"addr", "http://" + addr + "/", "servers", strings.Join(names, " ")}
	if search != nil {
		state = append(state, "search_dir", cfg.SearchDir)
	}
	if visitsFile != "" {
		state = append(state, "visits_file", visitsFile)
	}
	if posting != nil && cfg.Posting.LogoutsFile != "" {
		state = append(state, "logouts_file", cfg.Posting.LogoutsFile)
	}
	log.Info("newsweb serving", state...)

	// The public pages go through newsweb's own HTTP/1.1 path for plain
	// GETs (newsweb.Front), net/http for the rest.
	srv := newsweb.NewFront(newsweb.NewHTTPServer(cfg.Listen, handler), ln)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case err := <-errc:
			if !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(stderr, "newsweb: serve: %v\n", err)
				return 1
			}
			return 0
		case <-hup:
			cfg = reload(cfg, load, posting, log)
		case <-ctx.Done():
			log.Info("newsweb shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
			return 0
		}
	}
}

// reload is what SIGHUP does: it reads the configuration file again and
// the users file, and logs what it did. A file with a mistake is refused
// (the log names FILE:LINE) and the running configuration stays. The users
// file takes effect at once; other changed keys are listed as waiting for
// a restart. It returns the configuration in effect.
func reload(running config, load func() (config, error), posting *newsweb.Posting, log *slog.Logger) config {
	next, err := load()
	if err == nil {
		err = next.checkFiles()
	}
	if err != nil {
		log.Error("reload refused: the running configuration stays", "err", strings.ReplaceAll(err.Error(), "\n", "; "))
		return running
	}
	next = next.withDefaults()
	attrs := []any{"file", running.source}
	if posting != nil {
		n, err := posting.Reload()
		if err != nil {
			log.Error("reload refused: the users file has a mistake; the running users stay", "err", err)
			return running
		}
		attrs = append(attrs, "users", n)
	}
	if changed := changedKeys(running, next); len(changed) > 0 {
		attrs = append(attrs, "restart_needed_for", strings.Join(changed, ","))
	}
	log.Info("reloaded the configuration", attrs...)
	return running
}

// changedKeys lists the keys whose values differ between a and b, as
// "table.key".
func changedKeys(a, b config) []string {
	flat := func(c config) map[string]string {
		out := map[string]string{}
		text, _ := c.format()
		table := ""
		arrays := map[string]int{}
		for _, line := range strings.Split(string(text), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "[["):
				name := strings.Trim(line, "[] ")
				arrays[name]++
				table = fmt.Sprintf("%s[%d].", name, arrays[name])
			case strings.HasPrefix(line, "["):
				table = strings.Trim(line, "[] ") + "."
			case strings.Contains(line, " = ") && !strings.HasPrefix(line, "#"):
				k, v, _ := strings.Cut(line, " = ")
				out[table+k] = v
			}
		}
		return out
	}
	fa, fb := flat(a), flat(b)
	var keys []string
	for k, v := range fb {
		if w, ok := fa[k]; !ok || w != v {
			keys = append(keys, k)
		}
	}
	for k := range fa {
		if _, ok := fb[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// inUseHint is what to do when a listen failed because another program
// holds addr: "" for other errors.
func inUseHint(err error, addr, flag, key string) string {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ""
	}
	return fmt.Sprintf("; another program listens on %s: stop it, or choose another address with %s or %s in the configuration", addr, flag, key)
}
