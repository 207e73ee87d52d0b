// Package cluster runs newsfeed as one node of several that share one
// history, one article store and one queue per peer, all kept by a NATS
// JetStream cluster. Any node takes articles in (ingest) and feeds any peer.
//
// # Theory of operation
//
// The single-node relay (package runtime/newsfeed) keeps its spool, history
// and per-peer queue files on local disk. Here the same three live in
// JetStream, replicated on a quorum of NATS servers, and one publish per
// article does all three:
//
//   - Store: articles in wire form in Settings.Shards streams
//     ("<name>-art-<shard>"), the shard being MD5(message-id) mod Shards
//     (Diablo's hashfeed), so each shard's RAFT leader may sit on another
//     NATS server. An article is one message, its head, on the subject
//     "<name>.art.<shard>.<md5>", with headers Newsflow-Id (the
//     message-id) and Newsflow-Peers (the peers it is for). An article
//     larger than ChunkSize (below the server's max_payload, 1 MB by
//     default) is cut: its first ChunkSize octets ride in the head, the
//     rest in parts "<head>.<token>.<i>" published (and acknowledged)
//     before the head, which names them in Newsflow-Parts.
//   - History: the head's publish carries Nats-Expected-Last-Subject-
//     Sequence: 0, so JetStream stores it only if the subject holds
//     nothing: exactly one node's publish of a message-id succeeds, and
//     the others learn "duplicate" from the same round trip. The head is
//     the body (or is published after its parts), so an article is never
//     present without its body, and a node that dies before the head is
//     stored leaves nothing that blocks the article. The history outlives
//     the article: when spool_max_age removes a head, JetStream leaves a
//     delete marker on its subject, living history_retention less
//     spool_max_age (SubjectDeleteMarkerTTL), that still fails the check.
//   - Reservations: CHECK and IHAVE, which come before the article, look
//     the head up and then create a key in the KV bucket
//     "<name>-reserve" ("R <node>", TTL reserve_ttl), so that two nodes
//     offered the same article do not both ask for it; a reservation a
//     crashed node never completed expires. Reservations only advise: the
//     head's publish decides.
//   - Peer queues: per peer and shard a durable pull consumer "q-<peer>"
//     on the shard's heads, which every node's connections to the peer
//     pull from: the delivered message is the article (no second read
//     for articles up to ChunkSize). An article not for the peer (not in
//     Newsflow-Peers) is acknowledged and skipped by the puller.
//
// So a 239 costs one publish and its acknowledgement, and feeding it one
// delivery and one ack per peer. The relay's masterfeed -> peerfeed ->
// connection maps onto publish -> per-peer consumers -> pulls by any
// node's connections. Its files map so: .B (backlog, articles the memory
// queue could not hold) = the consumers' pending messages, which
// JetStream keeps on disk however many there are; .D (deferred) =
// NakWithDelay, the message comes back after the delay; .P/.R (resend
// after a crash, the replay position) = unacknowledged messages,
// redelivered AckWait after the node that pulled them went silent. A
// peer's answer 239/438/439/235/435/437 acknowledges the entry; 431/436
// naks it with the doubling delay.
package cluster

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	History    time.Duration // history_retention: how long a message-id is refused (0: as long as its article)
	MaxAge     time.Duration // spool_max_age: articles older go (0: none)
	ReserveTTL time.Duration // lifetime of an uncompleted reservation
	AckWait    time.Duration // redelivery of an unanswered queue entry
	ChunkSize  int           // largest message (0: from the server's max_payload)
	// MaxAckPending bounds a peer's entries pulled and not answered, per
	// shard, over all nodes (0: 20000).
	MaxAckPending int
}

// Store is a node's handle on the cluster's store, history and queues.
// It is safe for concurrent use.
type Store struct {
	set Settings
	nc  *nats.Conn
	js  jetstream.JetStream
	pub *publisher // articles' publishes: on nc, or another connection
	// near are the publishers of PublishOn, one per NATS connection
	// (server), and byShard the one each shard's heads go through: the
	// connection to the server that leads the shard's stream, if there is
	// one (see PublishOn).
	near    []*publisher
	byShard []atomic.Pointer[publisher]
	shards  []jetstream.Stream
	resv    jetstream.KeyValue
	chunk   int
	seen    *seen // message-ids known present
}

// Verdict is the history's answer about a message-id.
type Verdict uint8

// Verdicts of Reserve.
const (
	Reserved   Verdict = iota + 1 // unknown: reserved for the caller, send it
	Present                       // stored already: refuse
	InProgress                    // reserved by another node or connection: later
)

// Reservation is a reservation key the caller holds; Release it if the
// article does not come.
type Reservation struct {
	Key string
	Rev uint64
}

// ErrDuplicate is Put's answer for an article the history already has.
var ErrDuplicate = errors.New("cluster: duplicate")

// Headers of an article's head message.
const (
	hdrID    = "Newsflow-Id"    // the message-id
	hdrPeers = "Newsflow-Peers" // the peers it is queued for, comma-separated
	hdrParts = "Newsflow-Parts" // "<token> <parts> <size>" when cut in parts
	// hdrExpectSubjSeq makes the publish conditional on the subject's
	// last sequence (JetStream's optimistic concurrency).
	hdrExpectSubjSeq = "Nats-Expected-Last-Subject-Sequence"
)

// opTimeout bounds a history request. A request sent as its NATS server
// dies gets no answer, and the client would wait out the caller's whole
// context (TestCluster saw ingest stall a minute on one); a timely
// failure defers the article instead, and the sender offers it again.
const opTimeout = 5 * time.Second

// OpenStore creates (or joins) the streams and bucket of the cluster on nc.
func OpenStore(ctx context.Context, nc *nats.Conn, set Settings) (*Store, error) {
	// Articles' publishes do not go through js but the publisher (see
	// publish.go), whose waits for acknowledgements end after pubTimeout:
	// a publish sent as its server dies may never be acknowledged, and
	// TestCluster saw ingest stall a minute without a bound.
	js, err := jetstream.New(nc)
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
	s := &Store{set: set, nc: nc, js: js, chunk: set.ChunkSize,
		seen: newSeen(max(set.History, set.MaxAge))}
	if s.pub, err = newPublisher(nc); err != nil {
		return nil, err
	}
	if s.chunk <= 0 {
		// Headers and the subject ride in the same payload limit; keep a
		// margin.
		s.chunk = int(nc.MaxPayload()) - 8<<10
	}
	if s.chunk < 1024 {
		return nil, fmt.Errorf("cluster: max_payload %d is too small", nc.MaxPayload())
	}
	for i := range set.Shards {
		var st jetstream.Stream
		err := retry(ctx, func(ctx context.Context) (err error) {
			st, err = js.CreateOrUpdateStream(ctx, s.shardConfig(i))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: article stream %s: %w", s.shardStream(i), err)
		}
		s.shards = append(s.shards, st)
	}
	s.byShard = make([]atomic.Pointer[publisher], len(s.shards))
	// LimitMarkerTTL turns on per-key TTLs (the reservations); the markers
	// it leaves when a key expires live that long.
	err = retry(ctx, func(ctx context.Context) (err error) {
		s.resv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:         set.Name + "-reserve",
			Storage:        jetstream.FileStorage,
			Replicas:       set.Replicas,
			LimitMarkerTTL: time.Minute,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: reservation bucket: %w", err)
	}
	if err := s.waitLeaders(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// errNoLeader: a stream has no leader at the moment.
var errNoLeader = errors.New("no leader yet")

// waitLeaders waits until every article stream and the reservation
// bucket have a leader: a stream just created (or whose leader moves)
// has none for a moment, and answers publishes "no responders" and
// requests not at all. The node serves once its store can store; the
// publisher still rides over a later leader change (see publish.go).
func (s *Store) waitLeaders(ctx context.Context) error {
	names := make([]string, 0, len(s.shards)+1)
	for i := range s.shards {
		names = append(names, s.shardStream(i))
	}
	names = append(names, "KV_"+s.set.Name+"-reserve")
	for _, name := range names {
		err := retryInfo(ctx, func(ctx context.Context) error {
			st, err := s.js.Stream(ctx, name)
			if err != nil {
				return err
			}
			if c := st.CachedInfo().Cluster; c != nil && c.Leader == "" {
				return errNoLeader
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("cluster: stream %s: %w", name, err)
		}
	}
	return nil
}

// shardConfig is article stream i: heads and parts, one message per
// subject, history kept by delete markers beyond the articles' age.
func (s *Store) shardConfig(i int) jetstream.StreamConfig {
	cfg := jetstream.StreamConfig{
		Name:              s.shardStream(i),
		Subjects:          []string{s.set.Name + ".art." + strconv.Itoa(i) + ".>"},
		Storage:           jetstream.FileStorage,
		Replicas:          s.set.Replicas,
		MaxAge:            s.set.MaxAge,
		MaxMsgsPerSubject: 1,
		Discard:           jetstream.DiscardOld,
		// Direct gets: any replica answers parts with the raw bytes (a
		// leader's MSG.GET answers JSON with the article in base64). A
		// follower may not have applied a part yet although its publish
		// was acknowledged by a quorum: a reader that finds nothing
		// tries again later (see outConn.load).
		AllowDirect: true,
	}
	if s.set.MaxAge > 0 && s.set.History > s.set.MaxAge {
		// The head expires with spool_max_age; its marker keeps the
		// message-id refused until history_retention.
		cfg.SubjectDeleteMarkerTTL = max(time.Second, s.set.History-s.set.MaxAge)
		cfg.AllowMsgTTL = true
		cfg.AllowRollup = true
	}
	return cfg
}

// PublishOn sends the articles' publishes over ncs, connections of their
// own: one NATS connection is one reader and one writer on each side (the
// client's and the server's), and with ingest and feeding on one, each
// waited for the other's traffic. Given one connection per NATS server,
// each shard's heads go to the server that leads its stream (Place), so
// that neither the publish nor its acknowledgement crosses a route
// between servers; the first connection carries the rest.
func (s *Store) PublishOn(ctx context.Context, ncs ...*nats.Conn) error {
	var near []*publisher
	for _, nc := range ncs {
		p, err := newPublisher(nc)
		if err != nil {
			for _, p := range near {
				p.close()
			}
			return err
		}
		near = append(near, p)
	}
	s.pub.close()
	s.pub, s.near = near[0], near
	s.Place(ctx)
	return nil
}

// Place points each shard at the publisher connected to its stream's
// leader (asking the streams who leads them now), or the first one. A
// leader moves when its server dies or steps down: the node calls Place
// again from time to time; meanwhile the heads take a route, as with one
// connection.
func (s *Store) Place(ctx context.Context) {
	for i, st := range s.shards {
		leader := ""
		if len(s.near) > 1 {
			ictx, cancel := context.WithTimeout(ctx, opTimeout)
			if info, err := st.Info(ictx); err == nil && info.Cluster != nil {
				leader = info.Cluster.Leader
			}
			cancel()
		}
		p := s.pub
		for _, q := range s.near {
			if leader != "" && q.nc.ConnectedServerName() == leader {
				p = q
			}
		}
		s.byShard[i].Store(p)
	}
}

// pubFor is the publisher of a shard's heads.
func (s *Store) pubFor(shard int) *publisher {
	if p := s.byShard[shard].Load(); p != nil {
		return p
	}
	return s.pub
}

func (s *Store) shardStream(i int) string { return s.set.Name + "-art-" + strconv.Itoa(i) }

// head is the subject of an article's head message: its shard and its
// Key, from one digest.
func (s *Store) head(id string) (subject string, shard int) {
	return s.headOf(md5.Sum([]byte(id)))
}

// headOf is head of the message-id whose MD5 is sum.
func (s *Store) headOf(sum [md5.Size]byte) (subject string, shard int) {
	shard = shardOf(sum, s.set.Shards)
	return s.set.Name + ".art." + strconv.Itoa(shard) + "." + hex.EncodeToString(sum[:]), shard
}

// ChunkSize is the largest piece an article is stored in.
func (s *Store) ChunkSize() int { return s.chunk }

// Key is the reservation key and hash of a message-id: hex MD5.
func Key(id string) string {
	sum := md5.Sum([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Shard is the article stream of a message-id: MD5(message-id) mod n, the
// first four octets of the digest read big-endian (hashfeed).
func Shard(id string, n int) int { return shardOf(md5.Sum([]byte(id)), n) }

// shardOf is Shard of a message-id's digest.
func shardOf(sum [md5.Size]byte, n int) int {
	return int(binary.BigEndian.Uint32(sum[:4]) % uint32(n))
}

// Chunks is how many pieces of at most chunk octets hold size octets.
func Chunks(size, chunk int) int { return max(1, (size+chunk-1)/chunk) }

// Known reports whether this node knows id is in the history (it stored
// it, was refused it, or found its head): Reserve would answer Present
// without asking NATS.
func (s *Store) Known(id string) bool { return s.seen.has(id) }

// Reserve decides about id across all nodes before its article comes
// (CHECK, IHAVE): Present when its head is stored (or its delete marker
// remembers it), else the first caller gets Reserved (and the
// reservation), later ones InProgress until it expires or is released.
func (s *Store) Reserve(ctx context.Context, id string) (Verdict, Reservation, error) {
	if s.seen.has(id) {
		return Present, Reservation{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	subj, sh := s.head(id)
	_, err := s.shards[sh].GetLastMsgForSubject(ctx, subj)
	switch {
	case err == nil:
		s.seen.add(id)
		return Present, Reservation{}, nil
	case !errors.Is(err, jetstream.ErrMsgNotFound):
		return 0, Reservation{}, fmt.Errorf("cluster: history %s: %w", id, err)
	}
	key := Key(id)
	rev, err := s.resv.Create(ctx, key, []byte("R "+s.set.Node), jetstream.KeyTTL(s.set.ReserveTTL))
	if err == nil {
		return Reserved, Reservation{Key: key, Rev: rev}, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return 0, Reservation{}, fmt.Errorf("cluster: reserve %s: %w", id, err)
	}
	return InProgress, Reservation{}, nil
}

// Release gives a reservation up (the article was not received, or was
// rejected), so the article can be offered again at once.
func (s *Store) Release(ctx context.Context, r Reservation) error {
	if r.Key == "" {
		return nil
	}
	err := s.resv.Delete(ctx, r.Key, jetstream.LastRevision(r.Rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("cluster: release reservation: %w", err)
	}
	return nil
}

// Parts describes an article cut in parts: the head holds its first
// ChunkSize octets, "<head>.<Token>.<i>" for i in 1..N-1 the rest.
type Parts struct {
	Token string // names this copy's parts (unique per publish)
	N     int    // pieces, the head's included
	Size  int    // octets of the whole wire form
}

// String is the Newsflow-Parts header: "<token> <n> <size>".
func (p Parts) String() string {
	return p.Token + " " + strconv.Itoa(p.N) + " " + strconv.Itoa(p.Size)
}

// ParseParts reads a Newsflow-Parts header.
func ParseParts(v string) (Parts, error) {
	f := strings.Split(v, " ")
	if len(f) != 3 || !validToken(f[0]) {
		return Parts{}, fmt.Errorf("cluster: parts %q: want \"<token> <n> <size>\"", clip(v))
	}
	n, err1 := strconv.Atoi(f[1])
	size, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || n < 2 || size < n || n > 1<<20 {
		return Parts{}, fmt.Errorf("cluster: parts %q: bad fields", clip(v))
	}
	return Parts{Token: f[0], N: n, Size: size}, nil
}

// validToken: a token is one subject token of letters and digits.
func validToken(t string) bool {
	if t == "" || len(t) > 64 {
		return false
	}
	for i := range len(t) {
		c := t[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80]
	}
	return s
}

// Put stores the wire form of article id, for peers, if the history does
// not have it: one conditional publish of its head (after its parts, if
// it is cut). It returns once JetStream acknowledged every publish (stored
// on a quorum of replicas), ErrDuplicate when another copy was stored
// first (by any node).
func (s *Store) Put(ctx context.Context, id string, wire []byte, peers []string) error {
	if len(wire) <= s.chunk {
		p, err := s.Publish(id, wire, peers) // ErrDuplicate when seen
		if err != nil {
			return err
		}
		return p.Wait(ctx)
	}
	sum := md5.Sum([]byte(id))
	if s.seen.hasSum(sum) {
		return ErrDuplicate
	}
	subj, sh := s.headOf(sum)
	pub := s.pubFor(sh)
	parts := Parts{Token: newToken(), N: Chunks(len(wire), s.chunk), Size: len(wire)}
	ws := make([]*ackWait, 0, parts.N-1)
	err := func() error {
		for i := 1; i < parts.N; i++ {
			m := &nats.Msg{Subject: subj + "." + parts.Token + "." + strconv.Itoa(i), Data: wire[i*s.chunk : min(len(wire), (i+1)*s.chunk)]}
			w, err := pub.publish(m)
			if err != nil {
				pub.forget(ws...) // nobody will wait for them
				return fmt.Errorf("cluster: store %s: %w", id, err)
			}
			ws = append(ws, w)
		}
		// The head only once its parts are stored: a node may pull the
		// head the moment it is stored, and must find them.
		if err := pub.waitAll(ctx, ws); err != nil {
			return fmt.Errorf("cluster: store %s: %w", id, err)
		}
		w, err := pub.publish(s.headMsg(subj, id, wire[:s.chunk], peers, parts))
		if err != nil {
			return fmt.Errorf("cluster: store %s: %w", id, err)
		}
		return (&Pending{s: s, pub: pub, id: id, sum: sum, w: w}).Wait(ctx)
	}()
	if err != nil {
		s.dropParts(sh, subj, parts)
	}
	return err
}

// headMsg is the conditional publish of an article's head.
func (s *Store) headMsg(subj, id string, data []byte, peers []string, parts Parts) *nats.Msg {
	h := nats.Header{}
	h[hdrExpectSubjSeq] = []string{"0"}
	h[hdrID] = []string{id}
	h[hdrPeers] = []string{strings.Join(peers, ",")}
	if parts.N > 0 {
		h[hdrParts] = []string{parts.String()}
	}
	return &nats.Msg{Subject: subj, Header: h, Data: data}
}

// Pending is a head published and not yet acknowledged.
type Pending struct {
	s   *Store
	pub *publisher
	id  string
	sum [md5.Size]byte // of id
	w   *ackWait
}

// Publish sends the head of an article of at most ChunkSize octets
// without waiting: Put's first half, for a caller that waits for many
// acknowledgements on one goroutine. wire is copied out before Publish
// returns. An id this node knows is present is ErrDuplicate at once.
func (s *Store) Publish(id string, wire []byte, peers []string) (*Pending, error) {
	buf := wireBuffer(len(wire))
	*buf = append(*buf, wire...)
	return s.publishBuffer(id, buf, peers)
}

// publishBuffer is Publish of *buf, a buffer from wireBuffer, without
// the copy: the store takes buf over (whatever the outcome) and gives it
// back once the head can no longer be sent again.
func (s *Store) publishBuffer(id string, buf *[]byte, peers []string) (*Pending, error) {
	wire := *buf
	if len(wire) > s.chunk {
		putWire(buf)
		return nil, fmt.Errorf("cluster: store %s: %d octets is over the chunk size %d: use Put", id, len(wire), s.chunk)
	}
	sum := md5.Sum([]byte(id))
	if s.seen.hasSum(sum) {
		putWire(buf)
		return nil, ErrDuplicate
	}
	subj, sh := s.headOf(sum)
	pub := s.pubFor(sh)
	w, err := pub.publishOwned(s.headMsg(subj, id, wire, peers, Parts{}), buf)
	if err != nil {
		return nil, fmt.Errorf("cluster: store %s: %w", id, err)
	}
	return &Pending{s: s, pub: pub, id: id, sum: sum, w: w}, nil
}

// Wait is Put's answer for a published head: nil once it is stored on a
// quorum, ErrDuplicate when another copy was stored first. A head whose
// acknowledgement never comes fails after pubTimeout.
func (p *Pending) Wait(ctx context.Context) error {
	err := p.pub.wait(ctx, p.w)
	switch {
	case err == nil:
		p.s.seen.addSum(p.sum)
		return nil
	case isWrongLastSeq(err):
		p.s.seen.addSum(p.sum)
		return ErrDuplicate
	}
	return fmt.Errorf("cluster: store %s: %w", p.id, err)
}

// isWrongLastSeq: the conditional publish found the subject taken.
func isWrongLastSeq(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// dropParts removes the parts of a copy whose head was not stored (best
// effort: unreferenced, they would only take room until spool_max_age).
func (s *Store) dropParts(shard int, head string, p Parts) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s.shards[shard].Purge(ctx, jetstream.WithPurgeSubject(head+"."+p.Token+".>"))
}

// tokens makes the part tokens: random, so that copies of one article
// stored at once by two nodes (whose wire forms may differ in Path) never
// mix their parts.
var tokens = struct {
	sync.Mutex
	b [8]byte
}{}

func newToken() string {
	tokens.Lock()
	defer tokens.Unlock()
	rand.Read(tokens.b[:])
	return hex.EncodeToString(tokens.b[:])
}

// Entry is a delivered head: an article queued for a peer.
type Entry struct {
	MessageID string
	Peers     string // Newsflow-Peers
	Parts     Parts  // N == 0: the head holds the whole article
	Marker    bool   // a delete marker (the article expired): no article
}

// ParseEntry reads a head's headers.
func ParseEntry(h nats.Header) (Entry, error) {
	if h.Get(jetstream.MarkerReasonHeader) != "" {
		return Entry{Marker: true}, nil
	}
	e := Entry{MessageID: h.Get(hdrID), Peers: h.Get(hdrPeers)}
	if len(e.MessageID) < 3 || e.MessageID[0] != '<' || e.MessageID[len(e.MessageID)-1] != '>' {
		return Entry{}, fmt.Errorf("cluster: head without a message-id (%s %q)", hdrID, clip(e.MessageID))
	}
	if v := h.Get(hdrParts); v != "" {
		p, err := ParseParts(v)
		if err != nil {
			return Entry{}, err
		}
		e.Parts = p
	}
	return e, nil
}

// For reports whether the entry is queued for peer.
func (e Entry) For(peer string) bool {
	for p := range strings.SplitSeq(e.Peers, ",") {
		if p == peer {
			return true
		}
	}
	return false
}

// Body is the whole article of a delivered head whose data is head:
// head itself, or head and its parts read back with direct gets.
func (s *Store) Body(ctx context.Context, e Entry, head []byte) ([]byte, error) {
	if e.Parts.N == 0 {
		return head, nil
	}
	subj, sh := s.head(e.MessageID)
	body := make([]byte, 0, e.Parts.Size)
	body = append(body, head...)
	for i := 1; i < e.Parts.N; i++ {
		m, err := s.shards[sh].GetLastMsgForSubject(ctx, subj+"."+e.Parts.Token+"."+strconv.Itoa(i))
		if err != nil {
			return nil, fmt.Errorf("cluster: article %s part %d: %w", e.MessageID, i, err)
		}
		body = append(body, m.Data...)
	}
	if len(body) != e.Parts.Size {
		return nil, fmt.Errorf("cluster: article %s: %d octets stored, want %d", e.MessageID, len(body), e.Parts.Size)
	}
	return body, nil
}

// Get reads article id back whole (tests, tracing).
func (s *Store) Get(ctx context.Context, id string) ([]byte, error) {
	subj, sh := s.head(id)
	m, err := s.shards[sh].GetLastMsgForSubject(ctx, subj)
	if err != nil {
		return nil, fmt.Errorf("cluster: article %s: %w", id, err)
	}
	e, err := ParseEntry(m.Header)
	if err != nil {
		return nil, err
	}
	if e.Marker {
		return nil, fmt.Errorf("cluster: article %s: expired", id)
	}
	return s.Body(ctx, e, m.Data)
}

// QueueLimits bound a peer's queue as backlog_max_age bounds a relay's.
type QueueLimits struct {
	MaxAge time.Duration // drop entries older than this when pulled (0: no limit)
}

// Queue is a peer's queue: its durable consumer on every shard.
type Queue struct {
	Peer      string
	Consumers []jetstream.Consumer // by shard
	Limits    QueueLimits
}

// Queue creates (or joins) peer's durable consumers.
func (s *Store) Queue(ctx context.Context, peer string, lim QueueLimits) (*Queue, error) {
	q := &Queue{Peer: peer, Limits: lim}
	for i, st := range s.shards {
		var c jetstream.Consumer
		err := retry(ctx, func(ctx context.Context) (err error) {
			c, err = st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
				Durable:       "q-" + peer,
				FilterSubject: s.set.Name + ".art." + strconv.Itoa(i) + ".*",
				// A new peer is fed from now on, not the whole store.
				DeliverPolicy: jetstream.DeliverNewPolicy,
				AckPolicy:     jetstream.AckExplicitPolicy,
				AckWait:       s.set.AckWait,
				MaxDeliver:    -1,
				MaxAckPending: s.set.MaxAckPending,
				Replicas:      s.set.Replicas,
			})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: queue of %s on %s: %w", peer, st.CachedInfo().Config.Name, err)
		}
		// A consumer just created has no leader for a moment, and its
		// pulls find no responder then (nats.go notices only when the
		// pull's heartbeats are missed): the queue is ready once each
		// consumer has its leader.
		err = retryInfo(ctx, func(ctx context.Context) error {
			info, err := c.Info(ctx)
			if err != nil {
				return err
			}
			if info.Cluster != nil && info.Cluster.Leader == "" {
				return errNoLeader
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: queue of %s on %s: leader: %w", peer, st.CachedInfo().Config.Name, err)
		}
		q.Consumers = append(q.Consumers, c)
	}
	return q, nil
}

// Bind gives q's consumers again as handles on nc, a connection of the
// caller's own, so that what they deliver (and the acks) travel on it.
func (s *Store) Bind(ctx context.Context, nc *nats.Conn, q *Queue) ([]jetstream.Consumer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: jetstream: %w", err)
	}
	cons := make([]jetstream.Consumer, 0, len(q.Consumers))
	for i := range q.Consumers {
		var c jetstream.Consumer
		err := retryInfo(ctx, func(ctx context.Context) (err error) {
			c, err = js.Consumer(ctx, s.shardStream(i), "q-"+q.Peer)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: queue of %s on %s: %w", q.Peer, s.shardStream(i), err)
		}
		cons = append(cons, c)
	}
	return cons, nil
}

// Pending reports a peer's queue: heads not yet pulled (of every
// article stored since, whether for this peer or not), and pulled but
// not answered.
func (q *Queue) Pending(ctx context.Context) (waiting, unacked int, err error) {
	for _, c := range q.Consumers {
		info, err := c.Info(ctx)
		if err != nil {
			return 0, 0, fmt.Errorf("cluster: consumer info: %w", err)
		}
		waiting += int(info.NumPending)
		unacked += info.NumAckPending
	}
	return waiting, unacked, nil
}

// retry runs a JetStream administration request until it succeeds or ctx
// ends, each attempt bounded to a few seconds. Nodes that start together
// create the same streams at the same moment, and a NATS cluster answers
// such concurrent creations of one stream to one requester only (the
// others wait for ever: TestOpenTogether).
func retry(ctx context.Context, fn func(ctx context.Context) error) error {
	return retryEvery(ctx, 3*time.Second, fn)
}

// retryInfo runs an information request (a stream's or a consumer's)
// until it succeeds or ctx ends, each attempt bounded to infoTimeout.
// While a stream or consumer elects its leader, or its new leader has not
// taken up its part yet, no server answers such a request: a short bound
// asks again at once rather than waiting out the administration's.
func retryInfo(ctx context.Context, fn func(ctx context.Context) error) error {
	return retryEvery(ctx, infoTimeout, fn)
}

// infoTimeout bounds one attempt of an information request: far above
// an answer's round trip, even on a loaded machine.
const infoTimeout = 500 * time.Millisecond

// retryEvery runs fn until it succeeds or ctx ends, each attempt bounded
// to attempt, with a short random pause between attempts.
func retryEvery(ctx context.Context, attempt time.Duration, fn func(ctx context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := fn(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(100+mrand.IntN(300)) * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}
