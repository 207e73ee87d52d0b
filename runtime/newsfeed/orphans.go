package newsfeed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/newsflow/newsflow/machine/queue"
	"github.com/newsflow/newsflow/spoolfs"
)

// A peer removed from the configuration leaves its backlog files behind
// (a reload keeps its queue until the stop, which writes it to backlog).
// At start each such backlog is reported with its article count, and
// `newsfeed ctl drop PEER` removes it; a configured peer's backlog is
// never dropped that way.

// errConfiguredPeer refuses to drop the backlog of a peer that is
// configured (its articles are still to be sent).
var errConfiguredPeer = errors.New("is configured: its backlog is still being sent (remove it from the configuration and reload first)")

// backlogFileName matches a peer's files in the backlog directory: .B, .D,
// .J and .Q files with their hexadecimal time, the replay file .P and its
// checkpoint, and the manifest .M.
var backlogFileName = regexp.MustCompile(`^(.+)\.(?:[BDJQ]\.[0-9a-f]{1,16}|P|P\.ckpt|M)$`)

// articleFiles counts the files among files that hold articles: all but
// the manifest and the replay checkpoint.
func articleFiles(files []string) int {
	n := 0
	for _, f := range files {
		if !strings.HasSuffix(f, ".M") && !strings.HasSuffix(f, ".P.ckpt") {
			n++
		}
	}
	return n
}

// backlogPeers lists the peer names that have files in dir, and each
// name's files.
func backlogPeers(dir string) (map[string][]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range ents {
		if m := backlogFileName.FindStringSubmatch(e.Name()); m != nil && !e.IsDir() && validPeerName(m[1]) {
			out[m[1]] = append(out[m[1]], filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// orphanArticles counts the articles waiting in the backlog of a peer
// that is not running, by recovering its queue and closing it again.
func (r *Relay) orphanArticles(dir, name string) (int64, error) {
	q, err := spoolfs.OpenPeerQueue(dir, queue.DefaultConfig(name), r.now(), r.log)
	if err != nil {
		return 0, err
	}
	s := q.Stats()
	n := s.Queued + s.InFlight + s.Backlog + s.Deferred + s.Replay
	return n, q.Shutdown(r.now())
}

// orphanNames lists the peers with backlog files that are neither
// configured nor retired by a reload in this run.
func (r *Relay) orphanNames(dir string) ([]string, map[string][]string, error) {
	files, err := backlogPeers(dir)
	if err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	known := map[string]bool{}
	for _, p := range r.peers {
		known[p.cfg.Name] = true
	}
	for name := range r.retired {
		known[name] = true
	}
	r.mu.Unlock()
	var names []string
	for name := range files {
		if !known[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, files, nil
}

// reportOrphans logs, at start, each backlog left by a peer that is no
// longer configured, with its article count.
func (r *Relay) reportOrphans() {
	dir := r.backlogDir()
	names, files, err := r.orphanNames(dir)
	if err != nil {
		r.log.Warn("cannot list the backlog directory", "dir", dir, "err", err)
		return
	}
	for _, name := range names {
		n, err := r.orphanArticles(dir, name)
		if err != nil {
			r.log.Warn("backlog of a peer no longer configured, unreadable", "peer", name, "files", articleFiles(files[name]), "err", err)
			continue
		}
		r.log.Warn("backlog of a peer no longer configured: add the peer back to send it, or remove it with newsfeed ctl drop PEER",
			"peer", name, "articles", n, "files", articleFiles(files[name]))
	}
}

func (r *Relay) backlogDir() string { return filepath.Join(r.cfg.Spool, "backlog") }

// Drop removes the backlog a peer that is no longer configured left
// behind. It refuses a configured peer, and one a reload removed in this
// run (its queue is open until the stop). Its errors name the peer, not
// the command: newsfeed ctl drop prints them after its own name.
func (r *Relay) Drop(name string) (string, error) {
	r.mu.Lock()
	configured := slices.ContainsFunc(r.peers, func(p *peer) bool { return p.cfg.Name == name })
	_, retired := r.retired[name]
	r.mu.Unlock()
	if configured {
		return "", fmt.Errorf("peer %q %w", name, errConfiguredPeer)
	}
	if retired {
		return "", fmt.Errorf("peer %q was removed by a reload of this run: its queue is written to backlog at the stop; drop it after a restart", name)
	}
	dir := r.backlogDir()
	files, err := backlogPeers(dir)
	if err != nil {
		return "", fmt.Errorf("peer %q backlog: %w", name, err)
	}
	if len(files[name]) == 0 {
		return "", fmt.Errorf("%w %q: no backlog files", errNoPeer, name)
	}
	n, err := r.orphanArticles(dir, name)
	if err != nil {
		r.log.Warn("drop: backlog unreadable, removing its files anyway", "peer", name, "err", err)
	}
	files, err = backlogPeers(dir) // opening the queue may have renamed files
	if err != nil {
		return "", fmt.Errorf("peer %q backlog: %w", name, err)
	}
	for _, f := range files[name] {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("peer %q backlog: %w", name, err)
		}
	}
	if err := spoolfs.SyncDir(dir); err != nil {
		return "", fmt.Errorf("peer %q backlog: %w", name, err)
	}
	nf := articleFiles(files[name])
	r.log.Warn("backlog of a removed peer dropped (newsfeed ctl drop)", "peer", name, "articles", n, "files", nf)
	return fmt.Sprintf("peer %s: backlog dropped, %d article(s) in %d file(s)", name, n, nf), nil
}
