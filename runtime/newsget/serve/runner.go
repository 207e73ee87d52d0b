package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/newsflow/newsflow/machine/dlqueue"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/tomlconf"
	"github.com/newsflow/newsflow/spoolfs"
)

// runner runs the queue's jobs one at a time until ctx ends, and returns
// the job that the end cut short (nil: none was running).
func (d *Daemon) runner(ctx context.Context) *Job {
	for {
		d.forgetDeleted()
		d.mu.Lock()
		j, wait := d.pick()
		d.mu.Unlock()
		if j == nil {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-d.wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		d.runJob(ctx, j)
		if ctx.Err() != nil {
			return j
		}
	}
}

// pick returns the job to run next, or nil and how long to wait at most.
// Called with mu held.
func (d *Daemon) pick() (*Job, time.Duration) {
	if now := d.opts.Now(); now.Before(d.retryAt) {
		return nil, d.retryAt.Sub(now)
	}
	var es []dlqueue.Entry
	for _, j := range d.state.Queue {
		es = append(es, dlqueue.Entry{ID: j.ID, Priority: j.Priority, Seq: j.Seq, Paused: j.Paused || j.Grabbing})
	}
	e, ok := dlqueue.Next(es, d.state.Paused)
	if !ok {
		return nil, time.Hour
	}
	j, _ := d.find(e.ID)
	return j, 0
}

// forgetDeleted drops deleted jobs from the engine's queue (only between
// jobs: no Engine has that queue open then).
func (d *Daemon) forgetDeleted() {
	d.mu.Lock()
	list := d.forget
	d.forget = nil
	d.mu.Unlock()
	for _, j := range list {
		d.forgetJob(j)
	}
}

// forgetJob removes what a job left behind in the engine's queue.
func (d *Daemon) forgetJob(j *Job) {
	data, err := os.ReadFile(d.store.nzbPath(j.ID))
	if err == nil {
		c := d.engineConfig(j)
		err = newsget.ForgetJob(&c, data)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		d.log.Warn("forget job", "nzo_id", j.ID, "err", err)
	}
	os.Remove(d.store.nzbPath(j.ID))
}

// engineConfig is the Engine's configuration for job j.
func (d *Daemon) engineConfig(j *Job) newsget.Config {
	c := *d.cfg
	c.DownloadDir = d.jobDir(j.ID)
	d.mu.Lock()
	c.Rate = tomlconf.Size(d.speedLimit())
	d.mu.Unlock()
	return c
}

// runJob downloads j (unless an earlier run did), post-processes it and
// settles it.
func (d *Daemon) runJob(ctx context.Context, j *Job) {
	var early Early
	if j.Downloaded == nil {
		ok, e := d.download(ctx, j)
		if !ok {
			return
		}
		early = e
	}
	d.postProcess(ctx, j, early)
}

// download runs j through an Engine, with the PostProcessor's early work
// (EarlyStarter) beside it. It reports true when the download ended and
// j.Downloaded is on disk (post-processing comes next, with the early
// work); false when the job was paused, deleted, stopped or settled (the
// early work is stopped then).
func (d *Daemon) download(ctx context.Context, j *Job) (ok bool, early Early) {
	data, err := os.ReadFile(d.store.nzbPath(j.ID))
	if err != nil {
		d.finish(j, HistoryEntry{Status: "Failed", FailMessage: fmt.Sprintf("NZB lost: %v", err)})
		return false, nil
	}
	if es, isES := d.opts.PostProcess.(EarlyStarter); isES {
		d.mu.Lock()
		direct := d.directUnpack()
		pj := PostJob{Dir: d.jobDir(j.ID), Name: j.Name, Category: j.Category, Password: j.Password, PP: j.PP, Direct: &direct}
		d.mu.Unlock()
		early = es.StartEarly(ctx, pj)
	}
	defer func() {
		if !ok && early != nil {
			early.Stop()
			early = nil
		}
	}()
	return d.downloadWith(ctx, j, data, early), early
}

// downloadWith is download's run of the Engine over the NZB data.
func (d *Daemon) downloadWith(ctx context.Context, j *Job, data []byte, early Early) bool {
	cfg := d.engineConfig(j)
	eo := d.opts.Engine
	eo.Log = d.log.With("nzo_id", j.ID)
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &active{job: j, cancel: cancel, start: d.opts.Now(), baseLeft: j.Left}
	for _, f := range j.Files {
		a.damage = append(a.damage, dlqueue.FileDamage{Name: f.Name, Bytes: f.Bytes})
	}
	eo.OnSegment = func(n newsget.SegmentNote) { d.onSegment(a, n) }
	if early != nil {
		eo.OnSegment = func(n newsget.SegmentNote) { d.onSegment(a, n); early.OnSegment(n) }
		eo.OnFile = early.OnFile
	}
	eng, err := newsget.New(&cfg, eo)
	if err != nil {
		d.stopped(j, fmt.Sprintf("engine: %v", err))
		return false
	}
	d.mu.Lock()
	a.eng = eng
	d.run = a
	d.startServersLocked(a.start)
	d.mu.Unlock()
	d.log.Info("job started", "nzo_id", j.ID, "name", j.Name)

	sum, err := eng.Download(jctx, []newsget.Job{{Name: j.NZBName, NZB: data, HoldRecovery: d.opts.HoldRecovery}})
	eng.Close()
	ss := eng.Servers()

	d.mu.Lock()
	d.run = nil
	notes := d.noteServersLocked(d.opts.Now(), ss)
	d.idleServersLocked()
	stop, reason := a.stop, a.reason
	if ctx.Err() != nil && stop == "" {
		stop = "shutdown"
	}
	elapsed := int(d.opts.Now().Sub(a.start).Seconds())
	d.mu.Unlock()
	d.logNotes(ctx, notes)

	switch {
	case stop == "pause" || stop == "shutdown":
		d.saveLeft(j, a)
		return false
	case stop == "delete":
		d.forgetJob(j)
		os.RemoveAll(d.jobDir(j.ID))
		return false
	case stop == "failfast":
		d.finish(j, HistoryEntry{Status: "Failed", FailMessage: reason, Storage: d.jobDir(j.ID), DownloadTime: elapsed})
		return false
	case err != nil:
		d.stopped(j, err.Error())
		return false
	case sum.Fatal != "":
		d.stopped(j, sum.Fatal)
		return false
	case sum.Quota != "":
		d.stopped(j, sum.Quota)
		return false
	case len(sum.JobErrs) > 0:
		d.finish(j, HistoryEntry{Status: "Failed", FailMessage: sum.JobErrs[0], DownloadTime: elapsed})
		return false
	}
	// The download is over: say so durably before post-processing may
	// change the files, so that a kill from here on resumes with
	// post-processing, not with an engine that would find its files
	// altered.
	d.mu.Lock()
	defer d.mu.Unlock()
	j.Downloaded = &Downloaded{Files: sum.Files, DownloadTime: elapsed, Names: map[int]string{}}
	for _, f := range sum.Files {
		if f.Complete && !f.Held && !f.Removed {
			j.Downloaded.Names[f.Index] = f.Name
		}
	}
	j.Left, j.LastError = 0, ""
	if err := d.store.saveState(&d.state); err != nil {
		// Not recorded: post-processing now could leave a job that the
		// next start can neither download nor post-process. Retry later.
		j.Downloaded = nil
		d.log.Error("queue", "nzo_id", j.ID, "err", err)
		d.retryAt = d.opts.Now().Add(d.opts.RetryDelay)
		return false
	}
	return true
}

// postProcess hands a downloaded job's folder to the PostProcessor, moves
// a completed one to its category's folder and settles the job. A
// shutdown leaves the job downloaded in the queue: the next start runs
// post-processing again. Deleting the job cancels post-processing.
func (d *Daemon) postProcess(ctx context.Context, j *Job, early Early) {
	dir := d.jobDir(j.ID)
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &active{job: j, cancel: cancel, start: d.opts.Now(), post: true}
	d.mu.Lock()
	pp := j.PP
	d.run = a
	d.mu.Unlock()
	d.log.Info("post-processing", "nzo_id", j.ID, "name", j.Name)
	res := d.opts.PostProcess.PostProcess(jctx, PostJob{Dir: dir, Name: j.Name, Category: j.Category, Password: j.Password,
		Files: j.Downloaded.Files, PP: pp, Early: early})
	d.mu.Lock()
	d.run = nil
	stop := a.stop
	d.mu.Unlock()
	switch {
	case stop == "delete":
		d.forgetJob(j)
		os.RemoveAll(dir)
		return
	case ctx.Err() != nil:
		return // still downloaded in state.json: post-processed again after the restart
	}
	h := HistoryEntry{DownloadTime: j.Downloaded.DownloadTime, Stages: res.Stages}
	if res.Status != Completed {
		h.PostprocTime = int(d.opts.Now().Sub(a.start).Seconds())
		h.Status, h.FailMessage, h.Storage, h.Encrypted = "Failed", res.Reason, dir, res.Encrypted
		h.Downloaded = j.Downloaded
		d.finish(j, h)
		return
	}
	dest, err := d.moveDone(dir, d.categoryDir(j.Category), j.Name)
	h.PostprocTime = int(d.opts.Now().Sub(a.start).Seconds())
	if err != nil {
		h.Status, h.FailMessage, h.Storage = "Failed", err.Error(), dir
	} else {
		h.Status, h.Storage = "Completed", dest
		d.forgetJob(j)
	}
	d.finish(j, h)
}

// moveDone moves a finished job's folder to parent/name (name.1, name.2,
// ... when taken), durably; across file systems by a copy that leaves the
// source until it is complete (spoolfs.MoveDir).
func (d *Daemon) moveDone(from, parent, name string) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("move to %s: %w", parent, err)
	}
	dest := filepath.Join(parent, name)
	for i := 1; ; i++ {
		if _, err := os.Lstat(dest); errors.Is(err, os.ErrNotExist) {
			break
		}
		if i > 1000 {
			return "", fmt.Errorf("move to %s: every name taken", parent)
		}
		dest = filepath.Join(parent, fmt.Sprintf("%s.%d", name, i))
	}
	if err := spoolfs.MoveDir(from, dest); err != nil {
		return "", err
	}
	return dest, nil
}

// finish records j in the history (first, durably) and then drops it from
// the queue: a crash between the two leaves it in both, and New keeps the
// history's word. A failed job keeps its NZB and the engine's record of
// its progress, for mode=retry, until it leaves the history.
func (d *Daemon) finish(j *Job, h HistoryEntry) {
	h.ID, h.Name, h.NZBName, h.Category, h.Hash, h.Bytes = j.ID, j.Name, j.NZBName, j.Category, j.Hash, j.Bytes
	h.Password, h.PP, h.URL, h.Added, h.FetchFailed = j.Password, j.PP, j.URL, j.Added, j.Grabbing
	if h.Storage != "" {
		d.mu.Lock()
		ctx := d.life
		d.mu.Unlock()
		if ctx == nil {
			ctx = context.Background()
		}
		d.runScript(ctx, j, &h)
	}
	h.Completed = d.opts.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hist = append([]HistoryEntry{h}, d.hist...)
	if n := d.cfg.Serve.HistorySize; n > 0 && len(d.hist) > n {
		for _, old := range d.hist[n:] {
			d.forget = append(d.forget, &Job{ID: old.ID})
		}
		d.hist = d.hist[:n]
	}
	if err := d.store.saveHistory(d.hist); err != nil {
		d.log.Error("history", "err", err)
	}
	if _, i := d.find(j.ID); i >= 0 {
		d.state.Queue = append(d.state.Queue[:i], d.state.Queue[i+1:]...)
	}
	if err := d.store.saveState(&d.state); err != nil {
		d.log.Error("queue", "err", err)
	}
	if h.Status != "Failed" {
		os.Remove(d.store.nzbPath(j.ID))
	}
	d.log.Info("job finished", "nzo_id", j.ID, "name", j.Name, "status", h.Status, "reason", h.FailMessage, "storage", h.Storage)
}

// stopped keeps j queued after a run that could not go on (no usable
// server, a quota) and waits RetryDelay before the next attempt.
func (d *Daemon) stopped(j *Job, why string) {
	d.log.Warn("job stopped; retried later", "nzo_id", j.ID, "why", why, "retry_in", d.opts.RetryDelay)
	d.mu.Lock()
	defer d.mu.Unlock()
	j.LastError = why
	d.retryAt = d.opts.Now().Add(d.opts.RetryDelay)
	if err := d.store.saveState(&d.state); err != nil {
		d.log.Error("queue", "err", err)
	}
}

// saveLeft records how much of j is left after a run stopped early.
func (d *Daemon) saveLeft(j *Job, a *active) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j.Left = d.leftLocked(a)
	if err := d.store.saveState(&d.state); err != nil {
		d.log.Error("queue", "err", err)
	}
}

// leftLocked is the bytes left of the running job. Called with mu held.
func (d *Daemon) leftLocked(a *active) int64 {
	if a.priorKnown {
		return max(a.job.Bytes-a.prior-a.done, 0)
	}
	return max(a.baseLeft-a.done, 0)
}

// onSegment is the Engine's OnSegment for job a: statistics, and the
// fail-fast rule after every failed article.
func (d *Daemon) onSegment(a *active, n newsget.SegmentNote) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a.done += n.Bytes
	if !n.Failed {
		d.stats.done(n.Server, n.Bytes, d.opts.Now())
		if n.File >= 0 && n.File < len(a.job.Files) {
			a.job.Files[n.File].Done += n.Bytes
		}
		return
	}
	for _, s := range n.FailedOn {
		d.stats.failed(s)
	}
	if n.File < 0 || n.File >= len(a.damage) || a.stop != "" {
		return
	}
	a.damage[n.File].Missing += n.Bytes
	if v := dlqueue.Assess(a.damage); v.Fail {
		a.stop, a.reason = "failfast", v.Reason
		a.cancel()
	}
}

// saveStats writes the server statistics when they changed.
func (d *Daemon) saveStats() {
	d.mu.Lock()
	if !d.stats.dirty {
		d.mu.Unlock()
		return
	}
	d.stats.dirty = false
	saved := d.stats.saved(d.opts.Now())
	d.mu.Unlock()
	if err := writeFileJSON(d.store.statsPath(), saved); err != nil {
		d.log.Error("server statistics", "err", err)
	}
}

// sampler measures speeds once a second.
// The schedule's events after start are applied as their times pass.
func (d *Daemon) sampler(ctx context.Context, start time.Time) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	defer d.saveStats()
	lastSave, lastSchedule := start, start
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if now := d.opts.Now(); now.After(lastSchedule) {
			d.runSchedule(lastSchedule, now)
			lastSchedule = now
		}
		if now := d.opts.Now(); now.Sub(lastSave) >= statsSaveEvery {
			lastSave = now
			d.saveStats()
		}
		d.mu.Lock()
		a := d.run
		d.mu.Unlock()
		var p newsget.Progress
		var ss []newsget.ServerState
		if a != nil && a.eng != nil {
			p = a.eng.Progress() // not under mu (see the lock order)
			ss = a.eng.Servers()
		}
		d.mu.Lock()
		var notes []serverNote
		if a != nil && d.run == a && a.eng != nil {
			notes = d.noteServersLocked(d.opts.Now(), ss)
		} else {
			d.idleServersLocked()
		}
		running := a != nil && d.run == a && a.eng != nil
		if running {
			if !a.priorKnown && p.TotalBytes > 0 {
				a.prior, a.priorKnown = max(a.job.Bytes-p.TotalBytes, 0), true
			}
			rate := float64(p.Received - a.recv)
			a.recv = p.Received
			d.speed = 0.5*d.speed + 0.5*rate
			a.job.Left = d.leftLocked(a)
		} else {
			d.speed = 0
		}
		d.stats.sample(running)
		resume := !d.state.Settings.ResumeAt.IsZero() && !d.opts.Now().Before(d.state.Settings.ResumeAt)
		d.mu.Unlock()
		d.logNotes(ctx, notes)
		if resume {
			d.mu.Lock()
			d.state.Settings.ResumeAt = time.Time{}
			d.mu.Unlock()
			d.PauseAll(false)
		}
	}
}
