package serve

import (
	"context"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func parseDisposition(v string) (string, map[string]string, error) { return mime.ParseMediaType(v) }

// watch queues the NZBs dropped in watch_dir (a subfolder named for a
// category gives that category) every WatchInterval. A file is taken once
// its size held still for one interval; it is then moved to
// watch_dir/.queued/ (or watch_dir/.refused/ with a NAME.error beside it
// when it could not be queued), never deleted.
func (d *Daemon) watch(ctx context.Context) {
	dir := d.cfg.Serve.WatchDir
	if dir == "" {
		return
	}
	seen := map[string]int64{}
	t := time.NewTicker(d.opts.WatchInterval)
	defer t.Stop()
	for {
		d.watchMu.Lock()
		d.scanWatch(dir, seen)
		d.watchMu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// scanWatch is one pass over watch_dir; with seen nil it takes every
// NZB without waiting for its size to hold still. Called with watchMu
// held.
func (d *Daemon) scanWatch(dir string, seen map[string]int64) {
	type cand struct{ path, cat string }
	var cands []cand
	des, err := os.ReadDir(dir)
	if err != nil {
		d.log.Warn("watch_dir", "err", err)
		return
	}
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if de.IsDir() {
			sub, _ := os.ReadDir(filepath.Join(dir, name))
			for _, s := range sub {
				if !s.IsDir() && strings.HasSuffix(strings.ToLower(s.Name()), ".nzb") {
					cands = append(cands, cand{filepath.Join(dir, name, s.Name()), name})
				}
			}
			continue
		}
		if strings.HasSuffix(strings.ToLower(name), ".nzb") {
			cands = append(cands, cand{filepath.Join(dir, name), ""})
		}
	}
	for _, c := range cands {
		st, err := os.Stat(c.path)
		if err != nil {
			continue
		}
		if seen != nil {
			if prev, ok := seen[c.path]; !ok || prev != st.Size() {
				seen[c.path] = st.Size() // still being written, perhaps: next pass
				continue
			}
			delete(seen, c.path)
		}
		data, err := os.ReadFile(c.path)
		if err == nil {
			_, err = d.Add(data, filepath.Base(c.path), AddOptions{Category: c.cat})
		}
		aside := filepath.Join(dir, ".queued")
		if err != nil {
			aside = filepath.Join(dir, ".refused")
			d.log.Warn("watch_dir: NZB refused", "file", c.path, "err", err)
		}
		os.MkdirAll(aside, 0o755)
		dest := filepath.Join(aside, filepath.Base(c.path))
		if rerr := os.Rename(c.path, dest); rerr != nil {
			d.log.Error("watch_dir: move aside", "file", c.path, "err", rerr)
		}
		if err != nil {
			os.WriteFile(dest+".error", []byte(err.Error()+"\n"), 0o644)
		}
	}
}
