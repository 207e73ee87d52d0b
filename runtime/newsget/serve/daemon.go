// Package serve is newsget serve: the download daemon that Sonarr,
// Radarr and a browser drive. It keeps a durable queue of NZB jobs
// (state.go), runs them one at a time through newsget's Engine, hands
// each downloaded folder to a PostProcessor (postprocess.go) for its
// final status, moves it to its category's folder and records it in a
// durable history. It speaks the SABnzbd API the *arr apps use (api.go),
// serves a page of its own (page.go) and Prometheus metrics (metrics.go),
// and queues NZBs dropped in a watched folder (watch.go).
//
// # Theory of operation
//
// One mutex (Daemon.mu) guards the queue, the history, the statistics and
// the running job. Decisions are machine/dlqueue's: which job runs next
// (priority, then arrival; pauses), whether a new NZB is a duplicate, and,
// after every article no server had, whether the job is already beyond
// repair (fail fast). The job goroutine (runner) picks a job, gives it an
// Engine whose download directory is the job's own folder
// (download_dir/incomplete/<nzo_id>) and cancels the Engine's context to
// pause, delete or fail it. The Engine keeps segment progress in its own
// durable queue keyed by the NZB and that folder, so a job started again
// (after a pause or a kill -9) fetches only what it lacks.
//
// Lock order: the Engine calls OnSegment with its own lock held, and
// OnSegment takes Daemon.mu; so Daemon.mu is never held while calling the
// Engine.
package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/newsflow/newsflow/machine/dlqueue"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/newsget"
)

// Options tune a Daemon; zero fields take defaults.
type Options struct {
	Log         *slog.Logger
	PostProcess PostProcessor // nil: NoPostProcess
	// HoldRecovery holds back each job's PAR2 recovery volumes
	// (newsget.Job.HoldRecovery) for a PostProcess that fetches what a
	// repair needs (runtime/newsget/postproc.Processor).
	HoldRecovery bool
	// APIAddr is the address the API's listener is bound to (for
	// SAB_API_URL); empty: [serve] listen.
	APIAddr string
	NewID   func() string    // nzo_id suffixes; nil: random
	Now     func() time.Time // nil: time.Now
	// Engine is the template of each job's Engine options (OnSegment is
	// the daemon's own).
	Engine newsget.Options
	// WatchInterval is how often watch_dir is scanned. Default 2 s.
	WatchInterval time.Duration
	// RetryDelay: a job stopped by a quota or by no usable server is
	// tried again after this. Default 1 minute.
	RetryDelay time.Duration
	// HTTPClient fetches addurl NZBs; nil: a client with URLTimeout that
	// refuses private addresses unless [serve] addurl_allow_private.
	HTTPClient *http.Client
	URLTimeout time.Duration // default 60 s
}

// Daemon is newsget serve. Create it with New, serve Handler, and call
// Run until its context ends.
type Daemon struct {
	cfg   *newsget.Config
	opts  Options
	log   *slog.Logger
	store store
	csrf  string
	users map[string]string // htpasswd: user -> hash

	mu      sync.Mutex
	state   state
	hist    []HistoryEntry
	run     *active
	forget  []*Job // deleted while another job ran: drop from the engine's queue later
	retryAt time.Time
	stats   *serverStats
	speed   float64 // bytes per second, smoothed
	// servers is each configured server's state as the last run saw it.
	servers []serverView
	// stalled is why the running job gets nothing: no server connected
	// and the servers' failures; empty otherwise.
	stalled string
	wake    chan struct{}
	life    context.Context // Run's: grabs started before Run wait for it
	grabs   sync.WaitGroup
	// fetchSlots holds a token per addurl fetch under way.
	fetchSlots chan struct{}
	// bodyKeySlot holds a token while an upload whose API key is in its
	// multipart body, not in the query string, is read: one at a time.
	bodyKeySlot chan struct{}
	ring        *logRing
	watchMu     sync.Mutex // one scan of watch_dir at a time
}

// active is the job being downloaded.
type active struct {
	job        *Job
	cancel     context.CancelFunc
	stop       string // why it was cancelled: pause, delete, failfast, shutdown (post-processing: delete only)
	reason     string // failfast: the reason
	damage     []dlqueue.FileDamage
	done       int64 // NZB bytes of segments done or failed in this run
	prior      int64 // bytes done before this run, once priorKnown (the engine set up)
	priorKnown bool
	baseLeft   int64           // the job's Left when the run started
	eng        *newsget.Engine // nil while post-processing
	post       bool            // post-processing, not downloading
	start      time.Time
	recv       int64 // bytes received at the last speed sample
}

// New opens the daemon's state under cfg's queue directory. cfg must be
// checked (Check, CheckServe) and its directories resolved.
func New(cfg *newsget.Config, opts Options) (*Daemon, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.PostProcess == nil {
		opts.PostProcess = NoPostProcess{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = randomHex
	}
	if opts.WatchInterval <= 0 {
		opts.WatchInterval = 2 * time.Second
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = time.Minute
	}
	if opts.URLTimeout <= 0 {
		opts.URLTimeout = 60 * time.Second
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = grabClient(opts.URLTimeout, cfg.Serve.AddURLAllowPrivate)
	}
	if len(cfg.Servers) == 0 {
		return nil, errors.New("serve: no server configured (a [[server]] in the config, or -server)")
	}
	if cfg.Serve.CompleteDir == "" {
		cfg.Serve.CompleteDir = filepath.Join(cfg.DownloadDir, "complete")
	}
	ring := &logRing{secret: cfg.Serve.APIKey}
	opts.Log = slog.New(newRingHandler(opts.Log.Handler(), ring))
	d := &Daemon{cfg: cfg, opts: opts, log: opts.Log, ring: ring, store: store{dir: filepath.Join(cfg.QueueDir, "serve")},
		csrf: randomHex(), stats: newServerStats(), wake: make(chan struct{}, 1),
		fetchSlots: make(chan struct{}, max(cfg.Serve.AddURLFetches, 1)), bodyKeySlot: make(chan struct{}, 1)}
	if cfg.Serve.Htpasswd != "" {
		u, err := readHtpasswd(cfg.Serve.Htpasswd)
		if err != nil {
			return nil, err
		}
		d.users = u
	}
	if err := d.store.open(); err != nil {
		return nil, err
	}
	st, hist, err := d.store.load()
	if err != nil {
		return nil, err
	}
	// A job recorded in the history but still queued: the daemon stopped
	// between the two writes; the history is right.
	done := map[string]bool{}
	for _, h := range hist {
		done[h.ID] = true
	}
	kept := st.Queue[:0]
	for _, j := range st.Queue {
		if !done[j.ID] {
			kept = append(kept, j)
		}
	}
	st.Queue = kept
	d.state, d.hist = st, hist
	if dropped := reconcileSettings(&d.state.Settings, cfg); len(dropped) > 0 {
		d.log.Info("the configuration file changed: its values replace those set from the page or the API", "keys", strings.Join(dropped, ","))
		if err := d.store.saveState(&d.state); err != nil {
			return nil, err
		}
	}
	var saved []ServerStat
	if err := readJSON(d.store.statsPath(), &saved); err != nil {
		d.log.Warn("server statistics", "err", err) // counting starts again
	}
	d.stats.load(saved)
	d.loadProgress()
	return d, nil
}

// loadProgress sets each queued job's Left from the engine's durable
// segment progress: state.json's Left is only as new as the last clean
// stop, and after a kill -9 the engine's record is the truth.
func (d *Daemon) loadProgress() {
	for _, j := range d.state.Queue {
		if j.Downloaded != nil {
			j.Left = 0
			continue
		}
		data, err := os.ReadFile(d.store.nzbPath(j.ID))
		if err != nil {
			continue // the runner reports it
		}
		c := d.engineConfig(j)
		done, err := newsget.DoneBytes(&c, data)
		if err != nil {
			d.log.Warn("job progress", "nzo_id", j.ID, "err", err)
			continue
		}
		j.Left = max(j.Bytes-done, 0)
	}
}

func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Run runs jobs and watches watch_dir until ctx ends; then it stops the
// running job (its progress stays for the next start) and returns.
func (d *Daemon) Run(ctx context.Context) error {
	d.mu.Lock()
	d.life = ctx
	for _, j := range d.state.Queue {
		if j.Grabbing {
			d.startGrab(j)
		}
	}
	d.mu.Unlock()
	start := d.opts.Now()
	d.startSchedule(start)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.sampler(ctx, start) }()
	go func() { defer wg.Done(); d.watch(ctx) }()
	stopping := make(chan struct{})
	go func() {
		<-ctx.Done()
		d.log.Info("stopping: saving the queue", "why", context.Cause(ctx).Error())
		close(stopping)
	}()
	cut := d.runner(ctx)
	wg.Wait()
	d.grabs.Wait()
	<-stopping
	d.logSaved(cut)
	return nil
}

// logSaved says what a stop leaves for the next start: the jobs queued
// and, for the job cut short (nil: none), where it resumes.
func (d *Daemon) logSaved(cut *Job) {
	d.mu.Lock()
	defer d.mu.Unlock()
	args := []any{"jobs_queued", len(d.state.Queue)}
	if cut != nil {
		if j, _ := d.find(cut.ID); j != nil {
			resumes := "post-processing, from its start"
			if j.Downloaded == nil {
				done := j.Bytes - j.Left
				resumes = fmt.Sprintf("the download, at %s of %s (%d%%)", newsget.FormatBytes(done), newsget.FormatBytes(j.Bytes), done*100/max(j.Bytes, 1))
			}
			args = append(args, "interrupted", j.ID, "name", j.Name, "resumes", resumes)
		}
	}
	d.log.Info("queue saved; the next start goes on from here", args...)
}

// kick wakes the runner.
func (d *Daemon) kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// AddOptions are what an added NZB comes with.
type AddOptions struct {
	Category string           // "" or unknown: the default category "*"
	Priority dlqueue.Priority // Default: the category's
	Name     string           // the job's name; "" from the NZB's file name
	Paused   bool             // added paused (SABnzbd priority -2)
	Password string           // SABnzbd's password=: ahead of the NZB's own
	PP       *int             // SABnzbd's pp (0-3); nil: 3
}

// Add queues an NZB (its bytes and file name) and returns its nzo_id. The
// job is on disk when Add returns. A duplicate (same name or content as a
// queued or finished job) is queued paused and flagged, not downloaded.
func (d *Daemon) Add(data []byte, filename string, ao AddOptions) (string, error) {
	j, err := d.parseJob(data, filename, ao)
	if err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j.Category = d.category(ao.Category)
	j.Priority = d.jobPriority(ao.Priority, j.Category)
	fail := d.duplicateLocked(j, "")
	j.ID = d.newIDLocked()
	if err := d.store.saveNZB(j.ID, data); err != nil {
		return "", err
	}
	if err := d.enqueueLocked(j); err != nil {
		os.Remove(d.store.nzbPath(j.ID))
		return "", err
	}
	d.log.Info("job added", "nzo_id", j.ID, "name", j.Name, "category", j.Category, "priority", j.Priority.String())
	if fail {
		d.grabs.Add(1)
		go func() {
			defer d.grabs.Done()
			d.finish(j, HistoryEntry{Status: "Failed", FailMessage: "Duplicate NZB: " + j.Duplicate})
		}()
		return j.ID, nil
	}
	d.preemptLocked() // a Force (or higher) job starts at once
	return j.ID, nil
}

// duplicateLocked applies the duplicate rule (no_dupes) to a new job j:
// off lets it be; tag flags it (the DUPLICATE label); pause flags and
// pauses it; fail flags and pauses it and reports true: the caller sends
// it to the history as Failed (a retry downloads it after all). Called
// with mu held.
func (d *Daemon) duplicateLocked(j *Job, except string) bool {
	rule := d.noDupes()
	if rule == "off" {
		return false
	}
	_, why, dup := dlqueue.Duplicate(d.known(except, false), j.Name, j.Hash)
	if !dup {
		return false
	}
	j.Duplicate = why
	if rule != "tag" {
		j.Paused = true
	}
	d.log.Warn("duplicate NZB", "name", j.Name, "why", why, "no_dupes", rule)
	return rule == "fail"
}

// jobPriority is the priority a job added with p in category cat gets:
// the category's for Default (and for Paused, which is a pause flag).
func (d *Daemon) jobPriority(p dlqueue.Priority, cat string) dlqueue.Priority {
	if p == dlqueue.Default || p == dlqueue.Paused {
		return d.categoryPriority(cat)
	}
	return p
}

// enqueueLocked appends j to the queue, last in arrival order, and writes
// the queue; on an error the queue is as it was. Called with mu held.
func (d *Daemon) enqueueLocked(j *Job) error {
	d.state.Seq++
	j.Seq = d.state.Seq
	d.state.Queue = append(d.state.Queue, j)
	if err := d.store.saveState(&d.state); err != nil {
		d.state.Queue = d.state.Queue[:len(d.state.Queue)-1]
		return err
	}
	return nil
}

// newIDLocked returns an nzo_id that no queued or finished job has.
// Called with mu held.
func (d *Daemon) newIDLocked() string {
	for {
		id := "SABnzbd_nzo_" + d.opts.NewID()
		taken := false
		for _, k := range d.known("", true) {
			taken = taken || k.ID == id
		}
		if !taken {
			return id
		}
	}
}

// parseJob checks an NZB and makes the job of it (not yet queued: no ID,
// category or priority).
func (d *Daemon) parseJob(data []byte, filename string, ao AddOptions) (*Job, error) {
	if int64(len(data)) > int64(d.cfg.Serve.MaxNZBSize) {
		return nil, fmt.Errorf("NZB of %d bytes: larger than max_nzb_size %d", len(data), d.cfg.Serve.MaxNZBSize)
	}
	return d.parseJobFrom(bytes.NewReader(data), filename, ao)
}

// errNotNZB is what a refusal of a file that is no NZB at all matches
// (errors.Is): no <nzb> element, another root element, or no XML.
var errNotNZB = errors.New("not an NZB file")

// notNZBError is a file that is no NZB: it says so, names the file, the
// parser's reason and what to do.
type notNZBError struct {
	file string
	err  error
}

func (e *notNZBError) Error() string {
	return fmt.Sprintf("%s is not an NZB file (%s); upload the .nzb file your indexer gave", e.file, strings.TrimPrefix(e.err.Error(), "nzb: "))
}

func (e *notNZBError) Unwrap() []error { return []error{errNotNZB, e.err} }

// refusedNZB words the parser's error err about filename: a file that is
// no NZB says so and what to do; an NZB beyond a limit or with a broken
// segment is refused with the parser's reason.
func refusedNZB(filename string, err error) error {
	var syn *xml.SyntaxError
	if errors.As(err, &syn) || errors.Is(err, proto.ErrNotNZB) {
		return &notNZBError{file: filename, err: err}
	}
	return fmt.Errorf("refused NZB %s: %w", filename, err)
}

// parseJobFrom is parseJob of an NZB read from r (hashed as it is read).
func (d *Daemon) parseJobFrom(r io.Reader, filename string, ao AddOptions) (*Job, error) {
	h := sha256.New()
	nzb, err := proto.ParseNZB(io.TeeReader(r, h), proto.NZBLimits{MaxBytes: int64(d.cfg.Serve.MaxNZBSize)})
	if err != nil {
		return nil, refusedNZB(filename, err)
	}
	if len(nzb.Files) == 0 {
		return nil, fmt.Errorf("refused NZB %s: it lists no files", filename)
	}
	base := filepath.Base(filename)
	if strings.HasSuffix(strings.ToLower(base), ".nzb") {
		base = base[:len(base)-4]
	}
	base, filePW := SplitPassword(base)
	name, namePW := SplitPassword(ao.Name)
	if name == "" {
		name = base
	}
	pw := ao.Password
	if meta, ok := nzb.MetaValue("password"); ok && pw == "" {
		pw = meta
	}
	for _, p := range []string{namePW, filePW} {
		if pw == "" {
			pw = p
		}
	}
	name = newsget.SanitizeName(name, "job")
	io.Copy(h, r) // what follows the document, as the stored NZB has it
	nzbName, _ := SplitPassword(filepath.Base(filename))
	j := &Job{Name: name, NZBName: nzbName, Hash: hex.EncodeToString(h.Sum(nil)), Added: d.opts.Now(),
		Paused: ao.Paused || ao.Priority == dlqueue.Paused, Password: pw, PP: ao.PP}
	for _, f := range nzb.Files {
		j.Files = append(j.Files, JobFile{Name: f.Filename(), Bytes: f.Bytes()})
		j.Bytes += f.Bytes()
	}
	j.Left = j.Bytes
	return j, nil
}

// SplitPassword takes a password written into a job's name as
// "Name{{password}}" (SABnzbd's and NZBGet's convention) out of it: it
// returns the name without the braces and what they held, and the name
// as it is when it has none.
func SplitPassword(name string) (string, string) {
	i := strings.Index(name, "{{")
	if i < 0 {
		return name, ""
	}
	j := strings.LastIndex(name, "}}")
	if j < i+2 {
		return name, ""
	}
	rest := strings.TrimRight(name[:i], " .") + name[j+2:]
	return strings.TrimSpace(rest), name[i+2 : j]
}

// known lists the queue (but the job except) and the history, its failed
// jobs only with failed: every job for the IDs taken, no failed one for
// duplicate detection.
func (d *Daemon) known(except string, failed bool) []dlqueue.Known {
	var ks []dlqueue.Known
	for _, j := range d.state.Queue {
		if j.ID == except {
			continue
		}
		ks = append(ks, dlqueue.Known{ID: j.ID, Name: j.Name, Hash: j.Hash})
	}
	// As SABnzbd's, a failed job is no duplicate's original (the *arr
	// app sends another release under the name after a failure), but its
	// ID stays taken.
	for _, h := range d.hist {
		if failed || h.Status != "Failed" {
			ks = append(ks, dlqueue.Known{ID: h.ID, Name: h.Name, Hash: h.Hash})
		}
	}
	return ks
}

// category returns the configured category named c (case-insensitive),
// or "*".
func (d *Daemon) category(c string) string {
	for _, ct := range d.cfg.Categories {
		if strings.EqualFold(ct.Name, c) {
			return ct.Name
		}
	}
	return "*"
}

// categoryPriority is the default priority of category c.
func (d *Daemon) categoryPriority(c string) dlqueue.Priority {
	for _, ct := range d.cfg.Categories {
		if ct.Name == c && ct.Priority != "" {
			if p, err := dlqueue.ParsePriority(ct.Priority); err == nil {
				return p
			}
		}
	}
	return dlqueue.Normal
}

// categoryDir is where category c's finished jobs land.
func (d *Daemon) categoryDir(c string) string {
	for _, ct := range d.cfg.Categories {
		if ct.Name == c && ct.Dir != "" {
			if filepath.IsAbs(ct.Dir) {
				return ct.Dir
			}
			return filepath.Join(d.cfg.Serve.CompleteDir, ct.Dir)
		}
	}
	if c == "*" || c == "" {
		return d.cfg.Serve.CompleteDir
	}
	return filepath.Join(d.cfg.Serve.CompleteDir, c)
}

// jobDir is a job's download folder.
func (d *Daemon) jobDir(id string) string {
	return filepath.Join(d.cfg.DownloadDir, "incomplete", id)
}

// find returns the queued job with the id and its index.
func (d *Daemon) find(id string) (*Job, int) {
	for i, j := range d.state.Queue {
		if j.ID == id {
			return j, i
		}
	}
	return nil, -1
}
