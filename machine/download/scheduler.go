package download

// Theory of operation
//
// The Scheduler decides, for every segment of a download, which server and
// which connection fetch it. Two rules keep it quota-safe (a fill server is
// often a metered block account):
//
//   - a higher level is tried for a segment only after every server of the
//     lower levels that could have it has failed it;
//   - a segment is requested from one server at a time: it is either
//     waiting or in flight on exactly one connection.
//
// Selection, for a waiting segment at time now (decide):
//
//  1. The servers that could still deliver it ("remaining"): active (with
//     at least one connection), retention >= the article's age (checked
//     here, before any request, so an old article costs nothing on a
//     short-retention server), and not failed for this segment (see the
//     retry table in retry.go; a 430 from one server of a load-balancing
//     group fails the whole group on its level).
//  2. Optional servers that are blocked count as failed, unless nothing else
//     remains: then the segment waits for them rather than fail.
//  3. The level is the lowest level holding a remaining server. Only
//     servers of that level are candidates, minus blocked ones (the segment
//     waits for a blocked non-optional server of its level: it might have
//     the article, and asking the next level would spend its quota).
//  4. A retry after a connection error or a corrupt body wants the same
//     server: only it is a candidate, while it is a
//     candidate at all (not blocked, not deactivated).
//  5. Servers in configuration order within the level; the first with a
//     free request slot takes it. A server in a group (group != 0) stands
//     for its group: the least-loaded member with a free slot (requests
//     in flight relative to connections*pipeline) takes it.
//  6. No candidate has a free slot: the segment waits; if a candidate may
//     open more connections, the Scheduler asks for them (Dial).
//  7. No server remains at any level: the segment fails (SegmentFailed,
//     with every server's verdict). If no server is active at all, it waits.
//
// Request slots: a connection has Server.Pipeline slots (BODY requests in
// flight, answered in order); an Assign takes the connection with the
// fewest requests in flight, so pipelines fill evenly.
//
// Efficiency. The decision depends on a segment only through its
// signature: the retention class (how many of the configured retention
// limits its age exceeds), the set of servers that failed it, and the
// server it wants. Waiting segments sit in one queue per signature, each a
// heap ordered by the order segments were added (so files finish in NZB
// order and retries go first). One decision per queue head serves the whole
// queue, so choosing the next assignment costs O(queues x servers), not
// O(segments): a fresh NZB is one queue. Ages only grow, so a segment's
// class is checked again when it reaches a queue's head and it moves on if
// its class changed.
//
// Memory. A segment costs about 50 bytes of live heap whatever its state
// (scheduler_seg.go: parallel arrays indexed by the segment's seq, a
// history only while it has one); a finished segment keeps only its state
// and attempt count.
//
// Inputs, each taking now: Add (segments), Connected / DialFailed (answers
// to Dial), Report (one request's outcome), Closed (a connection ended;
// its outstanding requests get one outcome), SetActive, Pause, and Timeout
// (a block's end, at Deadline). After each, drain NextEvent.

import (
	"fmt"
	"iter"
	"slices"
	"sort"
	"time"
)

// segment states.
type segState uint8

const (
	segWaiting segState = iota
	segInFlight
	segDone
	segFailed
)

var segStateNames = [...]string{"waiting", "in flight", "done", "failed"}

// server is a configured server and its live state.
type server struct {
	Server
	idx       int
	bit       uint64
	groupMask uint64 // servers of the same level and group (itself included); its own bit when Group is 0
	retIdx    int    // index of Retention in Scheduler.rets; -1 for unlimited
	usable    bool   // Active and Connections > 0
	blocked   bool
	until     time.Time
	failures  int // consecutive failures behind the current or last block
	open      int // connections up
	dialing   int // connections asked for, not yet up
	inflight  int // requests in flight over all its connections
	conns     []*conn
}

// capacity is how many requests the server may have in flight.
func (sv *server) capacity() int { return sv.Connections * sv.Pipeline }

// hasFree reports whether one of its open connections has a free slot.
func (sv *server) hasFree() bool { return sv.inflight < sv.open*sv.Pipeline }

// conn is a connection the Scheduler asked for.
type conn struct {
	id   ConnID
	srv  *server
	up   bool
	reqs []int32 // seqs in flight, in the order they were assigned
}

// count holds a segment's retry counters on one server.
type count struct {
	srv int
	n   [numCounters]int
}

// sig is what a decision depends on; see the theory of operation.
type sig struct {
	class  uint8
	failed uint64
	want   int
}

// Scheduler assigns segments to servers and connections; see the theory of
// operation. It performs no I/O and never reads a clock. After every input
// drain NextEvent until it reports false.
type Scheduler struct {
	cfg    Config
	srv    []*server // in configuration order
	order  []*server // by level, then configuration order
	byID   map[int]*server
	rets   []int          // distinct positive retentions, ascending
	admit  []uint64       // admit[class]: servers whose retention admits that class
	usable uint64         // servers usable at all
	optBlk uint64         // optional servers that are blocked
	segs   segTable       // every segment added (scheduler_seg.go)
	queues map[sig]*queue // waiting segments by signature
	qs     []*queue       // the same queues, in creation order (deterministic iteration)
	conns  map[ConnID]*conn
	nextID ConnID
	paused bool
	events []Event
	evHead int
	stats  Stats
}

// Stats counts what the Scheduler did.
type Stats struct {
	Segments int // added
	Done     int
	Failed   int
	Waiting  int
	InFlight int
	Requests int             // Assign events
	Retries  map[Outcome]int // requests that repeated a failed one, by that failure's outcome
	Blocks   int             // ServerBlocked events
	Dials    int             // Dial events
}

// NewScheduler returns a Scheduler for the servers, with no segments yet.
func NewScheduler(cfg Config, servers []Server) (*Scheduler, error) {
	if err := checkServers(servers); err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg:    cfg.withDefaults(),
		byID:   map[int]*server{},
		queues: map[sig]*queue{},
		conns:  map[ConnID]*conn{},
		nextID: 1,
		stats:  Stats{Retries: map[Outcome]int{}},
	}
	retSet := map[int]bool{}
	for i, c := range servers {
		if c.Pipeline == 0 {
			c.Pipeline = DefaultPipeline
		}
		sv := &server{Server: c, idx: i, bit: 1 << i, retIdx: -1}
		sv.usable = c.Active && c.Connections > 0
		if sv.usable {
			s.usable |= sv.bit
		}
		if c.Retention > 0 {
			retSet[c.Retention] = true
		}
		s.srv = append(s.srv, sv)
		s.byID[c.ID] = sv
	}
	for r := range retSet {
		s.rets = append(s.rets, r)
	}
	sort.Ints(s.rets)
	for _, sv := range s.srv {
		if sv.Retention > 0 {
			sv.retIdx = sort.SearchInts(s.rets, sv.Retention)
		}
		sv.groupMask = sv.bit
		if sv.Group != 0 {
			for _, o := range s.srv {
				if o.Level == sv.Level && o.Group == sv.Group {
					sv.groupMask |= o.bit
				}
			}
		}
	}
	// admit[c]: a server with retention index r admits the articles whose
	// age exceeds the c smallest retentions when r >= c.
	s.admit = make([]uint64, len(s.rets)+1)
	for c := range s.admit {
		for _, sv := range s.srv {
			if sv.retIdx < 0 || sv.retIdx >= c {
				s.admit[c] |= sv.bit
			}
		}
	}
	s.order = append([]*server(nil), s.srv...)
	sort.SliceStable(s.order, func(i, j int) bool { return s.order[i].Level < s.order[j].Level })
	return s, nil
}

// Add queues segments for download at now. A key added before is an
// error; nothing is added then.
func (s *Scheduler) Add(now time.Time, segs ...Segment) error {
	return s.AddAll(now, slices.Values(segs))
}

// AddAll is Add for the segments of an iterator, so that an owner with a
// million segments need not build a slice of them first (the Scheduler
// keeps what it needs of each in about 50 bytes; a Segment is 88).
func (s *Scheduler) AddAll(now time.Time, segs iter.Seq[Segment]) error {
	first, err := s.segs.add(segs)
	if err != nil {
		return err
	}
	for i := first; int(i) < s.segs.len(); i++ {
		s.segs.class[i] = s.classAt(i, now)
		s.stats.Segments++
		s.stats.Waiting++
		s.enqueue(i)
	}
	s.pump(now)
	return nil
}

// Connected reports that the connection asked for by Dial is up (the
// handshake finished): it takes requests from now on.
func (s *Scheduler) Connected(now time.Time, id ConnID) error {
	c, ok := s.conns[id]
	if !ok || c.up {
		return fmt.Errorf("download: Connected(c%d): no such connection being dialed", id)
	}
	c.up = true
	c.srv.dialing--
	c.srv.open++
	s.pump(now)
	return nil
}

// DialFailed reports that the connection asked for by Dial did not come up.
// The server is blocked (retry.go).
func (s *Scheduler) DialFailed(now time.Time, id ConnID, cause DialCause) error {
	c, ok := s.conns[id]
	if !ok || c.up {
		return fmt.Errorf("download: DialFailed(c%d): no such connection being dialed", id)
	}
	s.dropConn(c)
	c.srv.dialing--
	s.block(now, c.srv, "dial: "+cause.String())
	s.pump(now)
	return nil
}

// Report gives the outcome of a request on a connection. The request must
// be in flight there (Assign). The outcome goes through the retry table.
func (s *Scheduler) Report(now time.Time, id ConnID, k Key, o Outcome) error {
	c, ok := s.conns[id]
	if !ok || !c.up {
		return fmt.Errorf("download: Report(c%d, %s): no such connection", id, k)
	}
	for j, i := range c.reqs {
		if s.segs.key(i) == k {
			c.reqs = append(c.reqs[:j], c.reqs[j+1:]...)
			s.apply(now, i, c.srv, o)
			s.pump(now)
			return nil
		}
	}
	return fmt.Errorf("download: Report(c%d, %s): segment not in flight on that connection", id, k)
}

// Closed reports that an open connection ended. Every request still in
// flight on it gets the outcome o (ConnError for a broken connection,
// AuthError when authentication failed), in the order they were assigned.
func (s *Scheduler) Closed(now time.Time, id ConnID, o Outcome) error {
	c, ok := s.conns[id]
	if !ok || !c.up {
		return fmt.Errorf("download: Closed(c%d): no such open connection (a dial that failed goes to DialFailed)", id)
	}
	if o != ConnError && o != AuthError {
		return fmt.Errorf("download: Closed(c%d): outcome %v; a closed connection is a connection or auth error", id, o)
	}
	s.dropConn(c)
	c.srv.open--
	reqs := c.reqs
	c.reqs = nil
	for _, i := range reqs {
		s.apply(now, i, c.srv, o)
	}
	s.pump(now)
	return nil
}

// SetActive turns a server on or off. An inactive server gets no requests
// and no dials; requests in flight on it finish normally, and the owner
// closes its connections when it likes.
func (s *Scheduler) SetActive(now time.Time, id int, on bool) error {
	sv, ok := s.byID[id]
	if !ok {
		return fmt.Errorf("download: SetActive: no server %d", id)
	}
	sv.Active = on
	sv.usable = on && sv.Connections > 0
	s.usable &^= sv.bit
	if sv.usable {
		s.usable |= sv.bit
	}
	s.pump(now)
	return nil
}

// Pause stops (true) or resumes (false) assignments and dials, for example
// while a quota is reached. Requests in flight go on.
func (s *Scheduler) Pause(now time.Time, on bool) {
	s.paused = on
	s.pump(now)
}

// Deadline is when Timeout must next be called: the end of the earliest
// server block. false means no block is running.
func (s *Scheduler) Deadline() (time.Time, bool) {
	var d time.Time
	ok := false
	for _, sv := range s.srv {
		if sv.blocked && (!ok || sv.until.Before(d)) {
			d, ok = sv.until, true
		}
	}
	return d, ok
}

// Timeout ends the blocks that are due at now and assigns work again. An
// early or repeated call does nothing.
func (s *Scheduler) Timeout(now time.Time) {
	for _, sv := range s.srv {
		if sv.blocked && !now.Before(sv.until) {
			sv.blocked = false
			s.optBlk &^= sv.bit
			s.emit(ServerUnblocked{Server: sv.ID})
		}
	}
	s.pump(now)
}

// NextEvent returns the next event for the owner; false when there is none.
func (s *Scheduler) NextEvent() (Event, bool) {
	if s.evHead == len(s.events) {
		s.events, s.evHead = s.events[:0], 0
		return nil, false
	}
	e := s.events[s.evHead]
	s.events[s.evHead] = nil
	s.evHead++
	return e, true
}

// Stats returns the counters so far.
func (s *Scheduler) Stats() Stats {
	st := s.stats
	st.Retries = make(map[Outcome]int, len(s.stats.Retries))
	for k, v := range s.stats.Retries {
		st.Retries[k] = v
	}
	return st
}

// Finished reports whether every segment added is done or failed.
func (s *Scheduler) Finished() bool { return s.stats.Done+s.stats.Failed == s.stats.Segments }

// ---- internals ----

func (s *Scheduler) emit(e Event) {
	if _, ok := e.(ServerBlocked); ok {
		s.stats.Blocks++
	}
	s.events = append(s.events, e)
}

// classAt is the segment's retention class at now: how many of the
// configured retentions its age exceeds.
func (s *Scheduler) classAt(i int32, now time.Time) uint8 {
	posted := s.segs.posted(i)
	if posted.IsZero() || len(s.rets) == 0 {
		return 0
	}
	age := now.Sub(posted)
	c := 0
	for c < len(s.rets) && age > time.Duration(s.rets[c])*24*time.Hour {
		c++
	}
	if int(s.segs.class[i]) > c {
		c = int(s.segs.class[i]) // the clock went back: ages never shrink here
	}
	return uint8(c)
}

// enqueue puts a waiting segment into the queue of its signature.
func (s *Scheduler) enqueue(i int32) {
	k := s.segs.sig(i)
	q, ok := s.queues[k]
	if !ok {
		q = &queue{sig: k}
		s.queues[k] = q
		s.qs = append(s.qs, q)
	}
	q.push(i)
}

// dropConn forgets a connection.
func (s *Scheduler) dropConn(c *conn) {
	delete(s.conns, c.id)
	sv := c.srv
	for i, o := range sv.conns {
		if o == c {
			sv.conns = append(sv.conns[:i], sv.conns[i+1:]...)
			break
		}
	}
}

// block blocks a server (retry.go: server blocks). A block that is running
// is not extended.
func (s *Scheduler) block(now time.Time, sv *server, cause string) {
	if sv.blocked && now.Before(sv.until) {
		return
	}
	sv.failures++
	sv.blocked = true
	sv.until = now.Add(s.cfg.backoff(sv.failures))
	if sv.Optional {
		s.optBlk |= sv.bit
	}
	s.emit(ServerBlocked{Server: sv.ID, Until: sv.until, Failures: sv.failures, Cause: cause})
}

// counter returns the segment's counter i on server idx.
func (x *segExt) counter(idx, i int) *int {
	for k := range x.counts {
		if x.counts[k].srv == idx {
			return &x.counts[k].n[i]
		}
	}
	x.counts = append(x.counts, count{srv: idx})
	return &x.counts[len(x.counts)-1].n[i]
}

// apply carries out the retry table's row for a request's outcome.
func (s *Scheduler) apply(now time.Time, i int32, sv *server, o Outcome) {
	row := rowFor(o)
	sv.inflight--
	s.stats.InFlight--
	if row.reset {
		sv.failures = 0
	}
	if row.action == actDone {
		s.segs.state[i] = segDone
		s.segs.forget(i) // a finished segment keeps only its state and attempts
		s.stats.Done++
		s.emit(SegmentDone{Segment: s.segs.key(i), Server: sv.ID})
		return
	}
	x := s.segs.history(i)
	switch row.action {
	case actRetry:
		n := x.counter(sv.idx, row.counter)
		*n++
		if *n <= s.cfg.limitOf(row) {
			x.want = sv.idx
		} else {
			s.failOn(x, sv, row)
		}
	case actFail:
		s.failOn(x, sv, row)
	case actBlock:
		x.want = -1
		s.block(now, sv, "request: "+o.String())
	}
	x.last = o
	s.segs.state[i] = segWaiting
	s.stats.Waiting++
	s.enqueue(i)
}

// failOn marks the server (and, for rows that say so, its group on its
// level) as failed for the segment.
func (s *Scheduler) failOn(x *segExt, sv *server, row retryRow) {
	x.want = -1
	x.failed |= sv.bit
	x.verdicts = append(x.verdicts, Verdict{Server: sv.ID, Why: row.verdict})
	if !row.group || sv.Group == 0 {
		return
	}
	for _, o := range s.srv {
		if o.bit&sv.groupMask != 0 && x.failed&o.bit == 0 {
			x.failed |= o.bit
			x.verdicts = append(x.verdicts, Verdict{Server: o.ID, Why: WhyGroupMissing})
		}
	}
}

// decision is what decide found for a signature.
type decision struct {
	kind  uint8   // decWait, decFail, decAssign
	srv   *server // decAssign: the server
	cands uint64  // decWait: candidates that may take it once they have room
}

const (
	decWait uint8 = iota
	decFail
	decAssign
)

// decide runs the selection algorithm (theory of operation, 1-7) for a
// signature.
func (s *Scheduler) decide(k sig) decision {
	remaining := s.usable & s.admit[k.class] &^ k.failed
	firm := remaining &^ s.optBlk
	if firm == 0 {
		if remaining != 0 || s.usable == 0 {
			return decision{kind: decWait} // only blocked optional servers left, or nothing active
		}
		return decision{kind: decFail}
	}
	level := -1
	var cands uint64
	for _, sv := range s.order {
		if firm&sv.bit == 0 {
			continue
		}
		if level < 0 {
			level = sv.Level
		}
		if sv.Level != level {
			break
		}
		if !sv.blocked {
			cands |= sv.bit
		}
	}
	if k.want >= 0 && cands&(1<<k.want) != 0 {
		cands = 1 << k.want
	}
	if cands == 0 {
		return decision{kind: decWait} // its level's servers are blocked: wait
	}
	for _, sv := range s.order {
		if cands&sv.bit == 0 || !sv.hasFree() {
			continue
		}
		if sv.Group != 0 {
			sv = s.leastLoaded(sv.groupMask & cands)
		}
		return decision{kind: decAssign, srv: sv}
	}
	return decision{kind: decWait, cands: cands}
}

// leastLoaded returns the member of mask with a free slot and the smallest
// share of its capacity in flight (then fewer in flight, then order).
func (s *Scheduler) leastLoaded(mask uint64) *server {
	var best *server
	for _, sv := range s.order {
		if mask&sv.bit == 0 || !sv.hasFree() {
			continue
		}
		if best == nil {
			best = sv
			continue
		}
		a, b := sv.inflight*best.capacity(), best.inflight*sv.capacity()
		if a < b || (a == b && sv.inflight < best.inflight) {
			best = sv
		}
	}
	return best
}

// pump assigns waiting segments to free slots until none can be placed,
// fails the segments that no server can deliver, then asks for connections.
func (s *Scheduler) pump(now time.Time) {
	if s.paused {
		return
	}
	for {
		s.compact()
		var best *queue
		var bestSrv *server
		for i := 0; i < len(s.qs); i++ {
			q := s.qs[i]
			if len(q.h) == 0 {
				continue
			}
			head := q.h[0]
			if c := s.classAt(head, now); c != s.segs.class[head] {
				// Older now than when it was queued: move it on; its
				// new queue is visited later in this loop.
				q.pop()
				s.segs.class[head] = c
				s.enqueue(head)
				i--
				continue
			}
			d := s.decide(q.sig)
			switch d.kind {
			case decFail:
				for len(q.h) > 0 {
					s.fail(q.pop())
				}
			case decAssign:
				if best == nil || head < best.h[0] {
					best, bestSrv = q, d.srv
				}
			}
		}
		if best == nil {
			break
		}
		s.assign(best.pop(), bestSrv)
	}
	s.planDials()
}

// compact drops empty queues.
func (s *Scheduler) compact() {
	n := 0
	for _, q := range s.qs {
		if len(q.h) == 0 {
			delete(s.queues, q.sig)
			continue
		}
		s.qs[n] = q
		n++
	}
	clear(s.qs[n:])
	s.qs = s.qs[:n]
}

// fail ends a waiting segment that no server can deliver.
func (s *Scheduler) fail(i int32) {
	s.segs.state[i] = segFailed
	s.stats.Waiting--
	s.stats.Failed++
	ev := SegmentFailed{Segment: s.segs.key(i)}
	x := s.segs.peek(i)
	if x == nil {
		x = &segExt{want: -1}
	}
	for _, sv := range s.srv {
		v := Verdict{Server: sv.ID}
		switch {
		case x.failed&sv.bit != 0:
			for _, r := range x.verdicts {
				if r.Server == sv.ID {
					v.Why = r.Why // the last word of the server
				}
			}
		case s.admit[s.segs.class[i]]&sv.bit == 0:
			v.Why = WhyRetention
		default:
			// Not usable. (A usable server that neither failed nor is
			// beyond retention keeps the segment waiting: decide never
			// fails it, even for a blocked optional server.)
			v.Why = WhyInactive
		}
		ev.Verdicts = append(ev.Verdicts, v)
	}
	s.segs.forget(i) // a finished segment keeps only its state and attempts
	s.emit(ev)
}

// assign puts a segment in flight on the server's least busy open
// connection that has a free slot.
func (s *Scheduler) assign(i int32, sv *server) {
	var c *conn
	for _, o := range sv.conns {
		if o.up && len(o.reqs) < sv.Pipeline && (c == nil || len(o.reqs) < len(c.reqs)) {
			c = o
		}
	}
	c.reqs = append(c.reqs, i)
	t := &s.segs
	t.state[i] = segInFlight
	if t.attempts[i] < ^uint16(0) {
		t.attempts[i]++
	}
	sv.inflight++
	s.stats.Waiting--
	s.stats.InFlight++
	s.stats.Requests++
	if x := t.peek(i); x != nil {
		x.want = -1               // a want is for waiting; the outcome sets it again
		s.stats.Retries[x.last]++ // a segment with a history failed a request before
	}
	a := Assign{Segment: t.key(i), MessageID: t.msgID[i], Server: sv.ID, Conn: c.id, Attempt: int(t.attempts[i]), Bytes: t.bytes[i]}
	if g := t.metas[t.meta[i]].groups; sv.JoinGroup && len(g) > 0 {
		a.Group = g[0]
	}
	s.emit(a)
}

// planDials asks for connections where waiting segments have candidates
// without free slots: enough new connections (within Server.Connections)
// for the waiting segments, counting those already being dialed.
func (s *Scheduler) planDials() {
	var spare, planned [MaxServers]int
	for _, sv := range s.srv {
		spare[sv.idx] = sv.dialing * sv.Pipeline
	}
	for _, q := range s.qs {
		if len(q.h) == 0 {
			continue
		}
		d := s.decide(q.sig)
		if d.kind != decWait || d.cands == 0 {
			continue
		}
		need := len(q.h)
		for _, sv := range s.order {
			if d.cands&sv.bit != 0 {
				take := min(need, spare[sv.idx])
				spare[sv.idx] -= take
				need -= take
			}
		}
		for need > 0 {
			sv := s.dialTarget(d.cands, &planned)
			if sv == nil {
				break
			}
			planned[sv.idx]++
			spare[sv.idx] += sv.Pipeline
			take := min(need, spare[sv.idx])
			spare[sv.idx] -= take
			need -= take
		}
	}
	for _, sv := range s.srv {
		for range planned[sv.idx] {
			c := &conn{id: s.nextID, srv: sv}
			s.nextID++
			s.conns[c.id] = c
			sv.conns = append(sv.conns, c)
			sv.dialing++
			s.stats.Dials++
			s.emit(Dial{Server: sv.ID, Conn: c.id})
		}
	}
}

// dialTarget picks the candidate to open a connection to: the first in
// order with room for one more; for a group, its member with the fewest
// connections relative to its limit.
func (s *Scheduler) dialTarget(cands uint64, planned *[MaxServers]int) *server {
	room := func(sv *server) int { return sv.Connections - sv.open - sv.dialing - planned[sv.idx] }
	for _, sv := range s.order {
		if cands&sv.bit == 0 || room(sv) <= 0 {
			continue
		}
		if sv.Group == 0 {
			return sv
		}
		best := sv
		for _, o := range s.order {
			if o.bit&sv.groupMask&cands == 0 || room(o) <= 0 {
				continue
			}
			// fewer used connections relative to the limit
			ub, uo := best.Connections-room(best), o.Connections-room(o)
			if uo*best.Connections < ub*o.Connections {
				best = o
			}
		}
		return best
	}
	return nil
}
