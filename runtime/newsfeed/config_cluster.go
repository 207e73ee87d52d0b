package newsfeed

import (
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// ClusterConfig is the [cluster] table: newsfeed as one node of several
// that share one history, one article store and one queue per peer, all
// kept by a NATS JetStream cluster (see package runtime/newsfeed/cluster).
type ClusterConfig struct {
	// NATS lists the servers' URLs ("nats://10.0.0.1:4222"); the client
	// connects to any and learns the others.
	NATS []string `toml:"nats"`
	// Node names this newsfeed node, unique in the cluster.
	Node string `toml:"node"`
	// Replicas is the JetStream replica count of every stream and bucket
	// (1, 3 or 5; 3 survives the loss of one NATS server).
	Replicas int `toml:"replicas"`
	// Name prefixes the streams and buckets (default "newsflow"), so
	// several clusters can share one NATS cluster.
	Name string `toml:"name"`
	// Shards is the number of article streams (MD5(message-id) mod
	// shards, Diablo's hashfeed); each has its own RAFT leader.
	Shards int `toml:"shards"`
	// CredsFile and CAFile: NATS credentials and the roots that verify the
	// servers' TLS certificates.
	CredsFile string `toml:"creds_file"`
	CAFile    string `toml:"ca_file"`
	// AckWait is how long a pulled queue entry may stay unanswered before
	// JetStream gives it to another connection (a dead node's work).
	AckWait tomlconf.Duration `toml:"ack_wait"`
	// ReserveTTL is how long a history reservation lives when the node
	// that made it never completes it (it crashed): the article can then
	// be taken again.
	ReserveTTL tomlconf.Duration `toml:"reserve_ttl"`
}

// Defaults of [cluster].
const (
	DefaultClusterName   = "newsflow"
	DefaultClusterShards = 4
	DefaultAckWait       = 30 * time.Second
	DefaultReserveTTL    = 30 * time.Second
)

func (cc *ClusterConfig) applyDefaults(c *Config) {
	has := func(k string) bool { return c.Has("cluster." + k) }
	if !has("replicas") {
		cc.Replicas = 3
	}
	if !has("name") {
		cc.Name = DefaultClusterName
	}
	if !has("shards") {
		cc.Shards = DefaultClusterShards
	}
	if !has("ack_wait") {
		cc.AckWait = tomlconf.Duration(DefaultAckWait)
	}
	if !has("reserve_ttl") {
		cc.ReserveTTL = tomlconf.Duration(DefaultReserveTTL)
	}
}

func (cc *ClusterConfig) check(c *Config) []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		err := c.errAt("cluster."+key, format, args...).(*ConfigError)
		if err.Line == 0 {
			// An absent key: at the table's first key (go-toml's index
			// holds no line for a plain table header).
			for k, l := range c.keys {
				if strings.HasPrefix(k, "cluster.") && (err.Line == 0 || l < err.Line) {
					err.Line = l
				}
			}
		}
		errs = append(errs, err)
	}
	if len(cc.NATS) == 0 {
		bad("nats", "missing: list the NATS servers (\"nats://host:4222\")")
	}
	for i, u := range cc.NATS {
		if pu, err := url.Parse(u); err != nil || pu.Host == "" {
			bad("nats", "entry %d: %q is not a URL like \"nats://host:4222\"", i+1, u)
		}
	}
	if cc.Node == "" {
		bad("node", "missing: every node needs a unique name")
	} else if !validPeerName(cc.Node) {
		bad("node", "%q: use letters, digits, '.', '-', '_'", cc.Node)
	}
	if cc.Replicas < 1 || cc.Replicas > 5 {
		bad("replicas", "must be 1..5 (got %d)", cc.Replicas)
	}
	if !validPeerName(cc.Name) {
		bad("name", "%q: use letters, digits, '-', '_'", cc.Name)
	}
	if cc.Shards < 1 || cc.Shards > 1024 {
		bad("shards", "must be 1..1024 (got %d)", cc.Shards)
	}
	for _, f := range []struct{ key, v string }{{"creds_file", cc.CredsFile}, {"ca_file", cc.CAFile}} {
		if f.v != "" {
			if _, err := os.Stat(f.v); err != nil {
				bad(f.key, "%v", err)
			}
		}
	}
	if cc.AckWait.D() < time.Second {
		bad("ack_wait", "must be at least 1s (got %s)", cc.AckWait.D())
	}
	if cc.ReserveTTL.D() < time.Second {
		bad("reserve_ttl", "must be at least 1s (got %s)", cc.ReserveTTL.D())
	}
	for i := range c.Peers {
		if n := c.Peers[i].Name; len(n) > 0 && !validSubjectToken(n) {
			bad("node", "peer[%s] name %q cannot name a NATS subject (no '.')", strconv.Itoa(i+1), n)
		}
	}
	return errs
}

// validSubjectToken: a peer's name is one token of its queue's subject.
func validSubjectToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' || s[i] == '*' || s[i] == '>' || s[i] == ' ' {
			return false
		}
	}
	return true
}
