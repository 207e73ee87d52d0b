package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
	"github.com/newsflow/newsflow/runtime/testpeer/nullpeer"
)

func TestSizeLabel(t *testing.T) {
	tests := []struct {
		size int
		want string
	}{
		{2000, "2k"}, {2048, "2k"}, {500000, "500k"}, {512000, "500k"}, {1 << 20, "1m"}, {700, "700b"}, {1500, "1500b"},
	}
	for _, tc := range tests {
		if got := sizeLabel(tc.size); got != tc.want {
			t.Errorf("sizeLabel(%d) = %q, want %q", tc.size, got, tc.want)
		}
	}
}

// TestArticleSet: the generated articles are valid, near the asked size,
// and the rnews batch inject reads holds exactly the articles the TAKETHIS
// stream carries.
func TestArticleSet(t *testing.T) {
	for _, size := range []int{2000, 50000} {
		set := newArticleSet(5, size, "t", time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
		var wire [][]byte
		for i := range set.len() {
			a := append(append([]byte(nil), set.heads[i]...), set.body...)
			if n := len(a); n < size*9/10 || n > size {
				t.Errorf("size %d: article %d has %d octets", size, i, n)
			}
			h, _, err := proto.ParseHeaders(a)
			if err != nil {
				t.Fatalf("article %d: %v", i, err)
			}
			if err := proto.ValidateArticle(h, proto.ValidateOptions{Now: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), MaxFuture: -1, Size: int64(len(a))}); err != nil {
				t.Errorf("article %d not valid: %v", i, err)
			}
			if id, _ := h.MessageID(); id != set.ids[i] {
				t.Errorf("article %d: Message-ID %q, want %q", i, id, set.ids[i])
			}
			wire = append(wire, append(a, ".\r\n"...))
		}
		var rn bytes.Buffer
		if err := set.writeRnews(&rn); err != nil {
			t.Fatal(err)
		}
		r := proto.NewRnewsReader(bufio.NewReader(&rn), 1<<20)
		for i := 0; ; i++ {
			a, err := r.Next()
			if err == io.EOF {
				if i != set.len() {
					t.Errorf("rnews batch holds %d articles, want %d", i, set.len())
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(wire[i]), string(proto.ToWire(a))); diff != "" {
				t.Errorf("article %d: rnews and TAKETHIS forms differ (-stream +rnews):\n%s", i, diff)
			}
		}
	}
}

// TestPushAndCopy: the Go sender delivers every article to every sink
// over several connections, and the loopback copy moves exactly the
// stream's bytes.
func TestPushAndCopy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set := newArticleSet(101, 3000, "p", time.Now())
	var sinks []*nullpeer.Sink
	var addrs []string
	for range 2 {
		s, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{RecordIDs: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sinks = append(sinks, s)
		addrs = append(addrs, s.Addr())
	}
	res, err := pushTakethis(ctx, addrs, set, 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.accepted != 2*set.len() || len(res.refused) != 0 {
		t.Errorf("accepted %d (refused %q), want %d", res.accepted, res.refused, 2*set.len())
	}
	for i, s := range sinks {
		got := map[string]bool{}
		for _, id := range s.IDs() {
			got[id] = true
		}
		want := map[string]bool{}
		for _, id := range set.ids {
			want[id] = true
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("sink %d: message-ids (-want +got):\n%s", i, diff)
		}
		if got, want := s.Bytes(), set.wireBytes(); got != want {
			t.Errorf("sink %d: %d octets, want %d", i, got, want)
		}
	}
	cp, err := loopbackCopy(ctx, set, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	var stream int64
	for c := range 3 {
		for _, b := range set.takethisStream(c, 3) {
			stream += int64(len(b))
		}
	}
	if cp.bytes != 2*stream {
		t.Errorf("loopback copy moved %d octets, want %d", cp.bytes, 2*stream)
	}
}

// TestTimeSinks: the clock waits for every connection, and a feeder that
// exits with articles unsent is an error, not a hang.
func TestTimeSinks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sinks, err := startSinks(1)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSinks(sinks)
	set := newArticleSet(10, 2000, "ts", time.Now())
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		// Opens two connections, sends half the set on one, then exits.
		var ncs []net.Conn
		for range 2 {
			nc, err := net.Dial("tcp", sinks[0].Addr())
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			ncs = append(ncs, nc)
		}
		br := bufio.NewReader(ncs[0])
		if _, err := br.ReadString('\n'); err != nil {
			t.Error(err)
			return
		}
		var b bytes.Buffer
		for i := range 5 {
			fmt.Fprintf(&b, "TAKETHIS %s\r\n%s%s.\r\n", set.ids[i], set.heads[i], set.body)
		}
		ncs[0].Write(b.Bytes())
		for range 5 {
			if _, err := br.ReadString('\n'); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	m, err := timeSinks(ctx, sinks, 2, 10, exited, "half feeder")
	if err == nil || !strings.Contains(err.Error(), "articles unsent") {
		t.Errorf("err = %v, want articles unsent", err)
	}
	if m.articles != 5 {
		t.Errorf("counted %d articles, want 5", m.articles)
	}
}

// TestFeedQuick runs `newsbench feed -quick` end to end: newsfeed is
// built, stored into, run against the sinks, and (when INN can run here)
// innfeed too; the table and the ratio lines come out.
func TestFeedQuick(t *testing.T) {
	var out, log bytes.Buffer
	err := runFeed([]string{"-quick", "-timeout", "2m"}, &out, &log)
	if err != nil {
		t.Fatalf("newsbench feed -quick: %v\nstderr:\n%s", err, log.String())
	}
	t.Logf("stdout:\n%s", out.String())
	text := out.String()
	cases := []string{"feed-2k-1peer", "feed-500k-1peer", "feed-2k-4peer", "feed-500k-4peer"}
	for _, c := range cases {
		for _, f := range []string{"loopback copy (ceiling)", "go sender -> sink (ceiling)", "newsfeed goroutine"} {
			if !strings.Contains(text, fmt.Sprintf("%s  ", c)) || !strings.Contains(text, f) {
				t.Errorf("no %q row for %s", f, c)
			}
		}
	}
	innErr := inntest.Available()
	for _, c := range cases {
		has := strings.Contains(text, "ratio "+c+" art_per_s ")
		if innErr == nil && !has {
			t.Errorf("INN is available but there is no ratio line for %s", c)
		}
		if innErr != nil && has {
			t.Errorf("INN is not available (%v) but there is a ratio line for %s", innErr, c)
		}
	}
	if innErr != nil && !strings.Contains(text, innfeedSkipped) {
		t.Errorf("INN is not available (%v) and the output does not say innfeed was skipped", innErr)
	}
	if !epollAvailable() && !strings.Contains(text, "epoll: not available in this build") {
		t.Error("epoll is not available and the output does not say so")
	}
}

// TestFeedIdle runs `newsbench feed -idle` with a few connections: a row
// per runtime (epoll when this build has it) with a figure per connection.
func TestFeedIdle(t *testing.T) {
	var out, log bytes.Buffer
	if err := runFeed([]string{"-idle", "50", "-no-inn"}, &out, &log); err != nil {
		t.Fatalf("newsbench feed -idle: %v\nstderr:\n%s", err, log.String())
	}
	t.Logf("stdout:\n%s", out.String())
	want := []string{runtimeGo}
	if epollAvailable() {
		want = append(want, runtimeEpoll)
	}
	var got []string
	for _, l := range strings.Split(out.String(), "\n") {
		f := strings.Fields(l)
		if len(f) == 5 && f[1] == "50" {
			if _, err := strconv.ParseFloat(f[4], 64); err != nil {
				t.Errorf("row %q: KB per connection %q is not a number", l, f[4])
			}
			got = append(got, f[0])
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runtimes measured (-want +got):\n%s", diff)
	}
}

// TestFeedBacklogSpills runs newsbench feed -backlog at a small N with a
// small memory queue: while the peer is down, newsfeed (a child process)
// must spill what its memory queue cannot hold to backlog files and keep
// its resident set within 64 MB, and the backlog must reach
// the peer in full when it returns (backlogOnce fails otherwise).
func TestFeedBacklogSpills(t *testing.T) {
	var out, log bytes.Buffer
	if err := runFeed([]string{"-backlog", "3000", "-backlog-queue", "64", "-timeout", "2m"}, &out, &log); err != nil {
		t.Fatalf("newsbench feed -backlog: %v\n%s", err, log.Bytes())
	}
	seen := 0
	for _, l := range strings.Split(out.String(), "\n") {
		var name string
		var rss, backlog float64
		if _, err := fmt.Sscanf(l, "backlog %s peak_rss_mb %g backlog_mb %g", &name, &rss, &backlog); err != nil {
			continue
		}
		seen++
		if backlog <= 0 {
			t.Errorf("%s: no backlog files while the peer was down: the memory queue did not spill", name)
		}
		if rss > 64 {
			t.Errorf("%s: newsfeed's peak VmRSS %.1f MB while the peer was down, want at most 64", name, rss)
		}
	}
	if seen == 0 {
		t.Fatalf("no backlog figures in the output:\n%s", out.Bytes())
	}
}

// TestFeedChain runs newsbench feed -chain at a small N: innfeed must get
// every article to the sink both directly and through newsfeed (each
// runtime), and the ratio line must be there.
func TestFeedChain(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skipf("INN's innfeed is needed for the relay chain: %v", err)
	}
	var out, log bytes.Buffer
	if err := runFeed([]string{"-chain", "300", "-rounds", "1", "-timeout", "2m"}, &out, &log); err != nil {
		t.Fatalf("newsbench feed -chain: %v\n%s", err, log.Bytes())
	}
	t.Logf("stdout:\n%s", out.String())
	text := out.String()
	paths := []string{chainDirect, chainGo}
	if epollAvailable() {
		paths = append(paths, chainEpoll)
	}
	for _, p := range paths {
		row := false
		for _, l := range strings.Split(text, "\n") {
			_, rest, ok := strings.Cut(l, "chain-2k  "+p+"  ")
			if f := strings.Fields(rest); ok && len(f) > 0 && f[0] == "300" {
				row = true
			}
		}
		if !row {
			t.Errorf("no row of 300 articles for %q", p)
		}
	}
	var ratio float64
	found := false
	for _, l := range strings.Split(text, "\n") {
		if _, err := fmt.Sscanf(l, "ratio chain-2k time %g", &ratio); err == nil {
			found = true
		}
	}
	if !found || ratio <= 0 {
		t.Errorf("no positive 'ratio chain-2k time' line (found %v, %g)", found, ratio)
	}
}

// TestPushTimed: every article of the set reaches the sink once, and each
// gets one latency, none negative.
func TestPushTimed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set := newArticleSet(101, 3000, "t", time.Now())
	s, err := nullpeer.Listen("127.0.0.1:0", nullpeer.Options{RecordIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lats, err := pushTimed(ctx, s.Addr(), set, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(lats) != set.len() {
		t.Errorf("%d latencies, want %d", len(lats), set.len())
	}
	for _, l := range lats {
		if l < 0 {
			t.Errorf("negative latency %v", l)
		}
	}
	if got, want := s.Bytes(), set.wireBytes(); got != want {
		t.Errorf("sink: %d octets, want %d", got, want)
	}
}

// TestFeedLatency runs -latency on small sets: a row per server and size,
// and the ratio lines against innd.
func TestFeedLatency(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skipf("INN's innd is needed for -latency: %v", err)
	}
	var out, log bytes.Buffer
	if err := runFeed([]string{"-latency", "-small", "200", "-large", "20", "-rounds", "1", "-timeout", "2m"}, &out, &log); err != nil {
		t.Fatalf("newsbench feed -latency: %v\n%s", err, log.Bytes())
	}
	t.Logf("stdout:\n%s", out.String())
	text := out.String()
	servers := []string{latINN, latGo}
	if epollAvailable() {
		servers = append(servers, latEpoll)
	}
	for _, c := range []string{"latency-2k  ", "latency-500k"} {
		for _, srv := range servers {
			if !strings.Contains(text, c+"  "+srv+"  ") {
				t.Errorf("no row for %s %s", c, srv)
			}
		}
	}
	for _, r := range []string{"ratio latency-2k p50 ", "ratio latency-2k p99 ", "ratio latency-500k p50 ", "ratio latency-500k p99 "} {
		if !strings.Contains(text, r) {
			t.Errorf("no %q line", r)
		}
	}
}
