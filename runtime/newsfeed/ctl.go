package newsfeed

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Control (`newsfeed ctl`, like INN's ctlinnd) goes through the admin
// listener, authenticated by a bearer token that only the operator can
// read: <spool>/ctl.token, mode 0600, made on the first start with an
// admin listener. `newsfeed ctl -config F` finds it through the spool of
// F. /metrics and /status stay open (read-only, as before); everything
// under /ctl/ needs the token, compared in constant time.
//
//	POST /ctl/pause?peer=P    no new articles to P; its queue keeps growing
//	POST /ctl/resume?peer=P
//	POST /ctl/kick?peer=P     reset P's reconnect backoff and connect now
//	POST /ctl/flush?peer=P    write P's memory queue to backlog now
//	POST /ctl/drop?peer=P     remove the backlog a peer no longer configured left
//	POST /ctl/reload          re-read the configuration (as SIGHUP)
//	POST /ctl/reopen          reopen log_file and the article log (as SIGUSR1)
//	GET  /ctl/trace?id=<ID>   where did the article go (TraceResult)
//
// Answers are JSON: {"ok":true,"message":"..."} (trace: a TraceResult),
// or an HTTP error with a message.

// CtlTokenFile is the path of the control token in the spool directory.
func CtlTokenFile(spool string) string { return filepath.Join(spool, "ctl.token") }

// ensureCtlToken returns the control token, making it on first use. A
// token file others can read is tightened to 0600, with a warning.
func (r *Relay) ensureCtlToken() (string, error) {
	name := CtlTokenFile(r.cfg.Spool)
	b, err := os.ReadFile(name)
	if err == nil {
		if fi, err := os.Stat(name); err == nil && fi.Mode().Perm()&0o077 != 0 {
			r.log.Warn("control token readable by others: set to mode 0600", "file", name, "mode", fi.Mode().Perm().String())
			if err := os.Chmod(name, 0o600); err != nil {
				return "", fmt.Errorf("control token: %w", err)
			}
		}
		tok := strings.TrimSpace(string(b))
		if len(tok) < 32 {
			return "", fmt.Errorf("control token %s: too short (%d characters); remove it to make a new one", name, len(tok))
		}
		return tok, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("control token: %w", err)
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	tok := hex.EncodeToString(raw)
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("control token: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("control token: %w", err)
	}
	r.log.Info("control token made (newsfeed ctl reads it)", "file", name)
	return tok, nil
}

// ReadCtlToken reads the control token of the relay on spool.
func ReadCtlToken(spool string) (string, error) {
	b, err := os.ReadFile(CtlTokenFile(spool))
	if err != nil {
		return "", fmt.Errorf("control token: %w (is newsfeed running with admin set, and may you read its spool?)", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ctlAnswer is the JSON answer of a control command.
type ctlAnswer struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// serveCtl adds the /ctl/ endpoints to mux, behind token.
func (r *Relay) serveCtl(mux *http.ServeMux, token string) {
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			got, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="newsfeed ctl"`)
				http.Error(w, "newsfeed ctl: missing or wrong token (see "+CtlTokenFile(r.cfg.Spool)+")", http.StatusUnauthorized)
				return
			}
			h(w, req)
		}
	}
	answer := func(w http.ResponseWriter, msg string, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, errNoPeer) {
				code = http.StatusNotFound
			} else if errors.Is(err, errReloadRefused) || errors.Is(err, errConfiguredPeer) {
				code = http.StatusUnprocessableEntity
			}
			w.WriteHeader(code)
			json.NewEncoder(w).Encode(ctlAnswer{Message: err.Error()})
			return
		}
		json.NewEncoder(w).Encode(ctlAnswer{OK: true, Message: msg})
	}
	peerVerb := func(do func(name string) (string, error)) http.HandlerFunc {
		return auth(func(w http.ResponseWriter, req *http.Request) {
			msg, err := do(req.URL.Query().Get("peer"))
			answer(w, msg, err)
		})
	}
	mux.HandleFunc("POST /ctl/pause", peerVerb(r.Pause))
	mux.HandleFunc("POST /ctl/resume", peerVerb(r.Resume))
	mux.HandleFunc("POST /ctl/kick", peerVerb(r.Kick))
	mux.HandleFunc("POST /ctl/flush", peerVerb(r.Flush))
	mux.HandleFunc("POST /ctl/drop", peerVerb(r.Drop))
	mux.HandleFunc("POST /ctl/reload", auth(func(w http.ResponseWriter, _ *http.Request) {
		res, err := r.ReloadConfig()
		answer(w, res.String(), err)
	}))
	mux.HandleFunc("POST /ctl/reopen", auth(func(w http.ResponseWriter, _ *http.Request) {
		msg, err := r.Reopen()
		answer(w, msg, err)
	}))
	mux.HandleFunc("GET /ctl/trace", auth(func(w http.ResponseWriter, req *http.Request) {
		res, err := r.Trace(req.URL.Query().Get("id"))
		if err != nil {
			answer(w, "", err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	}))
}

// findPeer returns the configured peer called name; the error for an
// unknown one names the configured peers.
func (r *Relay) findPeer(name string) (*peer, error) {
	var names []string
	for _, p := range r.peerList() {
		if p.cfg.Name == name {
			return p, nil
		}
		names = append(names, p.cfg.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w %q: no peers are configured", errNoPeer, name)
	}
	return nil, fmt.Errorf("%w %q (the peers are %s)", errNoPeer, name, strings.Join(names, ", "))
}

// Pause stops handing articles to the peer's connections (those in flight
// are still answered); its queue keeps taking articles, in memory and then
// in backlog files.
func (r *Relay) Pause(name string) (string, error) {
	p, err := r.findPeer(name)
	if err != nil {
		return "", err
	}
	if !p.q.setPaused(true) {
		return "peer " + name + " was paused already", nil
	}
	r.log.Info("peer paused (newsfeed ctl pause): its articles wait in its queue", "peer", name)
	return "peer " + name + " paused", nil
}

// Resume undoes Pause.
func (r *Relay) Resume(name string) (string, error) {
	p, err := r.findPeer(name)
	if err != nil {
		return "", err
	}
	if !p.q.setPaused(false) {
		return "peer " + name + " was not paused", nil
	}
	r.log.Info("peer resumed (newsfeed ctl resume)", "peer", name)
	return "peer " + name + " resumed", nil
}

// Kick ends the reconnect wait of the peer's connections now, with the
// backoff back at its base.
func (r *Relay) Kick(name string) (string, error) {
	p, err := r.findPeer(name)
	if err != nil {
		return "", err
	}
	n := p.kick()
	r.log.Info("peer kicked (newsfeed ctl kick): connections that wait connect now", "peer", name, "waiting", n)
	return fmt.Sprintf("peer %s kicked: %d connection(s) were waiting to reconnect", name, n), nil
}

// Flush writes the peer's memory queue to its backlog now.
func (r *Relay) Flush(name string) (string, error) {
	p, err := r.findPeer(name)
	if err != nil {
		return "", err
	}
	n, err := p.q.flush(r.now())
	if err != nil {
		return "", fmt.Errorf("flush %s: %w", name, err)
	}
	r.log.Info("peer queue flushed to backlog (newsfeed ctl flush)", "peer", name, "articles", n)
	return fmt.Sprintf("peer %s: %d article(s) written from memory to backlog", name, n), nil
}
