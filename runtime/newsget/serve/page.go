package serve

import (
	"crypto/subtle"
	"html/template"
	"io"
	"net/http"

	"github.com/newsflow/newsflow/machine/dlqueue"
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
	page.HandleFunc("POST /action/{what}", d.serveAction)
	page.Handle("GET /metrics", promhttp.HandlerFor(d.registry(), promhttp.HandlerOpts{}))
	mux.Handle("/", d.guard(page))
	return d.hostGate(mux)
}

// csp allows nothing but our own stylesheet and forms posting to us.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

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
	Held bool
}

// pageData is what the template shows.
type pageData struct {
	CSRF       string
	Paused     bool
	Speed      string
	Queue      []pageSlot
	History    []HistorySlot
	Servers    []ServerStat
	Categories []string
}

func (d *Daemon) servePage(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	pd := pageData{CSRF: d.csrf, Paused: d.state.Paused, Speed: speedWords(d.speed) + "B/s",
		Servers: d.stats.list(), Categories: []string{"*"}}
	for _, s := range d.queueSlots() {
		j, _ := d.find(s.ID)
		pd.Queue = append(pd.Queue, pageSlot{Slot: s, Held: j != nil && j.Paused})
	}
	for i, h := range d.hist {
		if i == 100 {
			break
		}
		pd.History = append(pd.History, historySlot(h))
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
		http.Error(w, "forbidden: a form from another site", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, int64(d.cfg.Serve.MaxNZBSize)+1<<20)
	err := r.ParseMultipartForm(1 << 20)
	if r.MultipartForm != nil {
		defer r.MultipartForm.RemoveAll()
	}
	if err != nil && err != http.ErrNotMultipart {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.FormValue("csrf")), []byte(d.csrf)) != 1 {
		http.Error(w, "forbidden: stale or foreign form (reload the page)", http.StatusForbidden)
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
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
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
	_, err = d.Add(data, fh.Filename, AddOptions{Category: r.FormValue("cat"), Priority: p})
	return err
}

func serveCSS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	io.WriteString(w, css)
}

const css = `body{font:15px/1.4 system-ui,sans-serif;margin:0 auto;max-width:60em;padding:.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3em;border-bottom:1px solid #ddd;vertical-align:top;overflow-wrap:anywhere}
input,select,button{max-width:100%}
progress{width:100%}form.inline{display:inline}button{margin:.1em}.failed{color:#a00}.dup{color:#a60}
@media (max-width:40em){table,tbody,tr,td,th{display:block}thead{display:none}td{border:0;padding:.1em}tr{border-bottom:1px solid #ccc;padding:.4em 0}}`

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="refresh" content="5"><title>newsget</title><link rel="stylesheet" href="/style.css"></head>
<body><h1>newsget</h1>
<p id="status">{{if .Paused}}Paused{{else}}Running{{end}} · <span id="speed">{{.Speed}}</span>
{{if .Paused}}<form class="inline" method="post" action="/action/resume"><input type="hidden" name="csrf" value="{{.CSRF}}"><button id="resume">Resume</button></form>
{{else}}<form class="inline" method="post" action="/action/pause"><input type="hidden" name="csrf" value="{{.CSRF}}"><button id="pause">Pause</button></form>{{end}}</p>
<h2>Queue</h2>
<table id="queue"><thead><tr><th>Name</th><th>Category</th><th>Priority</th><th>Status</th><th>Progress</th><th>Size</th><th>Left</th><th></th></tr></thead><tbody>
{{range .Queue}}<tr class="job" data-id="{{.ID}}"><td>{{.Filename}}{{if .LastError}} <span class="dup">({{.LastError}})</span>{{end}}</td><td>{{.Cat}}</td><td>{{.Priority}}</td>
<td class="status">{{.Status}}</td><td><progress max="100" value="{{.Percentage}}">{{.Percentage}}%</progress> {{.Percentage}}%</td>
<td>{{.Size}}</td><td>{{.Timeleft}}</td><td>
{{if .Held}}<form class="inline" method="post" action="/action/resume-job"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><button>Resume</button></form>
{{else}}<form class="inline" method="post" action="/action/pause-job"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><button>Pause</button></form>{{end}}
<form class="inline" method="post" action="/action/delete-job"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><button>Delete</button></form></td></tr>
{{else}}<tr><td colspan="8">The queue is empty.</td></tr>{{end}}</tbody></table>
<h2>Add an NZB</h2>
<form id="upload" method="post" action="/action/upload" enctype="multipart/form-data"><input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="file" name="nzb" accept=".nzb" required> <select name="cat">{{range .Categories}}<option>{{.}}</option>{{end}}</select>
<select name="priority"><option value="">Default</option><option value="2">Force</option><option value="1">High</option><option value="0">Normal</option><option value="-1">Low</option></select>
<button>Add</button></form>
<h2>Servers</h2>
<table id="servers"><thead><tr><th>Server</th><th>Speed</th><th>Articles</th><th>Bytes</th><th>Failures</th></tr></thead><tbody>
{{range .Servers}}<tr><td>{{.Name}}</td><td>{{printf "%.0f" .Speed}} B/s</td><td>{{.Articles}}</td><td>{{.Bytes}}</td><td>{{.Failures}}</td></tr>
{{else}}<tr><td colspan="5">Nothing downloaded yet.</td></tr>{{end}}</tbody></table>
<h2>History</h2>
<table id="history"><thead><tr><th>Name</th><th>Category</th><th>Status</th><th>Size</th><th>Folder</th><th></th></tr></thead><tbody>
{{range .History}}<tr class="done" data-id="{{.ID}}"><td>{{.Name}}</td><td>{{.Category}}</td>
<td class="status{{if eq .Status "Failed"}} failed{{end}}">{{.Status}}{{if .FailMessage}}: {{.FailMessage}}{{end}}</td><td>{{.Size}}</td><td>{{.Storage}}</td>
<td><form class="inline" method="post" action="/action/delete-history"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><button>Remove</button></form></td></tr>
{{else}}<tr><td colspan="6">No finished jobs.</td></tr>{{end}}</tbody></table>
<p>Categories: {{range $i, $c := .Categories}}{{if $i}}, {{end}}{{$c}}{{end}}</p>
</body></html>
`))
