package newsfeed

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// Reload (SIGHUP, `newsfeed ctl reload`) applies a new configuration's
// peers to the running relay, by name:
//
//   - a new peer gets its queue (recovering any backlog files it left
//     before) and its connections;
//   - a removed peer's connections close gracefully (unanswered articles go
//     back to its queue); its queue stays open until the relay stops, so an
//     article already routed to it is kept in its backlog, not lost;
//   - a peer whose routing alone changed (groups, pathname, hashfeed,
//     max_size) keeps its connections: only the masterfeed's choice changes;
//   - a peer whose connection settings changed (host, port, TLS,
//     credentials, connections, window, timeouts, max_age, ...) has its connections
//     closed gracefully and opened again with the new settings; its queue
//     and counters carry over;
//   - an unchanged peer is not touched.
//
// The new peer list takes effect at once for every article routed after
// it (the swap happens under putMu, like route). Settings that need a
// restart (listen, spool, the queue's sizes and delays, ...) are reported
// and keep their old values. A configuration with a mistake never gets
// here: LoadConfig refuses it whole.

// ReloadResult says what a reload changed, by peer name.
type ReloadResult struct {
	Added      []string `json:"added,omitempty"`
	Removed    []string `json:"removed,omitempty"`
	Rerouted   []string `json:"rerouted,omitempty"`    // routing changed, connections kept
	Reconnect  []string `json:"reconnected,omitempty"` // connection settings changed
	Unchanged  []string `json:"unchanged,omitempty"`
	AtRestart  []string `json:"at_restart,omitempty"` // keys that take effect at the next start
	ConfigFile string   `json:"config"`
}

// String summarises the result for logs and `newsfeed ctl reload`.
func (res ReloadResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "reloaded %s:", res.ConfigFile)
	for _, f := range []struct {
		what  string
		names []string
	}{{"added", res.Added}, {"removed", res.Removed}, {"rerouted", res.Rerouted},
		{"reconnected", res.Reconnect}, {"unchanged", res.Unchanged}} {
		if len(f.names) > 0 {
			fmt.Fprintf(&b, " %s %s;", f.what, strings.Join(f.names, ","))
		}
	}
	if len(res.AtRestart) > 0 {
		fmt.Fprintf(&b, " at the next start: %s;", strings.Join(res.AtRestart, ","))
	}
	return strings.TrimSuffix(b.String(), ";")
}

// ReloadConfig re-reads the relay's configuration file (the embedded
// default when it runs on that) and applies it with Reload. A mistake in
// the file is returned (FILE:LINE: key: message) and changes nothing.
func (r *Relay) ReloadConfig() (ReloadResult, error) {
	file := r.cfg.Source
	if file == EmbeddedSource {
		file = ""
	}
	cfg, err := LoadConfig(file)
	if err != nil {
		r.log.Error("reload refused: the configuration has a mistake; the running one stays", "err", err)
		return ReloadResult{}, fmt.Errorf("%w: %w", errReloadRefused, err)
	}
	return r.Reload(cfg)
}

// Reload applies cfg's peers to the relay (see the comment above).
func (r *Relay) Reload(cfg *Config) (ReloadResult, error) {
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	res := ReloadResult{ConfigFile: cfg.Source, AtRestart: restartKeys(r.cfg, cfg)}
	old := r.peerList()
	byName := map[string]*peer{}
	for _, p := range old {
		byName[p.cfg.Name] = p
	}
	r.mu.Lock()
	running, runCtx, stopped := r.running && !r.opts.NoConnect, r.runCtx, r.stopped
	r.mu.Unlock()
	if stopped {
		return ReloadResult{}, fmt.Errorf("%w: the relay is stopping", errReloadRefused)
	}

	// Build every new peer first: a failure (a ca_file that cannot be
	// read, a backlog directory that cannot be opened) changes nothing.
	var (
		next              []*peer
		added, reconnect  []*peer // to start
		stopOld, removals []*peer // connections to stop first
		opened            []*peer // queues opened here, closed again on failure
		moved             = map[*peer]*peer{}
	)
	fail := func(err error) (ReloadResult, error) {
		for _, p := range opened {
			p.q.shutdown(r.now())
		}
		r.log.Error("reload refused; the running configuration stays", "err", err)
		return ReloadResult{}, fmt.Errorf("%w: %w", errReloadRefused, err)
	}
	for i := range cfg.Peers {
		pc := &cfg.Peers[i]
		op := byName[pc.Name]
		delete(byName, pc.Name)
		switch {
		case op == nil:
			p, err := r.revive(pc)
			if err != nil {
				return fail(err)
			}
			if p == nil {
				if p, err = newPeer(r, pc, filepath.Join(r.cfg.Spool, "backlog")); err != nil {
					return fail(err)
				}
				opened = append(opened, p)
			}
			next, added = append(next, p), append(added, p)
			res.Added = append(res.Added, pc.Name)
		case reflect.DeepEqual(*op.cfg, *pc):
			next = append(next, op)
			res.Unchanged = append(res.Unchanged, pc.Name)
		default:
			np, err := buildPeer(r, pc)
			if err != nil {
				return fail(err)
			}
			np.q, np.peerCounters = op.q, op.peerCounters
			np.cfg = withQueueSettings(pc, op.cfg, &res)
			if connSettings(*op.cfg) == connSettings(*np.cfg) {
				// Routing only: the running connections stay (they
				// hold op, whose connection settings are the same).
				op.mu.Lock()
				np.conns, np.done, np.cancel, np.ctx = op.conns, op.done, op.cancel, op.ctx
				op.mu.Unlock()
				res.Rerouted = append(res.Rerouted, pc.Name)
			} else {
				stopOld, reconnect = append(stopOld, op), append(reconnect, np)
				moved[op] = np
				res.Reconnect = append(res.Reconnect, pc.Name)
			}
			next = append(next, np)
		}
	}
	for _, p := range old {
		if _, gone := byName[p.cfg.Name]; gone {
			removals = append(removals, p)
			res.Removed = append(res.Removed, p.cfg.Name)
		}
	}

	// Swap: articles routed from now on use next.
	r.putMu.Lock()
	r.mu.Lock()
	r.peers = next
	if r.retired == nil {
		r.retired = map[string]*peer{}
	}
	for _, p := range removals {
		r.retired[p.cfg.Name] = p
	}
	r.mu.Unlock()
	r.putMu.Unlock()

	// Connections: removed and reconnecting peers close gracefully (what
	// they had in flight goes back to the queue), then the new ones start.
	if running {
		for _, p := range append(slices.Clone(removals), stopOld...) {
			p.stop(true)
		}
		for _, p := range reconnect {
			p.q.setWake(p.wake)
		}
		for _, p := range append(added, reconnect...) {
			p.start(runCtx)
		}
	} else {
		for _, p := range reconnect {
			p.q.setWake(p.wake)
		}
	}
	r.log.Info(res.String())
	for _, k := range res.AtRestart {
		r.log.Warn("reload: this setting changed but takes effect only at the next start", "key", k)
	}
	return res, nil
}

// revive takes back a peer an earlier reload removed (its queue is still
// open), rebuilt with its new configuration; nil when there is none.
func (r *Relay) revive(pc *PeerConfig) (*peer, error) {
	r.mu.Lock()
	old := r.retired[pc.Name]
	r.mu.Unlock()
	if old == nil {
		return nil, nil
	}
	p, err := buildPeer(r, pc)
	if err != nil {
		return nil, err
	}
	p.q, p.peerCounters = old.q, old.peerCounters
	p.q.setWake(p.wake)
	r.mu.Lock()
	delete(r.retired, pc.Name)
	r.mu.Unlock()
	return p, nil
}

// connSettings is a peer's configuration without what only routing uses:
// two peers with equal connSettings can share connections. max_age is not
// routing: the connections check it when an article's turn comes, with
// the settings of the peer they were made for.
func connSettings(pc PeerConfig) string {
	pc.Groups, pc.PathName, pc.MaxSize = nil, "", 0
	pc.HashFeed, pc.Hashes = "", nil
	tv := "default"
	if pc.TLSVerify != nil {
		tv = fmt.Sprint(*pc.TLSVerify)
	}
	pc.TLSVerify = nil
	return fmt.Sprintf("%+v tls_verify=%s", pc, tv)
}

// withQueueSettings returns pc with the queue's settings of the running
// peer (old): the queue keeps them until the next start. Each that differs
// is reported in res.
func withQueueSettings(pc, old *PeerConfig, res *ReloadResult) *PeerConfig {
	n := *pc
	keep := func(key string, differs bool) {
		if differs {
			res.AtRestart = append(res.AtRestart, "peer "+pc.Name+": "+key)
		}
	}
	keep("queue_size", n.QueueSize != old.QueueSize)
	keep("backlog_max_bytes", n.BacklogMaxBytes != old.BacklogMaxBytes)
	keep("backlog_max_age", n.BacklogMaxAge != old.BacklogMaxAge)
	keep("defer_delay", n.DeferDelay != old.DeferDelay)
	keep("defer_max_delay", n.DeferMaxDelay != old.DeferMaxDelay)
	keep("max_defers", n.MaxDefers != old.MaxDefers)
	n.QueueSize, n.BacklogMaxBytes, n.BacklogMaxAge = old.QueueSize, old.BacklogMaxBytes, old.BacklogMaxAge
	n.DeferDelay, n.DeferMaxDelay, n.MaxDefers = old.DeferDelay, old.DeferMaxDelay, old.MaxDefers
	return &n
}

// restartKeys lists the top-level settings that differ between the
// running configuration and the new one: they take effect at the next
// start.
func restartKeys(cur, next *Config) []string {
	a, b := reflect.ValueOf(*cur), reflect.ValueOf(*next)
	var keys []string
	for i := range a.NumField() {
		f := a.Type().Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == "" || tag == "-" || tag == "peer" {
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			keys = append(keys, tag)
		}
	}
	return keys
}

// errNoPeer is the error of a control command naming no configured peer;
// errReloadRefused, of a reload that changed nothing.
var (
	errNoPeer        = errors.New("no such peer")
	errReloadRefused = errors.New("reload refused, the running configuration stays")
)
