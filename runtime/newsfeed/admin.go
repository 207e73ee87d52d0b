package newsfeed

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The admin listener serves:
//
//	/ctl/...      control, with the token (ctl.go)
//	/metrics      Prometheus metrics
//	/status       the status page (HTML)
//	/status.json  the same as JSON (what `newsfeed status` reads)
//	/debug/pprof/ Go's profiler, only with pprof = true (newsbench feed -profile)

type adminServer struct {
	srv *http.Server
	ln  net.Listener
}

func (r *Relay) serveAdmin(ln net.Listener, ctlToken string) *adminServer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{r: r})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/status.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(r.Status())
	})
	mux.HandleFunc("/status", r.statusPage)
	if ctlToken != "" {
		r.serveCtl(mux, ctlToken)
	}
	if r.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/" {
			http.NotFound(w, req)
			return
		}
		http.Redirect(w, req, "/status", http.StatusFound)
	})
	a := &adminServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.log.Error("admin listener", "err", err)
		}
	}()
	return a
}

func (a *adminServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a.srv.Shutdown(ctx)
}

var statusTmpl = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>newsfeed {{.PathHost}}</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right;vertical-align:top}td.c{text-align:left;min-width:30em}th{background:#eee}td.l{text-align:left}.bad{color:#b00}.old{color:#777}</style>
</head><body>
<h1>newsfeed {{.PathHost}}</h1>
<p>Listening on {{.Listen}} since {{.Started.Format "2006-01-02 15:04:05 MST"}}.
{{if .Accepting}}Accepting articles.{{else}}<strong class="bad">Not accepting articles: {{.NotReason}}</strong>{{end}}
Spool {{.SpoolBytes}} bytes, history {{.History}} entries.</p>
<h2>Ingest</h2>
<p>{{printf "%.1f" .IngestRate}} articles/s accepted over the last minute.</p>
<table><tr><th>connections</th><th>open</th><th>accepted</th><th>refused</th><th>deferred</th><th>rejected</th></tr>
<tr><td>{{.Ingest.Connections}}</td><td>{{.Ingest.Open}}</td><td>{{.Ingest.Accepted}}</td><td>{{.Ingest.Refused}}</td><td>{{.Ingest.Deferred}}</td><td>{{.Ingest.Rejected}}</td></tr></table>
<h2>Peers</h2>
<table><tr><th>peer</th><th>offered</th><th>accepted</th><th>refused</th><th>rejected</th><th>deferred</th><th>dropped</th><th>missing</th><th>too old</th><th>lost</th><th>queued</th><th>backlog</th><th>backlog bytes</th><th>rate/s (last minute)</th><th>connections</th></tr>
{{range .Peers}}<tr><td class="l">{{.Name}}{{if .Paused}} <strong class="bad">(paused)</strong>{{end}}{{if .Removed}} <strong class="bad">(removed)</strong>{{end}}</td><td>{{.Offered}}</td><td>{{.Accepted}}</td><td>{{.Refused}}</td><td>{{.Rejected}}</td><td>{{.Deferred}}</td><td>{{.Dropped}}</td><td>{{.Missing}}</td><td>{{.TooOld}}</td><td>{{.Lost}}</td><td>{{.Queued}}</td><td>{{.BacklogArticle}}</td><td>{{.BacklogBytes}}</td><td>{{printf "%.1f" .Rate}}</td>
<td class="c">{{range .Connections}}#{{.ID}} {{.State}}{{if .RetryAt}}, retry at {{.RetryAt}}{{end}}{{if .Mode}} ({{.Mode}}){{end}}{{if .Error}} <span class="bad">{{.Error}}</span>{{else if .LastErr}} <span class="old">last error at {{.LastErrAt}}: {{.LastErr}}</span>{{end}}<br>{{end}}</td></tr>
{{end}}</table>
</body></html>
`))

func (r *Relay) statusPage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	statusTmpl.Execute(w, r.Status())
}

// collector exposes the relay's counters to Prometheus, read at scrape
// time from the same source as the stats lines.
type collector struct{ r *Relay }

var (
	descPeerArticles = prometheus.NewDesc("newsfeed_peer_articles_total",
		"Articles settled per peer, by outcome (offered counts every copy given to the peer).",
		[]string{"peer", "outcome"}, nil)
	descPeerQueued = prometheus.NewDesc("newsfeed_peer_queued_articles",
		"Articles not yet settled per peer, by where they wait.", []string{"peer", "where"}, nil)
	descPeerBacklogBytes = prometheus.NewDesc("newsfeed_peer_backlog_bytes",
		"Octets in the peer's backlog files.", []string{"peer"}, nil)
	descPeerAcceptedBytes = prometheus.NewDesc("newsfeed_peer_accepted_bytes_total",
		"Octets of articles the peer accepted.", []string{"peer"}, nil)
	descPeerDropped = prometheus.NewDesc("newsfeed_peer_dropped_total",
		"Articles dropped from the peer's queue since the start, by reason (backlog-bytes, backlog-age, defer-attempts, ...).", []string{"peer", "reason"}, nil)
	descPeerSkipped = prometheus.NewDesc("newsfeed_peer_skipped_total",
		"Articles the masterfeed did not offer to the peer, by reason.", []string{"peer", "reason"}, nil)
	descPeerLostFiles = prometheus.NewDesc("newsfeed_peer_lost_backlog_files",
		"Backlog files the peer's queue named that were gone at start (their articles are lost).", []string{"peer"}, nil)
	descPeerConns = prometheus.NewDesc("newsfeed_peer_connections",
		"The peer's connections, by state.", []string{"peer", "state"}, nil)
	descIngest = prometheus.NewDesc("newsfeed_ingest_total",
		"Ingest answers by outcome.", []string{"outcome"}, nil)
	descIngestConns = prometheus.NewDesc("newsfeed_ingest_connections_open",
		"Open upstream connections.", nil, nil)
	descIngestDenied = prometheus.NewDesc("newsfeed_ingest_connections_denied_total",
		"Upstream connections refused (502) because their address is not in allow.", nil, nil)
	descIngestLimited = prometheus.NewDesc("newsfeed_ingest_connections_limited_total",
		"Upstream connections refused (400) by max_connections or max_connections_per_host.", nil, nil)
	descIngestHeld = prometheus.NewDesc("newsfeed_ingest_held_total",
		"Times an upstream connection stopped being read because buffered article bytes passed max_buffered_bytes.", nil, nil)
	descIngestTimedOut = prometheus.NewDesc("newsfeed_ingest_timeouts_total",
		"Upstream connections closed for a stall, an article slower than min_transfer_rate, or answers not read.", nil, nil)
	descIngestBuffered = prometheus.NewDesc("newsfeed_ingest_buffered_bytes",
		"Article bytes the upstream connections hold in memory.", nil, nil)
	descIngestAuth = prometheus.NewDesc("newsfeed_ingest_auth_refused_total",
		"AUTHINFO logins refused: bad credentials (failed) or an address that failed too often (blocked).", []string{"reason"}, nil)
	descIngestGroups = prometheus.NewDesc("newsfeed_ingest_groups_refused_total",
		"Articles refused because their [[incoming]] feeder may not send those groups.", nil, nil)
	descAccepting = prometheus.NewDesc("newsfeed_accepting",
		"1 while ingest accepts articles, 0 while it does not (disk full).", nil, nil)
	descSpoolBytes = prometheus.NewDesc("newsfeed_spool_bytes", "Octets in spool segment files.", nil, nil)
	descSpoolLost  = prometheus.NewDesc("newsfeed_spool_lost_articles_total",
		"Stored articles found damaged or gone (at start, or when read to be sent) and forgotten by the history.", nil, nil)
)

// Describe sends the metric descriptions.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPeerArticles, descPeerQueued, descPeerBacklogBytes, descPeerAcceptedBytes,
		descPeerSkipped, descPeerDropped, descPeerLostFiles, descPeerConns, descIngest, descIngestConns, descIngestDenied, descIngestAuth, descIngestGroups,
		descIngestLimited, descIngestHeld, descIngestTimedOut, descIngestBuffered, descAccepting, descSpoolBytes, descSpoolLost} {
		ch <- d
	}
}

// Collect reads the counters.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.Status()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for _, p := range st.Peers {
		counter(descPeerArticles, p.Offered, p.Name, "offered")
		counter(descPeerArticles, p.Accepted, p.Name, "accepted")
		counter(descPeerArticles, p.Refused, p.Name, "refused")
		counter(descPeerArticles, p.Rejected, p.Name, "rejected")
		counter(descPeerArticles, p.Deferred, p.Name, "deferred")
		counter(descPeerArticles, p.Dropped, p.Name, "dropped")
		counter(descPeerArticles, p.Missing, p.Name, "missing")
		counter(descPeerArticles, p.TooOld, p.Name, "too_old")
		for reason, n := range p.DroppedBy {
			counter(descPeerDropped, n, p.Name, reason)
		}
		counter(descPeerArticles, p.Lost, p.Name, "lost")
		gauge(descPeerQueued, p.Memory, p.Name, "memory")
		gauge(descPeerQueued, p.InFlight, p.Name, "in_flight")
		gauge(descPeerQueued, p.BacklogArticle, p.Name, "backlog")
		gauge(descPeerBacklogBytes, p.BacklogBytes, p.Name)
		counter(descPeerAcceptedBytes, p.AcceptedBytes, p.Name)
		counter(descPeerSkipped, p.SkippedGroups, p.Name, "groups")
		counter(descPeerSkipped, p.SkippedPath, p.Name, "path")
		counter(descPeerSkipped, p.SkippedSize, p.Name, "size")
		counter(descPeerSkipped, p.SkippedHash, p.Name, "hashfeed")
		gauge(descPeerLostFiles, p.LostFiles, p.Name)
		states := map[string]int64{"feeding": 0, "connecting": 0, "waiting": 0}
		for _, cs := range p.Connections {
			states[cs.State]++
		}
		for s, n := range states {
			gauge(descPeerConns, n, p.Name, s)
		}
	}
	counter(descIngest, st.Ingest.Accepted, "accepted")
	counter(descIngest, st.Ingest.Refused, "refused")
	counter(descIngest, st.Ingest.Deferred, "deferred")
	counter(descIngest, st.Ingest.Rejected, "rejected")
	gauge(descIngestConns, st.Ingest.Open)
	counter(descIngestDenied, st.Ingest.Denied)
	counter(descIngestLimited, st.Ingest.Limited)
	counter(descIngestHeld, st.Ingest.Held)
	counter(descIngestTimedOut, st.Ingest.TimedOut)
	gauge(descIngestBuffered, st.Ingest.Buffered)
	counter(descIngestAuth, st.Ingest.AuthFailed, "failed")
	counter(descIngestAuth, st.Ingest.AuthBlocked, "blocked")
	counter(descIngestGroups, st.Ingest.GroupsRefused)
	acc := int64(0)
	if st.Accepting {
		acc = 1
	}
	gauge(descAccepting, acc)
	gauge(descSpoolBytes, st.SpoolBytes)
	counter(descSpoolLost, st.LostArticles)
}
