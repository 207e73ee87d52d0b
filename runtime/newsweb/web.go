package newsweb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/newsflow/newsflow/proto"
)

// Defaults for Options fields left zero.
const (
	DefaultTimeout = 30 * time.Second
	DefaultPerPage = 50
	DefaultSite    = "newsweb"
	// DefaultPageCacheBytes bounds the rendered article pages kept.
	DefaultPageCacheBytes = 64 << 20
	maxURL                = 4096
	maxBody               = 1 << 10
)

// Cache lifetimes sent to browsers and proxies.
const (
	cacheArticle = "public, max-age=86400" // an article never changes
	cacheGroups  = "public, max-age=300"
	cacheThreads = "public, max-age=15"
	cacheError   = "no-store"
)

// Options tune the web side.
type Options struct {
	Site    string        // name in page titles; DefaultSite when ""
	Timeout time.Duration // bound on each request's work; DefaultTimeout when 0
	PerPage int           // threads per group page; DefaultPerPage when 0
	// PageCacheBytes bounds the cache of rendered article pages
	// (DefaultPageCacheBytes when 0; negative disables it).
	PageCacheBytes int
	Logger         *slog.Logger // slog.Default() when nil
	// Registerer, when set, gets the HTTP request metrics; Gatherer, when
	// set, is served on /metrics.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// Posting, when set, turns posting on (NewPosting).
	Posting *Posting
	// Search, when set, turns search on (NewSearch): /search and
	// /api/search.
	Search *Search
	// VisitsFile, when set, keeps what logged-in readers have seen across
	// restarts (visits_file.go); Close writes it a last time. Only with
	// Posting.
	VisitsFile string
	// HiddenGroups are left out of the group list and its API (nil:
	// DefaultHiddenGroups; an empty list hides none). Their pages can
	// still be opened by name.
	HiddenGroups *proto.GroupPatterns
}

// DefaultHiddenGroups are the groups of control messages and junk, and
// the to.* groups of site-to-site messages: nothing a reader reads.
const DefaultHiddenGroups = "control,control.*,junk,to.*"

// Server is the HTTP handler of newsweb.
type Server struct {
	fed  *Federated
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	// pages holds rendered article pages (nil when disabled).
	pages *pageCache
	// posting is nil when posting is off.
	posting *Posting
	// search is nil when search is off.
	search *Search
	// visits is what logged-in readers have seen (visits.go); nil when
	// posting is off. visitsDone stops its saving (visits_file.go),
	// visitsStopped says it stopped.
	visits                    *visits
	visitsDone, visitsStopped chan struct{}
	closeOnce                 sync.Once

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// notFound counts the answers of the catch-all route.
	notFound *routeStats
}

// New returns the handler serving fed.
func New(fed *Federated, opts Options) *Server {
	if opts.Site == "" {
		opts.Site = DefaultSite
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.PerPage <= 0 {
		opts.PerPage = DefaultPerPage
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HiddenGroups == nil {
		hidden, _ := proto.ParseGroupPatterns([]string{DefaultHiddenGroups})
		opts.HiddenGroups = &hidden
	}
	s := &Server{fed: fed, opts: opts, log: opts.Logger, mux: http.NewServeMux(), posting: opts.Posting, search: opts.Search}
	if p := opts.Posting; p != nil && p.ended.damage != "" {
		s.log.Error("logouts file "+p.ended.damage, "file", p.ended.path, "line", p.ended.damagedLine)
	}
	switch {
	case opts.PageCacheBytes == 0:
		s.pages = newPageCache(DefaultPageCacheBytes)
	case opts.PageCacheBytes > 0:
		s.pages = newPageCache(opts.PageCacheBytes)
	}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "newsweb_http_requests_total", Help: "HTTP requests by route and status code.",
	}, []string{"route", "code"})
	s.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "newsweb_http_request_seconds", Help: "HTTP request latency by route.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route"})
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(s.requests, s.duration)
	}
	s.route("GET /{$}", "groups", false, s.groupsPage)
	s.route("GET /groups/{group}", "group", false, s.groupPage)
	s.route("GET /groups/{group}/feed.atom", "group_feed", false, s.groupFeed)
	s.route("GET /groups/{group}/threads/{msgid...}", "thread", false, s.threadPage)
	s.route("GET /articles/{msgid...}", "article", false, s.articlePage)
	s.route("GET /api/groups", "api_groups", true, s.apiGroups)
	s.route("GET /api/groups/{group}/threads", "api_threads", true, s.apiThreads)
	s.route("GET /api/threads/{msgid...}", "api_thread", true, s.apiThread)
	s.route("GET /api/articles/{msgid...}", "api_article", true, s.apiArticle)
	if s.search != nil {
		s.route("GET /search", "search", false, s.searchPage)
		s.route("GET /api/search", "api_search", true, s.apiSearch)
	}
	if s.posting != nil {
		s.visits = newVisits()
		if opts.VisitsFile != "" {
			s.keepVisits(opts.VisitsFile)
		}
		s.route("POST /groups/{group}/read", "mark_read", false, s.markGroupRead)
		s.route("POST /api/articles", "api_post", true, s.apiPost)
		s.route("GET /post", "compose", false, s.composePage)
		s.route("POST /post", "post", false, s.submitPost)
		if s.posting.hasUsers() {
			s.route("GET /login", "login", false, s.loginPage)
			s.route("POST /login", "login", false, s.login)
			s.route("GET /logout", "logout", false, s.logout)
			s.route("POST /logout", "logout", false, s.logout)
		}
	}
	if opts.Gatherer != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{}))
	}
	s.notFound = s.statsFor("notfound")
	s.mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		s.write(w, r, s.notFound, s.errorPage(http.StatusNotFound, "No such page", "There is nothing at this address."))
	})
	return s
}

// NewHTTPServer returns an http.Server for h with bounded header size and
// timeouts, so slow or huge requests cannot tie the server up.
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      DefaultTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
	}
}

// ServeHTTP applies the security headers and request limits, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	for _, h := range securityHeaders {
		hd[h.key] = h.value
	}
	if len(r.RequestURI) > maxURL {
		http.Error(w, "URI too long", http.StatusRequestURITooLong)
		return
	}
	if r.Body != nil && r.Body != http.NoBody { // a GET has none to limit
		limit := int64(maxBody)
		if s.posting != nil && r.Method == http.MethodPost {
			limit = maxPostRequest
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
	}
	s.mux.ServeHTTP(w, r)
}

// response is a rendered answer.
type response struct {
	status int
	ctype  string
	cache  string
	body   []byte
	etag   string // computed by write when empty
	gz     gzipped
	// pin keeps alive what a page cache key names by its address (a thread's
	// root node, the group list), so that the address cannot be reused
	// for something else while the page is cached.
	pin any
	// hdrOnce makes hdr, the header values, on the first write.
	hdrOnce sync.Once
	hdr     *headers
	// Set by handlers that answer with more than a page.
	location   string        // Location (redirects)
	cookie     *http.Cookie  // Set-Cookie
	retryAfter time.Duration // Retry-After (429)
	attachment string        // Content-Disposition: attachment with this file name
	packed     bool          // the body is gzip already: not compressed again
}

// route registers fn on pattern with the common wrapper: the request's
// time bound (a lazyDeadline: no timer unless fn waits; on the front,
// reused by the connection's next request unless armed), the error page,
// the metrics.
//
// A pattern that ends in a {name...} wildcard is registered a second time
// with {name}: the same handler and the same value for a one-segment path
// (most message-ids), but an exact match, which ServeMux takes at once; a
// match of {name...} is inexact, and ServeMux then matches the path again
// with a "/" added, looking for a trailing-slash redirect (four
// allocations and a second walk of its tree on every article view).
func (s *Server) route(pattern, name string, api bool, fn func(ctx context.Context, r *http.Request) (*response, error)) {
	rs := s.statsFor(name)
	h := func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := requestDeadline(w, r.Context(), start.Add(s.opts.Timeout))
		defer ctx.release()
		resp, err := fn(ctx, r)
		if err != nil {
			resp = s.failure(r, api, err)
		}
		s.write(w, r, rs, resp)
		rs.observe.Observe(time.Since(start).Seconds())
	}
	s.mux.HandleFunc(pattern, h)
	if one, ok := strings.CutSuffix(pattern, "...}"); ok {
		s.mux.HandleFunc(one+"}", h)
	}
}

// routeStats are a route's request metrics with the series of its usual
// answers (200, 304) looked up once, so that counting a view costs no
// label lookup or formatting; other codes are looked up when they happen.
type routeStats struct {
	name            string
	requests        *prometheus.CounterVec
	observe         prometheus.Observer
	ok, notModified prometheus.Counter
}

// statsFor makes the metrics of route name.
func (s *Server) statsFor(name string) *routeStats {
	return &routeStats{name: name, requests: s.requests, observe: s.duration.WithLabelValues(name),
		ok: s.requests.WithLabelValues(name, "200"), notModified: s.requests.WithLabelValues(name, "304")}
}

// count counts one answer with status.
func (rs *routeStats) count(status int) {
	switch status {
	case http.StatusOK:
		rs.ok.Inc()
	case http.StatusNotModified:
		rs.notModified.Inc()
	default:
		rs.requests.WithLabelValues(rs.name, strconv.Itoa(status)).Inc()
	}
}

// write sends resp with its ETag, honouring If-None-Match. The header
// values of a response are made once (headerValues) and shared by every
// view of a cached page, so serving one allocates next to nothing.
//
// On the front (front.go) a plain answer (no Location, cookie or
// Retry-After) is handed over as it is, and the front writes its header
// values as strings.
func (s *Server) write(w http.ResponseWriter, r *http.Request, rs *routeStats, resp *response) {
	// A page of a site with accounts varies by Cookie (account.go),
	// whatever its size; others by Accept-Encoding when compressible.
	var vary []string // nil: no Vary
	switch {
	case s.accounts() && strings.HasPrefix(resp.ctype, "text/html"):
		resp = s.withAccount(r, resp)
		vary = varyCookie
	case len(resp.body) >= minGzip:
		vary = varyValue
	}
	hv := resp.headerValues()
	status := resp.status
	body, etag, clen := resp.body, hv.etag, hv.clen
	gz := hv.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding"))
	if gz {
		body, etag, clen = hv.gz, hv.etagGz, hv.clenGz
	}
	if status == http.StatusOK && etagMatch(r.Header.Get("If-None-Match"), etag[0]) {
		status = http.StatusNotModified
	}
	rs.count(status)
	if fw, ok := w.(*frontWriter); ok && resp.location == "" && resp.cookie == nil && resp.retryAfter == 0 && resp.attachment == "" {
		a := frontAnswer{status: status, ctype: hv.ctype[0], cache: hv.cache[0], gzip: gz,
			clen: clen[0], body: body}
		if resp.status == http.StatusOK {
			a.etag = etag[0]
		}
		if vary != nil {
			a.vary = vary[0]
		}
		if fw.answer(a) {
			return
		}
	}
	h := w.Header()
	h["Content-Type"] = hv.ctype
	h["Cache-Control"] = hv.cache
	if resp.location != "" {
		h.Set("Location", resp.location)
	}
	if resp.cookie != nil {
		http.SetCookie(w, resp.cookie)
	}
	if resp.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(resp.retryAfter.Seconds()+1)))
	}
	if resp.attachment != "" {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": resp.attachment}))
	}
	if gz {
		h["Content-Encoding"] = gzipValue
	}
	if vary != nil {
		h["Vary"] = vary
	}
	if resp.status == http.StatusOK {
		h["Etag"] = etag
	}
	if status == http.StatusNotModified {
		h.Del("Content-Type")
		w.WriteHeader(status)
		return
	}
	h["Content-Length"] = clen
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// Header values shared by every response (net/http never changes them).
var (
	gzipValue      = []string{"gzip"}
	varyValue      = []string{"Accept-Encoding"}
	cspValue       = []string{contentSecurityPolicy}
	nosniff        = []string{"nosniff"}
	referrerPolicy = []string{"same-origin"}
	denyFrames     = []string{"DENY"}
)

// headers are a response's header values, made once.
type headers struct {
	ctype, cache []string
	etag, etagGz []string // the plain and gzipped representations' ETags
	clen, clenGz []string // their Content-Length
	gz           []byte   // the gzipped body; nil when not worth it
}

// headerValues makes resp's header values on first use: its ETag (unless
// the handler set one), the gzipped body and both lengths.
func (r *response) headerValues() *headers {
	r.hdrOnce.Do(func() {
		etag := r.etag
		if etag == "" {
			etag = etagOf(r.body)
		}
		h := &headers{ctype: []string{r.ctype}, cache: []string{r.cache}, etag: []string{etag},
			clen: []string{strconv.Itoa(len(r.body))}}
		if gz := r.gzipBody(); gz != nil {
			h.gz = gz
			h.etagGz = []string{gzipETag(etag)}
			h.clenGz = []string{strconv.Itoa(len(gz))}
		}
		r.hdr = h
	})
	return r.hdr
}

// etagOf is a strong validator for body: a hash of it.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// etagMatch implements If-None-Match's weak comparison (RFC 9110 §13.1.2),
// walking the header in place.
func etagMatch(header, etag string) bool {
	for header != "" {
		var t string
		t, header, _ = strings.Cut(header, ",")
		t = strings.TrimSpace(t)
		if t == "" { // an empty list element (RFC 9110 5.6.1): ignored
			continue
		}
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// failure turns an error into an error page or JSON error.
func (s *Server) failure(r *http.Request, api bool, err error) *response {
	status, title, msg := http.StatusInternalServerError, "Something went wrong", "newsweb could not show this page."
	switch {
	case errors.Is(err, ErrBadRequest):
		status, title, msg = http.StatusBadRequest, "Bad address", "That is not a valid group name or message-id."
	case errors.Is(err, ErrNotFound):
		status, title, msg = http.StatusNotFound, "Not found", "No news server has this group or article. It may have expired or never existed."
	case errors.Is(err, ErrUnavailable):
		status, title, msg = http.StatusBadGateway, "News servers unavailable", "None of the news servers behind this site answered. Please try again in a moment."
	case errors.Is(err, context.DeadlineExceeded):
		status, title, msg = http.StatusGatewayTimeout, "Too slow", "The news servers took too long to answer. Please try again in a moment."
	}
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelWarn
	}
	s.log.Log(r.Context(), level, "request failed", "path", r.URL.Path, "status", status, "err", err)
	if api {
		body, _ := json.Marshal(map[string]any{"error": msg, "status": status})
		return &response{status: status, ctype: "application/json", cache: cacheError, body: append(body, '\n')}
	}
	return s.errorPage(status, title, msg)
}

func (s *Server) errorPage(status int, title, msg string) *response {
	resp, err := s.render("error", errorView{base: s.base(title, ""), Message: msg}, cacheError)
	if err != nil {
		return &response{status: http.StatusInternalServerError, ctype: "text/plain; charset=utf-8", cache: cacheError, body: []byte(msg)}
	}
	resp.status = status
	return resp
}

// visible is groups without the hidden ones (a copy when any is hidden).
func (s *Server) visible(groups []Group) []Group {
	h := s.opts.HiddenGroups
	hides := false
	for i := range groups {
		if h.Match(groups[i].Name) == proto.GroupWanted {
			hides = true
			break
		}
	}
	if !hides {
		return groups
	}
	out := make([]Group, 0, len(groups))
	for _, g := range groups {
		if h.Match(g.Name) != proto.GroupWanted {
			out = append(out, g)
		}
	}
	return out
}

func (s *Server) base(title, group string) base {
	return base{Title: title, Site: s.opts.Site, CSS: template.CSS(css), Group: group,
		Account: s.posting != nil && s.posting.hasUsers(), SearchOn: s.search != nil}
}

// render executes a page template into a response.
func (s *Server) render(name string, data any, cache string) (*response, error) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return nil, err
	}
	return &response{status: http.StatusOK, ctype: "text/html; charset=utf-8", cache: cache, body: b.Bytes()}, nil
}

// renderJSON encodes v as the response body.
func renderJSON(v any, cache string) (*response, error) {
	body, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return nil, err
	}
	return &response{status: http.StatusOK, ctype: "application/json", cache: cache, body: append(body, '\n')}, nil
}

// groupParam returns the {group} path value, checked.
func groupParam(r *http.Request) (string, error) {
	g := r.PathValue("group")
	if err := proto.ValidGroupName(g); err != nil {
		return "", errBad
	}
	return g, nil
}

// msgidParam returns the {msgid} path value with angle brackets, checked.
func msgidParam(r *http.Request) (string, error) {
	id := bracketID(r.PathValue("msgid"))
	if err := proto.ValidNNTPMessageID(id); err != nil {
		return "", errBad
	}
	return id, nil
}

var errBad = ErrBadRequest

// queryValue is the query parameter key of r (as r.URL.Query().Get), without
// parsing an absent query into a map: pages ask on every view.
func queryValue(r *http.Request, key string) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return r.URL.Query().Get(key)
}

// pageParam returns ?page (1 when absent).
func pageParam(r *http.Request) (int, error) {
	v := queryValue(r, "page")
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1_000_000 {
		return 0, errBad
	}
	return n, nil
}
