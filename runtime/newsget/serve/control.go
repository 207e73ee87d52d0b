package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/newsflow/newsflow/machine/dlqueue"
)

// What the API and the page can do to the queue and the history. Each
// change is on disk before the call returns.

// ErrNoJob is returned for an nzo_id that is not there.
var ErrNoJob = fmt.Errorf("no such job")

// PauseJob pauses (on) or resumes (off) a queued job.
func (d *Daemon) PauseJob(id string, on bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	j, _ := d.find(id)
	if j == nil {
		return fmt.Errorf("%w: %s", ErrNoJob, id)
	}
	j.Paused = on
	if !on {
		j.Duplicate = "" // resuming a flagged duplicate is the user's decision
	}
	if on && d.run != nil && d.run.job == j && d.run.stop == "" && !d.run.post {
		d.run.stop = "pause"
		d.run.cancel()
	}
	d.kick()
	return d.store.saveState(&d.state)
}

// PauseAll pauses (on) or resumes (off) the whole queue; Force jobs run
// regardless, as in SABnzbd.
func (d *Daemon) PauseAll(on bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state.Paused = on
	if !on {
		d.retryAt = d.opts.Now()
	}
	if on && d.run != nil && d.run.job.Priority != dlqueue.Force && d.run.stop == "" && !d.run.post {
		d.run.stop = "pause"
		d.run.cancel()
	}
	d.kick()
	return d.store.saveState(&d.state)
}

// SetPriority changes a queued job's priority; it returns the job's new
// position in the queue. A job running while one of higher priority waits
// is paused for it (it resumes where it was).
func (d *Daemon) SetPriority(id string, p dlqueue.Priority) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j, _ := d.find(id)
	if j == nil {
		return 0, fmt.Errorf("%w: %s", ErrNoJob, id)
	}
	switch p {
	case dlqueue.Paused:
		j.Paused = true
	case dlqueue.Default:
		j.Priority = d.categoryPriority(j.Category)
	default:
		j.Priority = p
	}
	if d.run != nil && d.run.stop == "" && !d.run.post {
		if next, _ := d.pick(); next != nil && next != d.run.job {
			d.run.stop = "pause"
			d.run.cancel()
		}
	}
	d.kick()
	pos := 0
	for i, sj := range d.sortedQueue() {
		if sj == j {
			pos = i
		}
	}
	return pos, d.store.saveState(&d.state)
}

// sortedQueue is the queue in running order. Called with mu held.
func (d *Daemon) sortedQueue() []*Job {
	es := make([]dlqueue.Entry, len(d.state.Queue))
	for i, j := range d.state.Queue {
		es[i] = dlqueue.Entry{ID: j.ID, Priority: j.Priority, Seq: j.Seq, Paused: j.Paused}
	}
	dlqueue.Sort(es)
	out := make([]*Job, 0, len(es))
	for _, e := range es {
		j, _ := d.find(e.ID)
		out = append(out, j)
	}
	return out
}

// DeleteJobs removes queued jobs (ids, or "all") with their partial
// downloads. It returns the ids removed.
func (d *Daemon) DeleteJobs(ids []string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(ids) == 1 && ids[0] == "all" {
		ids = nil
		for _, j := range d.state.Queue {
			ids = append(ids, j.ID)
		}
	}
	var gone []string
	for _, id := range ids {
		j, i := d.find(id)
		if j == nil {
			continue
		}
		d.state.Queue = append(d.state.Queue[:i], d.state.Queue[i+1:]...)
		gone = append(gone, id)
		if d.run != nil && d.run.job == j {
			d.run.stop = "delete" // the runner cleans up when the engine stopped
			d.run.cancel()
			continue
		}
		d.forget = append(d.forget, j)
		os.RemoveAll(d.jobDir(j.ID))
	}
	if len(gone) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoJob, strings.Join(ids, ","))
	}
	d.kick()
	return gone, d.store.saveState(&d.state)
}

// DeleteHistory removes history entries (ids, "all" or "failed"); with
// delFiles their folders too.
func (d *Daemon) DeleteHistory(ids []string, delFiles bool) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var gone []string
	kept := d.hist[:0]
	for _, h := range d.hist {
		if want[h.ID] || want["all"] || (want["failed"] && h.Status == "Failed") {
			gone = append(gone, h.ID)
			d.forget = append(d.forget, &Job{ID: h.ID}) // a failed job's NZB and progress, kept for retry
			if delFiles && h.Storage != "" {
				os.RemoveAll(h.Storage)
			}
			continue
		}
		kept = append(kept, h)
	}
	d.hist = kept
	if len(gone) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoJob, strings.Join(ids, ","))
	}
	d.kick() // the runner forgets them between jobs
	return gone, d.store.saveHistory(d.hist)
}

// Retry puts a failed job of the history back in the queue under its
// nzo_id (SABnzbd's mode=retry). Its NZB and the engine's record of what
// it fetched were kept, so only what is missing is fetched again (from
// servers that may have it by now). A job that failed in post-processing
// with every file downloaded goes straight to post-processing again, from
// its folder as it is (files renamed, repaired or unpacked stay); one
// with files still incomplete downloads those, its renamed files put back
// under the names the download gave them first. A password given
// replaces the job's.
func (d *Daemon) Retry(id, password string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := slices.IndexFunc(d.hist, func(h HistoryEntry) bool { return h.ID == id })
	if i < 0 {
		return "", fmt.Errorf("%w: %s", ErrNoJob, id)
	}
	h := d.hist[i]
	if h.Status != "Failed" {
		return "", fmt.Errorf("retry %s: it %s; only a failed job is retried", id, strings.ToLower(h.Status))
	}
	data, err := os.ReadFile(d.store.nzbPath(id))
	if err != nil {
		return "", fmt.Errorf("retry %s: its NZB is gone: %w", id, err)
	}
	if password == "" {
		password = h.Password
	}
	j, err := d.parseJob(data, h.NZBName, AddOptions{Name: h.Name, Password: password})
	if err != nil {
		return "", fmt.Errorf("retry %s: %w", id, err)
	}
	j.ID, j.Category, j.Priority = id, h.Category, d.categoryPriority(h.Category)
	if dl := h.Downloaded; dl != nil {
		if downloadedWhole(dl) {
			j.Downloaded, j.Left = dl, 0
		} else {
			d.restoreNames(d.jobDir(id), dl)
		}
	}
	// Queue first, then out of the history: a crash between leaves it in
	// both, and New keeps the history's word (retry again); never in
	// neither.
	if err := d.enqueueLocked(j); err != nil {
		return "", err
	}
	d.hist = slices.Delete(d.hist, i, i+1)
	if err := d.store.saveHistory(d.hist); err != nil {
		d.log.Error("history", "err", err)
	}
	d.log.Info("job retried", "nzo_id", id, "name", j.Name)
	d.kick()
	return id, nil
}

// downloadedWhole reports whether every file of a download arrived (or
// was held back, or unpacked and removed).
func downloadedWhole(dl *Downloaded) bool {
	for _, f := range dl.Files {
		if !f.Complete && !f.Held && !f.Removed {
			return false
		}
	}
	return true
}

// restoreNames renames the files post-processing renamed in dir back to
// the names the download gave them, where the engine finds them complete
// instead of fetching them again.
func (d *Daemon) restoreNames(dir string, dl *Downloaded) {
	for _, f := range dl.Files {
		orig, ok := dl.Names[f.Index]
		if !ok || !f.Complete || f.Removed || f.Name == orig {
			continue
		}
		from, to := filepath.Join(dir, f.Name), filepath.Join(dir, orig)
		if _, err := os.Lstat(to); err == nil {
			continue
		}
		if err := os.Rename(from, to); err != nil {
			d.log.Warn("retry: renaming back", "from", from, "to", to, "err", err)
		}
	}
}
