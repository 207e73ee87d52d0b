package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// DemoOptions tune Demo.
type DemoOptions struct {
	Articles int           // how many sample articles; 200 when zero
	Timeout  time.Duration // give up after this long; 30s when zero
	Log      io.Writer     // the relay's log (nil: only warnings and errors, to Out)
}

// Demo runs the real relay on the embedded default configuration (with a
// temporary spool and a free port) against two loopback peers it starts
// itself, small NNTP sinks from runtime/testpeer/nntptest. sink-b is down at first,
// so its copies go to backlog; then it comes up and the backlog is
// replayed. It injects generated sample articles, prints what happens and
// the per-peer stats lines to out, and returns nil only when every article
// reached both sinks (checked by message-id).
func Demo(ctx context.Context, out io.Writer, opts DemoOptions) error {
	if opts.Articles <= 0 {
		opts.Articles = 200
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

	dir, err := os.MkdirTemp("", "newsfeed-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	sinks := make([]*nntptest.Server, 2)
	for i, name := range []string{"sink-a", "sink-b"} {
		s, err := nntptest.New(nntptest.Options{Hostname: name})
		if err != nil {
			return fmt.Errorf("demo: start %s: %w", name, err)
		}
		defer s.Close()
		sinks[i] = s
	}
	cfg, err := newsfeed.LoadConfig("")
	if err != nil {
		return err
	}
	cfg.Spool = dir
	cfg.Listen = "127.0.0.1:0"
	cfg.PathHost = "demo-relay.invalid"
	for i, s := range sinks {
		name := []string{"sink-a", "sink-b"}[i]
		text := fmt.Sprintf("[[peer]]\nname = %q\nhost = \"127.0.0.1\"\nport = %d\nconnections = 2\nreconnect_max = \"500ms\"\n", name, s.Port())
		pc, err := newsfeed.ParseConfig("demo", []byte("spool = \"/x\"\n"+text))
		if err != nil {
			return err
		}
		cfg.Peers = append(cfg.Peers, pc.Peers[0])
	}

	logOut := opts.Log
	level := slog.LevelInfo
	if logOut == nil {
		logOut, level = out, slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	r, err := newsfeed.Open(cfg, newsfeed.Options{Logger: log, BackoffBase: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	if err := r.Listen(); err != nil {
		r.Close()
		return err
	}
	say("newsfeed demo: relay %s on %s (embedded default, temporary spool %s)", cfg.PathHost, r.Addr(), dir)
	say("peers: sink-a on %s, sink-b on %s", sinks[0].HostPort(), sinks[1].HostPort())

	runCtx, stopRelay := context.WithCancel(context.Background())
	defer stopRelay()
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run(runCtx) }()

	third := opts.Articles / 3
	ids := make([]string, 0, opts.Articles)
	batch := func(from, to int) [][]byte {
		var arts [][]byte
		for i := from; i < to; i++ {
			id, a := DemoArticle(i)
			ids = append(ids, id)
			arts = append(arts, a)
		}
		return arts
	}
	res := r.Inject(ctx, batch(0, third))
	say("injected %d articles: %s", third, res)
	for i, s := range sinks {
		if err := await(ctx, s, ids); err != nil {
			return fmt.Errorf("demo: %s did not get the first batch: %w", []string{"sink-a", "sink-b"}[i], err)
		}
	}
	say("both sinks have all %d", len(ids))

	down := sinks[1].AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 400, Text: "sink-b is down for the demo", Close: true})
	sinks[1].DropConns()
	// Wait until the relay has seen sink-b's connections close, so the
	// next batch goes to backlog files rather than to a queue that a
	// connection about to fail still holds.
	for ctx.Err() == nil && connsUp(r, "sink-b") > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	say("sink-b goes down (connections dropped, reconnects refused with 400)")
	res = r.Inject(ctx, batch(third, 2*third))
	say("injected %d more articles: %s", third, res)
	if err := await(ctx, sinks[0], ids); err != nil {
		return fmt.Errorf("demo: sink-a did not get the second batch: %w", err)
	}
	s, _ := r.PeerStats("sink-b")
	say("sink-a has all %d; sink-b's copies wait: %d in backlog files (%d bytes), %d in memory",
		len(ids), s.BacklogArticle, s.BacklogBytes, s.Memory+s.InFlight)

	time.Sleep(300 * time.Millisecond) // down for a while: the relay retries with growing backoff
	sinks[1].RemoveFault(down)
	say("sink-b comes back up: its backlog is replayed")
	res = r.Inject(ctx, batch(2*third, opts.Articles))
	say("injected %d more articles: %s", opts.Articles-2*third, res)

	okA := await(ctx, sinks[0], ids)
	okB := await(ctx, sinks[1], ids)
	settle(ctx, r)
	say("stats:")
	for _, line := range strings.Split(strings.TrimSpace(r.StatsLines()), "\n") {
		say("  %s", line)
	}
	stopRelay()
	if err := <-runErr; err != nil {
		return fmt.Errorf("demo: relay: %w", err)
	}
	for i, err := range []error{okA, okB} {
		if err != nil {
			return fmt.Errorf("demo: %s is missing articles: %w", []string{"sink-a", "sink-b"}[i], err)
		}
	}
	say("every one of the %d articles reached both peers (checked by message-id)", len(ids))
	return nil
}

// await waits until s holds every id, or ctx ends.
func await(ctx context.Context, s *nntptest.Server, ids []string) error {
	err := s.Await(ctx, func() bool {
		for _, id := range ids {
			if !s.Has(id) {
				return false
			}
		}
		return true
	})
	if err != nil {
		missing := 0
		for _, id := range ids {
			if !s.Has(id) {
				missing++
			}
		}
		return fmt.Errorf("%d of %d missing: %w", missing, len(ids), err)
	}
	return nil
}

// connsUp is the number of the named peer's connections that are up.
func connsUp(r *newsfeed.Relay, name string) int {
	s, _ := r.PeerStats(name)
	return s.ConnsUp
}

// settle waits until no peer has articles queued (the last answers are
// in), or ctx ends.
func settle(ctx context.Context, r *newsfeed.Relay) {
	for ctx.Err() == nil {
		queued := int64(0)
		for _, p := range r.Status().Peers {
			queued += p.Queued
		}
		if queued == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// DemoArticle generates sample article i: its message-id and native text.
func DemoArticle(i int) (string, []byte) {
	id := fmt.Sprintf("<demo.%d.%d@newsflow.invalid>", i, os.Getpid())
	groups := []string{"demo.test", "misc.test", "demo.talk"}[i%3]
	var b strings.Builder
	fmt.Fprintf(&b, "Path: demo-origin.invalid!not-for-mail\n")
	fmt.Fprintf(&b, "From: Demo Poster <demo@newsflow.invalid>\n")
	fmt.Fprintf(&b, "Newsgroups: %s\n", groups)
	fmt.Fprintf(&b, "Subject: newsfeed demo article %d\n", i)
	fmt.Fprintf(&b, "Date: %s\n", time.Now().UTC().Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: %s\n\n", id)
	for l := 0; l < 20+i%40; l++ {
		fmt.Fprintf(&b, "Line %d of sample article %d: the quick brown fox jumps over the lazy dog.\n", l, i)
	}
	b.WriteString(".a line starting with a dot, to be dot-stuffed on the wire\n")
	return id, []byte(b.String())
}
