package main

// newsbench feed -chain N: a relay chain. INN's innfeed feeds
// N articles of -small-size octets (stored in a private INN) either to a
// sink directly, or to newsfeed's ingest, which stores them and feeds the
// same kind of sink:
//
//	innfeed -> sink                          (direct)
//	innfeed -> newsfeed (goroutine) -> sink  (chain)
//	innfeed -> newsfeed (epoll) -> sink      (chain)
//	innfeed -> newsfeed -compare -> sink     (with -compare: another build)
//
// Each run starts innfeed (batch mode, -conns connections) and stops the
// clock when the sink has taken the N-th article, so innfeed's start-up is
// in every run alike; in the chain runs newsfeed is already up, its peer
// connections open, on an empty spool of its own. Rounds interleave the
// three and the table shows the median; `ratio chain-2k time` is the
// chain's median time over the direct one's (goal ≤ 1.10).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

// Feeders of the chain table.
const (
	chainDirect = "innfeed -> sink"
	chainGo     = "innfeed -> newsfeed goroutine -> sink"
	chainEpoll  = "innfeed -> newsfeed epoll -> sink"
	chainCmp    = "innfeed -> newsfeed -compare -> sink"
)

// runChain measures the chain and prints its table and ratios.
func (b *feedBench) runChain(ctx context.Context, n int) error {
	if err := inntest.Available(); err != nil {
		return fmt.Errorf("-chain needs INN's innfeed: %w", err)
	}
	loadBefore := loadAvg()
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	set := newArticleSet(n, b.o.smallSize, run+"chain", time.Now())
	b.batches = map[string][]byte{}
	if err := b.startINN(ctx, map[string]*articleSet{"small": set}); err != nil {
		return err
	}
	feeders := []string{chainDirect, chainGo}
	if b.epoll {
		feeders = append(feeders, chainEpoll)
	}
	if b.o.compare != "" {
		feeders = append(feeders, chainCmp)
	}
	times := map[string][]float64{}
	for r := range b.o.rounds {
		k := r % len(feeders)
		order := append(append([]string{}, feeders[k:]...), feeders[:k]...)
		for _, f := range order {
			var d time.Duration
			var err error
			switch f {
			case chainDirect:
				d, err = b.chainOnce(ctx, set, "", "", r)
			case chainGo:
				d, err = b.chainOnce(ctx, set, b.bin, runtimeGo, r)
			case chainEpoll:
				d, err = b.chainOnce(ctx, set, b.bin, runtimeEpoll, r)
			case chainCmp:
				d, err = b.chainOnce(ctx, set, b.o.compare, b.o.compareRuntime, r)
			}
			if err != nil {
				return fmt.Errorf("chain: %s: %w", f, err)
			}
			times[f] = append(times[f], d.Seconds())
			b.say("round %d/%d chain %-40s %8.3fs %10.0f art/s", r+1, b.o.rounds, f, d.Seconds(), float64(n)/d.Seconds())
		}
	}
	name := "chain-" + set.label
	w := b.out
	fmt.Fprintf(w, "newsbench feed -chain %d: %d-octet articles, %d connections at each hop, median of %d rounds; load average %s before and %s after\n",
		n, b.o.smallSize, b.o.conns, b.o.rounds, loadBefore, loadAvg())
	t := &Table{Header: []string{"case", "path", "articles", "art/s", "time s", "vs direct"}}
	direct := Median(times[chainDirect])
	for _, f := range feeders {
		med := Median(times[f])
		t.Add(name, f, strconv.Itoa(n), fmt.Sprintf("%.0f", float64(n)/med), fmt.Sprintf("%.3f", med), fmt.Sprintf("%.2f", med/direct))
	}
	t.Print(w)
	// The better runtime's chain is "the" ratio; each runtime's is shown too.
	best := Median(times[chainGo])
	Ratio(w, name, "time_goroutine", best, direct)
	if b.epoll {
		e := Median(times[chainEpoll])
		Ratio(w, name, "time_epoll", e, direct)
		best = min(best, e)
	}
	Ratio(w, name, "time", best, direct)
	if b.o.compare != "" {
		Ratio(w, name, "time_compare", Median(times[chainCmp]), direct)
	}
	return nil
}

// chainOnce runs innfeed against a sink, through newsfeed (binary bin,
// runtime rt) unless bin is empty, and returns the time from innfeed's start
// to the sink's last article.
func (b *feedBench) chainOnce(ctx context.Context, set *articleSet, bin, rt string, round int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.timeout)
	defer cancel()
	end, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{})
	if err != nil {
		return 0, err
	}
	defer end.Close()
	target := end.Addr()
	if bin != "" {
		addr, stop, err := b.startChainRelay(ctx, bin, rt, end, round)
		if err != nil {
			return 0, err
		}
		defer stop()
		target = addr
	}
	p, err := b.inn.StartInnfeed([]inntest.InnfeedPeer{{Name: "hop", Addr: target, Connections: b.o.conns,
		MaxQueueSize: b.o.innQueue, Batch: b.batches[set.label]}}, "")
	if err != nil {
		return 0, err
	}
	start := time.Now()
	werr := end.Wait(ctx, int64(set.len()))
	d := time.Since(start)
	if werr != nil {
		p.Kill()
	}
	ex, err := p.Wait(ctx)
	if werr != nil {
		return d, fmt.Errorf("the sink took %d of %d articles: %w\n%s", end.Articles(), set.len(), werr, ex.Log)
	}
	if err != nil {
		return d, err
	}
	for name, n := range ex.Unsent {
		if n != 0 {
			return d, fmt.Errorf("innfeed left %d articles for %s unsent\n%s", n, name, ex.Log)
		}
	}
	return d, nil
}

// startChainRelay starts newsfeed (binary bin, runtime rt) on an empty spool
// with the sink as its one peer, waits until its peer connections are open,
// and returns its ingest address and a stop function.
func (b *feedBench) startChainRelay(ctx context.Context, bin, rt string, end *nullpeer.Sink, round int) (string, func(), error) {
	dir := filepath.Join(b.work, fmt.Sprintf("chain-%s-%s-%d", filepath.Base(bin), rt, round))
	spool := filepath.Join(dir, "spool")
	if err := os.MkdirAll(spool, 0o755); err != nil {
		return "", nil, err
	}
	cfg := filepath.Join(dir, "chain.toml")
	if err := os.WriteFile(cfg, []byte(relayConfig(spool, rt, []int{end.Port()}, b.o.conns, false)), 0o644); err != nil {
		return "", nil, err
	}
	logName := filepath.Join(dir, "newsfeed.log")
	logf, err := os.Create(logName)
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "-config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", nil, fmt.Errorf("start newsfeed: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logf.Close()
		b.sayCommitStats(logName)
		if !b.o.keep {
			os.RemoveAll(dir)
		}
	}
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("no ingest address from newsfeed\n%s", tail(logName, 20))
		}
		addr, _, _ = newsfeed.ReadAddrs(spool)
	}
	if err := end.WaitConns(ctx, int64(b.o.conns)); err != nil {
		stop()
		return "", nil, fmt.Errorf("newsfeed did not connect to the sink: %w\n%s", err, tail(logName, 20))
	}
	return addr, stop, nil
}

// sayCommitStats shows the group commit's figures from a chain relay's
// final ingest stats line (CHECKs, TAKETHIS, articles per round, round
// time), when its build logs them.
func (b *feedBench) sayCommitStats(logName string) {
	data, err := os.ReadFile(logName)
	if err != nil {
		return
	}
	for line := range strings.Lines(string(data)) {
		if !strings.Contains(line, "final stats (ingest)") || !strings.Contains(line, "commit_rounds") {
			continue
		}
		var keep []string
		for f := range strings.FieldsSeq(line) {
			for _, k := range []string{"accepted=", "checks=", "takethis=", "commit_rounds=", "articles_per_round=", "round_ms=", "sync_ms="} {
				if strings.HasPrefix(f, k) {
					keep = append(keep, f)
				}
			}
		}
		b.say("  newsfeed: %s", strings.Join(keep, " "))
	}
}
