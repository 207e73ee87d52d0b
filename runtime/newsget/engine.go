// Package newsget is newsget's engine: it downloads the files of NZB
// documents from news servers into a directory, driving the pure
// machines of machine/download (Scheduler, Fetch, Limiter, Quota) and
// machine/handshake over real connections with runtime/goroutine, and
// keeps its progress in spoolfs's durable job queue.
//
// # Theory of operation
//
// One Scheduler decides everything about segments and servers; it is not
// safe for concurrent use, so it lives under Engine.mu. Every connection
// has its own goroutine running runtime/goroutine's loop with a Fetch
// machine; its step callback (after every input) drains the Fetch's
// events: Data goes straight to WriteAt in the output file (output.go),
// results are checked against the file and reported to the Scheduler under
// the lock, and the Scheduler's events are dispatched: an Assign becomes a
// request in the target connection's mailbox (that connection's step is
// woken with its drive.Mailbox if it is not the current one), a Dial starts a
// dialing goroutine (conn.go), SegmentDone/SegmentFailed update the file.
//
// The engine's own goroutine (Download's loop) owns time-driven work: the
// Scheduler's deadline (the end of server blocks), the group commit of
// progress (every SyncInterval: fdatasync the output files that were
// written, then Record the finished segments in the job queue and Sync
// it, so a segment recorded done is durable in its file), the quota
// (counting bytes read, persisting the counters, pausing the Scheduler
// when one is reached), finishing files and the end of the run.
//
// Resume: a job is named by a hash of its NZB and the download directory,
// so a rerun finds it in the queue (after spoolfs's Recover moved it back
// from in flight) with the segments recorded done; only the others are
// given to the Scheduler, and the .part files are reopened, not truncated.
package newsget

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/machine/download"
	"github.com/newsflow/newsflow/machine/jobs"
	"github.com/newsflow/newsflow/machine/volumes"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/spoolfs"
)

// Options tune an Engine beyond its Config; zero fields take defaults.
type Options struct {
	Overwrite bool             // replace existing files of the same name
	Log       *slog.Logger     // nil: discard
	Now       func() time.Time // nil: time.Now
	Loc       *time.Location   // time zone for quota days; nil: time.Local
	// BackoffBase and BackoffMax bound a server's block after auth or
	// connect failures (machine/download defaults when zero).
	BackoffBase, BackoffMax time.Duration
	// MaxServerFailures: a server blocked this many times in a row is given
	// up for the run. Default 4.
	MaxServerFailures int
	// MaxStartFailures: a server that has not once connected in this run
	// is given up after this many blocks in a row instead (with the
	// default backoff, 3 is about 30 s: blocks of 10 s and 20 s); 0 or
	// more than MaxServerFailures: MaxServerFailures.
	MaxStartFailures int
	// SyncInterval is the group commit period of progress. Default 100 ms.
	SyncInterval time.Duration
	// NZBLimits bound what an NZB may hold.
	NZBLimits proto.NZBLimits
	// ReadBuffer is each connection's read buffer; 256 KiB when zero.
	ReadBuffer int
	// OnSegment hears of every segment done or failed (observe.go).
	OnSegment func(SegmentNote)
	// OnFile hears of every file of a job: queued for this run, or
	// finished (observe.go).
	OnFile func(FileNote)
}

// Job is one NZB to download.
type Job struct {
	Name string // for messages: usually the NZB's file name
	NZB  []byte
	// HoldRecovery holds back the NZB's PAR2 recovery volumes (files
	// named NAME.volNN+MM.par2 of a set whose index NAME.par2 the NZB
	// lists, machine/volumes.Hold): their results are Held, with the NZB
	// entry to fetch them by, so that post-processing fetches only the
	// volumes a repair needs.
	HoldRecovery bool
}

// Engine downloads NZB jobs. Create it with New, call Download once,
// then Close.
type Engine struct {
	cfg   *Config
	opts  Options
	log   *slog.Logger
	queue *spoolfs.JobQueue
	quota *quotaStore

	servers []*serverRun
	byID    map[int]*serverRun

	mu       sync.Mutex // guards everything below and the Scheduler
	sched    *download.Scheduler
	files    []*outFile
	conns    map[download.ConnID]*connRun
	closing  bool   // the run is ending: close connections when idle
	fatal    error  // a reason to stop the run
	quotaMsg string // set when a quota stopped the run
	taken    map[string]bool

	limiter   download.Limiter
	limiterMu sync.Mutex
	readCap   atomic.Int64 // bytes one read may take while a rate is set (readCap)
	rate      atomic.Int64 // the limiter's Rate, read without its lock

	kick       chan struct{} // wakes the loop: deadline or state changed
	received   atomic.Int64  // bytes read from servers
	decoded    atomic.Int64  // bytes written to files
	throttled  atomic.Int64  // nanoseconds reads were held back by the speed limit
	quotaAt    int64         // received when the quota was last counted
	totalBytes int64         // article bytes of the segments to fetch (NZB bytes=)
	wg         sync.WaitGroup
	ctx        context.Context
	stop       context.CancelFunc
	start      time.Time
}

// serverRun is a configured server and what happened to it.
type serverRun struct {
	id      int
	cfg     ServerConfig
	tls     *tlsSetup
	lastErr string
	gaveUp  bool
	wasUp   bool // a connection to it came up in this run
	// blockedUntil is when the scheduler dials it again after failures;
	// zero while it is not held back.
	blockedUntil time.Time
}

// jobRun is a job being downloaded.
type jobRun struct {
	name     string
	id       string
	entry    spoolfs.InflightJob
	files    []*outFile
	err      error
	finished bool
}

// New opens the job queue and the quota state of cfg (whose directories
// must be resolved, see Config.ResolveDirs).
func New(cfg *Config, opts Options) (*Engine, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Loc == nil {
		opts.Loc = time.Local
	}
	if opts.MaxServerFailures <= 0 {
		opts.MaxServerFailures = 4
	}
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = 100 * time.Millisecond
	}
	if opts.ReadBuffer <= 0 {
		opts.ReadBuffer = 256 << 10
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Servers) == 0 {
		return nil, errors.New("newsget: no server configured (use -server nntp://host or a [[server]] in the config)")
	}
	e := &Engine{cfg: cfg, opts: opts, log: log, byID: map[int]*serverRun{}, conns: map[download.ConnID]*connRun{},
		kick: make(chan struct{}, 1), taken: map[string]bool{}}
	for i, sc := range cfg.Servers {
		t, err := newTLSSetup(sc)
		if err != nil {
			return nil, fmt.Errorf("newsget: server %s: %w", sc.Label(), err)
		}
		sr := &serverRun{id: i + 1, cfg: sc, tls: t}
		e.servers = append(e.servers, sr)
		e.byID[sr.id] = sr
	}
	if err := os.MkdirAll(cfg.DownloadDir, 0o755); err != nil {
		return nil, fmt.Errorf("newsget: download_dir: %w", err)
	}
	if err := os.MkdirAll(cfg.QueueDir, 0o755); err != nil {
		return nil, fmt.Errorf("newsget: queue_dir: %w", err)
	}
	q, err := spoolfs.OpenJobQueue(filepath.Join(cfg.QueueDir, "jobs"), spoolfs.JobQueueOptions{})
	if err != nil {
		return nil, fmt.Errorf("newsget: %w", err)
	}
	rec, err := q.Recover()
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("newsget: job queue recovery: %w", err)
	}
	if len(rec.Requeued) > 0 {
		log.Info("resuming interrupted jobs", "jobs", len(rec.Requeued))
	}
	e.queue = q
	qs, err := openQuota(cfg.QueueDir, cfg, opts.Loc)
	if err != nil {
		q.Close()
		return nil, err
	}
	e.quota = qs
	e.SetRate(int64(cfg.Rate))
	return e, nil
}

// Close releases the job queue.
func (e *Engine) Close() error {
	if e.queue == nil {
		return nil
	}
	err := e.queue.Close()
	e.queue = nil
	return err
}

// Summary is the outcome of a Download.
type Summary struct {
	Files    []*FileResult
	JobErrs  []string // jobs refused as a whole (a hostile NZB), in words
	Received int64    // bytes read from servers
	Decoded  int64    // bytes written to files
	Elapsed  time.Duration
	Stats    download.Stats // the Scheduler's counters
	// Retries counts requests that repeated a failed one, by that
	// failure's cause ("connection error", "corrupt", "missing", ...).
	Retries   map[string]int
	Throttled time.Duration // time reads were held back by the speed limit (rate)
	Quota     string        // set when a quota stopped the download
	Fatal     string        // set when the run could not go on (no usable server)
	Servers   []string      // servers given up, and why
}

// Complete reports whether every file of every job is complete and
// verified: newsget's exit status 0.
func (s *Summary) Complete() bool {
	if len(s.JobErrs) > 0 || s.Quota != "" || s.Fatal != "" {
		return false
	}
	for _, f := range s.Files {
		if !f.Complete && !f.Held {
			return false
		}
	}
	return true
}

// jobID names a job in the queue: the same NZB into the same directory is
// the same job, so a rerun resumes it.
func jobID(nzb []byte, dir string) string {
	h := sha256.New()
	h.Write(nzb)
	h.Write([]byte{0})
	h.Write([]byte(dir))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Download fetches every file of the jobs and returns what became of
// them. An error means the run could not start (the Summary says what
// happened to files otherwise).
func (e *Engine) Download(ctx context.Context, list []Job) (*Summary, error) {
	// Setup holds mu so that Progress, called from another goroutine,
	// waits for it.
	e.mu.Lock()
	e.start = e.opts.Now()
	sum := &Summary{Retries: map[string]int{}}
	var servers []download.Server
	for _, sr := range e.servers {
		sc := sr.cfg
		servers = append(servers, download.Server{ID: sr.id, Name: sc.Label(), Level: sc.Level, Group: sc.Group,
			Active: sc.IsActive(), Optional: sc.Optional, Connections: sc.Connections, Pipeline: sc.Pipeline,
			Retention: sc.Retention, JoinGroup: sc.JoinGroup})
	}
	sched, err := download.NewScheduler(download.Config{ArticleRetries: e.cfg.ArticleRetries,
		BackoffBase: e.opts.BackoffBase, BackoffMax: e.opts.BackoffMax}, servers)
	if err != nil {
		e.mu.Unlock()
		return nil, fmt.Errorf("newsget: %w", err)
	}
	e.sched = sched

	var jobsRun []*jobRun
	for _, j := range list {
		jr, err := e.prepare(j)
		if err != nil {
			sum.JobErrs = append(sum.JobErrs, fmt.Sprintf("%s: %v", j.Name, err))
			e.log.Error("job refused", "nzb", j.Name, "err", err)
			continue
		}
		jobsRun = append(jobsRun, jr)
	}

	if reached, kind := e.quota.q.Reached(e.opts.Now()); reached {
		e.quotaMsg = e.quotaMessage(kind)
	}

	e.ctx, e.stop = context.WithCancel(ctx)
	defer e.stop()
	now := e.opts.Now()
	// The segments go to the Scheduler one by one (AddAll), not as a slice
	// of a million Segments first.
	segs := func(yield func(download.Segment) bool) {
		for _, o := range e.files {
			if o.refused != "" {
				continue
			}
			var posted time.Time
			if o.nzb.Date > 0 {
				posted = time.Unix(o.nzb.Date, 0)
			}
			for _, s := range o.nzb.Segments {
				if o.prior.Has(s.Number) {
					continue
				}
				e.totalBytes += s.Bytes
				if !yield(download.Segment{Key: download.Key{File: o.key, Number: s.Number}, MessageID: s.MessageID,
					Bytes: s.Bytes, Groups: o.nzb.Groups, Posted: posted}) {
					return
				}
			}
		}
	}
	if e.quotaMsg != "" {
		e.sched.Pause(now, true)
		e.closing = true
	}
	if err := e.sched.AddAll(now, segs); err != nil {
		e.mu.Unlock()
		return nil, fmt.Errorf("newsget: %w", err)
	}
	// The Scheduler holds what it needs of every segment (message-ids
	// shared, not copied); the parsed list is no longer needed (32 bytes a
	// segment). Held and refused files keep theirs.
	for _, o := range e.files {
		if o.refused == "" {
			o.nzb.Segments = nil
		}
	}
	wake := e.dispatch(now, nil)
	e.mu.Unlock()
	e.wakeAll(wake)

	e.loop()
	// Connections close gracefully (QUIT); one that does not within a
	// few seconds is cut.
	waited := make(chan struct{})
	go func() { e.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		e.stop()
		<-waited
	}

	// Whatever is left: make progress durable, finish files.
	if err := e.commit(); err != nil {
		sum.Fatal = err.Error()
	}
	e.mu.Lock()
	e.finishFiles(true)
	e.mu.Unlock()
	for _, jr := range jobsRun {
		e.endJob(jr)
	}
	e.saveQuota()

	e.mu.Lock()
	defer e.mu.Unlock()
	for _, o := range e.files {
		if o.result != nil {
			o.result.Index = o.idx
			sum.Files = append(sum.Files, o.result)
		}
	}
	sum.Received, sum.Decoded = e.received.Load(), e.decoded.Load()
	sum.Throttled = time.Duration(e.throttled.Load())
	sum.Elapsed = e.opts.Now().Sub(e.start)
	sum.Stats = e.sched.Stats()
	for o, n := range sum.Stats.Retries {
		sum.Retries[o.String()] += n
	}
	sum.Quota = e.quotaMsg
	if e.fatal != nil && sum.Fatal == "" {
		sum.Fatal = e.fatal.Error()
	}
	for _, sr := range e.servers {
		if sr.gaveUp {
			sum.Servers = append(sum.Servers, fmt.Sprintf("%s: %s", sr.cfg.Label(), sr.lastErr))
		}
	}
	return sum, nil
}

// prepare parses a job's NZB, puts it in the queue (or finds it there),
// moves it in flight and sets up its output files.
func (e *Engine) prepare(j Job) (*jobRun, error) {
	nzb, err := proto.ParseNZB(bytes.NewReader(j.NZB), e.opts.NZBLimits)
	if err != nil {
		return nil, err // Summary.JobErrs: the caller says "refused"
	}
	if len(nzb.Files) == 0 {
		return nil, errors.New("the NZB lists no files")
	}
	jr := &jobRun{name: j.Name, id: jobID(j.NZB, e.cfg.DownloadDir)}
	if err := e.startEntry(jr, j, nzb); err != nil {
		return nil, err
	}
	meta, f, err := e.queue.ReadInflight(jr.entry)
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	f.Close()
	var hold []bool
	if j.HoldRecovery {
		names := make([]string, len(nzb.Files))
		for i := range nzb.Files {
			names[i] = SanitizeName(nzb.Files[i].Filename(), fmt.Sprintf("file-%d", i+1))
		}
		hold = volumes.Hold(names)
	}
	for i := range nzb.Files {
		nf := &nzb.Files[i]
		o := &outFile{key: len(e.files), job: jr, idx: i, nzb: nf, segments: len(nf.Segments), dir: e.cfg.DownloadDir}
		jr.files = append(jr.files, o)
		e.files = append(e.files, o)
		o.remaining = len(nf.Segments)
		if len(nf.Segments) == 0 {
			o.refused = "no segments"
			o.result = &FileResult{Job: jr.name, Err: "the NZB lists no segments for it"}
			continue
		}
		o.nzbName = SanitizeName(nf.Filename(), fmt.Sprintf("file-%d", i+1))
		if hold != nil && hold[i] {
			o.refused, o.finished, o.remaining = "held back", true, 0
			o.result = &FileResult{Job: jr.name, Name: o.nzbName, Path: filepath.Join(e.cfg.DownloadDir, o.nzbName),
				Segments: len(nf.Segments), Held: true, Source: nf}
			continue
		}
		o.initBound()
		var done jobs.Segments
		if i < len(meta.Files) {
			done = meta.Files[i].Done
		}
		if i < len(meta.Files) && meta.Files[i].Complete() {
			// Finished in an earlier run of this job (which stayed queued
			// because another file was incomplete): nothing to fetch.
			name := o.nzbName
			if fi, ok := readInfo(infoPath(e.cfg.QueueDir, jr.id, i)); ok && fi.Name != "" {
				name = SanitizeName(fi.Name, o.nzbName)
			}
			final := filepath.Join(e.cfg.DownloadDir, name)
			if st, err := os.Stat(final); err == nil {
				e.taken[name] = true
				o.refused, o.finished, o.remaining = "already complete", true, 0
				o.result = &FileResult{Job: jr.name, Name: name, Path: final, Size: st.Size(), Complete: true, Already: true, Segments: len(nf.Segments)}
				continue
			}
		}
		// Two files of one name (or "a.bin" beside "a.bin.part") each get
		// their own: the later one "a (2).bin", written as "a (2).bin.part".
		o.reserved = uniqueName(o.nzbName, func(s string) bool { return e.taken[s] || e.taken[s+".part"] })
		e.taken[o.reserved], e.taken[o.reserved+".part"] = true, true
		o.partPath = filepath.Join(e.cfg.DownloadDir, o.reserved+".part")
		_, perr := os.Lstat(o.partPath)
		resume := done.Len() > 0 && perr == nil
		if resume {
			if fi, ok := readInfo(infoPath(e.cfg.QueueDir, jr.id, i)); ok {
				o.useInfo(fi)
			}
			if !o.sizeKnown {
				resume = false // the file's facts were lost: fetch it all again
			}
		}
		if r, ok := e.alreadyComplete(jr, i, len(nf.Segments)); ok && !e.opts.Overwrite && !resume {
			e.taken[r.Name] = true
			o.refused, o.finished, o.remaining, o.result = "already complete", true, 0, r
			continue
		}
		final := filepath.Join(e.cfg.DownloadDir, o.reserved)
		if _, err := os.Lstat(final); err == nil && !e.opts.Overwrite && !resume {
			o.refused = fmt.Sprintf("%s exists; not overwritten (use -overwrite)", o.reserved)
			o.result = &FileResult{Job: jr.name, Name: o.reserved, Path: final, Segments: len(nf.Segments), Err: o.refused}
			continue
		}
		if resume {
			o.prior = done
			for _, s := range nf.Segments {
				if done.Has(s.Number) {
					o.remaining--
				}
			}
		}
		if err := o.claimPart(infoPath(e.cfg.QueueDir, jr.id, i), resume, e.opts.Overwrite); err != nil {
			o.refused = err.Error()
			o.result = &FileResult{Job: jr.name, Name: filepath.Base(o.partPath), Path: o.partPath, Segments: len(nf.Segments), Err: o.refused}
			continue
		}
	}
	// The files to download first, then those settled already: a
	// listener that acts on a finished file knows every file to come.
	for _, o := range jr.files {
		if o.result == nil {
			e.noteFile(o)
		}
	}
	for _, o := range jr.files {
		if o.result != nil {
			e.noteFile(o)
		}
	}
	return jr, nil
}

// startEntry enqueues the job (or finds it in the queue) and starts it.
func (e *Engine) startEntry(jr *jobRun, j Job, nzb *proto.NZB) error {
	find := func() (spoolfs.QueuedJob, bool, error) {
		list, err := e.queue.ListQueue()
		if err != nil {
			return spoolfs.QueuedJob{}, false, err
		}
		for _, q := range list {
			if q.ID.Job == jr.id {
				return q, true, nil
			}
		}
		return spoolfs.QueuedJob{}, false, nil
	}
	q, ok, err := find()
	if err != nil {
		return fmt.Errorf("job queue: %w", err)
	}
	if !ok {
		meta := jobs.Metadata{Name: filepath.Base(j.Name), Target: e.cfg.DownloadDir}
		for _, f := range nzb.Files {
			meta.Files = append(meta.Files, jobs.FileProgress{Total: len(f.Segments)})
		}
		qs, err := e.queue.Enqueue(jr.id, bytes.NewReader(j.NZB), meta)
		if err != nil {
			if errors.Is(err, spoolfs.ErrJobExists) {
				return fmt.Errorf("job queue: job %s exists but is not waiting (being cleaned up?): %w", jr.id, err)
			}
			return fmt.Errorf("job queue: %w", err)
		}
		q = qs[0]
	}
	in, err := e.queue.SendStart(q)
	if err != nil {
		return fmt.Errorf("job queue: %w", err)
	}
	jr.entry = in
	return nil
}

// endJob settles a job's queue entry: removed when every file is complete,
// back in the queue (with its progress) otherwise, so a rerun retries
// only what is missing.
func (e *Engine) endJob(jr *jobRun) {
	complete := true
	for _, o := range jr.files {
		if o.result == nil || !o.result.Complete && !o.result.Held {
			complete = false
		}
	}
	if complete {
		c, err := e.queue.SendDone(jr.entry)
		if err == nil {
			err = e.queue.Cleanup(c)
		}
		if err != nil {
			e.log.Error("job queue: finish", "job", jr.name, "err", err)
		}
		if err := e.saveComplete(jr); err != nil {
			e.log.Error("job queue: record complete files", "job", jr.name, "err", err)
		}
		os.RemoveAll(filepath.Join(e.cfg.QueueDir, "files", jr.id))
		return
	}
	if _, err := e.queue.SendCancel(jr.entry); err != nil {
		e.log.Error("job queue: requeue", "job", jr.name, "err", err)
	}
}

// loop is the engine's goroutine: deadlines, group commit, quota,
// finishing files, and the end of the run.
func (e *Engine) loop() {
	tick := time.NewTicker(e.opts.SyncInterval)
	defer tick.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		e.mu.Lock()
		d, hasDeadline := e.sched.Deadline()
		e.mu.Unlock()
		var timerC <-chan time.Time
		if hasDeadline {
			timer.Reset(d.Sub(e.opts.Now()))
			timerC = timer.C
		}
		select {
		case <-e.ctx.Done():
			e.mu.Lock()
			e.closing = true
			e.sched.Pause(e.opts.Now(), true)
			if e.fatal == nil && e.quotaMsg == "" {
				e.fatal = errors.New("interrupted")
			}
			e.mu.Unlock()
			e.closeAll(true)
			return
		case <-timerC:
			now := e.opts.Now()
			e.mu.Lock()
			e.sched.Timeout(now)
			wake := e.dispatch(now, nil)
			e.mu.Unlock()
			e.wakeAll(wake)
		case <-tick.C:
		case <-e.kick:
		}
		timer.Stop()
		if err := e.commit(); err != nil {
			e.mu.Lock()
			e.fatal = err
			e.mu.Unlock()
		}
		e.saveQuota()
		e.mu.Lock()
		e.finishFiles(false)
		done := e.sched.Finished() || e.fatal != nil || (e.closing && e.sched.Stats().InFlight == 0)
		if !done && e.fatal == nil && e.noServerLeft() {
			e.fatal = e.noServerError()
			done = true
		}
		if done {
			e.closing = true
			e.sched.Pause(e.opts.Now(), true)
		}
		e.mu.Unlock()
		if done {
			e.closeAll(false)
			return
		}
	}
}

// noServerLeft reports whether segments wait while no server may ever
// serve them: every server given up or inactive. Called with mu held.
func (e *Engine) noServerLeft() bool {
	st := e.sched.Stats()
	if st.Waiting == 0 && st.InFlight == 0 {
		return false
	}
	for _, sr := range e.servers {
		if sr.cfg.IsActive() && sr.cfg.Connections > 0 && !sr.gaveUp {
			return false
		}
	}
	return true
}

func (e *Engine) noServerError() error {
	var b strings.Builder
	b.WriteString("no usable server left")
	for _, sr := range e.servers {
		if sr.lastErr != "" {
			fmt.Fprintf(&b, "; %s: %s", sr.cfg.Label(), sr.lastErr)
		}
	}
	return errors.New(b.String())
}

// commit is the group commit: file info and fdatasync of written files
// first, then the progress records, then one Sync of the job queue.
func (e *Engine) commit() error {
	type item struct {
		o    *outFile
		done []int
		miss []jobs.Missing
	}
	var items []item
	e.mu.Lock()
	for _, o := range e.files {
		if len(o.pendingDone) == 0 && len(o.pendingMiss) == 0 {
			continue
		}
		items = append(items, item{o, o.pendingDone, o.pendingMiss})
		o.pendingDone, o.pendingMiss = nil, nil
	}
	e.mu.Unlock()
	if len(items) == 0 {
		return nil
	}
	byJob := map[*jobRun][]jobs.Record{}
	for _, it := range items {
		if fi, ok := it.o.takeInfo(); ok {
			if err := saveInfo(infoPath(e.cfg.QueueDir, it.o.job.id, it.o.idx), fi); err != nil {
				return err
			}
		}
		if err := it.o.syncData(); err != nil {
			// Not durable: the segments stay pending, so the file is
			// neither recorded done nor finished in this run.
			e.mu.Lock()
			it.o.pendingDone = append(it.done, it.o.pendingDone...)
			e.mu.Unlock()
			return err
		}
		for _, n := range it.done {
			byJob[it.o.job] = append(byJob[it.o.job], jobs.Record{Kind: jobs.SegmentDone, File: it.o.idx, Segment: n})
		}
		for _, m := range it.miss {
			byJob[it.o.job] = append(byJob[it.o.job], jobs.Record{Kind: jobs.SegmentMissing, File: it.o.idx, Segment: m.Segment, Begin: m.Begin, End: m.End})
		}
	}
	for jr, recs := range byJob {
		if err := e.queue.Record(jr.entry, recs...); err != nil {
			return fmt.Errorf("newsget: job queue: %w", err)
		}
	}
	if err := e.queue.Sync(); err != nil {
		return fmt.Errorf("newsget: job queue: %w", err)
	}
	return nil
}

// finishFiles finishes the files whose segments are all settled and
// durable; at the end (final) every file not finished gets its result.
// Called with mu held.
func (e *Engine) finishFiles(final bool) {
	for _, o := range e.files {
		if o.finished || o.refused != "" {
			continue
		}
		settled := o.remaining == 0 && len(o.pendingDone) == 0 && len(o.pendingMiss) == 0
		if !settled && !final {
			continue
		}
		o.finished = true
		if !settled {
			o.result = o.interrupted(e.reason())
			continue
		}
		taken := func(s string) bool { return e.taken[s] && s != o.reserved }
		o.result = o.finish(e.opts.Overwrite, taken)
		e.taken[o.result.Name] = true
		e.noteFile(o)
		if o.result.Complete {
			e.log.Info("file complete", "name", o.result.Name, "bytes", o.result.Size)
		} else {
			e.log.Warn("file incomplete", "name", o.result.Name, "why", o.result.Err)
		}
	}
}

// reason says why the run ends early. Called with mu held.
func (e *Engine) reason() string {
	switch {
	case e.quotaMsg != "":
		return e.quotaMsg
	case e.fatal != nil:
		return e.fatal.Error()
	}
	return "download stopped"
}

// interrupted is the result of a file the run did not finish: it stays
// NAME.part for a rerun to resume.
func (o *outFile) interrupted(why string) *FileResult {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f != nil {
		o.f.Close()
		o.f = nil
	}
	r := &FileResult{Job: o.job.name, Name: filepath.Base(o.partPath), Path: o.partPath, Segments: o.segments,
		Err: fmt.Sprintf("not finished (%d segments left): %s; rerun to resume", o.remaining, why)}
	if o.sizeKnown {
		r.Size = o.info.Size
	}
	r.Missing = append(r.Missing, o.missing...)
	sort.Slice(r.Missing, func(i, j int) bool { return r.Missing[i].Segment < r.Missing[j].Segment })
	return r
}
