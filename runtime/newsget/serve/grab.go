package serve

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/newsflow/newsflow/machine/dlqueue"
	"github.com/newsflow/newsflow/runtime/newsget"
)

// addurl, as SABnzbd does it: the job is queued at once in the state
// "Grabbing" (durably, with its URL) and its nzo_id answered; the NZB is
// fetched in the background (fetchNZB's limits). Fetched, the job becomes
// an ordinary queued job; refused (an HTTP error, too large, not an NZB)
// it goes to the history as Failed with the reason, where the *arr apps
// see it. A stop during the fetch leaves the job Grabbing: the next start
// fetches again.

// AddURL queues a job whose NZB is fetched from raw, and returns its
// nzo_id.
func (d *Daemon) AddURL(raw string, ao AddOptions) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("addurl: %q is not an http(s) URL", raw)
	}
	name, _ := SplitPassword(ao.Name)
	if name == "" {
		name, _ = SplitPassword(strings.TrimSuffix(path.Base(u.Path), ".nzb"))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j := &Job{Name: newsget.SanitizeName(name, "download"), URL: u.String(), Grabbing: true, Added: d.opts.Now(),
		Paused: ao.Paused || ao.Priority == dlqueue.Paused, GivenName: ao.Name,
		Password: ao.Password}
	j.Category = d.category(ao.Category)
	j.Priority = d.jobPriority(ao.Priority, j.Category)
	j.ID = d.newIDLocked()
	if err := d.enqueueLocked(j); err != nil {
		return "", err
	}
	d.log.Info("grabbing", "nzo_id", j.ID, "url", u.Redacted())
	if d.life != nil {
		d.startGrab(j)
	}
	return j.ID, nil
}

// startGrab fetches j's NZB in the background. Called with mu held.
func (d *Daemon) startGrab(j *Job) {
	ctx := d.life
	d.grabs.Add(1)
	go func() {
		defer d.grabs.Done()
		data, filename, err := d.fetchNZB(ctx, j.URL)
		if ctx.Err() != nil {
			return // still Grabbing on disk: fetched again after the restart
		}
		var nj *Job
		if err == nil {
			nj, err = d.parseJob(data, filename, AddOptions{Name: j.GivenName, Password: j.Password})
		}
		if err != nil {
			d.mu.Lock()
			_, i := d.find(j.ID)
			d.mu.Unlock()
			if i >= 0 {
				d.finish(j, HistoryEntry{Status: "Failed", FailMessage: err.Error()})
			}
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if _, i := d.find(j.ID); i < 0 {
			return // deleted while it was fetched
		}
		if err := d.store.saveNZB(j.ID, data); err != nil {
			d.log.Error("grab", "nzo_id", j.ID, "err", err)
			return // stays Grabbing; the next start tries again
		}
		j.Name, j.NZBName, j.Hash, j.Files, j.Bytes, j.Left = nj.Name, nj.NZBName, nj.Hash, nj.Files, nj.Bytes, nj.Left
		j.Password = nj.Password
		j.Grabbing = false
		if d.duplicateLocked(j, j.ID) {
			d.grabs.Add(1)
			go func() {
				defer d.grabs.Done()
				d.finish(j, HistoryEntry{Status: "Failed", FailMessage: "Duplicate NZB: " + j.Duplicate})
			}()
		}
		if err := d.store.saveState(&d.state); err != nil {
			d.log.Error("queue", "err", err)
		}
		d.log.Info("job added", "nzo_id", j.ID, "name", j.Name, "category", j.Category, "priority", j.Priority.String())
		d.preemptLocked()
	}()
}
