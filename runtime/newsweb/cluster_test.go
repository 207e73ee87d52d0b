package newsweb

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// startNATS runs a real NATS server with JetStream on loopback.
func startNATS(t *testing.T) string {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	t.Cleanup(ns.Shutdown)
	return ns.ClientURL()
}

// replica is one newsweb process of a cluster: its own service, caches
// and HTTP server, sharing through NATS.
func replica(t *testing.T, natsURL, newsAddr string) (*frontServer, *Federated) {
	t.Helper()
	c, err := NewCluster(context.Background(), ClusterOptions{URLs: []string{natsURL}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	svc := NewService(ServerConfig{Addr: newsAddr, Name: "news", Connections: 4}, ServiceOptions{Logger: testLogger(t)})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: testLogger(t), NoBackground: true, Cluster: c})
	srv := newFrontServer(t, New(fed, Options{Logger: testLogger(t)}))
	t.Cleanup(func() { srv.Close(); fed.Close(); c.Close() })
	return srv, fed
}

// Two replicas behind a load balancer: 200 concurrent views of one
// uncached article, spread over both, cost one ARTICLE (the lease's
// leader's); an article read through A costs nothing on B; a thread list
// fetched by A is B's too.
func TestClusterSharesAndCoalesces(t *testing.T) {
	natsURL := startNATS(t)
	news := newsServer(t, 5)
	release := make(chan struct{})
	blockArticles(news, release)
	a, _ := replica(t, natsURL, news.HostPort())
	b, _ := replica(t, natsURL, news.HostPort())

	const views = 200
	var wg sync.WaitGroup
	codes := make([]int, views)
	for i := range views {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		wg.Go(func() {
			resp, _ := get(t, srv.URL+"/api/articles/2@t")
			codes[i] = resp.StatusCode
		})
	}
	// The fetch is held at the news server until it has been asked.
	await(t, "the first ARTICLE", func() bool { return news.Count("ARTICLE") >= 1 })
	close(release)
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("view %d: %d", i, c)
		}
	}
	// Without the cluster each replica would fetch it once (2); the
	// lease makes it one.
	if n := news.Count("ARTICLE"); n != 1 {
		t.Errorf("200 views over two replicas cost %d ARTICLE commands, want 1", n)
	}

	before := news.Count("ARTICLE")
	get(t, a.URL+"/articles/3@t")
	_, page := get(t, b.URL+"/articles/3@t")
	if n := news.Count("ARTICLE") - before; n != 1 || !strings.Contains(page, "3@t") {
		t.Errorf("an article read through A, then B: %d ARTICLE commands, want 1", n)
	}

	get(t, a.URL+"/groups/misc.test")
	over := news.Count("OVER") + news.Count("XOVER") + news.Count("HDR")
	_, body := get(t, b.URL+"/api/groups/misc.test/threads")
	var list struct{ Articles int }
	json.Unmarshal([]byte(body), &list)
	if n := news.Count("OVER") + news.Count("XOVER") + news.Count("HDR") - over; n != 0 || list.Articles != 5 {
		t.Errorf("B's thread list after A's: %d overview commands, %d articles; want 0 and 5", n, list.Articles)
	}
}

// A leader that finds nothing shares nothing: the followers ask
// themselves and answer 404 too; nothing stays leased.
func TestClusterNotFound(t *testing.T) {
	natsURL := startNATS(t)
	news := newsServer(t, 1)
	a, fa := replica(t, natsURL, news.HostPort())
	b, _ := replica(t, natsURL, news.HostPort())
	for _, srv := range []*frontServer{a, b} {
		if resp, _ := get(t, srv.URL+"/api/articles/none@t"); resp.StatusCode != 404 {
			t.Errorf("missing article: %d", resp.StatusCode)
		}
	}
	if n := news.Count("ARTICLE"); n != 2 {
		t.Errorf("%d ARTICLE commands, want one per replica", n)
	}
	keys, err := fa.opts.Cluster.leases.Keys(context.Background())
	if !errors.Is(err, jetstream.ErrNoKeysFound) {
		t.Errorf("leases left: %v %v", keys, err)
	}
}

// A leader that dies holding the lease: the followers wait out the
// lease's TTL, then fetch themselves.
func TestClusterDeadLeader(t *testing.T) {
	natsURL := startNATS(t)
	news := newsServer(t, 2)
	c, err := NewCluster(context.Background(), ClusterOptions{URLs: []string{natsURL}, LeaseTTL: time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	svc := NewService(ServerConfig{Addr: news.HostPort(), Name: "news", Connections: 2}, ServiceOptions{Logger: testLogger(t)})
	fed := NewFederated([]*Service{svc}, FederatedOptions{Logger: testLogger(t), NoBackground: true, Cluster: c})
	defer fed.Close()
	// The lease of a replica that is gone.
	if _, err := c.leases.Create(context.Background(), kvKey("article", "<1@t>"), []byte("gone")); err != nil {
		t.Fatal(err)
	}
	a, err := fed.Article(context.Background(), "<1@t>")
	if err != nil || !strings.Contains(string(a.Raw), "<1@t>") {
		t.Fatalf("after a dead leader: %v", err)
	}
	if n := news.Count("ARTICLE"); n != 1 {
		t.Errorf("%d ARTICLE commands, want 1", n)
	}
}

// Another replica's whole fetch falls between this replica's miss in the
// shared bucket and its lease (seen once in a full test run: 2 ARTICLE for
// 200 views): the lease is won, but the result is there and is used.
func TestClusterLeaderFinishedBeforeLease(t *testing.T) {
	natsURL := startNATS(t)
	c, err := NewCluster(context.Background(), ClusterOptions{URLs: []string{natsURL}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	afterSharedMiss = func(key string) {
		if _, err := c.articles.Put(context.Background(), key, encodeArticle(Article{Server: "other", Raw: []byte("shared")})); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterSharedMiss = nil }()
	fetched := false
	a, err := c.Article(context.Background(), "<x@t>", func(ctx context.Context) (Article, error) {
		fetched = true
		return Article{MessageID: "<x@t>", Server: "me", Raw: []byte("mine")}, nil
	})
	if err != nil || fetched || string(a.Raw) != "shared" || a.Server != "other" {
		t.Errorf("got %+v, %v; fetched again: %v", a, err, fetched)
	}
}
