// Package cluster runs newsfeed as one node of several that share one
// history, one article store and one queue per peer, all kept by a NATS
// JetStream cluster. Any node takes articles in (ingest) and feeds any peer.
//
// # Theory of operation
//
// The single-node relay (package runtime/newsfeed) keeps its spool, history
// and per-peer queue files on local disk. Here the same three live in
// JetStream, replicated on a quorum of NATS servers:
//
//   - Store: articles in wire form in Settings.Shards streams
//     ("<name>-art-<shard>"), the shard being MD5(message-id) mod Shards
//     (Diablo's hashfeed), so each shard's RAFT leader may sit on another
//     NATS server. An article goes to subjects "<name>.art.<shard>.<md5>.<i>"
//     in chunks of at most ChunkSize octets (below the server's
//     max_payload, 1 MB by default): chunk i is the last message on its
//     subject (MaxMsgsPerSubject 1), read back with a direct get.
//   - History: a KV bucket "<name>-history" keyed by hex MD5(message-id),
//     with the bucket TTL = history_retention. The duplicate decision is
//     KV Create: it succeeds on exactly one node. The value is first
//     "R <node>" with a per-key TTL (reserve_ttl): a node that dies before
//     it completes leaves a reservation that expires, and the article can
//     be taken again. After the article's and its queue entries' publish
//     acknowledgements came back (stored on a quorum), the key is updated
//     to "P" (present, the bucket's TTL), and only then is 239/235 sent.
//     An article is never "P" without its body.
//   - Peer queues: per peer a work-queue stream "<name>-q-<peer>" of
//     references ("<message-id> <size> <chunks>") and one durable pull
//     consumer "feed" that every node's connections to the peer pull from.
//
// The seed's masterfeed -> peerfeed -> connection maps onto publish ->
// per-peer stream -> pulls by any node's connections. Its files map so:
// .B (backlog, articles the memory queue could not hold) = the consumer's
// pending messages, which JetStream keeps on disk however many there are;
// .D (deferred) = NakWithDelay, the message comes back after the delay;
// .P/.R (resend after a crash, the replay position) = unacknowledged
// messages, redelivered AckWait after the node that pulled them went
// silent. A peer's answer 239/438/439/235/435/437 acknowledges the entry
// (it leaves the work queue); 431/436 naks it with the doubling delay.
package cluster

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Settings shape the JetStream side of a cluster; every node of a cluster
// must use the same Name, Shards and Replicas.
type Settings struct {
	Name       string        // prefix of streams and buckets
	Node       string        // this node, written in reservations
	Shards     int           // article streams
	Replicas   int           // replicas of every stream and bucket
	History    time.Duration // history_retention: TTL of "present" keys (0: none)
	MaxAge     time.Duration // spool_max_age: articles older go (0: none)
	ReserveTTL time.Duration // lifetime of an uncompleted reservation
	AckWait    time.Duration // redelivery of an unanswered queue entry
	ChunkSize  int           // largest chunk (0: from the server's max_payload)
	// MaxAckPending bounds a peer's entries pulled and not answered, over
	// all nodes (0: 20000).
	MaxAckPending int
}

// Store is a node's handle on the cluster's store, history and queues.
// It is safe for concurrent use.
type Store struct {
	set    Settings
	nc     *nats.Conn
	js     jetstream.JetStream
	shards []jetstream.Stream
	hist   jetstream.KeyValue
	chunk  int
}

// Verdict is the history's answer about a message-id.
type Verdict uint8

// Verdicts of Reserve.
const (
	Reserved   Verdict = iota + 1 // unknown: reserved for the caller, send it
	Present                       // stored (or being stored) already: refuse
	InProgress                    // reserved by another node or connection: later
)

// Reservation is a history key the caller holds; Complete or Release it.
type Reservation struct {
	Key string
	Rev uint64
}

// opTimeout bounds a history request. A request sent as its NATS server
// dies gets no answer, and the client would wait out the caller's whole
// context (TestCluster saw ingest stall a minute on one); a timely
// failure defers the article instead, and the sender offers it again.
const opTimeout = 5 * time.Second

// OpenStore creates (or joins) the streams and bucket of the cluster on nc.
func OpenStore(ctx context.Context, nc *nats.Conn, set Settings) (*Store, error) {
	// A publish sent as its server dies may never be acknowledged: its
	// future fails after this, the article is answered "later" (400 to
	// TAKETHIS, 436 to IHAVE) and the sender offers it again (TestCluster
	// saw ingest stall a minute without it).
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(2*opTimeout))
	if err != nil {
		return nil, fmt.Errorf("cluster: jetstream: %w", err)
	}
	if set.Shards < 1 {
		set.Shards = 1
	}
	if set.Replicas < 1 {
		set.Replicas = 1
	}
	if set.MaxAckPending == 0 {
		set.MaxAckPending = 20000
	}
	s := &Store{set: set, nc: nc, js: js, chunk: set.ChunkSize}
	if s.chunk <= 0 {
		// Headers (Nats-Msg-Id) and the subject ride in the same payload
		// limit; keep a margin.
		s.chunk = int(nc.MaxPayload()) - 8<<10
	}
	if s.chunk < 1024 {
		return nil, fmt.Errorf("cluster: max_payload %d is too small", nc.MaxPayload())
	}
	for i := range set.Shards {
		var st jetstream.Stream
		err := retry(ctx, func(ctx context.Context) (err error) {
			st, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
				Name:              s.shardStream(i),
				Subjects:          []string{set.Name + ".art." + strconv.Itoa(i) + ".>"},
				Storage:           jetstream.FileStorage,
				Replicas:          set.Replicas,
				MaxAge:            set.MaxAge,
				MaxMsgsPerSubject: 1,
				Discard:           jetstream.DiscardOld,
				Duplicates:        2 * time.Minute,
				// Direct gets: any replica answers, with the raw
				// article (a leader's MSG.GET answers JSON with the
				// article in base64, a third of newsfeed's CPU time
				// in newsbench cluster's profile). A follower may not
				// have applied an article yet although its publish was
				// acknowledged by a quorum: a reader that finds nothing
				// tries again later (see outConn.load), it does not
				// drop the entry at once.
				AllowDirect: true,
			})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: article stream %s: %w", s.shardStream(i), err)
		}
		s.shards = append(s.shards, st)
	}
	// LimitMarkerTTL turns on per-key TTLs (the reservations); the markers
	// it leaves when a key expires live that long.
	err = retry(ctx, func(ctx context.Context) (err error) {
		s.hist, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:         set.Name + "-history",
			TTL:            set.History,
			Storage:        jetstream.FileStorage,
			Replicas:       set.Replicas,
			LimitMarkerTTL: time.Minute,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: history bucket: %w", err)
	}
	return s, nil
}

func (s *Store) shardStream(i int) string { return s.set.Name + "-art-" + strconv.Itoa(i) }

// ChunkSize is the largest piece an article is stored in.
func (s *Store) ChunkSize() int { return s.chunk }

// Key is the history key and hash of a message-id: hex MD5.
func Key(id string) string {
	sum := md5.Sum([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Shard is the article stream of a message-id: MD5(message-id) mod n, the
// first four octets of the digest read big-endian (hashfeed).
func Shard(id string, n int) int {
	sum := md5.Sum([]byte(id))
	return int(binary.BigEndian.Uint32(sum[:4]) % uint32(n))
}

// Chunks is how many pieces of at most chunk octets hold size octets.
func Chunks(size, chunk int) int { return max(1, (size+chunk-1)/chunk) }

// Reserve decides about id across all nodes: the first caller gets
// Reserved (and the reservation), later ones InProgress until it is
// completed (then Present) or expires.
func (s *Store) Reserve(ctx context.Context, id string) (Verdict, Reservation, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	key := Key(id)
	rev, err := s.hist.Create(ctx, key, []byte("R "+s.set.Node), jetstream.KeyTTL(s.set.ReserveTTL))
	if err == nil {
		return Reserved, Reservation{Key: key, Rev: rev}, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return 0, Reservation{}, fmt.Errorf("cluster: history create %s: %w", id, err)
	}
	e, err := s.hist.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		// It expired between the two calls: someone else will win it
		// or we will on the next offer.
		return InProgress, Reservation{}, nil
	case err != nil:
		return 0, Reservation{}, fmt.Errorf("cluster: history get %s: %w", id, err)
	}
	return decide(e.Value()), Reservation{}, nil
}

// decide reads a history value: "P" present, "R <node>" reserved.
func decide(v []byte) Verdict {
	if len(v) > 0 && v[0] == 'R' {
		return InProgress
	}
	return Present
}

// Release gives a reservation up (the article was not received, or was
// rejected), so the article can be offered again at once.
func (s *Store) Release(ctx context.Context, r Reservation) error {
	if r.Key == "" {
		return nil
	}
	err := s.hist.Delete(ctx, r.Key, jetstream.LastRevision(r.Rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("cluster: history release: %w", err)
	}
	return nil
}

// Ref is a queue entry: where an article is and how large.
type Ref struct {
	MessageID string
	Size      int // octets of the wire form
	Chunks    int
}

// String is the entry's payload: "<message-id> <size> <chunks>".
func (r Ref) String() string {
	return r.MessageID + " " + strconv.Itoa(r.Size) + " " + strconv.Itoa(r.Chunks)
}

// ParseRef reads a queue entry's payload.
func ParseRef(b []byte) (Ref, error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return Ref{}, fmt.Errorf("cluster: queue entry %q: want \"<id> size chunks\"", clip(b))
	}
	size, err1 := strconv.Atoi(f[1])
	n, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || size <= 0 || n <= 0 || n > size || !strings.HasPrefix(f[0], "<") {
		return Ref{}, fmt.Errorf("cluster: queue entry %q: bad fields", clip(b))
	}
	return Ref{MessageID: f[0], Size: size, Chunks: n}, nil
}

func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// Put stores the wire form of article id and queues a reference to it
// for every peer in peers, then marks the history present. It returns once
// JetStream acknowledged every publish (stored on a quorum of replicas).
func (s *Store) Put(ctx context.Context, r Reservation, id string, wire []byte, peers []string) error {
	key := Key(id)
	shard := strconv.Itoa(Shard(id, s.set.Shards))
	ref := Ref{MessageID: id, Size: len(wire), Chunks: Chunks(len(wire), s.chunk)}
	futs := make([]jetstream.PubAckFuture, 0, ref.Chunks+len(peers))
	for i := range ref.Chunks {
		part := wire[i*s.chunk : min(len(wire), (i+1)*s.chunk)]
		m := &nats.Msg{Subject: s.set.Name + ".art." + shard + "." + key + "." + strconv.Itoa(i), Data: part, Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, key+"."+strconv.Itoa(i))
		f, err := s.js.PublishMsgAsync(m)
		if err != nil {
			return fmt.Errorf("cluster: store %s: %w", id, err)
		}
		futs = append(futs, f)
	}
	// The queue entries only once the article is stored: a node may pull
	// an entry the moment it is stored, and must find the article.
	if err := waitAcks(ctx, id, futs); err != nil {
		return err
	}
	futs = futs[:0]
	payload := []byte(ref.String())
	for _, p := range peers {
		m := &nats.Msg{Subject: s.queueSubject(p), Data: payload, Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, p+"."+key)
		f, err := s.js.PublishMsgAsync(m)
		if err != nil {
			return fmt.Errorf("cluster: queue %s for %s: %w", id, p, err)
		}
		futs = append(futs, f)
	}
	if err := waitAcks(ctx, id, futs); err != nil {
		return err
	}
	// Update resets the key's TTL: "P" lives for the bucket's (history).
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := s.hist.Update(ctx, key, []byte("P"), r.Rev); err != nil {
		// Our reservation expired (this took longer than reserve_ttl) and
		// another node may be storing the article too: it is durable and
		// queued anyway; the peers refuse the second copy.
		if _, err2 := s.hist.Put(ctx, key, []byte("P")); err2 != nil {
			return fmt.Errorf("cluster: history %s: %w", id, errors.Join(err, err2))
		}
	}
	return nil
}

// waitAcks waits for the publish acknowledgements of futs.
func waitAcks(ctx context.Context, id string, futs []jetstream.PubAckFuture) error {
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("cluster: store %s: %w", id, err)
		case <-ctx.Done():
			return fmt.Errorf("cluster: store %s: %w", id, ctx.Err())
		}
	}
	return nil
}

// Body reads the wire form of the article ref names.
func (s *Store) Body(ctx context.Context, ref Ref) ([]byte, error) {
	key := Key(ref.MessageID)
	sh := Shard(ref.MessageID, s.set.Shards)
	pre := s.set.Name + ".art." + strconv.Itoa(sh) + "." + key + "."
	body := make([]byte, 0, ref.Size)
	for i := range ref.Chunks {
		m, err := s.shards[sh].GetLastMsgForSubject(ctx, pre+strconv.Itoa(i))
		if err != nil {
			return nil, fmt.Errorf("cluster: article %s chunk %d: %w", ref.MessageID, i, err)
		}
		body = append(body, m.Data...)
	}
	if len(body) != ref.Size {
		return nil, fmt.Errorf("cluster: article %s: %d octets stored, want %d", ref.MessageID, len(body), ref.Size)
	}
	return body, nil
}

func (s *Store) queueStream(peer string) string  { return s.set.Name + "-q-" + peer }
func (s *Store) queueSubject(peer string) string { return s.set.Name + ".q." + peer }

// QueueLimits bound a peer's queue like the seed's backlog limits.
type QueueLimits struct {
	MaxBytes int64         // drop the oldest beyond this (0: no limit)
	MaxAge   time.Duration // drop entries older than this (0: no limit)
}

// Queue creates (or joins) peer's work queue and its durable consumer.
func (s *Store) Queue(ctx context.Context, peer string, lim QueueLimits) (jetstream.Consumer, error) {
	maxBytes := lim.MaxBytes
	if maxBytes == 0 {
		maxBytes = -1
	}
	var st jetstream.Stream
	err := retry(ctx, func(ctx context.Context) (err error) {
		st, err = s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:       s.queueStream(peer),
			Subjects:   []string{s.queueSubject(peer)},
			Retention:  jetstream.WorkQueuePolicy,
			Storage:    jetstream.FileStorage,
			Replicas:   s.set.Replicas,
			MaxAge:     lim.MaxAge,
			MaxBytes:   maxBytes,
			Discard:    jetstream.DiscardOld,
			Duplicates: 2 * time.Minute,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: queue of %s: %w", peer, err)
	}
	var c jetstream.Consumer
	err = retry(ctx, func(ctx context.Context) (err error) {
		c, err = st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       "feed",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       s.set.AckWait,
			MaxDeliver:    -1,
			MaxAckPending: s.set.MaxAckPending,
			Replicas:      s.set.Replicas,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: consumer of %s: %w", peer, err)
	}
	return c, nil
}

// Pending reports a peer's queue: entries not yet pulled, and pulled but
// not answered.
func (s *Store) Pending(ctx context.Context, c jetstream.Consumer) (waiting, unacked int, err error) {
	info, err := c.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("cluster: consumer info: %w", err)
	}
	return int(info.NumPending), info.NumAckPending, nil
}

// retry runs a JetStream administration request until it succeeds or ctx
// ends, each attempt bounded to a few seconds. Nodes that start together
// create the same streams at the same moment, and a NATS cluster answers
// such concurrent creations of one stream to one requester only (the
// others wait for ever: TestOpenTogether).
func retry(ctx context.Context, fn func(ctx context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := fn(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(100+rand.IntN(300)) * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}
