package cluster

// Issue #10 probe: what would a batched cluster store cost? Test code
// only; nothing here is part of the product.
//
// Today (store.go) every article is one stored message on its own
// subject, published with Nats-Expected-Last-Subject-Sequence: 0: the
// servers do, per article, one stored message (and its replication),
// one delivery and one ack per peer. NATS's fixed cost per stored
// message dominates 2 KB of octets, so the lever left is several
// articles per stored message; but then the subject no longer decides
// duplicates, and the decision needs another home. The design probed
// here puts it in optimistic concurrency per shard:
//
//   - A node appends a batch, all the articles it has for shard s while
//     its previous append to s is in flight (group commit, up to
//     occMaxArticles or occMaxBytes), as one message on "<name>.b.<s>"
//     of the stream "<name>-b-<s>": header Newsflow-Ids (the MD5s of the
//     message-ids, base64), body the articles with their ids
//     (appendOCCBatch). The publish carries the stream-level
//     Nats-Expected-Last-Sequence: the last sequence of s the node has
//     applied to its view.
//   - Every node keeps a view of every shard, the MD5s stored and the
//     last sequence applied, fed by an ordered consumer with HeadersOnly:
//     it never downloads another node's bodies for it.
//   - The publish succeeds: every article in it was new with respect to
//     the whole stream before it (239 for all). It fails with "wrong last
//     sequence": another node appended; the view catches up, the articles
//     now known are dropped (439) and the rest sent again. So exactly one
//     copy of each message-id is ever acknowledged 239, and durably.
//   - A peer's queue is a durable pull consumer per shard on the batches;
//     the puller offers a batch's articles and acks the batch once.
//
// BenchmarkOCC measures the shapes side by side on embedded NATS;
// TestOCCConflict and TestOCCExactlyOnce check the decision itself,
// BenchmarkOCCReplay and BenchmarkOCCViewMemory what a view costs.
//
// # Measured (2026-11-24, 2 cores, load average 0.9-1.8)
//
// Process CPU in ms (client and in-process servers) per 2 KB article,
// three runs of -benchtime=50000x each, 4 shards, text bodies; batch is
// the mean of articles per stored message:
//
//	                 256 goroutines             1024 goroutines
//	r1 today1        0.064-0.068                0.051-0.064
//	r1 today2        0.110-0.118                0.091-0.110
//	r1 occ1          0.019-0.021 (batch 31-32)  0.019-0.020 (batch 60-61)
//	r1 occ2          0.034-0.037 (batch 23-24)  0.030-0.034 (batch 49-50)
//	r3 today1        0.155-0.175                0.125-0.136
//	r3 today2        0.229-0.235                0.169-0.171
//	r3 occ1          0.061-0.069 (batch 35)     0.043-0.054 (batch 62)
//	r3 occ2          0.088-0.110 (batch 23-25)  0.069-0.076 (batch 51-53)
//
// occ2's conflicts: 41-43% of appends at r1, 47-48% at r3: two nodes
// busy on one shard take turns. Articles/s: r1 today1 27-37k, occ1
// 89-101k; r3 today1 11-15k, occ1 28-46k. At r3 with random bodies
// (NEWSFLOW_OCC_BODY=random, 1024 goroutines) occ1 0.054-0.061, today1
// 0.136-0.144. Profiles (100k articles, 1024 goroutines): the servers'
// CPU per article r1 0.029 -> 0.0095 ms, r3 0.069 -> 0.026. Replay of a
// restarted node's views: 1.0-1.3 s and 1.9-2.3 CPU-s per million ids
// (r1); a view holds 30-38 heap octets per id.

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Group commit caps of one append.
const (
	occMaxArticles = 64
	occMaxBytes    = 256 << 10
)

// hdrIDs is a batch's header: the MD5s of its message-ids, concatenated,
// base64 without padding. The view reads only this.
const hdrIDs = "Newsflow-Ids"

// occArticle is one article of a batch.
type occArticle struct {
	ID   string
	Wire []byte
}

// appendOCCBatch appends a batch's body: per article uvarint len(id), id,
// uvarint len(wire), wire.
func appendOCCBatch(dst []byte, arts []occArticle) []byte {
	for _, a := range arts {
		dst = binary.AppendUvarint(dst, uint64(len(a.ID)))
		dst = append(dst, a.ID...)
		dst = binary.AppendUvarint(dst, uint64(len(a.Wire)))
		dst = append(dst, a.Wire...)
	}
	return dst
}

// parseOCCBatch reads a body of appendOCCBatch; the wire forms alias b.
func parseOCCBatch(b []byte) ([]occArticle, error) {
	var arts []occArticle
	field := func(what string) ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, fmt.Errorf("occ batch: article %d: bad %s length", len(arts), what)
		}
		f := b[k : k+int(n)]
		b = b[k+int(n):]
		return f, nil
	}
	for len(b) > 0 {
		id, err := field("message-id")
		if err != nil {
			return nil, err
		}
		if len(id) == 0 {
			return nil, fmt.Errorf("occ batch: article %d: empty message-id", len(arts))
		}
		wire, err := field("article")
		if err != nil {
			return nil, err
		}
		arts = append(arts, occArticle{ID: string(id), Wire: wire})
	}
	return arts, nil
}

// occIDsHeader is the Newsflow-Ids header of sums.
func occIDsHeader(sums [][md5.Size]byte) string {
	raw := make([]byte, 0, len(sums)*md5.Size)
	for _, s := range sums {
		raw = append(raw, s[:]...)
	}
	return base64.RawStdEncoding.EncodeToString(raw)
}

// parseOCCIDs reads a Newsflow-Ids header, appending the sums to dst.
func parseOCCIDs(dst [][md5.Size]byte, v string) ([][md5.Size]byte, error) {
	raw, err := base64.RawStdEncoding.DecodeString(v)
	if err != nil || len(raw) == 0 || len(raw)%md5.Size != 0 {
		return dst, fmt.Errorf("occ batch: bad %s header (%d octets)", hdrIDs, len(v))
	}
	for len(raw) > 0 {
		dst = append(dst, [md5.Size]byte(raw[:md5.Size]))
		raw = raw[md5.Size:]
	}
	return dst, nil
}

// occSettings shape an OCC store.
type occSettings struct {
	Name     string
	Shards   int
	Replicas int
	// unconditional leaves Nats-Expected-Last-Sequence out: the broken
	// decision, for checking that the tests catch it.
	unconditional bool
}

// createOCCStreams creates the batch streams on nc.
func createOCCStreams(ctx context.Context, nc *nats.Conn, set occSettings) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	for i := range set.Shards {
		err := retry(ctx, func(ctx context.Context) error {
			_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
				Name:      occStream(set.Name, i),
				Subjects:  []string{occSubject(set.Name, i)},
				Storage:   jetstream.FileStorage,
				Replicas:  set.Replicas,
				Discard:   jetstream.DiscardOld,
				Retention: jetstream.LimitsPolicy,
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("occ stream %d: %w", i, err)
		}
	}
	return nil
}

func occStream(name string, i int) string  { return name + "-b-" + strconv.Itoa(i) }
func occSubject(name string, i int) string { return name + ".b." + strconv.Itoa(i) }

// occNode is one node's side of the OCC store: a view and a batcher per
// shard.
type occNode struct {
	set    occSettings
	shards []*occShard
	cancel context.CancelFunc
	wg     sync.WaitGroup
	views  []jetstream.ConsumeContext
}

// occStats count a node's appends.
type occStats struct {
	appends   atomic.Int64 // successful appends (stored messages)
	stored    atomic.Int64 // articles in them (239)
	conflicts atomic.Int64 // appends refused: wrong last sequence
	dropped   atomic.Int64 // articles answered 439 (known in the view)
}

// occShard is a node's view of one shard and its batcher.
type occShard struct {
	node    *occNode
	i       int
	js      jetstream.JetStream // to the server leading the shard's stream
	subject string
	stats   *occStats
	in      chan *occItem
	body    []byte // the batch being published (run's goroutine)

	mu   sync.Mutex
	cond *sync.Cond
	last uint64 // the last sequence applied
	ids  map[[md5.Size]byte]struct{}
	err  error // the view's consumer failed
}

// occItem is an article waiting for its append; res gets 239 or 439.
type occItem struct {
	id   string
	sum  [md5.Size]byte
	wire []byte
	res  chan occResult
}

type occResult struct {
	code int
	err  error
}

// openOCCNode starts a node's batchers, appending on pubs (one connection
// per server: each shard's appends go to its leader's). Its views start
// with follow.
func openOCCNode(ctx context.Context, set occSettings, pubs []*nats.Conn, stats *occStats) (*occNode, error) {
	rctx, cancel := context.WithCancel(context.Background())
	n := &occNode{set: set, cancel: cancel}
	for i := range set.Shards {
		sh := &occShard{node: n, i: i, subject: occSubject(set.Name, i), stats: stats,
			in: make(chan *occItem, 4096), ids: map[[md5.Size]byte]struct{}{}}
		sh.cond = sync.NewCond(&sh.mu)
		var err error
		if sh.js, err = leaderJS(ctx, pubs, occStream(set.Name, i)); err != nil {
			n.close()
			return nil, err
		}
		n.shards = append(n.shards, sh)
		n.wg.Add(1)
		go func() { defer n.wg.Done(); sh.run(rctx) }()
	}
	return n, nil
}

// follow starts the views, fed from nc.
func (n *occNode) follow(ctx context.Context, nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	for _, sh := range n.shards {
		cc, err := sh.follow(ctx, js)
		if err != nil {
			return err
		}
		n.views = append(n.views, cc)
	}
	return nil
}

// leaderJS is JetStream on the connection to stream's leader, or the
// first connection.
func leaderJS(ctx context.Context, ncs []*nats.Conn, stream string) (jetstream.JetStream, error) {
	js, err := jetstream.New(ncs[0])
	if err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	if c := st.CachedInfo().Cluster; c != nil {
		for _, nc := range ncs {
			if nc.ConnectedServerName() == c.Leader {
				return jetstream.New(nc)
			}
		}
	}
	return js, nil
}

// follow feeds the view from the stream's headers, from its start.
func (sh *occShard) follow(ctx context.Context, js jetstream.JetStream) (jetstream.ConsumeContext, error) {
	c, err := js.OrderedConsumer(ctx, occStream(sh.node.set.Name, sh.i), jetstream.OrderedConsumerConfig{HeadersOnly: true})
	if err != nil {
		return nil, fmt.Errorf("occ view %d: %w", sh.i, err)
	}
	var sums [][md5.Size]byte
	return c.Consume(func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err == nil {
			sums, err = parseOCCIDs(sums[:0], m.Headers().Get(hdrIDs))
		}
		sh.mu.Lock()
		defer sh.mu.Unlock()
		if err != nil {
			sh.err = err
		} else if md.Sequence.Stream > sh.last {
			sh.apply(md.Sequence.Stream, sums)
		}
		sh.cond.Broadcast()
	})
}

// apply adds a stored batch to the view (sh.mu).
func (sh *occShard) apply(seq uint64, sums [][md5.Size]byte) {
	for _, s := range sums {
		sh.ids[s] = struct{}{}
	}
	sh.last = seq
}

// put offers an article; the answer comes on the returned channel.
func (n *occNode) put(id string, wire []byte) chan occResult {
	it := &occItem{id: id, sum: md5.Sum([]byte(id)), wire: wire, res: make(chan occResult, 1)}
	n.shards[shardOf(it.sum, len(n.shards))].in <- it
	return it.res
}

// run is the shard's batcher: group commit, one append in flight.
func (sh *occShard) run(ctx context.Context) {
	var batch []*occItem
	for {
		batch = batch[:0]
		select {
		case it := <-sh.in:
			batch = append(batch, it)
		case <-ctx.Done():
			return
		}
		size := len(batch[0].wire)
	collect:
		for len(batch) < occMaxArticles && size < occMaxBytes {
			select {
			case it := <-sh.in:
				batch = append(batch, it)
				size += len(it.wire)
			default:
				break collect
			}
		}
		sh.commit(ctx, batch)
	}
}

// commit appends batch, catching the view up and dropping what it learns
// is stored until an append succeeds or nothing is left.
func (sh *occShard) commit(ctx context.Context, batch []*occItem) {
	for {
		sh.mu.Lock()
		last, verr := sh.last, sh.err
		keep := batch[:0]
		inBatch := map[[md5.Size]byte]bool{}
		for _, it := range batch {
			_, known := sh.ids[it.sum]
			if known || inBatch[it.sum] {
				it.res <- occResult{code: 439}
				sh.stats.dropped.Add(1)
				continue
			}
			inBatch[it.sum] = true
			keep = append(keep, it)
		}
		sh.mu.Unlock()
		batch = keep
		if verr != nil {
			answerAll(batch, occResult{err: verr})
			return
		}
		if len(batch) == 0 {
			return
		}
		arts := make([]occArticle, len(batch))
		sums := make([][md5.Size]byte, len(batch))
		for i, it := range batch {
			arts[i], sums[i] = occArticle{ID: it.id, Wire: it.wire}, it.sum
		}
		// PublishMsg has copied the body out when it returns: one buffer
		// does for every append.
		sh.body = appendOCCBatch(sh.body[:0], arts)
		m := &nats.Msg{Subject: sh.subject, Header: nats.Header{hdrIDs: {occIDsHeader(sums)}}, Data: sh.body}
		var opts []jetstream.PublishOpt
		if !sh.node.set.unconditional {
			opts = append(opts, jetstream.WithExpectLastSequence(last))
		}
		ack, err := sh.js.PublishMsg(ctx, m, opts...)
		if err == nil {
			sh.mu.Lock()
			if ack.Sequence > sh.last {
				sh.apply(ack.Sequence, sums)
			}
			sh.mu.Unlock()
			sh.stats.appends.Add(1)
			sh.stats.stored.Add(int64(len(batch)))
			answerAll(batch, occResult{code: 239})
			return
		}
		if !isWrongLastSeq(err) {
			answerAll(batch, occResult{err: fmt.Errorf("occ append shard %d: %w", sh.i, err)})
			return
		}
		// Another node appended after last: wait until the view has
		// it (a replicated stream's answer does not say how far the
		// stream is), then decide again.
		sh.stats.conflicts.Add(1)
		sh.mu.Lock()
		for sh.last == last && sh.err == nil {
			sh.cond.Wait()
		}
		sh.mu.Unlock()
	}
}

func answerAll(batch []*occItem, r occResult) {
	for _, it := range batch {
		it.res <- r
	}
}

// close stops the batchers and views; items still queued get no answer.
func (n *occNode) close() {
	n.cancel()
	for _, cc := range n.views {
		cc.Stop()
	}
	for _, sh := range n.shards {
		sh.mu.Lock()
		if sh.err == nil {
			sh.err = errors.New("occ node closed")
		}
		sh.cond.Broadcast()
		sh.mu.Unlock()
	}
	n.wg.Wait()
}

// occPeer is a peer's queue on the batches: a durable pull consumer per
// shard. It counts each message-id delivered, and acks a batch once all
// its articles are counted (offered to the peer, in the product).
type occPeer struct {
	mu        sync.Mutex
	got       map[string]int
	articles  atomic.Int64
	batches   atomic.Int64
	err       atomic.Pointer[error]
	consumers []jetstream.ConsumeContext
}

func startOCCPeer(ctx context.Context, nc *nats.Conn, set occSettings, name string) (*occPeer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	p := &occPeer{got: map[string]int{}}
	for i := range set.Shards {
		c, err := js.CreateOrUpdateConsumer(ctx, occStream(set.Name, i), jetstream.ConsumerConfig{
			Durable: "q-" + name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
			MaxDeliver: -1, MaxAckPending: 20000, Replicas: set.Replicas,
		})
		if err != nil {
			p.stop()
			return nil, fmt.Errorf("occ peer queue %d: %w", i, err)
		}
		// A pull sent before a replicated consumer has its leader goes
		// unanswered until it expires (30 s): the first runs at
		// replicas 3 saw the peer stall so after every batch was
		// stored.
		err = retry(ctx, func(ctx context.Context) error {
			info, err := c.Info(ctx)
			if err == nil && info.Cluster != nil && info.Cluster.Leader == "" {
				err = errNoLeader
			}
			return err
		})
		if err != nil {
			p.stop()
			return nil, fmt.Errorf("occ peer queue %d: %w", i, err)
		}
		cc, err := c.Consume(p.arrive)
		if err != nil {
			p.stop()
			return nil, err
		}
		p.consumers = append(p.consumers, cc)
	}
	return p, nil
}

func (p *occPeer) arrive(m jetstream.Msg) {
	arts, err := parseOCCBatch(m.Data())
	if err != nil {
		p.err.Store(&err)
		return
	}
	p.mu.Lock()
	for _, a := range arts {
		p.got[a.ID]++
	}
	p.mu.Unlock()
	if err := m.Ack(); err != nil {
		p.err.Store(&err)
		return
	}
	p.batches.Add(1)
	p.articles.Add(int64(len(arts)))
}

func (p *occPeer) stop() {
	for _, cc := range p.consumers {
		cc.Stop()
	}
}

// failed is the first error the peer met.
func (p *occPeer) failed() error {
	if e := p.err.Load(); e != nil {
		return *e
	}
	return nil
}

// occCluster is embedded NATS with connections to each server.
type occCluster struct {
	e     *Embedded
	conns [][]*nats.Conn // by node: one per server, preferring a different server first
	peer  *nats.Conn
}

func startOCCCluster(t testing.TB, servers, nodes int) *occCluster {
	t.Helper()
	e := startJetStream(t, servers)
	c := &occCluster{e: e}
	for range nodes {
		var ncs []*nats.Conn
		for i := range servers {
			ncs = append(ncs, connectPreferring(t, e, i))
		}
		c.conns = append(c.conns, ncs)
	}
	c.peer = connectPreferring(t, e, servers-1)
	return c
}

// cpuTime is the process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// occRun is one measured run.
type occRun struct {
	shape     string
	replicas  int
	articles  int // distinct ids stored and delivered
	offers    int
	elapsed   time.Duration
	offered   time.Duration // until every offer was answered (elapsed: the peer's too)
	cpu       time.Duration
	appends   int64
	conflicts int64
	dropped   int64
}

func (r occRun) String() string {
	s := fmt.Sprintf("%-12s r%d %7d art %8.0f art/s %7.4f ms CPU/art", r.shape, r.replicas, r.articles,
		float64(r.articles)/r.elapsed.Seconds(), float64(r.cpu)/float64(time.Millisecond)/float64(r.articles))
	s += fmt.Sprintf("  answered %.2fs peer %.2fs", r.offered.Seconds(), r.elapsed.Seconds())
	if r.appends > 0 {
		s += fmt.Sprintf("  batch %5.1f  conflicts %5.1f%% of %d appends+conflicts",
			float64(r.articles)/float64(r.appends), 100*float64(r.conflicts)/float64(r.appends+r.conflicts),
			r.appends+r.conflicts)
	}
	if r.dropped > 0 {
		s += fmt.Sprintf("  439 %d", r.dropped)
	}
	return s
}

// occWire is a 2 KB article's wire form, for tests whose content does
// not matter.
var occWire = func() []byte {
	b := make([]byte, 2048)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}()

// occBodies are the benchmark's 2 KB articles, article i being
// occBodies[i%len]: one line of text repeated (compressible, as
// newsbench's), or with NEWSFLOW_OCC_BODY=random random octets, distinct
// per article within any batch. At replicas 3 nats-server S2-compresses
// RAFT entries over 8 KB, batches among them (heads of 2 KB are not), so
// the content changes what a batch costs there.
var occBodies = func() [][]byte {
	random := os.Getenv("NEWSFLOW_OCC_BODY") == "random"
	line := []byte("The quick brown fox jumps over the lazy dog; .dots at a line start are stuffed.\r\n")
	rng := mrand.New(mrand.NewPCG(1, 2))
	bodies := make([][]byte, 1024)
	for i := range bodies {
		b := make([]byte, 2048)
		for j := range b {
			if random {
				b[j] = byte(rng.Uint32())
			} else {
				b[j] = line[j%len(line)]
			}
		}
		bodies[i] = b
	}
	return bodies
}()

func occBody(i int) []byte { return occBodies[i%len(occBodies)] }

func occID(i int) string { return "<o" + strconv.Itoa(i) + "@probe>" }

// offerAll runs workers goroutines taking ids from order, each waiting
// for its answer before the next (an ingest window of workers).
func offerAll(workers int, order []int, put func(i int, id string) (int, error)) (map[string]int, error) {
	var next atomic.Int64
	var mu sync.Mutex
	codes := map[string]int{}
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= len(order) {
					return
				}
				id := occID(order[k])
				code, err := put(order[k], id)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if code == 239 {
					codes[id]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return codes, first
}

// waitCount waits until count() reaches want, or a minute without
// progress.
func waitCount(count func() int64, want int64) error {
	last, since := count(), time.Now()
	for {
		n := count()
		if n >= want {
			return nil
		}
		if n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) > time.Minute {
			return fmt.Errorf("stuck at %d of %d", n, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// raceOrders are the orders nodes are offered ids in. One node takes
// them in order. Two are each offered every id, in blocks of 2*workers:
// for each pair of blocks node 0 takes the first one first and node 1 the
// second, so each is first for half the ids and they race on the rest.
func raceOrders(nodes, articles, workers int) [][]int {
	orders := make([][]int, nodes)
	block := 2 * workers
	for i := range articles {
		orders[0] = append(orders[0], i)
	}
	if nodes > 1 {
		for b := 0; b < articles; b += 2 * block {
			mid, end := min(b+block, articles), min(b+2*block, articles)
			for i := mid; i < end; i++ {
				orders[1] = append(orders[1], i)
			}
			for i := b; i < mid; i++ {
				orders[1] = append(orders[1], i)
			}
		}
	}
	return orders
}

// offerNodes runs offerAll for every node at once, put(k, i, id)
// offering article i to node k, and returns how many times each id was answered 239.
func offerNodes(t testing.TB, orders [][]int, workers int, put func(k, i int, id string) (int, error)) map[string]int {
	results := make([]map[string]int, len(orders))
	errs := make([]error, len(orders))
	var wg sync.WaitGroup
	for k := range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[k], errs[k] = offerAll(workers, orders[k], func(i int, id string) (int, error) { return put(k, i, id) })
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	acks := map[string]int{}
	for _, codes := range results {
		for id, n := range codes {
			acks[id] += n
		}
	}
	return acks
}

// checkOnce fails t unless every id was answered 239 once and delivered
// once.
func checkOnce(t testing.TB, articles int, acks, delivered map[string]int) {
	bad := 0
	for i := range articles {
		id := occID(i)
		if acks[id] != 1 || delivered[id] != 1 {
			if bad++; bad <= 5 {
				t.Errorf("%s: answered 239 %d times, delivered %d times; want once", id, acks[id], delivered[id])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d ids not acknowledged and delivered exactly once", bad, articles)
	}
}

// servers is how many NATS servers a replication needs.
func servers(replicas int) int {
	if replicas > 1 {
		return 3
	}
	return 1
}

// runToday measures today's shape: nodes Stores (one or two, offered ids
// as raceOrders says) Put from workers goroutines each, one peer pulling
// and acking every head.
func runToday(t testing.TB, replicas, nodes, articles, workers int) occRun {
	c := startOCCCluster(t, servers(replicas), nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var stores []*Store
	for k := range nodes {
		s, err := OpenStore(ctx, c.conns[k][0], Settings{Name: "p", Node: "n" + strconv.Itoa(k), Shards: 4,
			Replicas: replicas, ReserveTTL: time.Minute, AckWait: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.PublishOn(ctx, c.conns[k]...); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	q, err := stores[0].Queue(ctx, "p1", QueueLimits{})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stores[0].Bind(ctx, c.peer, q)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	delivered := map[string]int{}
	var acked atomic.Int64
	for _, cn := range cons {
		cc, err := cn.Consume(func(m jetstream.Msg) {
			e, err := ParseEntry(m.Headers())
			if err != nil || m.Ack() != nil {
				return
			}
			mu.Lock()
			delivered[e.MessageID]++
			mu.Unlock()
			acked.Add(1)
		})
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Stop()
	}
	var dups atomic.Int64
	cpu0, t0 := cpuTime(), time.Now()
	acks := offerNodes(t, raceOrders(nodes, articles, workers), workers, func(k, i int, id string) (int, error) {
		switch err := stores[k].Put(ctx, id, occBody(i), []string{"p1"}); {
		case errors.Is(err, ErrDuplicate):
			dups.Add(1)
			return 439, nil
		case err != nil:
			return 0, err
		}
		return 239, nil
	})
	offered := time.Since(t0)
	if err := waitCount(func() int64 { return acked.Load() }, int64(articles)); err != nil {
		t.Fatalf("peer: %v", err)
	}
	r := occRun{shape: fmt.Sprintf("today %d node", nodes), replicas: replicas, articles: len(acks),
		offers: nodes * articles, elapsed: time.Since(t0), offered: offered, cpu: cpuTime() - cpu0, dropped: dups.Load()}
	mu.Lock()
	defer mu.Unlock()
	checkOnce(t, articles, acks, delivered)
	return r
}

// runOCC measures the OCC batch shape with nodes publishing nodes,
// offered ids as raceOrders says. It checks that every id is answered 239
// exactly once and delivered to the peer exactly once.
func runOCC(t testing.TB, set occSettings, nodes, articles, workers int) occRun {
	c := startOCCCluster(t, servers(set.Replicas), nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := createOCCStreams(ctx, c.conns[0][0], set); err != nil {
		t.Fatal(err)
	}
	peer, err := startOCCPeer(ctx, c.peer, set, "p1")
	if err != nil {
		t.Fatal(err)
	}
	defer peer.stop()
	var stats occStats
	var ns []*occNode
	for k := range nodes {
		n, err := openOCCNode(ctx, set, c.conns[k], &stats)
		if err != nil {
			t.Fatal(err)
		}
		defer n.close()
		if err := n.follow(ctx, c.conns[k][0]); err != nil {
			t.Fatal(err)
		}
		ns = append(ns, n)
	}
	cpu0, t0 := cpuTime(), time.Now()
	acks := offerNodes(t, raceOrders(nodes, articles, workers), workers, func(k, i int, id string) (int, error) {
		r := <-ns[k].put(id, occBody(i))
		return r.code, r.err
	})
	offered := time.Since(t0)
	if err := waitCount(func() int64 { return peer.articles.Load() }, stats.stored.Load()); err != nil {
		t.Fatalf("peer: %v", err)
	}
	r := occRun{shape: fmt.Sprintf("occ %d node", nodes), replicas: set.Replicas, articles: len(acks),
		offers: nodes * articles, elapsed: time.Since(t0), offered: offered, cpu: cpuTime() - cpu0,
		appends: stats.appends.Load(), conflicts: stats.conflicts.Load(), dropped: stats.dropped.Load()}
	if err := peer.failed(); err != nil {
		t.Fatalf("peer: %v", err)
	}
	peer.mu.Lock()
	defer peer.mu.Unlock()
	checkOnce(t, articles, acks, peer.got)
	return r
}

// TestOCCConflict: node b appends <x> and <z> expecting sequence 0 after
// node a stored <x> at 1; b's append must be refused, b catch up, answer
// 439 for <x> and 239 for <z>, and the stream hold each id once.
func TestOCCConflict(t *testing.T) {
	set := occSettings{Name: "c", Shards: 1, Replicas: 1}
	c := startOCCCluster(t, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := createOCCStreams(ctx, c.conns[0][0], set); err != nil {
		t.Fatal(err)
	}
	var sa, sb occStats
	a, err := openOCCNode(ctx, set, c.conns[0], &sa)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	if err := a.follow(ctx, c.conns[0][0]); err != nil {
		t.Fatal(err)
	}
	b, err := openOCCNode(ctx, set, c.conns[1], &sb)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	// a stores <x> at sequence 1; b's view, not started, stands at 0.
	if r := <-a.put("<x@c>", occWire); r.code != 239 || r.err != nil {
		t.Fatalf("node a: <x@c> answered %d (%v), want 239", r.code, r.err)
	}
	x, z := b.put("<x@c>", occWire), b.put("<z@c>", occWire)
	// b's append of both, expecting 0, is refused; b waits for its
	// view, which starts only then.
	for sb.conflicts.Load() == 0 {
		select {
		case r := <-x:
			t.Fatalf("node b: <x@c> answered %d (%v) before any conflict", r.code, r.err)
		case <-ctx.Done():
			t.Fatal("node b: no conflict")
		case <-time.After(time.Millisecond):
		}
	}
	if err := b.follow(ctx, c.conns[1][0]); err != nil {
		t.Fatal(err)
	}
	if r := <-x; r.code != 439 || r.err != nil {
		t.Errorf("node b: <x@c>, stored by a, answered %d (%v), want 439", r.code, r.err)
	}
	if r := <-z; r.code != 239 || r.err != nil {
		t.Errorf("node b: <z@c> answered %d (%v), want 239", r.code, r.err)
	}
	if n := sb.conflicts.Load(); n != 1 {
		t.Errorf("node b: %d conflicts, want 1", n)
	}
	js, err := jetstream.New(c.peer)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, occStream(set.Name, 0))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for seq := uint64(1); ; seq++ {
		raw, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		arts, err := parseOCCBatch(raw.Data)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arts {
			got = append(got, a.ID)
		}
	}
	if want := []string{"<x@c>", "<z@c>"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stream holds %v, want %v", got, want)
	}
}

// TestOCCExactlyOnce: two nodes offered the same 4000 ids at the same
// time; each id is answered 239 by exactly one node and delivered once.
func TestOCCExactlyOnce(t *testing.T) {
	r := runOCC(t, occSettings{Name: "x", Shards: 4, Replicas: 1}, 2, 4000, 64)
	t.Log(r)
	if r.conflicts == 0 {
		t.Error("no conflicts: the nodes did not race, the test checked nothing")
	}
}

// BenchmarkOCC measures the probe's shapes, b.N articles of 2 KB on 4
// shards from 256 goroutines per node, each until the peer has acked all:
// "today1" (Store.Put, a peer acking each head), "today2" (two nodes'
// Stores offered the same ids, racing as raceOrders says), "occ1" (one
// node appending batches), "occ2" (two nodes, the same race).
// Run it with -benchtime=50000x: a run's setup (starting NATS) is not
// in its figures. cpu-ms/art is the process's (client and servers).
// NEWSFLOW_OCC_WORKERS sets the goroutines (the ingest window; with more,
// batches are larger).
func BenchmarkOCC(b *testing.B) {
	workers := 256
	if v, err := strconv.Atoi(os.Getenv("NEWSFLOW_OCC_WORKERS")); err == nil && v > 0 {
		workers = v
	}
	for _, replicas := range []int{1, 3} {
		for _, shape := range []string{"today1", "today2", "occ1", "occ2"} {
			b.Run("r"+strconv.Itoa(replicas)+"/"+shape, func(b *testing.B) {
				runtime.GC()
				var r occRun
				set := occSettings{Name: "o", Shards: 4, Replicas: replicas}
				switch shape {
				case "today1":
					r = runToday(b, replicas, 1, b.N, workers)
				case "today2":
					r = runToday(b, replicas, 2, b.N, workers)
				case "occ1":
					r = runOCC(b, set, 1, b.N, workers)
				case "occ2":
					r = runOCC(b, set, 2, b.N, workers)
				}
				b.ReportMetric(float64(r.elapsed.Nanoseconds())/float64(r.articles), "ns/op")
				b.ReportMetric(float64(r.articles)/r.elapsed.Seconds(), "art/s")
				b.ReportMetric(float64(r.cpu)/float64(time.Millisecond)/float64(r.articles), "cpu-ms/art")
				if r.appends > 0 {
					b.ReportMetric(float64(r.articles)/float64(r.appends), "art/batch")
					b.ReportMetric(100*float64(r.conflicts)/float64(r.appends+r.conflicts), "conflict-%")
				}
				b.ReportMetric(float64(r.dropped), "439s")
				if b.N >= 1000 {
					b.Log(r)
				}
			})
		}
	}
}

// BenchmarkOCCReplay measures a node's restart: b.N ids stored in batches
// of occMaxArticles 2 KB articles on 4 shards (one server), then a new
// node's views read from the start, headers only, until they hold the
// streams' last sequences. It reports the time and CPU per million ids
// (client and server: the server reads the whole blocks back from disk).
func BenchmarkOCCReplay(b *testing.B) {
	set := occSettings{Name: "r", Shards: 4, Replicas: 1}
	c := startOCCCluster(b, 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := createOCCStreams(ctx, c.conns[0][0], set); err != nil {
		b.Fatal(err)
	}
	js, err := jetstream.New(c.conns[0][0])
	if err != nil {
		b.Fatal(err)
	}
	// Fill: per shard, batches of ids of that shard.
	perShard := make([][]occArticle, set.Shards)
	last := make([]uint64, set.Shards)
	flush := func(sh int) {
		arts := perShard[sh]
		sums := make([][md5.Size]byte, len(arts))
		for i, a := range arts {
			sums[i] = md5.Sum([]byte(a.ID))
		}
		m := &nats.Msg{Subject: occSubject(set.Name, sh), Header: nats.Header{hdrIDs: {occIDsHeader(sums)}},
			Data: appendOCCBatch(nil, arts)}
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			b.Fatal(err)
		}
		last[sh] = ack.Sequence
		perShard[sh] = arts[:0]
	}
	for i := range b.N {
		id := occID(i)
		sh := Shard(id, set.Shards)
		perShard[sh] = append(perShard[sh], occArticle{ID: id, Wire: occBody(i)})
		if len(perShard[sh]) == occMaxArticles {
			flush(sh)
		}
	}
	for sh := range perShard {
		if len(perShard[sh]) > 0 {
			flush(sh)
		}
	}
	var stats occStats
	cpu0, t0 := cpuTime(), time.Now()
	n, err := openOCCNode(ctx, set, c.conns[0], &stats)
	if err != nil {
		b.Fatal(err)
	}
	defer n.close()
	if err := n.follow(ctx, c.peer); err != nil {
		b.Fatal(err)
	}
	held := 0
	for i, sh := range n.shards {
		sh.mu.Lock()
		for sh.last < last[i] && sh.err == nil {
			sh.cond.Wait()
		}
		held += len(sh.ids)
		err := sh.err
		sh.mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
	}
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	for _, cc := range n.views {
		cc.Stop()
	}
	if held != b.N {
		b.Fatalf("views hold %d ids, want %d", held, b.N)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(elapsed.Seconds()*1e6/float64(b.N), "s/Mid")
	b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "cpu-s/Mid")
}

// BenchmarkOCCViewMemory measures the heap of a view holding b.N ids on 4
// shards, as openOCCNode's maps hold them, without servers in the
// process (their caches would blur the figure).
func BenchmarkOCCViewMemory(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	views := make([]map[[md5.Size]byte]struct{}, 4)
	for i := range views {
		views[i] = map[[md5.Size]byte]struct{}{}
	}
	for i := range b.N {
		sum := md5.Sum([]byte(occID(i)))
		views[shardOf(sum, len(views))][sum] = struct{}{}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "view-B/id")
	runtime.KeepAlive(views)
}
