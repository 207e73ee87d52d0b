package serve

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine/dlqueue"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/newsflow/newsflow/runtime/tomlconf"
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

// DeleteHistory removes history entries (ids, "all", "failed" or
// "completed", the last three narrowed to names matching search); with
// delFiles their folders too.
func (d *Daemon) DeleteHistory(ids []string, delFiles bool, search string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var gone []string
	kept := d.hist[:0]
	for _, h := range d.hist {
		special := want["all"] || (want["failed"] && h.Status == "Failed") || (want["completed"] && h.Status == "Completed")
		if want[h.ID] || (special && (search == "" || matchSearch(h.Name, search))) {
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

// settings are what the API and the page change of the configuration;
// they are kept in state.json and win over the configuration file.
type settings struct {
	SpeedLimit   *int64    `json:"speed_limit,omitempty"`   // bytes per second; 0 none (nil: the configuration's rate)
	BandwidthMax *int64    `json:"bandwidth_max,omitempty"` // nil: [serve] bandwidth_max
	NoDupes      string    `json:"no_dupes,omitempty"`      // "": [serve] no_dupes
	DirectUnpack *bool     `json:"direct_unpack,omitempty"` // nil: direct_unpack
	ResumeAt     time.Time `json:"resume_at,omitzero"`      // a timed pause (config&name=set_pause) ends
	// Over is the configuration the settings above were changed over: a
	// setting lasts until the configuration's own key changes.
	Over *configKeys `json:"over,omitempty"`
}

// configKeys are the configuration's values of the settings the page and
// the API change.
type configKeys struct {
	Rate         int64  `json:"rate"`
	BandwidthMax int64  `json:"bandwidth_max"`
	NoDupes      string `json:"no_dupes"`
	DirectUnpack bool   `json:"direct_unpack"`
}

// settingsOver is the configuration's values of the settable keys.
func settingsOver(cfg *newsget.Config) *configKeys {
	return &configKeys{Rate: int64(cfg.Rate), BandwidthMax: int64(cfg.Serve.BandwidthMax), NoDupes: cfg.Serve.NoDupes,
		DirectUnpack: cfg.DirectUnpack == nil || *cfg.DirectUnpack}
}

// reconcileSettings drops each setting changed from the page or the API
// whose key the configuration file has changed since: an edit of the
// file wins at the next start. It reports what it dropped.
func reconcileSettings(s *settings, cfg *newsget.Config) (dropped []string) {
	now := settingsOver(cfg)
	if s.Over == nil {
		s.Over = now
		return nil
	}
	if s.SpeedLimit != nil && s.Over.Rate != now.Rate {
		s.SpeedLimit, dropped = nil, append(dropped, "rate")
	}
	if s.BandwidthMax != nil && s.Over.BandwidthMax != now.BandwidthMax {
		s.BandwidthMax, dropped = nil, append(dropped, "bandwidth_max")
	}
	if s.NoDupes != "" && s.Over.NoDupes != now.NoDupes {
		s.NoDupes, dropped = "", append(dropped, "no_dupes")
	}
	if s.DirectUnpack != nil && s.Over.DirectUnpack != now.DirectUnpack {
		s.DirectUnpack, dropped = nil, append(dropped, "direct_unpack")
	}
	s.Over = now
	return dropped
}

// speedLimit is the speed limit now. Called with mu held.
func (d *Daemon) speedLimit() int64 {
	if p := d.state.Settings.SpeedLimit; p != nil {
		return *p
	}
	return int64(d.cfg.Rate)
}

// bandwidthMax is the line speed percentages are of. Called with mu held.
func (d *Daemon) bandwidthMax() int64 {
	if p := d.state.Settings.BandwidthMax; p != nil {
		return *p
	}
	return int64(d.cfg.Serve.BandwidthMax)
}

// noDupes is the duplicate rule now. Called with mu held.
func (d *Daemon) noDupes() string {
	if d.state.Settings.NoDupes != "" {
		return d.state.Settings.NoDupes
	}
	if d.cfg.Serve.NoDupes == "" {
		return "tag"
	}
	return d.cfg.Serve.NoDupes
}

// directUnpack reports whether a job starting now unpacks directly.
// Called with mu held.
func (d *Daemon) directUnpack() bool {
	if p := d.state.Settings.DirectUnpack; p != nil {
		return *p
	}
	return d.cfg.DirectUnpack == nil || *d.cfg.DirectUnpack
}

// limitPercent is the speed limit as SABnzbd's speedlimit: a percentage
// of bandwidth_max. Called with mu held.
func (d *Daemon) limitPercent() string {
	l, m := d.speedLimit(), d.bandwidthMax()
	switch {
	case m <= 0 && l <= 0:
		return "0"
	case m <= 0 || l <= 0:
		return "100"
	}
	return strconv.FormatInt(l*100/m, 10)
}

// SetSpeedLimit sets the speed limit (ParseSpeedLimit's grammar) for the
// running job at once and for those after it.
func (d *Daemon) SetSpeedLimit(v string) error {
	d.mu.Lock()
	rate, err := ParseSpeedLimit(v, d.bandwidthMax())
	if err != nil {
		d.mu.Unlock()
		return err
	}
	d.state.Settings.SpeedLimit = &rate
	err = d.store.saveState(&d.state)
	var run *active
	if d.run != nil && d.run.eng != nil {
		run = d.run
	}
	d.mu.Unlock()
	if run != nil {
		run.eng.SetRate(rate) // not under mu (the lock order)
	}
	d.log.Info("speed limit", "bytes_per_second", rate)
	return err
}

// SetBandwidthMax sets the line speed percentages are of.
func (d *Daemon) SetBandwidthMax(v string) error {
	var n int64
	if strings.TrimSpace(v) != "" {
		s, err := tomlconf.ParseSize(v)
		if err != nil {
			return fmt.Errorf("bandwidth_max: %w", err)
		}
		n = int64(s)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state.Settings.BandwidthMax = &n
	return d.store.saveState(&d.state)
}

// SetNoDupes sets the duplicate rule: off, tag, pause or fail (or
// SABnzbd's numbers 0, 4, 2, 3; its 1, discard, is fail here).
func (d *Daemon) SetNoDupes(v string) error {
	v = strings.ToLower(strings.TrimSpace(v))
	switch v {
	case "0":
		v = "off"
	case "1", "3":
		v = "fail"
	case "2":
		v = "pause"
	case "4":
		v = "tag"
	}
	if _, ok := noDupesNumber[v]; !ok {
		return fmt.Errorf("no_dupes %q: want off, tag, pause or fail", v)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state.Settings.NoDupes = v
	return d.store.saveState(&d.state)
}

// SetDirectUnpack turns direct unpack on ("1") or off ("0") for the
// jobs that start downloading from now on; a running job keeps its own.
func (d *Daemon) SetDirectUnpack(v string) error {
	var on bool
	switch strings.TrimSpace(v) {
	case "1":
		on = true
	case "0":
	default:
		return fmt.Errorf("direct_unpack %q: want 1 (on) or 0 (off)", v)
	}
	d.mu.Lock()
	d.state.Settings.DirectUnpack = &on
	err := d.store.saveState(&d.state)
	d.mu.Unlock()
	d.log.Info("direct unpack", "on", on)
	return err
}

// PauseFor pauses the queue for dur (SABnzbd's set_pause, in minutes); 0
// pauses without an end.
func (d *Daemon) PauseFor(dur time.Duration) error {
	d.mu.Lock()
	d.state.Settings.ResumeAt = time.Time{}
	if dur > 0 {
		d.state.Settings.ResumeAt = d.opts.Now().Add(dur)
	}
	d.mu.Unlock()
	return d.PauseAll(true)
}

// ChangeCategory moves queued jobs to category cat (one of the
// configured, else "*"); it returns how many moved. A job whose priority
// was its category's default takes the new category's.
func (d *Daemon) ChangeCategory(ids []string, cat string) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, id := range ids {
		j, _ := d.find(id)
		if j == nil {
			continue
		}
		old := d.categoryPriority(j.Category)
		j.Category = d.category(cat)
		if j.Priority == old {
			j.Priority = d.categoryPriority(j.Category)
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	d.preemptLocked()
	return n, d.store.saveState(&d.state)
}

// ChangeOpts sets queued jobs' post-processing (SABnzbd's pp: 0 download
// only, 1 +repair, 2 +unpack, 3 +delete); it returns how many changed.
func (d *Daemon) ChangeOpts(ids []string, pp int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, id := range ids {
		if j, _ := d.find(id); j != nil {
			j.PP = &pp
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	return n, d.store.saveState(&d.state)
}

// Switch moves job id to where other (an nzo_id, or a position from 0)
// is; it takes that place's priority. It returns the new position and
// priority.
func (d *Daemon) Switch(id, other string) (int, int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j, _ := d.find(id)
	if j == nil {
		return 0, 0, fmt.Errorf("%w: %s", ErrNoJob, id)
	}
	order := d.sortedQueue()
	pos := -1
	if o, _ := d.find(other); o != nil {
		pos = slices.Index(order, o)
	} else if n, err := strconv.Atoi(other); err == nil {
		pos = min(max(n, 0), len(order)-1)
	} else {
		return 0, 0, fmt.Errorf("%w: %s", ErrNoJob, other)
	}
	target := order[pos]
	from := slices.Index(order, j)
	order = slices.Delete(order, from, from+1)
	order = slices.Insert(order, pos, j)
	j.Priority = target.Priority
	d.renumberLocked(order)
	d.preemptLocked()
	return pos, int(j.Priority), d.store.saveState(&d.state)
}

// SortQueue orders each priority's jobs by name, size, remaining or
// avg_age, ascending or (dir "desc") descending.
func (d *Daemon) SortQueue(by, dir string) error {
	key := sortKey(by)
	if key == nil {
		return fmt.Errorf("sort %q: want name, size, remaining or avg_age", by)
	}
	if strings.EqualFold(dir, "desc") {
		asc := key
		key = func(a, b *Job) int { return -asc(a, b) }
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	order := d.sortedQueue()
	slices.SortStableFunc(order, func(a, b *Job) int {
		if a.Priority != b.Priority {
			return cmp.Compare(b.Priority, a.Priority)
		}
		return key(a, b)
	})
	d.renumberLocked(order)
	d.preemptLocked()
	return d.store.saveState(&d.state)
}

// renumberLocked gives the jobs arrival numbers in the order given (the
// queue runs by priority, then these). Called with mu held.
func (d *Daemon) renumberLocked(order []*Job) {
	for i, j := range order {
		j.Seq = uint64(i + 1)
	}
	d.state.Seq = max(d.state.Seq, uint64(len(order)))
}

// preemptLocked pauses the running download when another job should run
// now (it resumes where it was). Called with mu held.
func (d *Daemon) preemptLocked() {
	if d.run != nil && d.run.stop == "" && !d.run.post {
		if next, _ := d.pick(); next != nil && next != d.run.job {
			d.run.stop = "pause"
			d.run.cancel()
		}
	}
	d.kick()
}

// Rename renames a queued job (its folder when done) and, with password
// not empty, sets its archive password; "Name{{password}}" works too.
func (d *Daemon) Rename(id, name, password string) error {
	name, pw := SplitPassword(name)
	if password == "" {
		password = pw
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j, _ := d.find(id)
	if j == nil {
		return fmt.Errorf("%w: %s", ErrNoJob, id)
	}
	j.Name = newsget.SanitizeName(name, j.Name)
	if password != "" {
		j.Password = password
	}
	return d.store.saveState(&d.state)
}

// RetryAll retries every failed job of the history and returns their
// nzo_ids.
func (d *Daemon) RetryAll() []string {
	d.mu.Lock()
	var ids []string
	for _, h := range d.hist {
		if h.Status == "Failed" {
			ids = append(ids, h.ID)
		}
	}
	d.mu.Unlock()
	out := []string{}
	for _, id := range ids {
		if _, err := d.Retry(id, ""); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// WatchNow scans watch_dir at once, taking every NZB there (mode
// watched_now): the files are not left a pass to settle.
func (d *Daemon) WatchNow() {
	if d.cfg.Serve.WatchDir == "" {
		return
	}
	d.watchMu.Lock()
	defer d.watchMu.Unlock()
	d.scanWatch(d.cfg.Serve.WatchDir, nil)
}
