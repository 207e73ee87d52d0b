package serve

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The gate refuses requests that name another host before any handler
// runs. A web page whose DNS name is rebound to 127.0.0.1 reaches the
// daemon with its own name in Host (and Origin); only the daemon's names
// pass: IP addresses (a rebinding page cannot send one, its Host is its
// DNS name), localhost and its subdomains, and [serve] hostnames. Forms
// also need an Origin, when a browser sends one, that passes the same
// test: the request's own Host is never the reference.

// hostAllowed reports whether hostport (a Host header or an Origin's
// host) names this daemon.
func (d *Daemon) hostAllowed(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	for _, n := range d.cfg.Serve.Hostnames {
		if strings.EqualFold(strings.TrimSuffix(n, "."), h) {
			return true
		}
	}
	return false
}

// hostGate answers 421 Misdirected Request to requests whose Host is not
// one of the daemon's names.
func (d *Daemon) hostGate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.hostAllowed(r.Host) {
			d.log.Warn("refused request for another host", "host", r.Host, "remote", r.RemoteAddr)
			http.Error(w, "misdirected request: this host name is not one of newsget's; add it to [serve] hostnames",
				http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// originAllowed reports whether a form's Origin, when sent, is one of the
// daemon's names. "null" (a sandboxed frame, a file, a privacy
// redirect) is refused.
func (d *Daemon) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && d.hostAllowed(u.Host)
}

// maxFormBody bounds a urlencoded POST /api body, the only body read
// before the key is known.
const maxFormBody = 64 << 10

// apiGate checks the API key before any body is read when the query
// string carries it, and reads the body of a POST the key admits. The
// *arr apps send the key in the query string; a urlencoded body of at
// most 64 KiB may carry it instead, and so may a multipart upload, as
// SABnzbd's own page and client libraries send it (after the file): such
// an upload is read one at a time, within max_nzb_size, and its key is
// checked before anything of it is parsed as an NZB. A wrong key in the
// query string is refused unread. Multipart temp files are removed when
// the request ends (the returned cleanup). It answers the error itself
// and returns ok false when the request goes no further.
func (d *Daemon) apiGate(w http.ResponseWriter, r *http.Request) (cleanup func(), ok bool) {
	cleanup = func() {}
	if r.Method != http.MethodPost {
		return cleanup, true
	}
	key := r.URL.Query().Get("apikey")
	if key != "" && subtle.ConstantTimeCompare([]byte(key), []byte(d.cfg.Serve.APIKey)) != 1 {
		apiError(w, "API Key Incorrect")
		return cleanup, false
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if key == "" && ct != "multipart/form-data" {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
		if err := r.ParseForm(); err != nil {
			apiError(w, "bad request: a POST without apikey in the query string has a urlencoded body of at most 64 KiB")
			return cleanup, false
		}
		return cleanup, true
	}
	if key == "" {
		select {
		case d.bodyKeySlot <- struct{}{}:
			defer func() { <-d.bodyKeySlot }()
		default:
			apiError(w, "API Key Required (another upload with the key in its body is being read: put apikey in the query string, /api?apikey=...)")
			return cleanup, false
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, int64(d.cfg.Serve.MaxNZBSize)+1<<20)
	err := r.ParseMultipartForm(1 << 20)
	if r.MultipartForm != nil {
		cleanup = func() { r.MultipartForm.RemoveAll() }
	}
	if err != nil && !errors.Is(err, http.ErrNotMultipart) {
		cleanup()
		apiError(w, fmt.Sprintf("bad request: %v", err))
		return func() {}, false
	}
	return cleanup, true
}

// Server is the HTTP server of Handler, with [serve]'s timeouts: a
// client that sends its headers, its body or its next request too slowly
// is cut off.
func (d *Daemon) Server() *http.Server {
	s := &d.cfg.Serve
	return &http.Server{Handler: d.Handler(), MaxHeaderBytes: 64 << 10,
		ReadHeaderTimeout: s.ReadHeaderTimeout.D(), ReadTimeout: s.ReadTimeout.D(), IdleTimeout: s.IdleTimeout.D(),
		ErrorLog: slog.NewLogLogger(d.log.Handler(), slog.LevelDebug)}
}
