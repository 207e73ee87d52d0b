package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/newsflow/newsflow/runtime/newsfeed"
)

// Options tune a Node beyond its configuration.
type Options struct {
	Logger *slog.Logger
	// StopTimeout bounds the graceful end of connections (default 5s).
	StopTimeout time.Duration
	// Now is the clock of the peer connections (default time.Now).
	Now func() time.Time
	// BackoffBase is the first reconnect delay of a peer connection
	// (growing to the peer's reconnect_max); 250ms when zero.
	BackoffBase time.Duration
}

// Node is one newsfeed node of a cluster: an ingest listener storing into
// JetStream and, per peer, connections pulling from the peer's queue.
type Node struct {
	cfg   *newsfeed.Config
	cc    *newsfeed.ClusterConfig
	opts  Options
	log   *slog.Logger
	nc    *nats.Conn
	pubNC []*nats.Conn // the articles' publishes: one per NATS server given
	store *Store
	peers []*peer

	ln      net.Listener
	adminLn net.Listener
	started time.Time // set by Open: Status reads it from any goroutine, also before Run

	ingest ingestStats
	wg     sync.WaitGroup

	mu      sync.Mutex
	inConns map[*inConn]struct{}
}

// ingestStats count what the node's ingest did.
type ingestStats struct {
	conns, open, accepted, duplicate, refused, deferred, rejected, denied atomic.Int64
	bytes                                                                 atomic.Int64
}

// Open connects to NATS, creates or joins the cluster's streams, bucket
// and peer queues, and opens the ingest (and admin) listeners. cfg.Cluster
// must be set.
func Open(ctx context.Context, cfg *newsfeed.Config, opts Options) (*Node, error) {
	cc := cfg.Cluster
	if cc == nil {
		return nil, errors.New("cluster: configuration has no [cluster] table")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = 250 * time.Millisecond
	}
	n := &Node{cfg: cfg, cc: cc, opts: opts, log: opts.Logger.With("node", cc.Node), inConns: map[*inConn]struct{}{}, started: time.Now()}
	var err error
	n.nc, err = Connect(ConnectOptions{URLs: cc.NATS, Name: "newsfeed " + cc.Node, CredsFile: cc.CredsFile, CAFile: cc.CAFile, Log: n.log})
	if err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n.store, err = OpenStore(octx, n.nc, Settings{
		Name: cc.Name, Node: cc.Node, Shards: cc.Shards, Replicas: cc.Replicas,
		History: cfg.HistoryRetention.D(), MaxAge: cfg.SpoolMaxAge.D(),
		ReserveTTL: cc.ReserveTTL.D(), AckWait: cc.AckWait.D(),
	})
	if err != nil {
		n.closeNATS()
		return nil, err
	}
	// One publishing connection per NATS server given, each preferring
	// its own: a shard's heads go to the one whose server leads the
	// shard's stream (Store.PublishOn).
	for i := range cc.NATS {
		var nc *nats.Conn
		nc, err = Connect(ConnectOptions{URLs: preferring(cc.NATS, i), InOrder: true, Name: "newsfeed " + cc.Node + " publish " + strconv.Itoa(i+1),
			CredsFile: cc.CredsFile, CAFile: cc.CAFile, Log: n.log})
		if err != nil {
			break
		}
		n.pubNC = append(n.pubNC, nc)
	}
	if err == nil {
		err = n.store.PublishOn(octx, n.pubNC...)
	}
	if err != nil {
		n.closeNATS()
		return nil, err
	}
	for i := range cfg.Peers {
		p, err := newPeer(octx, n, &cfg.Peers[i])
		if err != nil {
			n.closeNATS()
			return nil, err
		}
		n.peers = append(n.peers, p)
	}
	if err := os.MkdirAll(cfg.Spool, 0o755); err != nil {
		n.closeNATS()
		return nil, fmt.Errorf("cluster: spool: %w", err)
	}
	n.ln, err = net.Listen("tcp", cfg.Listen)
	if err != nil {
		n.closeNATS()
		return nil, fmt.Errorf("cluster: listen: %w", err)
	}
	if cfg.Admin != "" {
		n.adminLn, err = net.Listen("tcp", cfg.Admin)
		if err != nil {
			n.ln.Close()
			n.closeNATS()
			return nil, fmt.Errorf("cluster: admin listen: %w", err)
		}
	}
	return n, nil
}

// Addr is the ingest listener's address.
func (n *Node) Addr() net.Addr { return n.ln.Addr() }

// AdminAddr is the admin listener's address, nil without one.
func (n *Node) AdminAddr() net.Addr {
	if n.adminLn == nil {
		return nil
	}
	return n.adminLn.Addr()
}

// Run serves until ctx ends, then stops gracefully: ingest connections
// finish what they owe, peer connections give back what they hold (it is
// redelivered to any node).
func (n *Node) Run(ctx context.Context) error {
	n.writeAddrFile()
	defer os.Remove(newsfeed.AddrFile(n.cfg.Spool))
	n.log.Info("cluster node running", "listen", n.Addr().String(), "nats", n.nc.ConnectedUrlRedacted(),
		"peers", len(n.peers), "shards", n.cc.Shards, "replicas", n.cc.Replicas)
	pctx, stopPeers := context.WithCancel(context.WithoutCancel(ctx))
	for _, p := range n.peers {
		p.start(pctx)
	}
	if n.adminLn != nil {
		go n.serveAdmin(n.adminLn)
	}
	stats := time.NewTicker(n.cfg.StatsInterval.D())
	defer stats.Stop()
	go func() {
		for {
			select {
			case <-stats.C:
				n.logStats()
				// Stream leaders move (a server died, stepped down).
				n.store.Place(ctx)
			case <-ctx.Done():
				return
			}
		}
	}()
	ictx, stopIngest := context.WithCancel(context.WithoutCancel(ctx))
	acceptDone := make(chan struct{})
	go func() { n.acceptLoop(ictx, n.ln); close(acceptDone) }()
	<-ctx.Done()
	n.log.Info("stopping")
	n.ln.Close()
	n.stopIngest()
	stopIngest()
	<-acceptDone
	var stopping sync.WaitGroup
	for _, p := range n.peers {
		stopping.Add(1)
		go func() { defer stopping.Done(); p.stop() }()
	}
	stopping.Wait()
	stopPeers()
	n.wg.Wait()
	if n.adminLn != nil {
		n.adminLn.Close()
	}
	n.logStats()
	// The last acks and naks are publishes: flush them, then close.
	// (Drain would wait for the pull subscriptions' own timeouts, up to
	// 30 s: TestCluster's graceful stops took a minute with it.)
	n.nc.FlushTimeout(5 * time.Second)
	n.closeNATS()
	return nil
}

// now reads the node's clock.
func (n *Node) now() time.Time { return n.opts.Now() }

// peer returns the peer named name.
func (n *Node) peer(name string) (*peer, error) {
	for _, p := range n.peers {
		if p.cfg.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("cluster: no peer %q", name)
}

// Kick ends the reconnect wait of the peer's connections on this node,
// with their backoff back at its base, as `newsfeed ctl kick` does for a
// relay's.
func (n *Node) Kick(name string) (string, error) {
	p, err := n.peer(name)
	if err != nil {
		return "", err
	}
	k := p.kick()
	n.log.Info("peer kicked: connections that wait connect now", "peer", name, "waiting", k)
	return fmt.Sprintf("peer %s kicked: %d connection(s) were waiting to reconnect", name, k), nil
}

// Pause stops this node's connections to the peer from pulling new
// entries (those pulled are still offered); the peer's queue keeps
// growing, and other nodes go on feeding it.
func (n *Node) Pause(name string) (string, error) {
	p, err := n.peer(name)
	if err != nil {
		return "", err
	}
	if !p.setPaused(true) {
		return "peer " + name + " was paused already", nil
	}
	n.log.Info("peer paused: its entries wait in its queue", "peer", name)
	return "peer " + name + " paused", nil
}

// Resume undoes Pause.
func (n *Node) Resume(name string) (string, error) {
	p, err := n.peer(name)
	if err != nil {
		return "", err
	}
	if !p.setPaused(false) {
		return "peer " + name + " was not paused", nil
	}
	n.log.Info("peer resumed", "peer", name)
	return "peer " + name + " resumed", nil
}

// connect opens another NATS connection of the node's, named for what
// it carries.
func (n *Node) connect(what string) (*nats.Conn, error) {
	cc := n.cc
	return Connect(ConnectOptions{URLs: cc.NATS, Name: "newsfeed " + cc.Node + " " + what, CredsFile: cc.CredsFile, CAFile: cc.CAFile, Log: n.log})
}

// closeNATS closes the node's NATS connections (a node that was opened and
// is not run: its peer connections' too).
func (n *Node) closeNATS() {
	n.nc.Close()
	for _, nc := range n.pubNC {
		nc.Close()
	}
	for _, p := range n.peers {
		for _, c := range p.conns {
			if nc := c.nc.Load(); nc != nil {
				nc.Close()
			}
		}
	}
}

// writeAddrFile tells `newsfeed status` and `newsfeed inject` where the
// node listens (newsfeed.ReadAddrs reads it).
func (n *Node) writeAddrFile() {
	text := "listen=" + n.Addr().String() + "\n"
	if a := n.AdminAddr(); a != nil {
		text += "admin=" + a.String() + "\n"
	}
	if err := os.WriteFile(newsfeed.AddrFile(n.cfg.Spool), []byte(text), 0o644); err != nil {
		n.log.Warn("cannot write the address file", "err", err)
	}
}

// acceptLoop accepts upstream connections until ln closes.
func (n *Node) acceptLoop(ctx context.Context, ln net.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return
			}
			n.log.Warn("ingest accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
			if a, ok := netip.AddrFromSlice(ta.IP); !ok || !n.cfg.Allowed(a) {
				n.ingest.denied.Add(1)
				n.log.Warn("ingest connection denied (not in allow)", "remote", nc.RemoteAddr().String())
				nc.SetWriteDeadline(time.Now().Add(time.Second))
				nc.Write([]byte("502 Access denied\r\n"))
				nc.Close()
				continue
			}
		}
		n.ingest.conns.Add(1)
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.serveIngest(ctx, nc)
		}()
	}
}

// route is the masterfeed: the peers that want an article.
func (n *Node) route(id string, groups []string, path string, size int64) []string {
	var names []string
	for _, p := range n.peers {
		if newsfeed.Wants(&p.patterns, p.cfg, &p.skips, id, groups, path, size) {
			names = append(names, p.cfg.Name)
		}
	}
	return names
}
