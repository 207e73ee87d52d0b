package newsweb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// Replicas: several newsweb processes behind a load balancer share the
// article cache and the thread-list cache through NATS JetStream key-value
// buckets, and coalesce a fetch across replicas, so that N replicas cost
// the news servers about what one does.
//
//	newsweb_articles  message-id hash -> the article (TTL: cache.article)
//	newsweb_threads   group hash      -> the thread list (TTL: cache.threads)
//	newsweb_leases    kind:key hash   -> the replica fetching it (TTL: the fetch timeout)
//
// A replica that misses its own cache looks in the shared bucket; on a
// miss there it tries to create the lease key of the fetch. Create is
// atomic: the one that succeeds is the leader and fetches from the news
// servers, puts the result in the shared bucket, then deletes the lease.
// The others watch the result key and the lease: the result arriving is
// their answer; the lease going without a result (the leader found
// nothing, or failed) or not going within the fetch timeout (the leader
// died; the lease's TTL ends it) makes them fetch themselves, so a
// replica's failure costs time, never an answer. Within a replica the
// usual singleflight comes first, so one replica asks the cluster once
// per key. Not-found answers are not shared; values over the bucket's
// largest value (MaxValueBytes; NATS's max_payload) are not shared either.

// Defaults of the cluster.
const (
	DefaultClusterValueBytes = 1 << 20 // largest shared value
	clusterLeaseTTL          = 30 * time.Second
)

// ClusterOptions configure a Cluster.
type ClusterOptions struct {
	URLs []string // NATS servers (nats://host:port)
	// ArticleTTL and ThreadsTTL are the shared caches' lifetimes (the
	// article and threads cache TTLs; machine/reader's defaults when 0).
	ArticleTTL, ThreadsTTL time.Duration
	// LeaseTTL bounds a fetch: a follower waits this long for a leader
	// (clusterLeaseTTL when 0).
	LeaseTTL time.Duration
	// MaxValueBytes is the largest value shared (DefaultClusterValueBytes
	// when 0).
	MaxValueBytes int
	Logger        *slog.Logger
}

// Cluster is a replica's view of the shared caches.
type Cluster struct {
	nc       *nats.Conn
	ownConn  bool
	articles jetstream.KeyValue
	threads  jetstream.KeyValue
	leases   jetstream.KeyValue
	opts     ClusterOptions
	log      *slog.Logger
	id       string // this replica, as written in its leases
}

// NewCluster connects to NATS and opens (creating when missing) the
// shared buckets.
func NewCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	if len(opts.URLs) == 0 {
		return nil, errors.New("newsweb: cluster: no NATS servers")
	}
	url := opts.URLs[0]
	for _, u := range opts.URLs[1:] {
		url += "," + u
	}
	nc, err := nats.Connect(url, nats.Name("newsweb"), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("newsweb: cluster: connecting to %s: %w", url, err)
	}
	c, err := newCluster(ctx, nc, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c.ownConn = true
	return c, nil
}

func newCluster(ctx context.Context, nc *nats.Conn, opts ClusterOptions) (*Cluster, error) {
	defaults := mreader.CacheConfig{}.WithDefaults()
	if opts.ArticleTTL <= 0 {
		opts.ArticleTTL = defaults.Article
	}
	if opts.ThreadsTTL <= 0 {
		opts.ThreadsTTL = defaults.Threads
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = clusterLeaseTTL
	}
	if opts.MaxValueBytes <= 0 {
		opts.MaxValueBytes = DefaultClusterValueBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("newsweb: cluster: %w", err)
	}
	c := &Cluster{nc: nc, opts: opts, log: opts.Logger, id: nc.Opts.Name + "-" + nats.NewInbox()[7:]}
	// The largest value NATS carries bounds what is shared.
	if mp := int(nc.MaxPayload()); mp > 0 && opts.MaxValueBytes > mp-1024 {
		c.opts.MaxValueBytes = mp - 1024
	}
	for _, b := range []struct {
		kv  *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&c.articles, jetstream.KeyValueConfig{Bucket: "newsweb_articles", TTL: opts.ArticleTTL, Description: "newsweb: shared article cache"}},
		{&c.threads, jetstream.KeyValueConfig{Bucket: "newsweb_threads", TTL: opts.ThreadsTTL, Description: "newsweb: shared thread lists"}},
		{&c.leases, jetstream.KeyValueConfig{Bucket: "newsweb_leases", TTL: opts.LeaseTTL, Description: "newsweb: fetches in flight"}},
	} {
		kv, err := js.CreateOrUpdateKeyValue(ctx, b.cfg)
		if err != nil {
			return nil, fmt.Errorf("newsweb: cluster: bucket %s: %w", b.cfg.Bucket, err)
		}
		*b.kv = kv
	}
	return c, nil
}

// Close closes the NATS connection (when the Cluster opened it).
func (c *Cluster) Close() {
	if c != nil && c.ownConn {
		c.nc.Close()
	}
}

// kvKey makes a bucket key (letters, digits, - _ = . /) of anything.
func kvKey(kind, s string) string {
	sum := sha256.Sum256([]byte(s))
	return kind + "." + hex.EncodeToString(sum[:16])
}

// afterSharedMiss, when set (by tests), runs between a miss in the shared
// bucket and the attempt at the lease: where another replica's whole
// fetch may fall.
var afterSharedMiss func(key string)

// errNoShared says the cluster has no value: fetch it yourself.
var errNoShared = errors.New("newsweb: cluster: not shared")

// shared returns the value of key from bucket kv, coalescing its fetch
// across replicas: fetch runs here only when this replica holds the lease
// (or the leader went without a result). fetch returns the value to share
// (nil: nothing to share, e.g. not found) and its own result for this
// replica's caller.
func (c *Cluster) shared(ctx context.Context, kv jetstream.KeyValue, kind, id string, fetch func(ctx context.Context) ([]byte, any, error), decode func([]byte) (any, error)) (any, error) {
	key := kvKey(kind, id)
	if e, err := kv.Get(ctx, key); err == nil {
		if v, err := decode(e.Value()); err == nil {
			return v, nil
		}
	}
	if afterSharedMiss != nil {
		afterSharedMiss(key)
	}
	lead := func() (any, error) {
		val, res, err := fetch(ctx)
		if err == nil && val != nil && len(val) <= c.opts.MaxValueBytes {
			if _, perr := kv.Put(ctx, key, val); perr != nil {
				c.log.Warn("cluster: sharing failed", "kind", kind, "err", perr)
			}
		}
		return res, err
	}
	if _, err := c.leases.Create(ctx, key, []byte(c.id)); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			c.log.Debug("cluster: no lease, fetching alone", "kind", kind, "err", err)
			return lead()
		}
		v, ferr := c.follow(ctx, kv, key, decode)
		if ferr == nil {
			return v, nil
		}
		return lead() // the leader went without a result: fetch ourselves
	}
	defer c.leases.Delete(context.WithoutCancel(ctx), key)
	// A leader that finished between our look and our lease put its
	// result before it let the lease go: look again before fetching.
	if e, err := kv.Get(ctx, key); err == nil {
		if v, err := decode(e.Value()); err == nil {
			return v, nil
		}
	}
	return lead()
}

// follow waits for the leader's result of key in kv: the value, or
// errNoShared when the lease goes without one or the lease TTL passes.
func (c *Cluster) follow(ctx context.Context, kv jetstream.KeyValue, key string, decode func([]byte) (any, error)) (any, error) {
	wctx, cancel := context.WithTimeout(ctx, c.opts.LeaseTTL)
	defer cancel()
	vw, err := kv.Watch(wctx, key)
	if err != nil {
		return nil, err
	}
	defer vw.Stop()
	lw, err := c.leases.Watch(wctx, key)
	if err != nil {
		return nil, err
	}
	defer lw.Stop()
	leaseSeen := false
	for {
		select {
		case e, ok := <-vw.Updates():
			if !ok {
				return nil, errNoShared
			}
			if e != nil && e.Operation() == jetstream.KeyValuePut {
				return decode(e.Value())
			}
		case e, ok := <-lw.Updates():
			if !ok {
				return nil, errNoShared
			}
			switch {
			case e != nil && e.Operation() == jetstream.KeyValuePut:
				leaseSeen = true
			case e == nil && leaseSeen:
				// the initial values are done; the lease is there
			default:
				// The lease went (or was gone when we looked): a result
				// put before the delete is in the bucket by now.
				if v, err := kv.Get(ctx, key); err == nil {
					return decode(v.Value())
				}
				return nil, errNoShared
			}
		case <-wctx.Done():
			return nil, errNoShared
		}
	}
}

// Article is the shared fetch of an article: fetch is the replica's own.
func (c *Cluster) Article(ctx context.Context, id string, fetch func(ctx context.Context) (Article, error)) (Article, error) {
	v, err := c.shared(ctx, c.articles, "article", id, func(ctx context.Context) ([]byte, any, error) {
		a, err := fetch(ctx)
		if err != nil {
			return nil, nil, err
		}
		return encodeArticle(a), a, nil
	}, func(b []byte) (any, error) { return decodeSharedArticle(id, b) })
	if err != nil {
		return Article{}, err
	}
	return v.(Article), nil
}

// encodeArticle is the shared form: the server's name, LF, the article.
func encodeArticle(a Article) []byte {
	b := make([]byte, 0, len(a.Server)+1+len(a.Raw))
	b = append(b, a.Server...)
	b = append(b, '\n')
	return append(b, a.Raw...)
}

func decodeSharedArticle(id string, b []byte) (any, error) {
	for i, x := range b {
		if x == '\n' {
			return Article{MessageID: id, Server: string(b[:i]), Raw: b[i+1:]}, nil
		}
	}
	return nil, errors.New("newsweb: cluster: bad shared article")
}

// sharedList is the shared form of a ThreadList.
type sharedList struct {
	Server    string            `json:"server"`
	HighWater int64             `json:"high_water"`
	Floor     int64             `json:"floor"`
	More      bool              `json:"more"`
	Fetched   time.Time         `json:"fetched"`
	Articles  []mreader.Summary `json:"articles"`
}

// Threads is the shared fetch of a group's thread list.
func (c *Cluster) Threads(ctx context.Context, group string, fetch func(ctx context.Context) (*ThreadList, error)) (*ThreadList, error) {
	v, err := c.shared(ctx, c.threads, "threads", group, func(ctx context.Context) ([]byte, any, error) {
		tl, err := fetch(ctx)
		if err != nil {
			return nil, nil, err
		}
		return encodeList(tl), tl, nil
	}, func(b []byte) (any, error) { return decodeList(group, b) })
	if err != nil {
		return nil, err
	}
	return v.(*ThreadList), nil
}

// PutThreads shares an updated thread list (after an incremental update).
func (c *Cluster) PutThreads(ctx context.Context, tl *ThreadList) {
	if b := encodeList(tl); len(b) <= c.opts.MaxValueBytes {
		if _, err := c.threads.Put(ctx, kvKey("threads", tl.Group), b); err != nil {
			c.log.Debug("cluster: sharing a thread list failed", "group", tl.Group, "err", err)
		}
	}
}

func encodeList(tl *ThreadList) []byte {
	b, _ := json.Marshal(sharedList{Server: tl.Server, HighWater: tl.HighWater, Floor: tl.Floor, More: tl.More,
		Fetched: tl.Fetched, Articles: tl.Articles})
	return b
}

func decodeList(group string, b []byte) (any, error) {
	var s sharedList
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("newsweb: cluster: bad shared thread list: %w", err)
	}
	return &ThreadList{CachedThreads: mreader.CachedThreads{Group: group, HighWater: s.HighWater, Articles: s.Articles,
		Threads: mreader.Thread(s.Articles)}, Server: s.Server, Fetched: s.Fetched, Floor: s.Floor, More: s.More}, nil
}
