package main

// newsfeed innd-channel: innd's channel feed in innfeed's place (see
// runtime/newsfeed/channel.go for how lines become durable and why sm runs
// once per batch). innd starts it from newsfeeds:
//
//	newsflow!:!*:Tc,Wnm*:/usr/bin/newsfeed innd-channel -config /etc/newsflow/newsfeed.toml
//	site1:*:Tm:newsflow!

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
)

func inndChannel(args []string, stdin io.Reader, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsfeed innd-channel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `file` (TOML); its [[peer]] names are the newsfeeds site names")
	verbose := fs.Bool("v", false, "log debug messages")
	smPath := fs.String("sm", "/usr/lib/news/bin/sm", "INN's storage manager `program`, run as \"sm -S TOKEN...\"")
	backlog := fs.String("backlog", "", "a `file` of token lines innd spooled for the channel (pathoutgoing/newsflow!), fed first and then removed")
	logFile := fs.String("log", "", "append the log to this `file` instead of standard error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "newsfeed innd-channel: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg, err := newsfeed.LoadConfig(*config)
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed: %v\n", err)
		return 2
	}
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "newsfeed innd-channel: %v\n", err)
			return 1
		}
		defer f.Close()
		stderr = f
	}
	log := logger(stderr, *verbose).With("role", "innd-channel")
	// The channel takes articles from innd only: its NNTP ingest listener
	// moves to a loopback port nobody is told about.
	cfg.Listen = "127.0.0.1:0"
	cfg.ListenTLS = ""
	// After "ctlinnd xexec" or a channel flush innd starts a new channel
	// process while the old one still writes its queues to backlog and
	// holds the spool: wait for it rather than fail (innd keeps the lines
	// meanwhile).
	var r *newsfeed.Relay
	for wait := time.Now().Add(spoolWait); ; time.Sleep(100 * time.Millisecond) {
		r, err = newsfeed.Open(cfg, newsfeed.Options{Logger: log})
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(wait) {
			break
		}
	}
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		// A signal ends the read of the channel; the batch in hand is
		// still made durable.
		<-ctx.Done()
		if f, ok := stdin.(*os.File); ok {
			f.Close()
		}
	}()
	sm := newsfeed.SM{Path: *smPath, MaxArticle: int(cfg.MaxArticleSize)}
	status := 0
	if *backlog != "" {
		res, err := r.ReadChannelFile(ctx, *backlog, sm)
		logChannel(log, "innd channel backlog file fed", res)
		if err != nil {
			log.Error("innd channel backlog file", "file", *backlog, "err", err)
			status = 1
		}
	}
	if status == 0 {
		res, err := r.RunChannel(ctx, stdin, sm)
		logChannel(log, "innd channel closed", res)
		if err != nil && ctx.Err() == nil {
			log.Error("innd channel", "err", err)
			status = 1
		}
	}
	stopRun()
	if err := <-done; err != nil {
		log.Error("stopped with an error", "err", err)
		return 1
	}
	log.Info("stopped cleanly")
	return status
}

// spoolWait bounds the wait for the previous channel process's spool lock.
const spoolWait = time.Minute

func logChannel(log *slog.Logger, msg string, res newsfeed.ChannelResult) {
	log.Info(msg, "lines", res.Lines, "stored", res.Stored.String(), "bad_lines", res.Bad,
		"no_peer", res.NoPeer, "missing", res.Missing)
}
