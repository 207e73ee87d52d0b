package serve

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine/dlqueue"
	"github.com/newsflow/newsflow/machine/download"
	"github.com/newsflow/newsflow/runtime/newsget"
	"golang.org/x/sys/unix"
)

// The SABnzbd API, as the *arr apps' SABnzbd clients call it
// (Sonarr's SabnzbdProxy: /api?mode=...&apikey=...&output=json, with
// addfile as a multipart POST of the field "name"). Field names, status
// words and types are SABnzbd's: sizes in the queue are strings ("mb":
// "123.45"), timeleft is "H:MM:SS", history bytes is a number. Answers are
// JSON whatever output says (XML is not spoken).

// Version is the SABnzbd version the API reports (the *arr apps check it
// is recent enough for the fields they read).
const Version = "4.5.1"

// apiError is SABnzbd's error answer.
func apiError(w http.ResponseWriter, msg string) {
	writeJSON(w, map[string]any{"status": false, "error": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// serveAPI is /api.
func (d *Daemon) serveAPI(w http.ResponseWriter, r *http.Request) {
	cleanup, ok := d.apiGate(w, r)
	defer cleanup()
	if !ok {
		return
	}
	q := func(k string) string { return r.FormValue(k) }
	mode := q("mode")
	key := q("apikey")
	switch {
	case key == "" && mode != "version" && mode != "auth":
		apiError(w, "API Key Required")
		return
	case key != "" && subtle.ConstantTimeCompare([]byte(key), []byte(d.cfg.Serve.APIKey)) != 1:
		apiError(w, "API Key Incorrect")
		return
	}
	switch mode {
	case "version":
		writeJSON(w, map[string]any{"version": Version})
	case "auth":
		// SABnzbd's answer without a key: the method needed; with one,
		// whether it is right.
		auth := "apikey"
		if k := q("key"); k != "" && subtle.ConstantTimeCompare([]byte(k), []byte(d.cfg.Serve.APIKey)) != 1 {
			auth = "badkey"
		}
		writeJSON(w, map[string]any{"auth": auth})
	case "get_config":
		writeJSON(w, map[string]any{"config": d.apiConfig()})
	case "get_cats":
		var cats []string
		for _, c := range d.apiCategories() {
			cats = append(cats, c["name"].(string))
		}
		writeJSON(w, map[string]any{"categories": cats})
	case "fullstatus":
		writeJSON(w, map[string]any{"status": d.apiFullStatus()})
	case "queue":
		d.apiQueue(w, r)
	case "history":
		d.apiHistory(w, r)
	case "addfile":
		d.apiAddFile(w, r)
	case "addurl":
		d.apiAddURL(w, r)
	case "pause", "resume":
		if err := d.PauseAll(mode == "pause"); err != nil {
			apiError(w, err.Error())
			return
		}
		writeJSON(w, map[string]any{"status": true})
	case "retry":
		id, err := d.Retry(q("value"), q("password"))
		if err != nil {
			apiError(w, err.Error())
			return
		}
		writeJSON(w, map[string]any{"status": true, "nzo_id": id})
	case "server_stats":
		writeJSON(w, d.apiServerStats())
	default:
		if !d.apiModes(w, r, mode) {
			apiError(w, msgNotImplemented)
		}
	}
}

// addOptions reads cat, priority, nzbname, password and pp.
func addOptions(r *http.Request) (AddOptions, error) {
	p, err := dlqueue.ParsePriority(r.FormValue("priority"))
	if err != nil {
		return AddOptions{}, err
	}
	ao := AddOptions{Category: r.FormValue("cat"), Priority: p, Name: r.FormValue("nzbname"), Password: r.FormValue("password")}
	if v := r.FormValue("pp"); v != "" {
		pp, err := strconv.Atoi(v)
		if err != nil || pp < 0 || pp > 3 {
			return AddOptions{}, fmt.Errorf("pp %q: want 0 (download), 1 (+repair), 2 (+unpack) or 3 (+delete)", v)
		}
		ao.PP = &pp
	}
	return ao, nil
}

func (d *Daemon) apiAddFile(w http.ResponseWriter, r *http.Request) {
	if r.MultipartForm == nil {
		apiError(w, "addfile needs a multipart POST with the NZB in the field name or nzbfile")
		return
	}
	var fh *multipart.FileHeader
	for _, field := range []string{"name", "nzbfile"} {
		if fs := r.MultipartForm.File[field]; len(fs) > 0 {
			fh = fs[0]
			break
		}
	}
	if fh == nil {
		apiError(w, "addfile: no NZB file (field name or nzbfile)")
		return
	}
	ao, err := addOptions(r)
	if err != nil {
		apiError(w, err.Error())
		return
	}
	f, err := fh.Open()
	if err != nil {
		apiError(w, err.Error())
		return
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(d.cfg.Serve.MaxNZBSize)+1))
	if err != nil {
		apiError(w, err.Error())
		return
	}
	id, err := d.Add(data, fh.Filename, ao)
	if err != nil {
		d.log.Warn("addfile: NZB refused", "file", fh.Filename, "err", err)
		apiError(w, err.Error())
		return
	}
	writeJSON(w, map[string]any{"status": true, "nzo_ids": []string{id}})
}

func (d *Daemon) apiAddURL(w http.ResponseWriter, r *http.Request) {
	ao, err := addOptions(r)
	if err != nil {
		apiError(w, err.Error())
		return
	}
	id, err := d.AddURL(r.FormValue("name"), ao)
	if err != nil {
		apiError(w, err.Error())
		return
	}
	writeJSON(w, map[string]any{"status": true, "nzo_ids": []string{id}})
}

// fetchNZB streams an NZB from an indexer over HTTP(S) into the file
// tmp, at most max_nzb_size bytes within URLTimeout, and returns tmp
// (written and synced, or "" when not created) and the NZB's name: from
// Content-Disposition, else the URL's path.
func (d *Daemon) fetchNZB(ctx context.Context, raw, tmp string) (string, string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("addurl: %q is not an http(s) URL", raw)
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.URLTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", "", fmt.Errorf("addurl: %w", err)
	}
	resp, err := d.opts.HTTPClient.Do(req)
	if err != nil {
		return "", "", fetchError(u.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("addurl: %s answered %d %s", u.Host, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	limit := int64(d.cfg.Serve.MaxNZBSize)
	if resp.ContentLength > limit {
		return "", "", fmt.Errorf("addurl: the NZB is larger than max_nzb_size (%d bytes)", limit)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return "", "", fmt.Errorf("addurl: %w", err)
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, limit+1))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil && isLocalWriteErr(err):
		return tmp, "", fmt.Errorf("addurl: storing the NZB: %w", err)
	case err != nil:
		return tmp, "", fetchError(u.Host, err)
	case n > limit:
		return tmp, "", fmt.Errorf("addurl: the NZB is larger than max_nzb_size (%d bytes)", limit)
	}
	name := path.Base(u.Path)
	if cd := resp.Header.Get("Content-Disposition"); cd != "" {
		if _, params, err := parseDisposition(cd); err == nil && params["filename"] != "" {
			name = params["filename"]
		}
	}
	if name == "" || name == "/" || name == "." {
		name = "download.nzb"
	}
	return tmp, name, nil
}

// isLocalWriteErr reports whether err is the file system's (a full disk),
// not the connection's.
func isLocalWriteErr(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe)
}

// apiCategories is get_config's categories.
func (d *Daemon) apiCategories() []map[string]any {
	cats := []map[string]any{{"name": "*", "order": 0, "pp": "3", "script": "None", "dir": "", "priority": 0}}
	for i, c := range d.cfg.Categories {
		if c.Name == "*" {
			continue
		}
		p, _ := dlqueue.ParsePriority(c.Priority)
		if p == dlqueue.Default {
			p = dlqueue.Normal
		}
		dir := c.Dir
		if dir == "" {
			dir = c.Name
		}
		cats = append(cats, map[string]any{"name": c.Name, "order": i + 1, "pp": "3", "script": "None", "dir": dir, "priority": int(p)})
	}
	return cats
}

func (d *Daemon) apiConfig() map[string]any {
	return map[string]any{
		"misc": map[string]any{
			"complete_dir": d.cfg.Serve.CompleteDir, "download_dir": d.cfg.DownloadDir,
			"tv_categories": []string{}, "movie_categories": []string{}, "date_categories": []string{},
			// SABnzbd's switches are 0 or 1, as here.
			"enable_tv_sorting": 0, "enable_movie_sorting": 0, "enable_date_sorting": 0,
			"pre_check": 0, "history_retention": "", "history_retention_option": "all", "history_retention_number": 0,
			"api_key": "", "port": "",
			"direct_unpack": d.miscValue("direct_unpack"), "direct_unpack_threads": d.cfg.DirectMax,
		},
		"categories": d.apiCategories(),
		"servers":    d.apiConfigServers(),
		"sorters":    []any{}, // SABnzbd 4's sorters: none (the *arr apps refuse active ones on their category)
	}
}

// apiConfigServers is get_config's servers: each configured server in
// SABnzbd's fields. The password is masked as SABnzbd masks it (ten
// asterisks, or "" when none is set); ssl_verify is 3 (strict: the
// certificate and the host name) or 0; what newsget has no setting for
// (required, ssl_ciphers, expire_date, quota, usage_at_start, notes)
// has SABnzbd's default.
func (d *Daemon) apiConfigServers() []map[string]any {
	timeout := time.Duration(d.cfg.ArticleTimeout)
	if timeout <= 0 {
		timeout = newsget.DefaultArticleTimeout
	}
	out := make([]map[string]any, 0, len(d.cfg.Servers))
	for _, sc := range d.cfg.Servers {
		password, verify, pipeline := "", 0, sc.Pipeline
		if sc.Password != "" {
			password = "**********"
		}
		if sc.Verify() {
			verify = 3
		}
		if pipeline == 0 {
			pipeline = download.DefaultPipeline
		}
		out = append(out, map[string]any{
			"name": sc.Label(), "displayname": sc.Label(), "host": sc.Host, "port": sc.Port,
			"timeout": int(timeout / time.Second), "username": sc.Username, "password": password,
			"connections": sc.Connections, "ssl": boolInt(sc.Encryption != newsget.EncryptNone),
			"ssl_verify": verify, "ssl_ciphers": "", "enable": boolInt(sc.IsActive()), "required": 0,
			"optional": boolInt(sc.Optional), "pipelining_requests": pipeline, "retention": sc.Retention,
			"expire_date": "", "quota": "", "usage_at_start": 0, "priority": sc.Level, "notes": "",
		})
	}
	return out
}

// boolInt is a switch as SABnzbd's configuration shows it: 1 or 0.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// diskSpace returns free and total bytes of the file system holding dir.
func diskSpace(dir string) (free, total uint64) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, 0
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize)
}

func gb(n uint64) string { return fmt.Sprintf("%.2f", float64(n)/(1<<30)) }

func (d *Daemon) apiFullStatus() map[string]any {
	free, total := diskSpace(d.cfg.DownloadDir)
	cfree, ctotal := diskSpace(d.cfg.Serve.CompleteDir)
	d.mu.Lock()
	defer d.mu.Unlock()
	return map[string]any{
		"completedir": d.cfg.Serve.CompleteDir, "downloaddir": d.cfg.DownloadDir, "paused": d.state.Paused,
		"diskspace1": gb(free), "diskspacetotal1": gb(total), "diskspace2": gb(cfree), "diskspacetotal2": gb(ctotal),
		"kbpersec": fmt.Sprintf("%.2f", d.speed/1024), "speed": speedWords(d.speed),
		"servers": d.apiServersLocked(), "folders": d.orphansLocked(),
	}
}

// timeLeft formats seconds as SABnzbd does: "H:MM:SS" (hours may exceed
// 24; the *arr converter reads 3 or 4 fields).
func timeLeft(left int64, speed float64) string {
	secs := int64(0)
	if speed > 0 {
		secs = int64(float64(left) / speed)
	}
	return fmt.Sprintf("%d:%02d:%02d", secs/3600, secs/60%60, secs%60)
}

func speedWords(bps float64) string {
	switch {
	case bps >= 1<<20:
		return fmt.Sprintf("%.1f M", bps/(1<<20))
	case bps >= 1<<10:
		return fmt.Sprintf("%.0f K", bps/(1<<10))
	}
	return fmt.Sprintf("%.0f ", bps)
}

func mb(n int64) string { return fmt.Sprintf("%.2f", float64(n)/(1<<20)) }

// Slot is a queue slot, with SABnzbd's field names.
type Slot struct {
	Index      int      `json:"index"`
	ID         string   `json:"nzo_id"`
	Filename   string   `json:"filename"`
	Cat        string   `json:"cat"`
	Priority   string   `json:"priority"`
	Status     string   `json:"status"`
	MB         string   `json:"mb"`
	MBLeft     string   `json:"mbleft"`
	Percentage string   `json:"percentage"`
	Timeleft   string   `json:"timeleft"`
	Size       string   `json:"size"`
	SizeLeft   string   `json:"sizeleft"`
	Labels     []string `json:"labels"`
	// Not SABnzbd's: why the job gets nothing while it runs (its servers'
	// failures), else why its last run stopped early.
	LastError string `json:"last_error,omitempty"`
	// Not SABnzbd's: why it was flagged a duplicate.
	Duplicate string `json:"duplicate,omitempty"`
	// bytes and left are the job's size and bytes left as mb and mbleft
	// show them, for the queue's totals.
	bytes, left int64
}

// queueSlots is the queue as slots, in running order. Called with mu held.
func (d *Daemon) queueSlots() []Slot {
	var out []Slot
	var ahead int64 // bytes left to download before the job in hand
	for i, j := range d.sortedQueue() {
		left := j.Left
		status := "Queued"
		switch {
		case j.Grabbing:
			status = "Grabbing" // SABnzbd's word while addurl fetches; the *arr apps count it queued
		case d.run != nil && d.run.job == j && d.run.post:
			left, status = 0, "Verifying" // SABnzbd's word while post-processing
		case d.run != nil && d.run.job == j:
			left = d.leftLocked(d.run)
			status = "Downloading"
		case j.Paused || (d.state.Paused && j.Priority != dlqueue.Force):
			status = "Paused"
		}
		if j.Downloaded != nil {
			left = 0
		}
		pct := 0
		if j.Bytes > 0 {
			pct = int((j.Bytes - left) * 100 / j.Bytes)
		}
		s := Slot{Index: i, ID: j.ID, Filename: j.Name, Cat: j.Category, Priority: j.Priority.String(), Status: status,
			MB: mb(j.Bytes), MBLeft: mb(left), Percentage: strconv.Itoa(pct),
			Size: sizeWords(j.Bytes), SizeLeft: sizeWords(left), Labels: []string{}, LastError: j.LastError, bytes: j.Bytes, left: left}
		// As SABnzbd's, a job's time left is until it is done: after
		// the jobs before it in the queue, at the speed of now.
		if status == "Downloading" || status == "Queued" {
			ahead += left
			s.Timeleft = timeLeft(ahead, d.speed)
		} else {
			s.Timeleft = "0:00:00"
		}
		if status == "Downloading" && d.stalled != "" {
			s.LastError = d.stalled
		}
		if j.Duplicate != "" {
			s.Labels = append(s.Labels, "DUPLICATE")
			s.Duplicate = j.Duplicate
		}
		out = append(out, s)
	}
	return out
}

// slotTotals is the queue's size and bytes left: its slots' mb and
// mbleft summed (the running job's as it downloads, a downloaded one's
// none left).
func slotTotals(slots []Slot) (bytes, left int64) {
	for _, s := range slots {
		bytes += s.bytes
		left += s.left
	}
	return bytes, left
}

func sizeWords(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
}

// page returns start and limit of a paged list of n items.
func page(r *http.Request, n int) (int, int) {
	start, _ := strconv.Atoi(r.FormValue("start"))
	limit, _ := strconv.Atoi(r.FormValue("limit"))
	start = min(max(start, 0), n)
	if limit <= 0 || start+limit > n {
		limit = n - start
	}
	return start, limit
}

func (d *Daemon) apiQueue(w http.ResponseWriter, r *http.Request) {
	ids := splitIDs(r.FormValue("value"))
	switch r.FormValue("name") {
	case "":
	case "delete":
		if len(ids) == 0 {
			apiError(w, msgNoValue)
			return
		}
		if len(ids) == 1 && strings.EqualFold(ids[0], "all") {
			ids = d.searchIDs(r.FormValue("search"))
		}
		gone, _ := d.DeleteJobs(ids)
		writeJSON(w, map[string]any{"status": len(gone) > 0, "nzo_ids": nonNil(gone)})
		return
	case "pause", "resume":
		for _, id := range ids {
			if err := d.PauseJob(id, r.FormValue("name") == "pause"); err != nil {
				apiError(w, err.Error())
				return
			}
		}
		writeJSON(w, map[string]any{"status": true, "nzo_ids": ids})
		return
	case "purge":
		gone, _ := d.DeleteJobs(d.searchIDs(r.FormValue("search")))
		writeJSON(w, map[string]any{"status": len(gone) > 0, "nzo_ids": nonNil(gone)})
		return
	case "rename":
		if len(ids) != 1 || r.FormValue("value2") == "" {
			apiError(w, msgNoValue2)
			return
		}
		err := d.Rename(ids[0], r.FormValue("value2"), r.FormValue("value3"))
		writeJSON(w, map[string]any{"status": err == nil})
		return
	case "sort":
		if r.FormValue("sort") == "" {
			apiError(w, msgNoValue2)
			return
		}
		if err := d.SortQueue(r.FormValue("sort"), r.FormValue("dir")); err != nil {
			apiError(w, err.Error())
			return
		}
		report(w)
		return
	case "priority":
		p, err := dlqueue.ParsePriority(r.FormValue("value2"))
		if err != nil || len(ids) != 1 {
			apiError(w, fmt.Sprintf("priority: want value=nzo_id and value2=priority (%v)", err))
			return
		}
		pos, err := d.SetPriority(ids[0], p)
		if err != nil {
			apiError(w, err.Error())
			return
		}
		writeJSON(w, map[string]any{"status": true, "position": pos, "priority": int(p)})
		return
	default:
		apiError(w, msgNotImplemented)
		return
	}
	free, total := diskSpace(d.cfg.DownloadDir)
	warnings := d.ring.warningCount()
	d.mu.Lock()
	defer d.mu.Unlock()
	all := d.queueSlots()
	bytes, left := slotTotals(all)
	slots := filterSlots(all, r)
	start, n := page(r, len(slots))
	limit, _ := strconv.Atoi(r.FormValue("limit"))
	limit = max(limit, 0)
	status := "Idle"
	switch {
	case d.state.Paused:
		status = "Paused"
	case d.run != nil:
		status = "Downloading"
	}
	writeJSON(w, map[string]any{"queue": map[string]any{
		"status": status, "paused": d.state.Paused, "speed": speedWords(d.speed), "kbpersec": fmt.Sprintf("%.2f", d.speed/1024),
		"mb": mb(bytes), "mbleft": mb(left), "size": sizeWords(bytes), "sizeleft": sizeWords(left), "timeleft": timeLeft(left, d.speed),
		"noofslots": len(slots), "noofslots_total": len(all), "start": start, "limit": limit, "finish": start + limit,
		"diskspace1": gb(free), "diskspacetotal1": gb(total),
		"version": Version, "slots": nonNil(slots[start : start+n]), "servers": d.stats.list(),
		"speedlimit": d.limitPercent(), "speedlimit_abs": strconv.FormatInt(d.speedLimit(), 10),
		"have_warnings": strconv.Itoa(warnings),
	}})
}

// filterSlots keeps the slots queue's search, nzo_ids, cat (or
// category), priority and status ask for.
func filterSlots(slots []Slot, r *http.Request) []Slot {
	cats := splitIDs(cmp.Or(r.FormValue("cat"), r.FormValue("category")))
	ids := splitIDs(r.FormValue("nzo_ids"))
	prios := splitIDs(r.FormValue("priority"))
	statuses := splitIDs(r.FormValue("status"))
	search := r.FormValue("search")
	out := slots[:0:0]
	for _, s := range slots {
		switch {
		case len(cats) > 0 && !slices.ContainsFunc(cats, func(c string) bool { return strings.EqualFold(c, s.Cat) }):
			continue
		case len(ids) > 0 && !slices.Contains(ids, s.ID):
			continue
		case len(prios) > 0 && !slices.ContainsFunc(prios, func(p string) bool {
			v, err := dlqueue.ParsePriority(p)
			return err == nil && v.String() == s.Priority
		}):
			continue
		case len(statuses) > 0 && !slices.ContainsFunc(statuses, func(st string) bool { return strings.EqualFold(st, s.Status) }):
			continue
		case search != "" && !matchSearch(s.Filename, search):
			continue
		}
		out = append(out, s)
	}
	return out
}

// searchIDs are the queued jobs whose names match search (all for "").
func (d *Daemon) searchIDs(search string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, j := range d.state.Queue {
		if search == "" || matchSearch(j.Name, search) {
			out = append(out, j.ID)
		}
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func splitIDs(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// HistorySlot is a history slot, with SABnzbd's field names.
type HistorySlot struct {
	ID           string `json:"nzo_id"`
	Name         string `json:"name"`
	NZBName      string `json:"nzb_name"`
	Category     string `json:"category"`
	Status       string `json:"status"`
	FailMessage  string `json:"fail_message"`
	Storage      string `json:"storage"`
	Path         string `json:"path"`
	Bytes        int64  `json:"bytes"`
	Size         string `json:"size"`
	DownloadTime int    `json:"download_time"`
	Completed    int64  `json:"completed"`
	Script       string `json:"script"`
	ScriptLog    string `json:"script_log"`
	ScriptLine   string `json:"script_line"`
	StageLog     []any  `json:"stage_log"`
	// SABnzbd's further fields. What newsget has no value for is what
	// SABnzbd sends then: null (completeness, meta, series,
	// duplicate_key, md5sum, password, and url for an uploaded NZB), ""
	// (url_info, action_line) or false (loaded, archive).
	PP              string `json:"pp"`     // "", R, U or D: download only, +repair, +unpack, +delete
	Report          string `json:"report"` // "future": addurl fetched no usable NZB
	URL             any    `json:"url"`    // addurl's URL, its query and password hidden
	URLInfo         string `json:"url_info"`
	PostprocTime    int    `json:"postproc_time"`
	DownloadedBytes int64  `json:"downloaded"`
	Completeness    any    `json:"completeness"`
	Meta            any    `json:"meta"`
	Series          any    `json:"series"`
	DuplicateKey    any    `json:"duplicate_key"`
	MD5Sum          any    `json:"md5sum"`
	Password        any    `json:"password"`
	ActionLine      string `json:"action_line"`
	Loaded          bool   `json:"loaded"`
	Retry           bool   `json:"retry"` // mode=retry can take it: failed, with its NZB
	Archive         bool   `json:"archive"`
	TimeAdded       int64  `json:"time_added"`
}

// ppLetters are SABnzbd's history pp of the levels 0 to 3.
var ppLetters = [4]string{"", "R", "U", "D"}

func (d *Daemon) apiHistory(w http.ResponseWriter, r *http.Request) {
	switch r.FormValue("name") {
	case "":
	case "delete":
		ids := splitIDs(r.FormValue("value"))
		if len(ids) == 0 {
			apiError(w, msgNoValue)
			return
		}
		// SABnzbd answers true whatever was there to delete (an empty
		// history, ids already gone).
		gone, _ := d.DeleteHistory(ids, r.FormValue("del_files") == "1", r.FormValue("search"))
		writeJSON(w, map[string]any{"status": true, "nzo_ids": nonNil(gone)})
		return
	default:
		apiError(w, msgNotImplemented)
		return
	}
	cats := splitIDs(cmp.Or(r.FormValue("cat"), r.FormValue("category")))
	ids := splitIDs(r.FormValue("nzo_ids"))
	statuses := splitIDs(r.FormValue("status"))
	if r.FormValue("failed_only") == "1" {
		statuses = []string{"Failed"}
	}
	search := r.FormValue("search")
	d.mu.Lock()
	defer d.mu.Unlock()
	var slots []HistorySlot
	for _, h := range d.hist {
		switch {
		case len(cats) > 0 && !slices.ContainsFunc(cats, func(c string) bool { return strings.EqualFold(c, h.Category) }):
			continue
		case len(ids) > 0 && !slices.Contains(ids, h.ID):
			continue
		case len(statuses) > 0 && !slices.ContainsFunc(statuses, func(s string) bool { return strings.EqualFold(s, h.Status) }):
			continue
		case search != "" && !matchSearch(h.Name, search):
			continue
		}
		slots = append(slots, historySlot(h))
	}
	start, limit := page(r, len(slots))
	total, month, week, day := d.historySizesLocked()
	writeJSON(w, map[string]any{"history": map[string]any{
		"noofslots": len(slots), "slots": nonNil(slots[start : start+limit]),
		"total_size": sizeWords(total), "month_size": sizeWords(month), "week_size": sizeWords(week), "day_size": sizeWords(day),
	}})
}

// historySizesLocked is SABnzbd's history sizes: the bytes of every job
// in the history, of those completed this month and this week (from
// Monday), local time, and the bytes downloaded today. Called with mu
// held.
func (d *Daemon) historySizesLocked() (total, month, week, day int64) {
	now := d.opts.Now()
	y, m, dd := now.Date()
	monthStart := time.Date(y, m, 1, 0, 0, 0, 0, now.Location())
	today := time.Date(y, m, dd, 0, 0, 0, 0, now.Location())
	weekStart := today.AddDate(0, 0, -(int(today.Weekday())+6)%7)
	for _, h := range d.hist {
		total += h.Bytes
		if !h.Completed.Before(monthStart) {
			month += h.Bytes
		}
		if !h.Completed.Before(weekStart) {
			week += h.Bytes
		}
	}
	date := now.Format(time.DateOnly)
	for _, st := range d.stats.by {
		day += st.Daily[date]
	}
	return total, month, week, day
}

// encryptedPrefix marks, as SABnzbd does, a job whose archives no
// password opened (the *arr apps look for it).
const encryptedPrefix = "ENCRYPTED / "

func historySlot(h HistoryEntry) HistorySlot {
	name := h.Name
	if h.Encrypted {
		name = encryptedPrefix + name
	}
	s := HistorySlot{ID: h.ID, Name: name, NZBName: h.NZBName, Category: h.Category, Status: h.Status,
		FailMessage: h.FailMessage, Storage: h.Storage, Path: h.Storage, Bytes: h.Bytes, Size: sizeWords(h.Bytes),
		DownloadTime: h.DownloadTime, Completed: h.Completed.Unix(), Script: cmp.Or(h.Script, "None"), ScriptLog: h.ScriptLog,
		ScriptLine: h.ScriptLine, StageLog: stageLog(h),
		PP: ppLetters[3], Retry: h.Status == "Failed" && !h.FetchFailed, DownloadedBytes: h.Bytes, PostprocTime: h.PostprocTime}
	if h.PP != nil && *h.PP >= 0 && *h.PP < len(ppLetters) {
		s.PP = ppLetters[*h.PP]
	}
	if h.URL != "" {
		s.URL = redactURL(h.URL)
	}
	if h.FetchFailed {
		s.Report = "future"
	}
	if !h.Added.IsZero() {
		s.TimeAdded = h.Added.Unix()
	}
	return s
}

// stageLog is SABnzbd's stage_log: what each stage did, in lines.
func stageLog(h HistoryEntry) []any {
	out := []any{}
	for _, st := range h.Stages {
		out = append(out, st)
	}
	if h.FailMessage != "" {
		out = append(out, map[string]any{"name": "Unpack", "actions": []string{h.FailMessage}})
	}
	if h.ScriptLine != "" {
		out = append(out, map[string]any{"name": "Script", "actions": []string{h.ScriptLine}})
	}
	return out
}

func (d *Daemon) apiServerStats() map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.opts.Now()
	var day, week, month, total int64
	servers := map[string]any{}
	for _, s := range d.stats.list() {
		sd, sw, sm, st := s.sums(now)
		day, week, month, total = day+sd, week+sw, month+sm, total+st
		servers[s.Name] = map[string]any{"total": st, "month": sm, "week": sw, "day": sd, "daily": s.Daily,
			"articles_success": s.Articles, "articles_tried": s.Articles + s.Failures}
	}
	return map[string]any{"total": total, "month": month, "week": week, "day": day, "servers": servers}
}
