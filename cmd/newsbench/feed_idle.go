package main

// newsbench feed -idle N: memory per idle ingest connection. For each
// runtime newsfeed runs as a child with no peers; N connections are opened
// to its ingest listener and each reads the greeting (so the relay has
// accepted it and started its machine); the figure is the growth of the
// child's resident set (VmRSS in /proc/PID/status, read after a settling
// pause) divided by N. wait4's maxrss is not used: it is wrong for Go
// children here.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// idleResult is one runtime's idle-connection figures.
type idleResult struct {
	runtime       string
	conns         int
	before, after int64 // VmRSS, octets
}

func (r idleResult) perConnKB() float64 {
	return float64(r.after-r.before) / 1024 / float64(r.conns)
}

// runIdle measures every available runtime and prints a table.
func (b *feedBench) runIdle(ctx context.Context, n int) error {
	rts := []string{runtimeGo}
	if b.epoll {
		rts = append(rts, runtimeEpoll)
	}
	var res []idleResult
	for _, rt := range rts {
		r, err := b.idleOnce(ctx, rt, n)
		if err != nil {
			return fmt.Errorf("idle %s: %w", rt, err)
		}
		b.say("idle %s: VmRSS %d KB before, %d KB after %d connections", rt, r.before>>10, r.after>>10, n)
		res = append(res, r)
	}
	w := b.out
	fmt.Fprintf(w, "newsbench feed -idle %d: newsfeed's VmRSS (/proc/PID/status) before and after %d idle ingest connections (each read its greeting)\n", n, n)
	t := &Table{Header: []string{"runtime", "connections", "RSS before MB", "RSS after MB", "KB per connection"}}
	for _, r := range res {
		t.Add(r.runtime, strconv.Itoa(r.conns), fmt.Sprintf("%.1f", float64(r.before)/1e6),
			fmt.Sprintf("%.1f", float64(r.after)/1e6), fmt.Sprintf("%.1f", r.perConnKB()))
	}
	t.Print(w)
	if len(res) == 2 && res[0].perConnKB() > 0 {
		Ratio(w, fmt.Sprintf("idle-%d", n), "kb_per_conn_epoll_vs_goroutine", res[1].perConnKB(), res[0].perConnKB())
	}
	if !b.epoll {
		fmt.Fprintln(w, "epoll: not available in this build")
	}
	return nil
}

// idleOnce runs newsfeed with runtime rt and n idle connections.
func (b *feedBench) idleOnce(ctx context.Context, rt string, n int) (idleResult, error) {
	res := idleResult{runtime: rt, conns: n}
	dir := filepath.Join(b.work, "idle-"+rt)
	spool := filepath.Join(dir, "spool")
	if err := os.MkdirAll(spool, 0o755); err != nil {
		return res, err
	}
	cfg := filepath.Join(dir, "idle.toml")
	if err := os.WriteFile(cfg, []byte(relayConfig(spool, rt, nil, 1, false)), 0o644); err != nil {
		return res, err
	}
	nf, err := startNewsfeed(b.bin, cfg, dir, spool)
	if err != nil {
		return res, err
	}
	defer nf.stop()
	cmd, addr := nf.cmd, nf.addr
	// One connection first, so that what every connection shares (the
	// loop, buffers, the first goroutines) is in the baseline.
	warm, err := dialGreeted(ctx, addr)
	if err != nil {
		return res, err
	}
	defer warm.Close()
	time.Sleep(300 * time.Millisecond)
	if res.before, err = vmRSS(cmd.Process.Pid); err != nil {
		return res, err
	}
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := dialGreeted(ctx, addr)
		if err != nil {
			return res, fmt.Errorf("after %d connections: %w", len(conns), err)
		}
		conns = append(conns, c)
	}
	time.Sleep(500 * time.Millisecond)
	if res.after, err = vmRSS(cmd.Process.Pid); err != nil {
		return res, err
	}
	return res, nil
}

// dialGreeted connects to addr and reads the greeting line.
func dialGreeted(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	l, err := bufio.NewReaderSize(c, 512).ReadString('\n')
	c.SetReadDeadline(time.Time{})
	if err != nil || !strings.HasPrefix(l, "200") {
		c.Close()
		if err == nil || err == io.EOF {
			err = fmt.Errorf("greeting %q", l)
		}
		return nil, err
	}
	return c, nil
}

// vmRSS reads a process's resident set size from /proc/PID/status.
func vmRSS(pid int) (int64, error) {
	v, err := procStatus(pid, "VmRSS")
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// procStatus returns the named fields of /proc/pid/status (kB fields such
// as VmRSS, RssAnon, RssFile), in octets.
func procStatus(pid int, names ...string) ([]int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	vals := make([]int64, len(names))
	found := 0
	for _, l := range strings.Split(string(data), "\n") {
		name, v, ok := strings.Cut(l, ":")
		if i := slices.Index(names, name); ok && i >= 0 {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/%d/status: %s: %w", pid, name, err)
			}
			vals[i] = kb << 10
			found++
		}
	}
	if found != len(names) {
		return nil, fmt.Errorf("/proc/%d/status: not all of %v", pid, names)
	}
	return vals, nil
}
