package serve

import (
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
