package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
)

// Status is a node's /status.json: the single-node relay's Status (so
// `newsfeed status` reads it as it is), with Queued per peer meaning the
// cluster's queue (entries waiting plus pulled and unanswered, over every
// node), plus the cluster's own part. The other counts are this node's:
// Offered its connections' offers (an entry deferred or given back is
// offered again), so they do not add up to it as a relay's do. TooOld and
// Lost stay 0: max_age is refused in cluster mode, and the queue has no
// backlog files to lose.
type Status struct {
	newsfeed.Status
	Cluster ClusterStatus `json:"cluster"`
}

// ClusterStatus is what a node sees of the cluster.
type ClusterStatus struct {
	Node     string `json:"node"`
	Shards   int    `json:"shards"`
	Replicas int    `json:"replicas"`
	// NATS is the connection's state ("CONNECTED", "RECONNECTING") and
	// Server the server it is connected to.
	NATS    string   `json:"nats"`
	Server  string   `json:"server,omitempty"`
	Servers []string `json:"servers"` // known servers (the cluster's)
	// Reconnects counts the reconnections of every NATS connection of
	// the node (its own, its publishes', its peer connections').
	Reconnects uint64 `json:"reconnects"`
	// RTT is the round trip to the server, "" when it does not answer.
	RTT string `json:"rtt,omitempty"`
	// Peers: the shared queue of each peer.
	Peers []QueueStatus `json:"peers"`
	// IngestRate and IngestBytes are this node's accepted articles per
	// second and octets since start.
	IngestRate  float64 `json:"ingest_rate"`
	IngestBytes int64   `json:"ingest_bytes"`
}

// QueueStatus is one peer's queue in JetStream.
type QueueStatus struct {
	Peer    string `json:"peer"`
	Waiting int    `json:"waiting"` // not yet pulled by any node
	Unacked int    `json:"unacked"` // pulled, not answered yet
	Error   string `json:"error,omitempty"`
}

// Status returns the node's counters and the cluster's queues now.
func (n *Node) Status(ctx context.Context) Status {
	secs := time.Since(n.started).Seconds()
	st := Status{Status: newsfeed.Status{
		PathHost: n.cfg.PathHost, Listen: n.Addr().String(), Started: n.started, Accepting: true,
		Ingest: newsfeed.IngestStats{
			Connections: n.ingest.conns.Load(), Open: n.ingest.open.Load(), Accepted: n.ingest.accepted.Load(),
			Refused: n.ingest.refused.Load() + n.ingest.duplicate.Load(), Deferred: n.ingest.deferred.Load(),
			Rejected: n.ingest.rejected.Load(), Denied: n.ingest.denied.Load(),
		},
	}}
	cs := &st.Cluster
	cs.Node, cs.Shards, cs.Replicas = n.cc.Node, n.cc.Shards, n.cc.Replicas
	cs.NATS = n.nc.Status().String()
	cs.Server = n.nc.ConnectedUrlRedacted()
	cs.Servers = n.nc.Servers()
	cs.Reconnects = n.nc.Stats().Reconnects
	for _, nc := range n.pubNC {
		cs.Reconnects += nc.Stats().Reconnects
	}
	if rtt, err := n.nc.RTT(); err == nil {
		cs.RTT = rtt.Round(time.Microsecond).String()
	}
	cs.IngestBytes = n.ingest.bytes.Load()
	if secs > 0 {
		cs.IngestRate = float64(st.Ingest.Accepted) / secs
	}
	for _, p := range n.peers {
		q := QueueStatus{Peer: p.cfg.Name}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		w, u, err := p.queue.Pending(qctx)
		cancel()
		if err != nil {
			q.Error = err.Error()
		}
		q.Waiting, q.Unacked = w, u
		cs.Peers = append(cs.Peers, q)
		ps := newsfeed.PeerStats{
			Name: p.cfg.Name, Offered: p.offered.Load(), Accepted: p.accepted.Load(), Refused: p.refused.Load(),
			Rejected: p.rejects.Load(), Dropped: p.dropped.Load(), Missing: p.missing.Load(), Deferred: p.deferrals.Load(), Resent: p.requeued.Load(),
			Queued: int64(w + u), Paused: p.paused.Load(), SkippedGroups: p.skips.Groups.Load(), SkippedPath: p.skips.Path.Load(), SkippedSize: p.skips.Size.Load(), SkippedHash: p.skips.Hash.Load(), AcceptedBytes: p.acceptedBytes.Load(), Seconds: secs,
		}
		if err != nil {
			ps.Queued = -1 // unknown: never "drained"
		}
		if secs > 0 {
			ps.Rate = float64(ps.Accepted) / secs
		}
		p.mu.Lock()
		for _, c := range p.conns {
			conn := newsfeed.ConnStatusOf(c.pc.Status())
			ps.Connections = append(ps.Connections, conn)
			if nc := c.nc.Load(); nc != nil {
				cs.Reconnects += nc.Stats().Reconnects
			}
			if conn.State == "feeding" {
				ps.ConnsUp++
			}
		}
		p.mu.Unlock()
		st.Peers = append(st.Peers, ps)
	}
	return st
}

// serveAdmin serves /status.json, /status (text) and /metrics
// (Prometheus text format) on ln, and Go's profiler under /debug/pprof/
// with pprof = true.
func (n *Node) serveAdmin(ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("/status.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(n.Status(r.Context()))
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		st := n.Status(r.Context())
		fmt.Fprintf(w, "%s\n", st.Cluster.Line())
		for _, p := range st.Peers {
			fmt.Fprintln(w, p.Line())
		}
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(n.Status(r.Context()).Metrics())
	})
	if n.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srv.Serve(ln)
}

// Line is the cluster's stats line.
func (c ClusterStatus) Line() string {
	var qs []string
	for _, q := range c.Peers {
		qs = append(qs, fmt.Sprintf("%s=%d+%d", q.Peer, q.Waiting, q.Unacked))
	}
	return fmt.Sprintf("cluster node %s nats %s server %s rtt %s ingest %.1f/s queues(waiting+unacked) %s",
		c.Node, c.NATS, c.Server, c.RTT, c.IngestRate, strings.Join(qs, " "))
}

// Metrics renders the status in Prometheus' text format.
func (st Status) Metrics() []byte {
	var b strings.Builder
	node := st.Cluster.Node
	up := 0
	if st.Cluster.NATS == "CONNECTED" {
		up = 1
	}
	fmt.Fprintf(&b, "# HELP newsfeed_cluster_nats_connected 1 while the node is connected to a NATS server.\n# TYPE newsfeed_cluster_nats_connected gauge\n")
	fmt.Fprintf(&b, "newsfeed_cluster_nats_connected{node=%q} %d\n", node, up)
	fmt.Fprintf(&b, "# HELP newsfeed_cluster_nats_reconnects_total Reconnections to NATS.\n# TYPE newsfeed_cluster_nats_reconnects_total counter\n")
	fmt.Fprintf(&b, "newsfeed_cluster_nats_reconnects_total{node=%q} %d\n", node, st.Cluster.Reconnects)
	fmt.Fprintf(&b, "# HELP newsfeed_cluster_queue_waiting Entries of a peer's queue not yet pulled by any node.\n# TYPE newsfeed_cluster_queue_waiting gauge\n")
	for _, q := range st.Cluster.Peers {
		fmt.Fprintf(&b, "newsfeed_cluster_queue_waiting{peer=%q} %d\n", q.Peer, q.Waiting)
	}
	fmt.Fprintf(&b, "# HELP newsfeed_cluster_queue_unacked Entries of a peer's queue pulled and not answered.\n# TYPE newsfeed_cluster_queue_unacked gauge\n")
	for _, q := range st.Cluster.Peers {
		fmt.Fprintf(&b, "newsfeed_cluster_queue_unacked{peer=%q} %d\n", q.Peer, q.Unacked)
	}
	fmt.Fprintf(&b, "# HELP newsfeed_ingest_accepted_total Articles this node stored and acknowledged.\n# TYPE newsfeed_ingest_accepted_total counter\n")
	fmt.Fprintf(&b, "newsfeed_ingest_accepted_total{node=%q} %d\n", node, st.Ingest.Accepted)
	fmt.Fprintf(&b, "# HELP newsfeed_ingest_bytes_total Octets this node stored.\n# TYPE newsfeed_ingest_bytes_total counter\n")
	fmt.Fprintf(&b, "newsfeed_ingest_bytes_total{node=%q} %d\n", node, st.Cluster.IngestBytes)
	fmt.Fprintf(&b, "# HELP newsfeed_peer_accepted_total Articles this node's connections got accepted by a peer.\n# TYPE newsfeed_peer_accepted_total counter\n")
	for _, p := range st.Peers {
		fmt.Fprintf(&b, "newsfeed_peer_accepted_total{node=%q,peer=%q} %d\n", node, p.Name, p.Accepted)
	}
	fmt.Fprintf(&b, "# HELP newsfeed_peer_deferred_total Deferrals (431/436) this node's connections got.\n# TYPE newsfeed_peer_deferred_total counter\n")
	for _, p := range st.Peers {
		fmt.Fprintf(&b, "newsfeed_peer_deferred_total{node=%q,peer=%q} %d\n", node, p.Name, p.Deferred)
	}
	fmt.Fprintf(&b, "# HELP newsfeed_peer_skipped_total Articles this node's masterfeed did not offer to the peer, by reason.\n# TYPE newsfeed_peer_skipped_total counter\n")
	for _, p := range st.Peers {
		for _, r := range []struct {
			reason string
			n      int64
		}{{"groups", p.SkippedGroups}, {"path", p.SkippedPath}, {"size", p.SkippedSize}, {"hashfeed", p.SkippedHash}} {
			fmt.Fprintf(&b, "newsfeed_peer_skipped_total{node=%q,peer=%q,reason=%q} %d\n", node, p.Name, r.reason, r.n)
		}
	}
	return []byte(b.String())
}

// logStats logs the cluster line and one line per peer.
func (n *Node) logStats() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st := n.Status(ctx)
	n.log.Info(st.Cluster.Line())
	for _, p := range st.Peers {
		n.log.Info("stats " + p.Line())
	}
}
