package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/newsget/postproc"
	"github.com/newsflow/newsflow/runtime/newsget/serve"
	"github.com/newsflow/newsflow/spoolfs"
)

// serveMain is "newsget serve [-config FILE] [-listen ADDR] [-server URL]... [-addr-file FILE]":
// the download daemon (runtime/newsget/serve).
func serveMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsget serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `file` (TOML)")
	listen := fs.String("listen", "", "HTTP `address` of the API and the page (default [serve] listen, or 127.0.0.1:8085)")
	var servers serverList
	fs.Var(&servers, "server", "server `URL` nntp://[user:pass@]host[:port][?connections=N&...] (repeatable)")
	verbose := fs.Bool("v", false, "log every event")
	addrFile := fs.String("addr-file", "", "write the address actually listened on to `file` (useful with port 0)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: newsget serve [-config FILE] [-listen ADDR] [-server URL]... [-addr-file FILE]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, err := loadConfig(*config, servers)
	if err != nil {
		printErr(stderr, err)
		return 2
	}
	if *listen != "" {
		if err := newsget.CheckListen(*listen); err != nil {
			fmt.Fprintf(stderr, "newsget: -listen %v\n", err)
			return 2
		}
		cfg.Serve.Listen = *listen
	}
	for _, check := range []func() error{cfg.Check, cfg.CheckServe, cfg.ResolveDirs} {
		if err := check(); err != nil {
			fmt.Fprintf(stderr, "newsget: %v\n", err)
			return 2
		}
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// Post-processing: verify, fetch just enough recovery volumes, repair,
	// unpack, clean up (runtime/newsget/postproc); a job is Completed only
	// then.
	pp := postproc.NewProcessor(cfg, logger)
	// What keeps the daemon from starting is found before anything is
	// written (the API key), so that it leaves nothing behind.
	if len(cfg.Servers) == 0 {
		fmt.Fprintln(stderr, "newsget: serve: no server configured (add a [[server]] to the configuration, or -server nntps://host)")
		return 2
	}
	ln, err := net.Listen("tcp", cfg.Serve.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "newsget: %s: %v (another program may hold the port: choose another)\n", listenSource(cfg, *listen), err)
		return 2
	}
	if cfg.Serve.APIKey == "" {
		key, err := loadAPIKey(cfg.QueueDir)
		if err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "newsget: api key: %v\n", err)
			return 2
		}
		cfg.Serve.APIKey = key
	}
	d, err := serve.New(cfg, serve.Options{Log: logger, PostProcess: pp, HoldRecovery: true, APIAddr: ln.Addr().String()})
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "newsget: %v\n", err)
		return 2
	}
	if msg := openPageWarning(cfg.Serve.Listen, cfg.Serve.Htpasswd); msg != "" {
		logger.Warn(msg, "listen", cfg.Serve.Listen)
	}
	if *addrFile != "" {
		if err := spoolfs.WriteFileDurable(*addrFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "newsget: -addr-file: %v\n", err)
			return 2
		}
	}
	fmt.Fprintf(stdout, "newsget serve: http://%s/ (API: /api, key in [serve] api_key or %s)\n", ln.Addr(), filepath.Join(cfg.QueueDir, "api_key"))
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		// The signal is the stop's cause, which the daemon logs; the
		// goroutine ends with serveMain (signal.Stop does not close sigs).
		select {
		case s := <-sigs:
			cancel(errors.New(signalName(s)))
		case <-ctx.Done():
		}
	}()
	hs := d.Server()
	go hs.Serve(ln)
	d.Run(ctx)
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	hs.Shutdown(sctx)
	logger.Info("newsget serve stopped")
	return 0
}

// signalName names a stopping signal as kill(1) and systemd do.
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// listenSource names where the listen address came from, for messages:
// -listen, the file and line of [serve] listen, or the default.
func listenSource(cfg *newsget.Config, flagValue string) string {
	if flagValue != "" {
		return "-listen"
	}
	if line := cfg.Line("serve.listen"); line > 0 {
		return fmt.Sprintf("%s:%d: serve.listen", cfg.Source, line)
	}
	return "serve.listen (default)"
}

// openPageWarning says what to set when the page, whose forms pause,
// delete and add jobs without the API key, is open to other hosts: the
// listen address is not a loopback one and no htpasswd guards the page.
// It is "" when the page is reachable from this host only, or guarded.
func openPageWarning(listen, htpasswd string) string {
	if htpasswd != "" {
		return ""
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	if host == "localhost" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	return "the page listens beyond this host with no htpasswd: anyone who reaches it can pause, delete and add jobs; " +
		"set [serve] htpasswd (and hostnames), or listen on 127.0.0.1"
}

// loadAPIKey returns the key kept in queueDir/api_key, generating it (and
// printing it once, to stderr) the first time.
func loadAPIKey(queueDir string) (string, error) {
	path := filepath.Join(queueDir, "api_key")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	b := make([]byte, 16)
	rand.Read(b)
	key := hex.EncodeToString(b)
	if err := os.MkdirAll(queueDir, 0o700); err != nil {
		return "", err
	}
	if err := spoolfs.WriteFileDurable(path, []byte(key), 0o600); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "newsget serve: generated the API key %s (kept in %s)\n", key, path)
	return key, nil
}
