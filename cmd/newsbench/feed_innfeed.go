package main

// innfeed's side of newsbench feed: a private INN that stores the article
// sets (fed to innd with TAKETHIS), and one timed standalone innfeed run.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// startINN starts a private INN in the work directory and stores every
// set in it, keeping an innfeed batch per set.
func (b *feedBench) startINN(ctx context.Context, sets map[string]*articleSet) error {
	dir := filepath.Join(b.work, "inn")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	srv, err := inntest.StartInstance(dir, inntest.Options{
		Groups:   []inntest.Group{{Name: "misc.test"}},
		PathHost: "newsbench-inn.invalid",
	})
	if err != nil {
		return fmt.Errorf("start INN: %w", err)
	}
	b.inn = srv
	for _, kind := range []string{"small", "large"} {
		set := sets[kind]
		if set == nil {
			continue
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		res, err := pushTakethis(ctx, []string{srv.Addr()}, set, 4)
		cancel()
		if err != nil {
			return fmt.Errorf("storing the %s set in INN: %w\n%s", set.label, err, srv.LogTail())
		}
		if res.accepted != set.len() {
			return fmt.Errorf("storing the %s set in INN: innd took %d of %d articles (answers: %q)\n%s",
				set.label, res.accepted, set.len(), res.refused, srv.LogTail())
		}
		batch, err := srv.BatchLines(set.ids)
		if err != nil {
			return fmt.Errorf("innfeed batch of the %s set: %w", set.label, err)
		}
		b.batches[set.label] = batch
		b.say("stored %d x %s articles in INN's spool in %.1fs", set.len(), set.label, time.Since(start).Seconds())
	}
	return nil
}

// runInnfeed runs innfeed -x with one peer per sink, each with the set's
// batch as its backlog, and times it like newsfeed.
func (b *feedBench) runInnfeed(ctx context.Context, c feedCase) (measure, error) {
	sinks, err := startSinks(c.peers)
	if err != nil {
		return measure{}, err
	}
	defer closeSinks(sinks)
	var peers []inntest.InnfeedPeer
	for i, s := range sinks {
		peers = append(peers, inntest.InnfeedPeer{Name: peerName(i), Addr: s.Addr(), Connections: b.o.conns,
			MaxQueueSize: b.o.innQueue, Batch: b.batches[c.set.label]})
	}
	p, err := b.inn.StartInnfeed(peers, "")
	if err != nil {
		return measure{}, err
	}
	rss := watchRSS(p.Pid())
	m, err := timeSinks(ctx, sinks, b.o.conns, int64(c.set.len()), p.Exited(), "innfeed")
	if err != nil {
		p.Kill()
	}
	ex, werr := p.Wait(ctx)
	m.cpu, m.maxRSS = childCPU(ex.State), rss.finish()
	if err != nil {
		return m, fmt.Errorf("%w\n%s", err, ex.Log)
	}
	if werr != nil {
		return m, werr
	}
	for name, n := range ex.Unsent {
		if n != 0 {
			return m, fmt.Errorf("innfeed left %d articles for %s unsent\n%s", n, name, ex.Log)
		}
	}
	if want := int64(c.set.len() * c.peers); m.articles != want {
		b.notes = append(b.notes, fmt.Sprintf("%s innfeed: the sinks took %d articles for %d", c.name, m.articles, want))
	}
	return m, nil
}
