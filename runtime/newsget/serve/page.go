package serve

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine/dlqueue"
	"github.com/newsflow/newsflow/runtime/newsget"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the page (/), its forms (/action/...), the stylesheet,
// the SABnzbd API (/api) and /metrics. The page and its forms ask for the
// htpasswd user when one is configured; the API takes the api_key.
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api", d.serveAPI)
	mux.HandleFunc("/sabnzbd/api", d.serveAPI) // SABnzbd's URL base, as clients configure it by default
	page := http.NewServeMux()
	page.HandleFunc("GET /{$}", d.servePage)
	page.HandleFunc("GET /style.css", serveCSS)
	page.HandleFunc("GET /page.js", serveJS)
	page.HandleFunc("POST /action/{what}", d.serveAction)
	page.Handle("GET /metrics", promhttp.HandlerFor(d.registry(), promhttp.HandlerOpts{}))
	mux.Handle("/", d.guard(page))
	return d.hostGate(mux)
}

// csp allows nothing but our own stylesheet, our own script (page.js,
// which reads the page itself again) and forms posting to us.
const csp = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// guard adds the security headers and asks for the htpasswd user.
func (d *Daemon) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// Not no-referrer: under it a browser sends "Origin: null" with
		// every form post, which originAllowed refuses.
		w.Header().Set("Referrer-Policy", "same-origin")
		if !d.checkUser(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="newsget", charset="UTF-8"`)
			http.Error(w, "authorization required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// pageSlot is a queue slot on the page: Held is the job's own pause
// (its button says Resume even while the whole queue is paused, and
// Pause otherwise, so a job can be held while the queue is paused).
type pageSlot struct {
	Slot
	Held     bool
	PrioNum  int
	Files    []pageFile
	BytesStr string
	LeftStr  string
	TimeStr  string // the time left, or a dash where none is known
}

// pageFile is one file of a queued job, with its progress.
type pageFile struct {
	Name    string
	Percent int
	Size    string
}

// pageHist is a history slot with its size in people's units.
type pageHist struct {
	HistorySlot
	SizeStr string
	// Encrypted: no password opened its archives; its Retry takes one.
	Encrypted bool
	Stages    []Stage // what verify, repair and unpack did
}

// pageServer is a server's line, with the chart of its last minutes.
type pageServer struct {
	ServerStat
	SpeedStr, BytesStr string
	Chart              string // SVG polyline points, 0..100 x 0..20
	State, Err, Since  string // its connection state, its error while failing, since when
}

// pageData is what the template shows.
type pageData struct {
	CSRF       string
	Paused     bool
	Speed      string
	Limit      string // the speed limit, "none" or e.g. "2.0 MiB/s"
	Direct     bool   // direct unpack is on for the jobs that start now
	Left       string // the queue's time left, or a dash while nothing downloads
	Queue      []pageSlot
	History    []pageHist
	Servers    []pageServer
	Categories []string
	Warnings   []Warning
}

// humanSpeed writes bytes per second in the units of the configuration's
// grammar (newsget.FormatBytes).
func humanSpeed(bps float64) string { return newsget.FormatBytes(int64(bps)) + "/s" }

// chartPoints draws speeds (oldest first) as polyline points in a 100x20
// box, the fastest at the top.
func chartPoints(speeds []float64) string {
	if len(speeds) < 2 {
		return ""
	}
	top := 1.0
	for _, v := range speeds {
		top = max(top, v)
	}
	var b strings.Builder
	for i, v := range speeds {
		fmt.Fprintf(&b, "%.1f,%.1f ", float64(i)*100/float64(len(speeds)-1), 20-v*20/top)
	}
	return strings.TrimSpace(b.String())
}

func (d *Daemon) servePage(w http.ResponseWriter, r *http.Request) {
	d.refreshServers(r.Context())
	_, warnings := d.ring.snapshot()
	d.mu.Lock()
	pd := pageData{CSRF: d.csrf, Paused: d.state.Paused, Speed: humanSpeed(d.speed), Limit: "none",
		Categories: []string{"*"}, Warnings: warnings[max(len(warnings)-5, 0):], Direct: d.directUnpack()}
	if l := d.speedLimit(); l > 0 {
		pd.Limit = humanSpeed(float64(l))
	}
	slots := d.queueSlots()
	_, left := slotTotals(slots)
	for _, s := range slots {
		j, _ := d.find(s.ID)
		if j == nil {
			continue
		}
		ps := pageSlot{Slot: s, Held: j.Paused, PrioNum: int(j.Priority), BytesStr: newsget.FormatBytes(j.Bytes), LeftStr: newsget.FormatBytes(s.left), TimeStr: s.Timeleft}
		if d.speed == 0 || (s.Status != "Downloading" && s.Status != "Queued") {
			ps.TimeStr = "–" // nothing downloads: no time to tell
		}
		for _, f := range j.Files {
			pct := 100
			if f.Bytes > 0 && j.Downloaded == nil {
				pct = int(min(f.Done, f.Bytes) * 100 / f.Bytes)
			}
			ps.Files = append(ps.Files, pageFile{Name: f.Name, Percent: pct, Size: newsget.FormatBytes(f.Bytes)})
		}
		pd.Queue = append(pd.Queue, ps)
	}
	pd.Left = timeLeft(left, d.speed)
	if d.speed == 0 {
		pd.Left = "–" // as the jobs' rows: no time to tell
	}
	for i, h := range d.hist {
		if i == 100 {
			break
		}
		pd.History = append(pd.History, pageHist{HistorySlot: historySlot(h), SizeStr: newsget.FormatBytes(h.Bytes), Encrypted: h.Encrypted, Stages: h.Stages})
	}
	// Every configured server shows its state, downloaded from or not;
	// servers no longer configured show their statistics.
	stats := d.stats.list()
	byName := make(map[string]ServerStat, len(stats))
	for _, st := range stats {
		byName[st.Name] = st
	}
	addServer := func(st ServerStat, v serverView) {
		ps := pageServer{ServerStat: st, SpeedStr: humanSpeed(st.Speed), BytesStr: newsget.FormatBytes(st.Bytes),
			Chart: chartPoints(st.History), State: v.State, Err: v.Err}
		if !v.Since.IsZero() {
			ps.Since = v.Since.Format(time.DateTime)
		}
		pd.Servers = append(pd.Servers, ps)
	}
	for _, v := range d.serverViewsLocked() {
		st, ok := byName[v.Name]
		if !ok {
			st = ServerStat{Name: v.Name}
		}
		delete(byName, v.Name)
		addServer(st, v)
	}
	for _, st := range stats {
		if _, ok := byName[st.Name]; ok {
			addServer(st, serverView{})
		}
	}
	d.mu.Unlock()
	for _, c := range d.cfg.Categories {
		if c.Name != "*" {
			pd.Categories = append(pd.Categories, c.Name)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := pageTmpl.Execute(w, pd); err != nil {
		d.log.Warn("page", "err", err)
	}
}

// serveAction carries out a form: a browser's Origin, when sent, must be
// one of the daemon's names (checked before the body is read) and the
// CSRF token must match the one in the page (it is secret to pages this
// daemon served).
func (d *Daemon) serveAction(w http.ResponseWriter, r *http.Request) {
	if !d.originAllowed(r) {
		formError(w, http.StatusForbidden, "This form came from another site.", "Use the forms of this page itself.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, int64(d.cfg.Serve.MaxNZBSize)+1<<20)
	err := r.ParseMultipartForm(1 << 20)
	if r.MultipartForm != nil {
		defer r.MultipartForm.RemoveAll()
	}
	if err != nil && err != http.ErrNotMultipart {
		hint := "Go back and send the form again."
		if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
			hint = fmt.Sprintf("An NZB may be at most %s ([serve] max_nzb_size); choose a smaller file or raise the limit.", newsget.FormatBytes(int64(d.cfg.Serve.MaxNZBSize)))
		}
		formError(w, http.StatusBadRequest, "The form could not be read: "+err.Error()+".", hint)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.FormValue("csrf")), []byte(d.csrf)) != 1 {
		formError(w, http.StatusForbidden, "This form is stale or not from this page (the daemon restarted since the page was loaded, or another site sent it).",
			"Reload the page and use its form again.")
		return
	}
	id := r.FormValue("id")
	switch r.PathValue("what") {
	case "pause":
		err = d.PauseAll(true)
	case "resume":
		err = d.PauseAll(false)
	case "pause-job":
		err = d.PauseJob(id, true)
	case "resume-job":
		err = d.PauseJob(id, false)
	case "delete-job":
		_, err = d.DeleteJobs([]string{id})
	case "delete-history":
		_, err = d.DeleteHistory([]string{id}, r.FormValue("del_files") == "1", "")
	case "upload":
		err = d.pageUpload(r)
	case "speedlimit":
		err = d.SetSpeedLimit(r.FormValue("limit"))
	case "direct-unpack":
		err = d.SetDirectUnpack(r.FormValue("value"))
	case "priority":
		var p dlqueue.Priority
		if p, err = dlqueue.ParsePriority(r.FormValue("priority")); err == nil {
			_, err = d.SetPriority(id, p)
		}
	case "category":
		_, err = d.ChangeCategory([]string{id}, r.FormValue("cat"))
	case "move":
		err = d.pageMove(id, r.FormValue("to"))
	case "retry":
		_, err = d.Retry(id, r.FormValue("password"))
	default:
		formError(w, http.StatusNotFound, fmt.Sprintf("This page has no form %q.", r.PathValue("what")), "Use the forms of the page.")
		return
	}
	if err != nil {
		formError(w, http.StatusBadRequest, err.Error(), formHint(err))
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// pageMove moves a job up, down, to the top or to the bottom of the
// queue (within the order switch keeps: it takes its new place's
// priority).
func (d *Daemon) pageMove(id, to string) error {
	d.mu.Lock()
	order := d.sortedQueue()
	d.mu.Unlock()
	pos := slices.IndexFunc(order, func(j *Job) bool { return j.ID == id })
	if pos < 0 {
		return fmt.Errorf("%w: %s", ErrNoJob, id)
	}
	switch to {
	case "up":
		pos = max(pos-1, 0)
	case "down":
		pos = min(pos+1, len(order)-1)
	case "top":
		pos = 0
	case "bottom":
		pos = len(order) - 1
	default:
		return fmt.Errorf("move %q: want up, down, top or bottom", to)
	}
	_, _, err := d.Switch(id, strconv.Itoa(pos))
	return err
}

func (d *Daemon) pageUpload(r *http.Request) error {
	f, fh, err := r.FormFile("nzb")
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(d.cfg.Serve.MaxNZBSize)+1))
	if err != nil {
		return err
	}
	p, err := dlqueue.ParsePriority(r.FormValue("priority"))
	if err != nil {
		return err
	}
	if _, err = d.Add(data, fh.Filename, AddOptions{Category: r.FormValue("cat"), Priority: p}); err != nil {
		d.log.Warn("upload: NZB refused", "file", fh.Filename, "err", err)
	}
	return err
}

// formHint says what to do after a form's action failed with err.
func formHint(err error) string {
	switch {
	case errors.Is(err, ErrNoJob):
		return "The job is no longer there: it has finished or was removed. The page shows what is queued now."
	case errors.Is(err, errNotNZB):
		return "" // the message says what to do
	case errors.Is(err, http.ErrMissingFile):
		return "Choose an .nzb file before pressing Add."
	}
	return "Go back, correct the form and send it again."
}

// formError answers a form that did nothing with a page in the page's own
// style: what went wrong, what to do, and the way back; the status code
// says the same to programs.
func formError(w http.ResponseWriter, status int, msg, hint string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	errTmpl.Execute(w, struct{ Status, Msg, Hint string }{http.StatusText(status), msg, hint})
}

var errTmpl = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>newsget: {{.Status}}</title><link rel="stylesheet" href="/style.css"></head>
<body><h1>newsget</h1>
<div id="error"><h2>{{.Status}}</h2><p class="failed">{{.Msg}}</p>{{if .Hint}}<p id="hint">{{.Hint}}</p>{{end}}
<p><a id="back" href="/">Back to the queue</a></p></div>
</body></html>
`))

func serveCSS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	io.WriteString(w, css)
}

func serveJS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	io.WriteString(w, pageJS)
}

// pageJS keeps the page live without reloading it: every 2 s it reads
// the page again and swaps in its status line, queue, servers, history
// and warnings, leaving the upload form (a chosen file) alone; it waits
// while a select or input of those parts has the focus, and keeps the
// files list of a job open. Without it the page refreshes itself (a
// <noscript> refresh).
const pageJS = `(function () {
  var parts = ['status', 'queue', 'servers', 'history', 'warnings'];
  function busy() {
    var a = document.activeElement;
    return a && (a.tagName === 'SELECT' || a.tagName === 'INPUT') && a.closest && a.closest('#status,#queue,#history');
  }
  function tick() {
    if (document.hidden || busy()) return;
    fetch(location.pathname, {credentials: 'same-origin', cache: 'no-store'}).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (t) {
      if (!t || busy()) return;
      var doc = new DOMParser().parseFromString(t, 'text/html');
      var open = {};
      document.querySelectorAll('#queue details[open]').forEach(function (d) { open[d.dataset.id] = true; });
      parts.forEach(function (id) {
        var n = doc.getElementById(id), o = document.getElementById(id);
        if (n && o) o.replaceWith(document.importNode(n, true));
      });
      document.querySelectorAll('#queue details').forEach(function (d) { if (open[d.dataset.id]) d.open = true; });
      document.documentElement.dataset.live = String(Date.now());
    }).catch(function () {});
  }
  document.documentElement.classList.add('live');
  setInterval(tick, 2000);
})();
`

const css = `body{font:15px/1.4 system-ui,sans-serif;margin:0 auto;max-width:72em;padding:.5em;color:#222}
h1{font-size:1.3em;margin:.2em 0}h2{font-size:1.1em;margin-top:1.2em}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3em;border-bottom:1px solid #ddd;vertical-align:top}
th{white-space:nowrap;font-weight:600}td.name{overflow-wrap:anywhere;min-width:12em}td.num{white-space:nowrap}
input,select,button{max-width:100%;font:inherit}input[name=limit]{width:10em}
progress{width:100%;min-width:5em}form.inline{display:inline}button{margin:.1em}.failed{color:#a00}.dup{color:#a60}.reason{color:#a00;font-size:.9em;overflow-wrap:anywhere}
#status{display:flex;flex-wrap:wrap;gap:.4em 1em;align-items:center;background:#f4f4f4;padding:.4em;border-radius:.3em}
.files{font-size:.9em;margin:.2em 0 0}.files li{overflow-wrap:anywhere}svg.chart{width:8em;height:1.6em;stroke:#36c;fill:none;stroke-width:1.5}
.actions button{white-space:nowrap}#limit{margin:.4em 0}.warn{color:#a60;font-size:.9em;overflow-wrap:anywhere}
@media (max-width:45em){table,tbody,tr,td,th{display:block}thead{display:none}td{border:0;padding:.1em 0}td.name{min-width:0}
tr{border-bottom:1px solid #ccc;padding:.4em 0}td[data-label]::before{content:attr(data-label) ": ";font-weight:600;color:#555}
.actions{white-space:normal}}`

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<noscript><meta http-equiv="refresh" content="10"></noscript>
<title>newsget</title><link rel="stylesheet" href="/style.css"><script src="/page.js" defer></script></head>
<body><h1>newsget</h1>
<div id="status"><span>{{if .Paused}}<b>Paused</b>{{else}}<b>Running</b>{{end}}</span>
<span>Speed <b id="speed">{{.Speed}}</b></span><span>Time left <b id="left">{{.Left}}</b></span><span>Limit <b id="limit-now">{{.Limit}}</b></span>
{{if .Paused}}<form class="inline" method="post" action="/action/resume"><input type="hidden" name="csrf" value="{{.CSRF}}"><button id="resume">Resume</button></form>
{{else}}<form class="inline" method="post" action="/action/pause"><input type="hidden" name="csrf" value="{{.CSRF}}"><button id="pause">Pause</button></form>{{end}}
<form class="inline" method="post" action="/action/direct-unpack" title="extract RAR sets while they download; for the jobs that start from now on"><input type="hidden" name="csrf" value="{{.CSRF}}">
<span>Direct unpack <b id="direct-now">{{if .Direct}}on{{else}}off{{end}}</b></span> {{if .Direct}}<button id="direct" name="value" value="0">Turn off</button>{{else}}<button id="direct" name="value" value="1">Turn on</button>{{end}}</form></div>
<form id="limit" method="post" action="/action/speedlimit"><input type="hidden" name="csrf" value="{{.CSRF}}">
<label>Speed limit <input name="limit" placeholder="2M, 500K or 50%" aria-label="speed limit"></label> <button>Set</button> <small>0 or empty: none</small></form>
<h2>Queue</h2>
<table id="queue"><thead><tr><th>Name</th><th>Category</th><th>Priority</th><th>Status</th><th>Progress</th><th>Size</th><th>Time left</th><th></th></tr></thead><tbody>
{{range .Queue}}<tr class="job" data-id="{{.ID}}"><td class="name" data-label="Name">{{.Filename}}{{if .Duplicate}} <span class="dup">(duplicate: {{.Duplicate}})</span>{{end}}{{if .LastError}}<div class="reason">{{.LastError}}</div>{{end}}
<details data-id="{{.ID}}"><summary>{{len .Files}} {{if eq (len .Files) 1}}file{{else}}files{{end}}</summary><ul class="files">{{range .Files}}<li>{{.Name}}: {{.Percent}}% of {{.Size}}</li>{{end}}</ul></details></td>
<td data-label="Category"><form class="inline" method="post" action="/action/category"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}">
<select name="cat" aria-label="category">{{$cat := .Cat}}{{range $.Categories}}<option{{if eq . $cat}} selected{{end}}>{{.}}</option>{{end}}</select> <button>Set</button></form></td>
<td data-label="Priority"><form class="inline" method="post" action="/action/priority"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}">
<select name="priority" aria-label="priority">{{$p := .PrioNum}}<option value="2"{{if eq $p 2}} selected{{end}}>Force</option><option value="1"{{if eq $p 1}} selected{{end}}>High</option><option value="0"{{if eq $p 0}} selected{{end}}>Normal</option><option value="-1"{{if eq $p -1}} selected{{end}}>Low</option></select> <button>Set</button></form></td>
<td class="status" data-label="Status">{{.Status}}</td><td data-label="Progress"><progress max="100" value="{{.Percentage}}">{{.Percentage}}%</progress> {{.Percentage}}%</td>
<td class="num" data-label="Size">{{.BytesStr}} ({{.LeftStr}} left)</td><td class="num" data-label="Time left">{{.TimeStr}}</td><td class="actions">
{{if .Held}}<form class="inline" method="post" action="/action/resume-job"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><button>Resume</button></form>
{{else}}<form class="inline" method="post" action="/action/pause-job"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><button>Pause</button></form>{{end}}
<form class="inline" method="post" action="/action/move"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><button name="to" value="top" title="to the top">Top</button><button name="to" value="up" title="up one">Up</button><button name="to" value="down" title="down one">Down</button></form>
<form class="inline" method="post" action="/action/delete-job"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><button>Delete</button></form></td></tr>
{{else}}<tr><td colspan="8">The queue is empty.</td></tr>{{end}}</tbody></table>
<h2>Add an NZB</h2>
<form id="upload" method="post" action="/action/upload" enctype="multipart/form-data"><input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="file" name="nzb" accept=".nzb" required aria-label="NZB file"> <select name="cat" aria-label="category">{{range .Categories}}<option>{{.}}</option>{{end}}</select>
<select name="priority" aria-label="priority"><option value="">Default</option><option value="2">Force</option><option value="1">High</option><option value="0">Normal</option><option value="-1">Low</option></select>
<button>Add</button></form>
<h2>Servers</h2>
<table id="servers"><thead><tr><th>Server</th><th>State</th><th>Speed</th><th>Last minutes</th><th>Articles</th><th>Downloaded</th><th>Missing</th></tr></thead><tbody>
{{range .Servers}}<tr><td data-label="Server">{{.Name}}</td>
<td class="srvstate" data-label="State"><span class="state{{if .Err}} failed{{end}}">{{.State}}</span>{{if .Since}} <small>since {{.Since}}</small>{{end}}{{if .Err}}<div class="reason">{{.Err}}</div>{{end}}</td><td class="num" data-label="Speed">{{.SpeedStr}}</td>
<td data-label="Last minutes">{{if .Chart}}<svg class="chart" viewBox="0 0 100 20" preserveAspectRatio="none" role="img" aria-label="speed over the last minutes"><polyline points="{{.Chart}}"/></svg>{{end}}</td>
<td class="num" data-label="Articles">{{.Articles}}</td><td class="num" data-label="Downloaded">{{.BytesStr}}</td><td class="num" data-label="Missing">{{.Failures}}</td></tr>
{{else}}<tr><td colspan="7">No servers.</td></tr>{{end}}</tbody></table>
<h2>History</h2>
<table id="history"><thead><tr><th>Name</th><th>Category</th><th>Status</th><th>Size</th><th>Folder</th><th></th></tr></thead><tbody>
{{range .History}}<tr class="done" data-id="{{.ID}}"><td class="name" data-label="Name">{{.Name}}</td><td data-label="Category">{{.Category}}</td>
<td data-label="Status"><span class="status{{if eq .Status "Failed"}} failed{{end}}">{{.Status}}</span>{{if .FailMessage}}<div class="reason">{{.FailMessage}}</div>{{end}}{{range .Stages}}<div class="stage"><small>{{.Name}}: {{range $i, $a := .Actions}}{{if $i}}; {{end}}{{$a}}{{end}}</small></div>{{end}}{{if .ScriptLine}}<div>Script: {{.ScriptLine}}</div>{{end}}</td>
<td class="num" data-label="Size">{{.SizeStr}}</td><td class="name" data-label="Folder">{{.Storage}}</td>
<td class="actions">{{if eq .Status "Failed"}}<form class="inline" method="post" action="/action/retry"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}">{{if .Encrypted}}<input class="password" type="password" name="password" placeholder="password" autocomplete="off" aria-label="archive password"> {{end}}<button class="retry">Retry</button></form>{{end}}
<form class="inline" method="post" action="/action/delete-history"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><button>Remove</button></form>
<form class="inline" method="post" action="/action/delete-history"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="del_files" value="1"><button>Remove with files</button></form></td></tr>
{{else}}<tr><td colspan="6">No finished jobs.</td></tr>{{end}}</tbody></table>
<div id="warnings">{{if .Warnings}}<h2>Warnings</h2>{{range .Warnings}}<p class="warn">{{.Type}}: {{.Text}}</p>{{end}}{{end}}</div>
<p>Categories: {{range $i, $c := .Categories}}{{if $i}}, {{end}}{{$c}}{{end}}</p>
</body></html>
`))
