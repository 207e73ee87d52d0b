package serve

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/newsflow/newsflow/runtime/newsget"
)

// Server states as the page and the warnings name them.
const (
	srvIdle       = "not connected"
	srvConnecting = "connecting"
	srvConnected  = "connected"
	srvFailed     = "failed"
	srvGivenUp    = "given up"
)

// serverView is one server's state for the page: what it is doing, its
// last error while it fails, and since when.
type serverView struct {
	Name  string
	State string
	Err   string
	Since time.Time
	Conns int // connections up
}

// serverNote is a line for the log (and so for mode=warnings) about a
// server's change of state.
type serverNote struct {
	level slog.Level
	text  string
}

// viewOf is the state of s.
func viewOf(s newsget.ServerState) serverView {
	v := serverView{Name: s.Name, State: srvIdle, Conns: s.Connections}
	switch {
	case s.Connections > 0:
		v.State = srvConnected
	case s.GaveUp:
		v.State, v.Err = srvGivenUp, s.LastErr
	case s.LastErr != "":
		v.State, v.Err = srvFailed, s.LastErr
	case s.Connecting > 0:
		v.State = srvConnecting
	}
	return v
}

// noteServersLocked records the running engine's server states and
// returns a note for each server whose state or error changed (a retry
// that fails the same way is no change). It sets stalled while no server
// is connected and some failed. Called with mu held.
func (d *Daemon) noteServersLocked(now time.Time, ss []newsget.ServerState) []serverNote {
	old := make(map[string]serverView, len(d.servers))
	for _, v := range d.servers {
		old[v.Name] = v
	}
	var notes []serverNote
	var problems []string
	connected := false
	quiet := engineQuiet(ss)
	views := make([]serverView, 0, len(ss))
	for _, s := range ss {
		v := viewOf(s)
		prev, seen := old[v.Name]
		if quiet && v.State == srvIdle && prev.State == srvConnecting {
			v.State = srvConnecting // the engine has not dialled yet
		}
		if seen && prev.State == v.State && prev.Err == v.Err {
			v.Since = prev.Since
		} else {
			v.Since = now
			if n, ok := noteFor(now, prev, v, s); ok {
				notes = append(notes, n)
			}
		}
		switch v.State {
		case srvConnected:
			connected = true
		case srvFailed, srvGivenUp:
			problems = append(problems, problemText(now, v, s))
		}
		views = append(views, v)
	}
	d.servers = views
	d.stalled = ""
	if !connected && len(problems) > 0 {
		d.stalled = strings.Join(problems, "; ")
	}
	return notes
}

// engineQuiet reports whether the engine has not begun to dial: no
// server has a connection, a dial, a failure or a connection that came up.
func engineQuiet(ss []newsget.ServerState) bool {
	for _, s := range ss {
		if s.Connections > 0 || s.Connecting > 0 || s.WasUp || s.GaveUp || s.LastErr != "" {
			return false
		}
	}
	return true
}

// startServersLocked marks, as a download starts, the servers it dials
// first (the active ones of the lowest level) connecting, until the
// engine's own states say more. Called with mu held.
func (d *Daemon) startServersLocked(now time.Time) {
	views := d.serverViewsLocked()
	first, found := 0, false
	for _, sc := range d.cfg.Servers {
		if sc.IsActive() && (!found || sc.Level < first) {
			first, found = sc.Level, true
		}
	}
	for i, sc := range d.cfg.Servers {
		if sc.IsActive() && sc.Level == first && views[i].State != srvConnected {
			views[i] = serverView{Name: views[i].Name, State: srvConnecting, Since: now}
		}
	}
	d.servers = views
}

// refreshServers brings the server states up to date with the running
// engine's (the sampler does so each second; the page asks between).
func (d *Daemon) refreshServers(ctx context.Context) {
	d.mu.Lock()
	a := d.run
	d.mu.Unlock()
	if a == nil || a.eng == nil {
		return
	}
	ss := a.eng.Servers() // not under mu (see the lock order)
	d.mu.Lock()
	var notes []serverNote
	if d.run == a {
		notes = d.noteServersLocked(d.opts.Now(), ss)
	}
	d.mu.Unlock()
	d.logNotes(ctx, notes)
}

// problemText says what is wrong with a failing server.
func problemText(now time.Time, v serverView, s newsget.ServerState) string {
	what := "cannot connect"
	if s.WasUp {
		what = "failed"
	}
	if v.State == srvGivenUp {
		return fmt.Sprintf("Server %s: %s, given up: %s", v.Name, what, v.Err)
	}
	retry := "retrying"
	if wait := s.BlockedUntil.Sub(now).Round(time.Second); wait > 0 {
		retry = fmt.Sprintf("retrying in %s", wait)
	}
	return fmt.Sprintf("Server %s: %s: %s (%s)", v.Name, what, v.Err, retry)
}

// noteFor is the note for a server going from prev to v, if any.
func noteFor(now time.Time, prev, v serverView, s newsget.ServerState) (serverNote, bool) {
	switch v.State {
	case srvFailed:
		return serverNote{slog.LevelWarn, problemText(now, v, s)}, true
	case srvGivenUp:
		return serverNote{slog.LevelError, problemText(now, v, s)}, true
	case srvConnected:
		if prev.State == srvFailed || prev.State == srvGivenUp {
			return serverNote{slog.LevelInfo, fmt.Sprintf("Server %s: connected", v.Name)}, true
		}
	}
	return serverNote{}, false
}

// serverViewsLocked is every configured server's state, those no run has
// seen yet as not connected. Called with mu held.
func (d *Daemon) serverViewsLocked() []serverView {
	seen := make(map[string]serverView, len(d.servers))
	for _, v := range d.servers {
		seen[v.Name] = v
	}
	out := make([]serverView, 0, len(d.cfg.Servers))
	for _, sc := range d.cfg.Servers {
		v, ok := seen[sc.Label()]
		if !ok {
			v = serverView{Name: sc.Label(), State: srvIdle}
		}
		out = append(out, v)
	}
	return out
}

// idleServersLocked marks the servers no run is using: none is connected
// or connecting, and no job waits on them. Called with mu held.
func (d *Daemon) idleServersLocked() {
	d.stalled = ""
	for i, v := range d.servers {
		if v.State == srvConnected || v.State == srvConnecting {
			d.servers[i] = serverView{Name: v.Name, State: srvIdle, Since: d.opts.Now()}
		}
	}
}

// logNotes logs the notes (warnings and errors reach mode=warnings).
func (d *Daemon) logNotes(ctx context.Context, notes []serverNote) {
	for _, n := range notes {
		d.log.Log(ctx, n.level, n.text)
	}
}

// apiServersLocked is status's servers: for each configured server
// SABnzbd's fields (servername, serveractive, servertotalconn, serverssl,
// serveractiveconn, serveroptional, servererror, serverpriority,
// serverbps, serverconnections), with newsget's counters (name,
// articles, bytes, failures, daily, speed) beside them. Called with mu
// held.
func (d *Daemon) apiServersLocked() []map[string]any {
	byName := map[string]ServerStat{}
	for _, st := range d.stats.list() {
		byName[st.Name] = st
	}
	views := d.serverViewsLocked()
	out := make([]map[string]any, 0, len(views))
	for i, sc := range d.cfg.Servers {
		v := views[i]
		st := byName[v.Name]
		daily := st.Daily
		if daily == nil {
			daily = map[string]int64{}
		}
		out = append(out, map[string]any{
			"servername": v.Name, "serveractive": sc.IsActive(), "servertotalconn": sc.Connections,
			"serverssl": boolInt(sc.Encryption != newsget.EncryptNone), "serveractiveconn": v.Conns,
			"serveroptional": boolInt(sc.Optional), "servererror": v.Err, "serverpriority": sc.Level,
			"serverbps": speedWords(st.Speed), "serverconnections": []any{},
			"name": v.Name, "articles": st.Articles, "bytes": st.Bytes, "failures": st.Failures, "daily": daily, "speed": st.Speed,
		})
	}
	return out
}
