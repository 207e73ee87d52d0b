package main

// newsbench feed -backlog N: newsfeed's memory while N articles are queued
// for a peer that is down, and how fast that backlog drains when the peer
// returns. For each runtime newsfeed runs as a child with one
// peer, a sink, and three phases follow, each pushing its own N articles
// of -small-size octets into newsfeed's ingest with TAKETHIS:
//
//  1. live: the sink is up; the rate is N over the time from the first
//     TAKETHIS to the sink's N-th article (ingest, group commit and
//     feeding, end to end);
//  2. down: the sink is closed (connections refused); the push waits for
//     every 239, then one more second passes. The memory queue holds at
//     most queue_size articles, the rest goes to backlog files; the figure
//     is the peak VmRSS of the child during the phase (sampled every
//     20 ms) and the octets of backlog files at its end;
//  3. return: a sink listens again on the same port; the drain rate is N
//     over the time from then to the sink's N-th article (reconnect
//     backoff included: the peer has reconnect_max = 250ms).
//
// With -compare, the other binary runs the same phases after them, on
// -compare-runtime, as one more row: before and after in one run.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

// backlogResult is one runtime's -backlog figures.
type backlogResult struct {
	runtime      string // the runtime, or the -compare feeder's name
	n            int
	live, drain  time.Duration
	peakRSS      int64 // octets, during the down phase
	peakAnon     int64 // RssAnon at the peak: the heap and anonymous mappings
	peakFile     int64 // RssFile at the peak: mapped files (the binary...)
	backlogBytes int64 // octets of backlog files at the end of the down phase
}

func (r backlogResult) liveRate() float64  { return float64(r.n) / r.live.Seconds() }
func (r backlogResult) drainRate() float64 { return float64(r.n) / r.drain.Seconds() }

// runBacklog measures every available runtime and prints a table.
func (b *feedBench) runBacklog(ctx context.Context, n int) error {
	rts := []string{runtimeGo}
	if b.epoll {
		rts = append(rts, runtimeEpoll)
	}
	loadBefore := loadAvg()
	var res []backlogResult
	for _, rt := range rts {
		r, err := b.backlogOnce(ctx, b.bin, rt, n)
		if err != nil {
			return fmt.Errorf("backlog %s: %w", rt, err)
		}
		res = append(res, r)
	}
	if b.o.compare != "" {
		r, err := b.backlogOnce(ctx, b.o.compare, b.o.compareRuntime, n)
		if err != nil {
			return fmt.Errorf("backlog %s: %w", feederCompare, err)
		}
		r.runtime = feederCompare + " " + b.o.compareRuntime
		res = append(res, r)
	}
	w := b.out
	fmt.Fprintf(w, "newsbench feed -backlog %d: %d-octet articles, %d connections, queue_size %s; load average %s before and %s after\n",
		n, b.o.smallSize, b.o.conns, queueSizeText(b.o.backlogQueue), loadBefore, loadAvg())
	t := &Table{Header: []string{"runtime", "articles", "live art/s", "peak RSS down MB", "anon/file MB", "backlog MB", "drain art/s", "drain/live"}}
	for _, r := range res {
		t.Add(r.runtime, strconv.Itoa(r.n), fmt.Sprintf("%.0f", r.liveRate()), fmt.Sprintf("%.1f", float64(r.peakRSS)/1e6),
			fmt.Sprintf("%.1f/%.1f", float64(r.peakAnon)/1e6, float64(r.peakFile)/1e6),
			fmt.Sprintf("%.1f", float64(r.backlogBytes)/1e6), fmt.Sprintf("%.0f", r.drainRate()),
			fmt.Sprintf("%.2f", r.drainRate()/r.liveRate()))
	}
	t.Print(w)
	for _, r := range res {
		name := fmt.Sprintf("backlog-%d-%s", n, strings.ReplaceAll(r.runtime, " ", "-"))
		fmt.Fprintf(w, "backlog %s peak_rss_mb %.1f backlog_mb %.1f\n", name, float64(r.peakRSS)/1e6, float64(r.backlogBytes)/1e6)
		Ratio(w, name, "drain_vs_live", r.drainRate(), r.liveRate())
	}
	return nil
}

// queueSizeText shows the -backlog-queue flag's value.
func queueSizeText(q int) string {
	if q == 0 {
		return "newsfeed's default"
	}
	return strconv.Itoa(q)
}

// backlogOnce runs the three phases with newsfeed binary bin on runtime
// rt.
func (b *feedBench) backlogOnce(ctx context.Context, bin, rt string, n int) (backlogResult, error) {
	res := backlogResult{runtime: rt, n: n}
	dir := filepath.Join(b.work, "backlog-"+rt)
	if bin != b.bin {
		dir += "-compare"
	}
	spool := filepath.Join(dir, "spool")
	if err := os.MkdirAll(spool, 0o755); err != nil {
		return res, err
	}
	up, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{})
	if err != nil {
		return res, err
	}
	defer func() { up.Close() }()
	port := up.Port()
	text := relayConfig(spool, rt, []int{port}, b.o.conns, b.o.profile != "") + "reconnect_max = \"250ms\"\n"
	if b.o.backlogQueue > 0 {
		text += fmt.Sprintf("queue_size = %d\n", b.o.backlogQueue)
	}
	cfg := filepath.Join(dir, "backlog.toml")
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		return res, err
	}
	nf, err := startNewsfeed(bin, cfg, dir, spool)
	if err != nil {
		return res, err
	}
	defer nf.stop()
	cmd, logName, addr := nf.cmd, nf.logName, nf.addr
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	push := func(phase string) error {
		set := newArticleSet(n, b.o.smallSize, run+phase, time.Now())
		pr, err := pushTakethis(ctx, []string{addr}, set, b.o.conns)
		if err == nil && pr.accepted != n {
			err = fmt.Errorf("%s: %d of %d articles accepted (%v)", phase, pr.accepted, n, pr.refused)
		}
		if err != nil {
			return fmt.Errorf("%w\n%s", err, tail(logName, 20))
		}
		return nil
	}

	// 1. live.
	start := time.Now()
	if err := push("live"); err != nil {
		return res, err
	}
	if err := up.Wait(ctx, int64(n)); err != nil {
		return res, fmt.Errorf("live: the sink took %d of %d: %w", up.Articles(), n, err)
	}
	res.live = time.Since(start)
	b.say("backlog %s: live %d articles in %.2fs", rt, n, res.live.Seconds())

	// 2. down.
	up.Close()
	var peak, peakAnon, peakFile atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := procStatus(cmd.Process.Pid, "VmRSS", "RssAnon", "RssFile"); err == nil && v[0] > peak.Load() {
				peak.Store(v[0])
				peakAnon.Store(v[1])
				peakFile.Store(v[2])
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	err = push("down")
	if err == nil {
		time.Sleep(time.Second)
	}
	close(stop)
	<-sampled
	if err != nil {
		return res, err
	}
	res.peakRSS, res.peakAnon, res.peakFile = peak.Load(), peakAnon.Load(), peakFile.Load()
	if b.o.profile != "" {
		if err := saveHeapProfile(spool, b.o.profile, "backlog-"+rt); err != nil {
			return res, fmt.Errorf("heap profile: %w", err)
		}
	}
	res.backlogBytes = dirBytes(filepath.Join(spool, "backlog"))
	b.say("backlog %s: down, %d articles queued: peak VmRSS %.1f MB (anonymous %.1f, files %.1f), backlog files %.1f MB", rt, n,
		float64(res.peakRSS)/1e6, float64(res.peakAnon)/1e6, float64(res.peakFile)/1e6, float64(res.backlogBytes)/1e6)

	// 3. return.
	back, err := nullpeer.Listen("127.0.0.1:"+strconv.Itoa(port), nullpeer.Options{})
	if err != nil {
		return res, fmt.Errorf("the peer's port again: %w", err)
	}
	up = back
	start = time.Now()
	if err := back.Wait(ctx, int64(n)); err != nil {
		return res, fmt.Errorf("return: the sink took %d of %d: %w\n%s", back.Articles(), n, err, tail(logName, 20))
	}
	res.drain = time.Since(start)
	b.say("backlog %s: drained %d articles in %.2fs", rt, n, res.drain.Seconds())
	return res, nil
}

// saveHeapProfile writes newsfeed's live heap (pprof, after a GC) to
// dir/name.heap.pprof, for -backlog -profile.
func saveHeapProfile(spool, dir, name string) error {
	_, admin, err := newsfeed.ReadAddrs(spool)
	if err != nil || admin == "" {
		return fmt.Errorf("no admin address from newsfeed: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return fetch(context.Background(), "http://"+admin+"/debug/pprof/heap?gc=1", filepath.Join(dir, name+".heap.pprof"))
}

// dirBytes is the total size of the regular files in dir (0 when it
// cannot be read).
func dirBytes(dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}
