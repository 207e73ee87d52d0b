package newsfeed

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// TestPeerBindAddress: the relay's connections to a peer with
// bind_address leave from that address (Linux routes all of 127/8 to the
// loopback interface, so 127.0.0.2 is a second local address).
func TestPeerBindAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := make(chan string, 4)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
			from <- host
			nc.Write([]byte("400 not now\r\n"))
			nc.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := relayConfig(t, t.TempDir(), fmt.Sprintf("[[peer]]\nname = \"p\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 1\nbind_address = \"127.0.0.2\"\n", port))
	startRelay(t, cfg, nil)
	select {
	case got := <-from:
		if got != "127.0.0.2" {
			t.Errorf("the peer saw the relay connect from %s, want 127.0.0.2", got)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the relay did not connect within a minute")
	}
}

// TestPeerConfigKeys: the per-peer keys of the connection loop, their
// defaults and what is refused.
func TestPeerConfigKeys(t *testing.T) {
	base := "spool = \"/s\"\n[[peer]]\nname = \"p\"\nhost = \"127.0.0.1\"\n"
	tests := []struct {
		name, text string
		get        func(p *PeerConfig) any
		want       any
		err        string // part of the error, "" for none
	}{
		{name: "defaults", get: func(p *PeerConfig) any {
			return []any{p.BindAddress, p.NoCheck, p.NoCheckHigh, p.NoCheckLow, p.NoCheckFilter, p.MaxConnections, p.ExtraIdle.D()}
		}, want: []any{"", true, 95.0, 90.0, 50.0, 2, time.Minute}},
		{name: "bind IPv4", text: `bind_address = "192.0.2.7"`, get: func(p *PeerConfig) any { return p.BindAddress }, want: "192.0.2.7"},
		{name: "bind IPv6", text: `bind_address = "2001:db8::7"`, get: func(p *PeerConfig) any { return p.BindAddress }, want: "2001:db8::7"},
		{name: "bind a name", text: `bind_address = "relay.example"`, err: "peer[1].bind_address"},
		{name: "no_check off", text: "no_check = false", get: func(p *PeerConfig) any { return p.NoCheck }, want: false},
		{name: "thresholds", text: "no_check_high = 80.5\nno_check_low = 60\nno_check_filter = 10",
			get: func(p *PeerConfig) any { return []float64{p.NoCheckHigh, p.NoCheckLow, p.NoCheckFilter} }, want: []float64{80.5, 60, 10}},
		{name: "high over 100", text: "no_check_high = 101", err: "peer[1].no_check_high"},
		{name: "low over high", text: "no_check_high = 80\nno_check_low = 85", err: "peer[1].no_check_low"},
		{name: "filter under 1", text: "no_check_filter = 0.5", err: "peer[1].no_check_filter"},
		{name: "max_connections", text: "connections = 2\nmax_connections = 6", get: func(p *PeerConfig) any { return p.MaxConnections }, want: 6},
		{name: "max under connections", text: "connections = 4\nmax_connections = 2", err: "peer[1].max_connections"},
		{name: "extra_idle", text: `extra_idle = "30s"`, get: func(p *PeerConfig) any { return p.ExtraIdle.D() }, want: 30 * time.Second},
		{name: "extra_idle too short", text: `extra_idle = "10ms"`, err: "peer[1].extra_idle"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig("test.toml", []byte(base+tc.text+"\n"))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.get(&c.Peers[0]); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRelayNoCheckINN: a real innd wants every new article, so a
// connection with low no-CHECK thresholds goes over to TAKETHIS without
// CHECK (and innd takes them so), while one with no_check = false keeps
// asking with CHECK.
func TestRelayNoCheckINN(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	inn := inntest.Start(t, inntest.Options{})
	host, port, _ := strings.Cut(inn.Addr(), ":")
	for _, tc := range []struct {
		name, keys, mode string
	}{
		{"thresholds", "no_check_high = 60\nno_check_low = 50\nno_check_filter = 2\n", "takethis"},
		{"off", "no_check = false\nno_check_high = 60\nno_check_low = 50\nno_check_filter = 2\n", "streaming"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := fmt.Sprintf("[[peer]]\nname = \"inn\"\nhost = %q\nport = %s\nconnections = 1\npathname = %q\n%s", host, port, inn.PathHost(), tc.keys)
			h := startRelay(t, relayConfig(t, t.TempDir(), text), nil)
			var arts [][]byte
			var ids []string
			for i := range 30 {
				id := fmt.Sprintf("<nocheck%d.%s@relay.test>", i, tc.name)
				ids = append(ids, id)
				arts = append(arts, testArticle(id, "local.test", "origin.test!not-for-mail", 3))
			}
			if res := h.r.Inject(context.Background(), arts); res.Accepted != len(arts) {
				t.Fatalf("inject: %s", res)
			}
			h.settle()
			for _, id := range ids {
				if !inn.HasArticle(id) {
					t.Errorf("innd lacks %s", id)
				}
			}
			ps, _ := h.r.PeerStats("inn")
			if len(ps.Connections) != 1 || ps.Connections[0].Mode != tc.mode {
				t.Errorf("connections %+v; want one in mode %q", ps.Connections, tc.mode)
			}
		})
	}
}

// TestDynamicConnections: with max_connections above connections, a peer
// that is slow to answer gets another connection each time articles waited
// beyond what the open ones hold at two looks a second apart (on the
// relay's clock, which the test moves), never more than max_connections;
// once the queue is drained, the extra connections close after extra_idle
// with nothing to send.
func TestDynamicConnections(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	var tick atomic.Int64 // seconds since t0
	now := func() time.Time { return t0.Add(time.Duration(tick.Load()) * time.Second) }
	sink := nntptest.Start(t, nntptest.Options{})
	sink.AddFault(nntptest.Fault{Cmd: "CHECK", Delay: 20 * time.Millisecond})
	text := fmt.Sprintf("[[peer]]\nname = \"p\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 1\nmax_connections = 3\nwindow = 2\nextra_idle = \"1s\"\n", sink.Port())
	h := startRelay(t, relayConfig(t, t.TempDir(), text), func(o *Options) { o.Now = now })
	var arts [][]byte
	for i := range 400 {
		arts = append(arts, testArticle(fmt.Sprintf("<dyn%d@relay.test>", i), "local.test", "origin.test!not-for-mail", 3))
	}
	if res := h.r.Inject(context.Background(), arts); res.Accepted != len(arts) {
		t.Fatalf("inject: %s", res)
	}
	p := h.r.peerList()[0]
	conns := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.conns)
	}
	// Each second a look; another connection at every second look while
	// work waits, up to three.
	var got []int
	for s := int64(1); s <= 7; s++ {
		tick.Store(s)
		p.scale(now())
		got = append(got, conns())
	}
	if diff := cmp.Diff([]int{1, 2, 2, 3, 3, 3, 3}, got); diff != "" {
		t.Errorf("connections after each look (-want +got):\n%s", diff)
	}
	h.settle()
	if n := sink.Conns(); n != 3 {
		t.Errorf("the peer saw %d connections, want 3", n)
	}
	// Idle: the extra connections close after extra_idle on the relay's
	// clock; the floor stays.
	tick.Add(2)
	waitFor(t, time.Minute, "the extra connections to close", func() bool {
		p.scale(now())
		return conns() == 1 && sink.OpenConns() == 1
	}, h.r.StatsLines)
	if n := sink.Conns(); n != 3 {
		t.Errorf("the peer saw %d connections in all, want 3", n)
	}
}

// TestPeerBindAddressINN: innd takes a feed only from the hosts its
// incoming.conf lists. With only 127.0.0.2 listed, a relay whose peer has
// bind_address = "127.0.0.2" feeds it; without it the relay connects from
// 127.0.0.1, which innd does not take as a feeder, and nothing arrives.
func TestPeerBindAddressINN(t *testing.T) {
	if err := inntest.Available(); err != nil {
		t.Skip(err)
	}
	inn := inntest.Start(t, inntest.Options{Peers: []inntest.Peer{{Name: "relay", Hosts: []string{"127.0.0.2"}}}})
	host, port, _ := strings.Cut(inn.Addr(), ":")
	for _, tc := range []struct {
		name, keys string
		arrive     bool
	}{
		{"bound", "bind_address = \"127.0.0.2\"\n", true},
		{"unbound", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := fmt.Sprintf("[[peer]]\nname = \"inn\"\nhost = %q\nport = %s\nconnections = 1\npathname = %q\n%s", host, port, inn.PathHost(), tc.keys)
			h := startRelay(t, relayConfig(t, t.TempDir(), text), nil)
			id := fmt.Sprintf("<bind.%s@relay.test>", tc.name)
			if res := h.r.Inject(context.Background(), [][]byte{testArticle(id, "local.test", "origin.test!not-for-mail", 3)}); res.Accepted != 1 {
				t.Fatalf("inject: %s", res)
			}
			if tc.arrive {
				h.settle()
				if !inn.HasArticle(id) {
					t.Errorf("innd lacks %s fed from 127.0.0.2", id)
				}
				return
			}
			// innd answers a host it does not list with 502 (or hands it
			// to nnrpd, which has no IHAVE/TAKETHIS for it): the article
			// stays queued and the connection reports the error.
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				ps, _ := h.r.PeerStats("inn")
				if len(ps.Connections) > 0 && ps.Connections[0].LastErr != "" {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if inn.HasArticle(id) {
				t.Errorf("innd took %s from 127.0.0.1, which its incoming.conf does not list", id)
			}
			ps, _ := h.r.PeerStats("inn")
			if ps.Accepted != 0 || len(ps.Connections) == 0 || ps.Connections[0].LastErr == "" {
				t.Errorf("unbound relay: accepted %d, connections %+v; want nothing accepted and an error", ps.Accepted, ps.Connections)
			}
		})
	}
}

// TestPeerComesBackTogether: when one of a peer's connections gets
// through after an outage, the others end their reconnect backoff and
// connect too, without ctl kick. The backoff here is an hour; connection
// 1's retry comes first because the test kicks it alone.
func TestPeerComesBackTogether(t *testing.T) {
	sink := nntptest.Start(t, nntptest.Options{})
	px := startCutProxy(t, sink.HostPort())
	px.refuse.Store(true) // the peer is down: connections closed at once
	text := fmt.Sprintf("[[peer]]\nname = \"p\"\nhost = \"127.0.0.1\"\nport = %d\nconnections = 3\nreconnect_max = \"1h\"\n", px.port())
	h := startRelay(t, relayConfig(t, t.TempDir(), text), func(o *Options) { o.BackoffBase = time.Hour })
	p := h.r.peerList()[0]
	states := func() string {
		ps, _ := h.r.PeerStats("p")
		var s []string
		for _, c := range ps.Connections {
			s = append(s, c.State)
		}
		return strings.Join(s, " ")
	}
	waitFor(t, time.Minute, "every connection to wait", func() bool { return states() == "waiting waiting waiting" }, states)

	px.refuse.Store(false)
	p.mu.Lock()
	first := p.conns[0].pc
	p.mu.Unlock()
	first.Kick()
	waitFor(t, time.Minute, "every connection to feed", func() bool { return states() == "feeding feeding feeding" }, states)
	if n := sink.Conns(); n != 3 {
		t.Errorf("the peer saw %d connections, want 3 (one each)", n)
	}
}
