package main

// newsbench feed -latency: how long a receiving server takes to answer a
// streamed TAKETHIS while a feed runs at full speed. A sender streams a
// set of fresh articles over -conns connections to newsfeed's ingest
// (each runtime; newsfeed relays to a sink, as in the chain) and to INN's
// innd, and times each article from the moment the last byte of its
// TAKETHIS was handed to the kernel to the moment its answer was read:
// the time the server holds the article (reading, storing, the group
// commit before 239) plus what waits ahead of it in the socket buffers.
// Each round gives p50 and p99 over its articles; the table shows the
// median of the rounds.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

// Servers of the latency table.
const (
	latINN   = "innd"
	latGo    = "newsfeed goroutine"
	latEpoll = "newsfeed epoll"
	latCmp   = "newsfeed -compare"
)

// latency is one round's figures for one server and set.
type latency struct {
	p50, p99 time.Duration
	rate     float64 // articles per second
}

// runLatency measures the latency table and prints it with its ratios.
func (b *feedBench) runLatency(ctx context.Context) error {
	if err := inntest.Available(); err != nil {
		return fmt.Errorf("-latency needs INN's innd: %w", err)
	}
	loadBefore := loadAvg()
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	b.batches = map[string][]byte{}
	if err := b.startINN(ctx, nil); err != nil {
		return err
	}
	servers := []string{latINN, latGo}
	if b.epoll {
		servers = append(servers, latEpoll)
	}
	if b.o.compare != "" {
		servers = append(servers, latCmp)
	}
	kinds := []struct {
		n, size int
	}{{min(b.o.smallN, 10000), b.o.smallSize}, {min(b.o.largeN, 500), b.o.largeSize}}
	res := map[string]map[string][]latency{}
	var names []string
	for _, k := range kinds {
		name := "latency-" + sizeLabel(k.size)
		names = append(names, name)
		res[name] = map[string][]latency{}
		for r := range b.o.rounds {
			order := append(append([]string{}, servers[r%len(servers):]...), servers[:r%len(servers)]...)
			for _, srv := range order {
				// Fresh message-ids for every push: no server has seen them.
				set := newArticleSet(k.n, k.size, fmt.Sprintf("%slat%d%s", run, r, strings.ReplaceAll(srv, " ", "")), time.Now())
				l, err := b.latencyOnce(ctx, srv, set, r)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", name, srv, err)
				}
				res[name][srv] = append(res[name][srv], l)
				b.say("round %d/%d %s %-20s p50 %8.3f ms  p99 %8.3f ms %10.0f art/s", r+1, b.o.rounds, name, srv,
					ms(l.p50), ms(l.p99), l.rate)
			}
		}
	}
	w := b.out
	fmt.Fprintf(w, "newsbench feed -latency: end of TAKETHIS to its answer under a full-speed stream, %d connections, median of %d rounds; load average %s before and %s after\n",
		b.o.conns, b.o.rounds, loadBefore, loadAvg())
	t := &Table{Header: []string{"case", "server", "articles", "p50 ms", "p99 ms", "art/s"}}
	for i, name := range names {
		for _, srv := range servers {
			p50, p99, rate := medLatency(res[name][srv])
			t.Add(name, srv, strconv.Itoa(kinds[i].n), fmt.Sprintf("%.3f", ms(p50)), fmt.Sprintf("%.3f", ms(p99)), fmt.Sprintf("%.0f", rate))
		}
	}
	t.Print(w)
	for _, name := range names {
		i50, i99, _ := medLatency(res[name][latINN])
		for _, v := range []struct{ suffix, srv string }{{"", latGo}, {"-epoll", latEpoll}, {"-compare", latCmp}} {
			if ls, ok := res[name][v.srv]; ok {
				p50, p99, _ := medLatency(ls)
				Ratio(w, name+v.suffix, "p50", p50.Seconds(), i50.Seconds())
				Ratio(w, name+v.suffix, "p99", p99.Seconds(), i99.Seconds())
			}
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

// medLatency is the median of the rounds' p50, p99 and rate.
func medLatency(ls []latency) (p50, p99 time.Duration, rate float64) {
	var a, b, c []float64
	for _, l := range ls {
		a, b, c = append(a, float64(l.p50)), append(b, float64(l.p99)), append(c, l.rate)
	}
	return time.Duration(Median(a)), time.Duration(Median(b)), Median(c)
}

// latencyOnce pushes set to server srv and returns its latencies.
func (b *feedBench) latencyOnce(ctx context.Context, srv string, set *articleSet, round int) (latency, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.timeout)
	defer cancel()
	addr := ""
	switch srv {
	case latINN:
		addr = b.inn.Addr()
	default:
		bin, rt := b.bin, runtimeGo
		switch srv {
		case latEpoll:
			rt = runtimeEpoll
		case latCmp:
			bin, rt = b.o.compare, b.o.compareRuntime
		}
		end, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{})
		if err != nil {
			return latency{}, err
		}
		defer end.Close()
		a, stop, err := b.startChainRelay(ctx, bin, rt, end, round)
		if err != nil {
			return latency{}, err
		}
		defer stop()
		addr = a
	}
	start := time.Now()
	lats, err := pushTimed(ctx, addr, set, b.o.conns)
	el := time.Since(start)
	if err != nil {
		return latency{}, err
	}
	slices.Sort(lats)
	return latency{p50: lats[len(lats)/2], p99: lats[len(lats)*99/100], rate: float64(len(lats)) / el.Seconds()}, nil
}

// pushTimed streams the set to addr over conns connections (article i on
// connection i mod conns), each article written on its own, and returns
// for every article the time from the end of its write to its answer;
// every answer must be 239.
func pushTimed(ctx context.Context, addr string, set *articleSet, conns int) ([]time.Duration, error) {
	var d net.Dialer
	type stream struct {
		nc   net.Conn
		br   *bufio.Reader
		bufs net.Buffers
		sent []atomic.Int64 // ns after t0 + 1, once written
		lat  []time.Duration
	}
	var streams []*stream
	defer func() {
		for _, s := range streams {
			s.nc.Close()
		}
	}()
	for c := range conns {
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("push: %w", err)
		}
		s := &stream{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), bufs: set.takethisStream(c, conns)}
		s.sent = make([]atomic.Int64, len(s.bufs)/3)
		streams = append(streams, s)
		if deadline, ok := ctx.Deadline(); ok {
			nc.SetDeadline(deadline)
		}
		if l, err := s.br.ReadString('\n'); err != nil || !strings.HasPrefix(l, "200") {
			return nil, fmt.Errorf("push: %s: greeting %q: %v", addr, strings.TrimSpace(l), err)
		}
		io.WriteString(nc, "MODE STREAM\r\n")
		if l, err := s.br.ReadString('\n'); err != nil || !strings.HasPrefix(l, "203") {
			return nil, fmt.Errorf("push: %s: MODE STREAM: %q: %v", addr, strings.TrimSpace(l), err)
		}
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2*len(streams))
	for i, s := range streams {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for k := range s.sent {
				nb := net.Buffers{s.bufs[3*k], s.bufs[3*k+1], s.bufs[3*k+2]}
				if _, err := nb.WriteTo(s.nc); err != nil {
					errs[2*i] = fmt.Errorf("push: write: %w", err)
					s.nc.Close()
					return
				}
				s.sent[k].Store(int64(time.Since(t0)) + 1)
			}
		}()
		go func() {
			defer wg.Done()
			for k := range s.sent {
				l, err := s.br.ReadSlice('\n')
				at := int64(time.Since(t0)) + 1
				if err != nil {
					errs[2*i+1] = fmt.Errorf("push: read answers: %w", err)
					return
				}
				if len(l) < 4 || string(l[:4]) != "239 " {
					errs[2*i+1] = fmt.Errorf("push: answer %q", strings.TrimSpace(string(l)))
					s.nc.Close()
					return
				}
				// The answer can be read before the writer notes the end
				// of its write: then it took no time after that end.
				sent := s.sent[k].Load()
				for sent == 0 {
					runtime.Gosched()
					sent = s.sent[k].Load()
				}
				s.lat = append(s.lat, time.Duration(max(at-sent, 0)))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var lats []time.Duration
	for _, s := range streams {
		lats = append(lats, s.lat...)
	}
	return lats, nil
}
