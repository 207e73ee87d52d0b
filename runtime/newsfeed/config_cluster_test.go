package newsfeed

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

func TestClusterConfig(t *testing.T) {
	cfg, err := ParseConfig("c.toml", []byte(`spool = "/x"
[cluster]
nats = ["nats://10.0.0.1:4222", "nats://10.0.0.2:4222"]
node = "feed-a"
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &ClusterConfig{NATS: []string{"nats://10.0.0.1:4222", "nats://10.0.0.2:4222"}, Node: "feed-a", Replicas: 3,
		Name: "newsflow", Shards: DefaultClusterShards, AckWait: tomlconf.Duration(DefaultAckWait), ReserveTTL: tomlconf.Duration(DefaultReserveTTL)}
	if diff := cmp.Diff(want, cfg.Cluster); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if c, _ := ParseConfig("c.toml", []byte("spool = \"/x\"\n")); c.Cluster != nil {
		t.Errorf("no [cluster] table, yet Cluster = %+v", c.Cluster)
	}
}

func TestClusterConfigErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"[cluster]\nnode = \"a\"\n", "c.toml:3: cluster.nats: missing"},
		{"[cluster]\nnats = [\"nats://h:4222\"]\n", "cluster.node: missing"},
		{"[cluster]\nnats = [\"nats://h:4222\"]\nnode = \"a b\"\n", `cluster.node: "a b"`},
		{"[cluster]\nnats = [\"nats://h:4222\"]\nnode = \"a\"\nreplicas = 7\n", "c.toml:5: cluster.replicas: must be 1..5 (got 7)"},
		{"[cluster]\nnats = [\"nats://h:4222\"]\nnode = \"a\"\nshards = 0\n", "cluster.shards: must be 1..1024"},
		{"[cluster]\nnats = [\"nats://h:4222\"]\nnode = \"a\"\nack_wait = \"10ms\"\n", "cluster.ack_wait: must be at least 1s"},
		{"[cluster]\nnats = [\"nats://h:4222\"]\nnode = \"a\"\nshard = 3\n", "shard"},
		{"[cluster]\nnats = [\"h\"]\nnode = \"a\"\n", `cluster.nats: entry 1: "h" is not a URL`},
	} {
		_, err := ParseConfig("c.toml", []byte("spool = \"/x\"\n"+tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.text, err, tc.want)
		}
	}
}
