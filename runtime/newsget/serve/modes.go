package serve

import (
	"cmp"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// The SABnzbd API modes beyond what the *arr apps call, as SABnzbd's own
// clients (typed API libraries, Home Assistant, nzb360, LunaSea) call
// them, with SABnzbd's answers: report() is {"status": true}; an error is
// {"status": false, "error": "..."} in SABnzbd's words ("expects one
// parameter", "item does not exist", "not implemented").

const (
	msgNoValue        = "expects one parameter"
	msgNoValue2       = "expects two parameters"
	msgNoItem         = "item does not exist"
	msgNotImplemented = "not implemented"
	msgNoSuchConfig   = "Config item does not exist"
)

func report(w http.ResponseWriter) { writeJSON(w, map[string]any{"status": true}) }

// apiModes answers the modes of this file; false when mode is not one.
func (d *Daemon) apiModes(w http.ResponseWriter, r *http.Request, mode string) bool {
	q := r.FormValue
	switch mode {
	case "status":
		d.apiStatus(w, r)
	case "warnings":
		switch q("name") {
		case "clear":
			d.ring.clearWarnings()
			report(w)
		case "", "show":
			_, ws := d.ring.snapshot()
			writeJSON(w, map[string]any{"warnings": ws})
		default:
			apiError(w, msgNotImplemented)
		}
	case "config":
		d.apiConfigMode(w, r)
	case "set_config":
		d.apiSetConfig(w, r)
	case "change_cat":
		ids := splitIDs(q("value"))
		if len(ids) == 0 || q("value2") == "" {
			apiError(w, msgNoValue)
			return true
		}
		n, err := d.ChangeCategory(ids, q("value2"))
		if err != nil {
			apiError(w, err.Error())
			return true
		}
		writeJSON(w, map[string]any{"status": n > 0})
	case "change_opts":
		ids := splitIDs(q("value"))
		pp, err := strconv.Atoi(q("value2"))
		if len(ids) == 0 || err != nil || pp < 0 || pp > 3 {
			apiError(w, msgNoItem)
			return true
		}
		n, err := d.ChangeOpts(ids, pp)
		if err != nil {
			apiError(w, err.Error())
			return true
		}
		writeJSON(w, map[string]any{"status": n > 0})
	case "switch":
		if q("value") == "" || q("value2") == "" {
			apiError(w, msgNoValue2)
			return true
		}
		pos, prio, err := d.Switch(q("value"), q("value2"))
		if err != nil {
			pos, prio = -1, 0
		}
		writeJSON(w, map[string]any{"result": map[string]any{"position": pos, "priority": prio}})
	case "get_files":
		if q("value") == "" {
			apiError(w, msgNoValue)
			return true
		}
		writeJSON(w, map[string]any{"files": d.fileList(q("value"))})
	case "retry_all":
		writeJSON(w, map[string]any{"status": d.RetryAll()})
	case "showlog":
		lines, _ := d.ring.snapshot()
		w.Header().Set("Content-Type", "application/x-download;charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment;filename="newsget.log"`)
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintf(w, "newsget serve (SABnzbd API %s): the last %d log lines; the API key is removed.\n\n", Version, len(lines))
		for _, l := range lines {
			fmt.Fprint(w, l)
		}
	case "rss_now":
		report(w) // no RSS feeds are configured: nothing to read
	case "watched_now":
		d.WatchNow()
		report(w)
	default:
		return false
	}
	return true
}

// apiStatus is mode=status: fullstatus, or an orphaned folder's removal.
func (d *Daemon) apiStatus(w http.ResponseWriter, r *http.Request) {
	switch r.FormValue("name") {
	case "":
		writeJSON(w, map[string]any{"status": d.apiFullStatus()})
	case "delete_orphan":
		if r.FormValue("value") == "" {
			apiError(w, msgNoValue)
			return
		}
		if err := d.DeleteOrphans([]string{r.FormValue("value")}); err != nil {
			apiError(w, err.Error())
			return
		}
		report(w)
	case "delete_all_orphan":
		if err := d.DeleteOrphans(d.Orphans()); err != nil {
			apiError(w, err.Error())
			return
		}
		report(w)
	default:
		apiError(w, msgNotImplemented)
	}
}

// apiConfigMode is mode=config: speedlimit and set_pause.
func (d *Daemon) apiConfigMode(w http.ResponseWriter, r *http.Request) {
	switch r.FormValue("name") {
	case "speedlimit":
		if err := d.SetSpeedLimit(r.FormValue("value")); err != nil {
			apiError(w, err.Error())
			return
		}
		report(w)
	case "set_pause":
		mins, _ := strconv.Atoi(r.FormValue("value"))
		if err := d.PauseFor(time.Duration(mins) * time.Minute); err != nil {
			apiError(w, err.Error())
			return
		}
		report(w)
	default:
		apiError(w, msgNotImplemented)
	}
}

// settable are the set_config keywords of section misc: the settings the
// page changes too.
var settable = []string{"bandwidth_max", "bandwidth_perc", "no_dupes", "direct_unpack"}

// apiSetConfig is mode=set_config&section=misc&keyword=K&value=V; the
// answer is SABnzbd's: {"config": {"misc": {K: V}}}.
func (d *Daemon) apiSetConfig(w http.ResponseWriter, r *http.Request) {
	section, key, value := r.FormValue("section"), r.FormValue("keyword"), r.FormValue("value")
	if section != "misc" || !slices.Contains(settable, key) {
		apiError(w, msgNoSuchConfig)
		return
	}
	var err error
	switch key {
	case "bandwidth_max":
		err = d.SetBandwidthMax(value)
	case "bandwidth_perc":
		err = d.SetSpeedLimit(strings.TrimSuffix(value, "%") + "%")
	case "no_dupes":
		err = d.SetNoDupes(value)
	case "direct_unpack":
		err = d.SetDirectUnpack(value)
	}
	if err != nil {
		apiError(w, err.Error())
		return
	}
	writeJSON(w, map[string]any{"config": map[string]any{"misc": map[string]any{key: d.miscValue(key)}}})
}

// miscValue is a settable keyword's value as get_config shows it.
func (d *Daemon) miscValue(key string) any {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch key {
	case "bandwidth_max":
		if m := d.bandwidthMax(); m > 0 {
			return strconv.FormatInt(m, 10)
		}
		return ""
	case "bandwidth_perc":
		return d.limitPercent()
	case "no_dupes":
		return noDupesNumber[d.noDupes()]
	case "direct_unpack":
		return boolInt(d.directUnpack())
	}
	return nil
}

// noDupesNumber are SABnzbd's no_dupes values for ours (1 is its
// "discard", which fail stands for here).
var noDupesNumber = map[string]int{"off": 0, "fail": 3, "pause": 2, "tag": 4}

// ParseSpeedLimit reads a speed limit as SABnzbd's speedlimit does: a
// number ending in % or from 1 to 100 is a percentage of max (which must
// be set then); anything else is bytes per second in the configuration's
// size grammar ("2M", "500K", "2097152"). "" and "0" remove the limit.
func ParseSpeedLimit(v string, max int64) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" || v == "0" {
		return 0, nil
	}
	pct, isPct := strings.CutSuffix(v, "%")
	n, err := strconv.Atoi(strings.TrimSpace(pct))
	if isPct || (err == nil && n >= 1 && n <= 100) {
		if err != nil || n < 0 || n > 100 {
			return 0, fmt.Errorf("speed limit %q: a percentage from 0 to 100", v)
		}
		if max <= 0 {
			return 0, fmt.Errorf("speed limit %q: a percentage needs bandwidth_max ([serve] in the configuration, or set_config)", v)
		}
		return max * int64(n) / 100, nil
	}
	s, err := tomlconf.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("speed limit: %w", err)
	}
	return int64(s), nil
}

// fileList is get_files: the job's files with SABnzbd's fields.
func (d *Daemon) fileList(id string) []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []map[string]any{}
	j, _ := d.find(id)
	if j == nil {
		return out
	}
	for i, f := range j.Files {
		left := max(f.Bytes-f.Done, 0)
		status := "active"
		if j.Downloaded != nil || left == 0 {
			left, status = 0, "finished"
		}
		out = append(out, map[string]any{"filename": f.Name, "mbleft": mb(left), "mb": mb(f.Bytes),
			"bytes": fmt.Sprintf("%.2f", float64(f.Bytes)), "age": age(d.opts.Now().Sub(j.Added)),
			"nzf_id": fmt.Sprintf("SABnzbd_nzf_%s_%d", strings.TrimPrefix(j.ID, "SABnzbd_nzo_"), i), "status": status})
	}
	return out
}

// age writes a duration as SABnzbd's calc_age: "5m", "3h", "2d".
func age(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dm", int(d.Minutes()))
}

// matchSearch is SABnzbd's queue and history search: every word of search
// in the name, case-insensitively; * matches anything.
func matchSearch(name, search string) bool {
	name = strings.ToLower(name)
	for _, w := range strings.Fields(strings.ToLower(search)) {
		for _, part := range strings.Split(w, "*") {
			i := strings.Index(name, part)
			if i < 0 {
				return false
			}
		}
	}
	return true
}

// orphanRoot is where jobs' folders are made.
func (d *Daemon) orphanRoot() string { return filepath.Join(d.cfg.DownloadDir, "incomplete") }

// Orphans lists the folders under download_dir/incomplete that no queued
// job and no history entry owns (a job deleted without its files, a crash
// between a delete and the removal).
func (d *Daemon) Orphans() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.orphansLocked()
}

// orphansLocked is Orphans. Called with mu held.
func (d *Daemon) orphansLocked() []string {
	des, err := os.ReadDir(d.orphanRoot())
	if err != nil {
		return []string{}
	}
	owned := map[string]bool{}
	for _, j := range d.state.Queue {
		owned[j.ID] = true
	}
	for _, h := range d.hist {
		owned[h.ID] = true
	}
	out := []string{}
	for _, de := range des {
		if de.IsDir() && !owned[de.Name()] {
			out = append(out, de.Name())
		}
	}
	return out
}

// DeleteOrphans removes orphaned folders by name (as Orphans lists them).
func (d *Daemon) DeleteOrphans(names []string) error {
	orphans := d.Orphans()
	for _, n := range names {
		if !slices.Contains(orphans, n) {
			return fmt.Errorf("%s: %s", msgNoItem, n)
		}
		if err := os.RemoveAll(filepath.Join(d.orphanRoot(), n)); err != nil {
			return fmt.Errorf("remove orphaned folder %s: %w", n, err)
		}
		d.log.Info("orphaned folder removed", "folder", n)
	}
	return nil
}

// sortKey orders jobs for queue&name=sort.
func sortKey(by string) func(a, b *Job) int {
	switch by {
	case "name":
		return func(a, b *Job) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) }
	case "size":
		return func(a, b *Job) int { return cmp.Compare(a.Bytes, b.Bytes) }
	case "remaining":
		return func(a, b *Job) int { return cmp.Compare(a.Left, b.Left) }
	case "avg_age":
		return func(a, b *Job) int { return b.Added.Compare(a.Added) } // oldest posts first
	}
	return nil
}
