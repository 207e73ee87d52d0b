// Package newsfeed is newsfeed's core: it wires the ingest machine, the
// spool and history, the masterfeed, the per-peer queues and the feed
// machine into a running transit relay. Connections are driven through
// runtime/driver's seam by runtime/goroutine, or, with runtime = "epoll", by
// one runtime/epoll loop (TLS peers stay on goroutines; see drive.go).
//
// # Theory of operation
//
//	upstream --TCP--> ingest conns (machine/ingest on the configured runtime)
//	                      | Check: History.Reserve -> want / refuse / defer
//	                      | Article: Path prepend, Spool.Put, masterfeed route
//	                      v
//	                 committer: offer each article to the peers that want it
//	                 (their queue journals), one Spool.Sync, then Stored for
//	                 the whole batch (239/235); every 100 ms one backlog Sync
//	                 per peer, then the fan-out position moves (fanout.go)
//	                      |
//	                 peerQueue (machine/queue + spoolfs.Backlog), per peer
//	                      |  Next / Done, .B/.D/.P files
//	                      v
//	                 outConn 1..N per peer: dial, machine/handshake, then
//	                 machine/feed pipelining CHECK/TAKETHIS (or IHAVE)
//
// An article is acknowledged upstream only after the batch it is in is
// durable: its spool record, and its queue entries for every peer that wants
// it, either in the queue's files (the journal, or a .B file when the peer
// is down) or, until the next backlog Sync, as the spool record itself after
// the fan-out position, which a restart routes to its peers again. After a
// crash the queue recovers its entries from its files and the spool supplies
// the rest, so every acknowledged article still reaches every peer that
// wants it; the ones that were in flight, or queued and routed again, may
// reach a peer twice, which the peer refuses cheaply (438).
//
// Disk full: when a Sync (or Put) fails with ENOSPC the relay stops
// accepting: every ingest machine is told (CHECK 431, IHAVE 436, TAKETHIS 400
// and close), the log says why, and the committer retries the Sync every
// probe interval; the first that succeeds acknowledges the held batch and
// accepting resumes.
//
// Shutdown (context cancelled, e.g. SIGTERM): the listener closes, ingest
// connections are told to stop (their owed answers still go out), the
// committer finishes its batch, outgoing connections close gracefully (QUIT
// after the outstanding answers; unanswered articles go back to the queue),
// each peer queue writes its memory queue to backlog, and the spool closes.
package newsfeed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/spoolfs"
)

// Options tune a Relay beyond its Config; the zero value is fine.
type Options struct {
	// Logger receives the relay's log; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// BackoffBase is the first reconnect delay (growing to the peer's
	// reconnect_max); 250ms when zero.
	BackoffBase time.Duration
	// ProbeInterval is how often a full disk is probed; 500ms when zero.
	ProbeInterval time.Duration
	// SegmentSize overrides the spool's segment size (tests).
	SegmentSize int64
	// QueueConfig, if set, adjusts each peer's queue configuration after it
	// was derived from the Config (tests: shorter delays).
	QueueConfig func(*queue.Config)
	// StopTimeout bounds the graceful part of a shutdown (ingest
	// connections finishing, peer connections draining answers); 5s when
	// zero.
	StopTimeout time.Duration
	// NoConnect keeps the relay from dialing its peers (inject opens the
	// relay only to store and queue articles).
	NoConnect bool
	// ReopenLog reopens the log's file (log_file); Reopen calls it.
	ReopenLog func() error
}

// Relay is a running (or openable) newsfeed instance.
type Relay struct {
	cfg  *Config
	opts Options
	log  *slog.Logger
	now  func() time.Time

	spool *spoolfs.Spool
	// peers are the configured peers; a reload replaces the slice under
	// putMu and mu (route reads it under putMu, the rest through
	// peerList). retired are peers a reload removed: their connections are
	// stopped, their queues stay open until Close (reload.go).
	peers    []*peer
	retired  map[string]*peer
	reloadMu sync.Mutex // one reload at a time, and none during shutdown
	runCtx   context.Context
	com      *committer
	alog     *articleLog // the article log (artlog.go); nil without article_log
	rates    rateRing    // ingest: accepted articles per second

	started time.Time
	ingest  ingestStats
	limits  ingestLimits // limits.go
	putMu   sync.Mutex   // Put and hand-over to the committer (fanout.go)

	auth ingestAuth // ingest_users, TLS, [[incoming]] (auth.go, incoming.go)

	mu        sync.Mutex
	ln        net.Listener
	lnTLS     net.Listener // listen_tls, nil when not set
	admin     net.Listener
	inConns   map[*inConn]struct{}
	notAccept string // why ingest is not accepting; "" when it is
	running   bool
	stopped   bool // Run is shutting down or has ended: no more reloads

	accepting atomic.Bool
	wg        sync.WaitGroup

	// badBodies are articles that could not be read for sending
	// (bodies.go); lostArticles counts every acknowledged article the
	// spool lost (lost.go).
	badBodies    badBodies
	lostArticles atomic.Int64
	// loop drives connections when runtime = "epoll" (drive.go); nil
	// with the goroutine runtime.
	loop *eventLoop
}

// makeSpoolDir makes sure the spool directory exists. A configured spool
// must be an existing directory, or its parent must exist and only the
// last component is made (logged): a mistyped path fails instead of
// starting on an empty spool somewhere else. The embedded default's place
// under the user's state directory is made whole (logStart names it).
func makeSpoolDir(cfg *Config, log *slog.Logger) error {
	dir := cfg.Spool
	if cfg.Source == EmbeddedSource {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("relay: spool: %w", err)
		}
		return nil
	}
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("relay: spool %s: not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("relay: spool: %w", err)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if pfi, err := os.Stat(parent); err != nil || !pfi.IsDir() {
		return fmt.Errorf("relay: spool %s: its parent directory %s does not exist; create it, or correct spool in %s", dir, parent, cfg.Source)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("relay: spool: %w", err)
	}
	log.Info("spool directory created", "spool", dir)
	return nil
}

// Open opens the spool and every peer's queue (recovering what a crash
// left), without listening or connecting: Run does that.
func Open(cfg *Config, opts Options) (*Relay, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = 250 * time.Millisecond
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 5 * time.Second
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = 500 * time.Millisecond
	}
	r := &Relay{cfg: cfg, opts: opts, log: opts.Logger, now: opts.Now, inConns: map[*inConn]struct{}{}}
	r.badBodies.log = r.log
	r.accepting.Store(true)
	if err := r.openAuth(); err != nil {
		return nil, err
	}
	if err := makeSpoolDir(cfg, r.log); err != nil {
		return nil, err
	}
	sp, err := spoolfs.OpenSpool(filepath.Join(cfg.Spool, "spool"), spoolfs.SpoolOptions{
		MaxArticleSize: int(cfg.MaxArticleSize) + 64<<10, // room for our Path entry and dot-stuffing
		SegmentSize:    opts.SegmentSize,
		HistorySize:    cfg.HistorySize,
		Logger:         r.log,
	})
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	r.spool = sp
	if n := sp.LostAtOpen(); n > 0 {
		r.countLost(int64(n), "spool data cut off or gone at start")
	}
	backlogDir := filepath.Join(cfg.Spool, "backlog")
	for i := range cfg.Peers {
		p, err := newPeer(r, &cfg.Peers[i], backlogDir)
		if err != nil {
			r.closeQueues()
			sp.Close()
			return nil, err
		}
		r.peers = append(r.peers, p)
	}
	if !opts.NoConnect {
		r.reportOrphans()
	}
	r.com = newCommitter(r)
	r.started = r.now()
	if err := r.recoverFanout(); err != nil {
		r.closeQueues()
		sp.Close()
		return nil, err
	}
	if path := cfg.ArticleLogPath(); path != "" {
		r.alog, err = openArticleLog(path, int64(cfg.ArticleLogMax), cfg.ArticleLogKeep, r.log)
		if err != nil {
			r.closeQueues()
			sp.Close()
			return nil, fmt.Errorf("relay: %w", err)
		}
		r.alog.mu.Lock()
		r.alog.now = r.now
		r.alog.mu.Unlock()
	}
	if err := sp.Writable(); isDiskFull(err) {
		// A kill -9 while the disk was full can leave a torn tail the
		// open could not quarantine: start anyway, feeding peers but not
		// accepting, until the committer's probe finds space again.
		r.log.Error("starting without accepting articles: the spool takes no writes for lack of space", "err", err)
		r.setAccepting(false, "disk full")
		r.com.diskFull()
	}
	return r, nil
}

// Config returns the relay's configuration.
func (r *Relay) Config() *Config { return r.cfg }

// Spool returns the relay's spool (tests and inject look articles up).
func (r *Relay) Spool() *spoolfs.Spool { return r.spool }

// Addr returns the ingest listener's address once Run listens; nil before.
func (r *Relay) Addr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln == nil {
		return nil
	}
	return r.ln.Addr()
}

// AdminAddr returns the admin listener's address, nil when there is none.
func (r *Relay) AdminAddr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.admin == nil {
		return nil
	}
	return r.admin.Addr()
}

// Listen opens the ingest (and admin) listeners without serving them yet,
// so that a caller learns the addresses before Run. Run calls it if needed.
func (r *Relay) Listen() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", r.cfg.Listen)
	if err != nil {
		return fmt.Errorf("relay: ingest listener: %w", err)
	}
	r.ln = ln
	if err := r.listenTLS(); err != nil {
		ln.Close()
		r.ln = nil
		return err
	}
	if r.cfg.Admin != "" {
		al, err := net.Listen("tcp", r.cfg.Admin)
		if err != nil {
			ln.Close()
			r.ln = nil
			r.closeTLSListener()
			return fmt.Errorf("relay: admin listener: %w", err)
		}
		r.admin = al
	}
	return nil
}

// Run serves until ctx ends, then shuts down cleanly (see the package
// comment) and closes the relay. It returns nil after a clean shutdown.
func (r *Relay) Run(ctx context.Context) error {
	if err := r.Listen(); err != nil {
		r.Close()
		return err
	}
	runCtx, stopConns := context.WithCancel(context.Background())
	defer stopConns()
	r.mu.Lock()
	r.running = true
	r.runCtx = runCtx
	ln, al := r.ln, r.admin
	r.mu.Unlock()
	if err := r.startLoop(); err != nil {
		r.Close()
		return err
	}

	r.logStart()
	r.writeAddrFile()
	defer os.Remove(AddrFile(r.cfg.Spool))

	r.com.start()
	if !r.opts.NoConnect {
		r.reloadMu.Lock()
		for _, p := range r.peerList() {
			p.start(runCtx)
		}
		r.reloadMu.Unlock()
	}
	var adminSrv *adminServer
	if al != nil {
		tok, err := r.ensureCtlToken()
		if err != nil {
			r.log.Error("control disabled (newsfeed ctl will not work)", "err", err)
		}
		adminSrv = r.serveAdmin(al, tok)
	}
	statsDone := make(chan struct{})
	go r.statsLoop(ctx, statsDone)
	expireDone := make(chan struct{})
	go r.expireLoop(ctx, expireDone)
	scaleDone := make(chan struct{})
	go r.scaleLoop(ctx, scaleDone)

	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		r.acceptLoop(runCtx, ln)
	}()
	tlsDone := r.serveTLSListener(runCtx)

	<-ctx.Done()
	<-scaleDone
	r.log.Info("shutting down: no more articles accepted, queues go to backlog")
	ln.Close()
	r.closeTLSListener()
	<-acceptDone
	<-tlsDone
	r.stopIngest()
	r.com.stop()
	r.reloadMu.Lock() // no reload from here on, and none starts peers later
	defer r.reloadMu.Unlock()
	r.mu.Lock()
	r.running, r.stopped = false, true
	r.mu.Unlock()
	for _, p := range r.peerList() {
		p.stop(false)
	}
	stopConns()
	r.wg.Wait()
	if r.loop != nil {
		r.loop.close()
	}
	<-statsDone
	<-expireDone
	if adminSrv != nil {
		adminSrv.close()
	}
	r.logStats(true)
	return r.Close()
}

// logStart says what the relay runs with, including when it is the
// embedded default.
func (r *Relay) logStart() {
	c := r.cfg
	if c.Source == EmbeddedSource {
		r.log.Info("no -config given: running the embedded default configuration (ingest only, no peers)",
			"listen", r.Addr().String(), "spool", c.Spool)
	}
	peers := r.peerList()
	names := make([]string, len(peers))
	for i, p := range peers {
		names[i] = p.cfg.Name
	}
	attrs := []any{"config", c.Source, "listen", r.Addr().String(), "spool", c.Spool, "pathhost", c.PathHost,
		"peers", strings.Join(names, ",")}
	if a := r.AdminAddr(); a != nil {
		attrs = append(attrs, "admin", a.String())
	}
	r.log.Info("newsfeed running", attrs...)
	if len(names) == 0 {
		r.log.Warn("no peers configured: articles are stored but fed to no one")
	}
}

// Close closes the queues and the spool. Run calls it; call it directly
// only for a relay that was opened and never run (inject).
func (r *Relay) Close() error {
	r.com.stop()
	err := r.closeQueues()
	if err == nil && !r.com.frozen() {
		// Everything stored is in the queues' files now.
		if e := r.spool.Sync(); e == nil {
			if e := writeFanout(r.cfg.Spool, r.spool.End()); e != nil {
				r.log.Warn("cannot record the fan-out position", "err", e)
			}
		}
	}
	if e := r.spool.Close(); e != nil && err == nil {
		err = e
	}
	if e := r.alog.close(); e != nil {
		r.log.Warn("article log", "err", e)
	}
	return err
}

func (r *Relay) closeQueues() error {
	var first error
	now := r.now()
	r.mu.Lock()
	all := append([]*peer(nil), r.peers...)
	for _, p := range r.retired {
		all = append(all, p)
	}
	r.mu.Unlock()
	for _, p := range all {
		if err := p.q.shutdown(now); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// peerList returns the configured peers (the slice is not changed in
// place: a reload replaces it).
func (r *Relay) peerList() []*peer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peers
}

// route returns the peers that get a copy of an article (the masterfeed):
// those whose patterns want one of its newsgroups, whose pathname is not in
// its Path (as it arrived, before our own entry), whose size limit it
// fits, and whose hashfeed takes its Message-ID.
func (r *Relay) route(id string, groups []string, path string, size int64, dst []*peer) []*peer {
	for _, p := range r.peers {
		if Wants(&p.patterns, p.cfg, &p.skips, id, groups, path, size) {
			dst = append(dst, p)
		}
	}
	return dst
}

// setAccepting switches ingest on or off for every connection, with the
// reason logged and given to upstream peers.
func (r *Relay) setAccepting(ok bool, reason string) {
	r.mu.Lock()
	was := r.notAccept
	// The log line comes before the switch takes effect, so whoever sees
	// the new answers finds the reason in the log already.
	switch {
	case ok && was != "":
		r.log.Info("accepting articles again", "was", was)
	case !ok && was != reason:
		r.log.Error("not accepting articles: CHECK gets 431, IHAVE 436, TAKETHIS 400 and close", "reason", reason)
	}
	if ok {
		r.notAccept = ""
	} else {
		r.notAccept = reason
	}
	conns := make([]*inConn, 0, len(r.inConns))
	for c := range r.inConns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	r.accepting.Store(ok)
	for _, c := range conns {
		c.setAccepting(ok, reason)
	}
}

// notAccepting returns why ingest is off, "" when it is on.
func (r *Relay) notAccepting() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.notAccept
}

// expireEvery is how often the spool and the history are expired.
const expireEvery = time.Hour

// expireLoop expires a minute after start and then every expireEvery,
// until ctx ends.
func (r *Relay) expireLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Expire(r.now())
			t.Reset(expireEvery)
		}
	}
}

// Expire removes spool segments older than spool_max_age or beyond
// spool_max_bytes, and forgets message-ids older than history_retention.
// Queued copies of removed articles are settled as missing when their turn
// comes. Run calls it every hour.
func (r *Relay) Expire(now time.Time) {
	if r.cfg.SpoolMaxAge > 0 || r.cfg.SpoolMaxBytes > 0 {
		n, err := r.spool.Expire(now, r.cfg.SpoolMaxAge.D(), int64(r.cfg.SpoolMaxBytes))
		switch {
		case err != nil:
			r.log.Error("spool expiry", "err", err)
		case n > 0:
			r.log.Info("spool expired", "segments", n, "bytes_left", r.spool.Bytes())
		}
	}
	if r.cfg.HistoryRetention > 0 {
		keep := r.cfg.HistoryRetention.D()
		n, err := r.spool.History().Expire(now, keep, keep)
		switch {
		case err != nil:
			r.log.Error("history expiry", "err", err)
		case n > 0:
			r.log.Info("history expired", "entries", n, "left", r.spool.History().Len())
		}
	}
	// Articles found sendable before are checked again (Relay.sendable).
	r.badBodies.ok.reset()
}

// isDiskFull reports whether err is the disk (or quota) filling up.
func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// entryFor is an article's queue entry.
func entryFor(tok spoolfs.Token, id string, size int64, now time.Time) queue.Entry {
	return queue.Entry{Token: tok.String(), MessageID: id, Size: size, Offered: now}
}
