package download

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestSchedulerProperties drives Schedulers with random server setups and
// random outcomes (seeded, bounded) and checks, against a reference model
// of the retry table kept by the test, on every Assign:
//
//   - quota safety: every server of a lower level than the one chosen is out
//     for the segment (failed it in the model, inactive, beyond retention,
//     or optional and blocked at that moment);
//   - a segment is never in flight twice;
//   - the chosen server is usable, not blocked, within retention, and has
//     not failed the segment; a pending want-server retry goes to that
//     server unless it is blocked;
//   - connections and pipelines stay within their limits;
//
// on every SegmentFailed that no server could still deliver it, and at the
// end that every segment is done or failed.
func TestSchedulerProperties(t *testing.T) {
	seeds := 400
	if testing.Short() {
		seeds = 50
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runProperty(t, uint64(seed))
		})
	}
}

// model is the test's own account of what happened.
type model struct {
	t       *testing.T
	rng     *rand.Rand
	s       *Scheduler
	now     time.Time
	cfg     Config
	servers []Server
	byID    map[int]Server
	segs    map[Key]Segment

	failed   map[Key]map[int]bool // servers out for a segment by the retry table
	conn     map[Key]map[int]int  // connection errors per server
	corrupt  map[Key]map[int]int  // corrupt bodies per server
	want     map[Key]int          // a retry that wants a server
	inflight map[Key]ConnID
	done     map[Key]bool
	fail     map[Key]bool
	blocked  map[int]time.Time
	dialing  map[ConnID]int // conn -> server id
	open     map[ConnID]int
	reqs     map[ConnID][]Key
}

func runProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	m := &model{t: t, rng: rng, now: epoch, byID: map[int]Server{}, segs: map[Key]Segment{},
		failed: map[Key]map[int]bool{}, conn: map[Key]map[int]int{}, corrupt: map[Key]map[int]int{},
		want: map[Key]int{}, inflight: map[Key]ConnID{}, done: map[Key]bool{}, fail: map[Key]bool{},
		blocked: map[int]time.Time{}, dialing: map[ConnID]int{}, open: map[ConnID]int{}, reqs: map[ConnID][]Key{}}
	m.cfg = Config{ArticleRetries: rng.IntN(4) - 1, BackoffBase: time.Duration(1+rng.IntN(20)) * time.Second}
	n := 1 + rng.IntN(5)
	anyActive := false
	for i := range n {
		s := Server{ID: 10 + i, Name: fmt.Sprint("s", i), Level: rng.IntN(3), Group: rng.IntN(3) * rng.IntN(2),
			Active: rng.IntN(10) > 0, Optional: rng.IntN(4) == 0, Connections: 1 + rng.IntN(3),
			Pipeline: rng.IntN(4), Retention: []int{0, 0, 10, 50}[rng.IntN(4)], JoinGroup: rng.IntN(2) == 0}
		anyActive = anyActive || s.Active
		m.servers = append(m.servers, s)
		m.byID[s.ID] = s
	}
	if !anyActive {
		m.servers[0].Active = true
		m.byID[m.servers[0].ID] = m.servers[0]
	}
	var err error
	m.s, err = NewScheduler(m.cfg, m.servers)
	if err != nil {
		t.Fatal(err)
	}
	var segs []Segment
	for i := range 5 + rng.IntN(40) {
		g := Segment{Key: Key{File: i % 3, Number: i}, MessageID: fmt.Sprintf("<%d@p>", i), Groups: []string{"a.b"}}
		if rng.IntN(3) > 0 {
			g.Posted = m.now.Add(-time.Duration(rng.IntN(60*24)) * time.Hour)
		}
		segs = append(segs, g)
		m.segs[g.Key] = g
	}
	// Add in a few batches.
	for len(segs) > 0 {
		k := 1 + rng.IntN(len(segs))
		if err := m.s.Add(m.now, segs[:k]...); err != nil {
			t.Fatal(err)
		}
		segs = segs[k:]
		m.drain()
	}
	const rough, calm = 1500, 6000
	for step := 0; step < rough+calm && !m.s.Finished(); step++ {
		m.step(step < rough)
	}
	if !m.s.Finished() {
		t.Fatalf("not finished after %d steps: %+v", rough+calm, m.s.Stats())
	}
	for k := range m.segs {
		if !m.done[k] && !m.fail[k] {
			t.Errorf("segment %s neither done nor failed", k)
		}
	}
	st := m.s.Stats()
	if st.Waiting != 0 || st.InFlight != 0 || st.Done != len(m.done) || st.Failed != len(m.fail) || st.Segments != len(m.segs) {
		t.Errorf("stats %+v; the model has %d done, %d failed of %d", st, len(m.done), len(m.fail), len(m.segs))
	}
}

// out reports whether server id cannot be asked for segment k at now: the
// reference for the levels rule.
func (m *model) out(k Key, id int) bool {
	s := m.byID[id]
	return m.failed[k][id] || !s.Active || !m.admits(k, id) || (s.Optional && m.isBlocked(id))
}

func (m *model) admits(k Key, id int) bool {
	s, g := m.byID[id], m.segs[k]
	return s.Retention == 0 || g.Posted.IsZero() || m.now.Sub(g.Posted) <= time.Duration(s.Retention)*24*time.Hour
}

func (m *model) isBlocked(id int) bool {
	u, ok := m.blocked[id]
	return ok && m.now.Before(u)
}

func (m *model) pipeline(id int) int {
	if p := m.byID[id].Pipeline; p > 0 {
		return p
	}
	return DefaultPipeline
}

// drain takes the Scheduler's events and checks each.
func (m *model) drain() {
	t := m.t
	t.Helper()
	for {
		e, ok := m.s.NextEvent()
		if !ok {
			return
		}
		switch e := e.(type) {
		case Dial:
			m.dialing[e.Conn] = e.Server
			n := 0
			for _, id := range m.dialing {
				if id == e.Server {
					n++
				}
			}
			for _, id := range m.open {
				if id == e.Server {
					n++
				}
			}
			if n > m.byID[e.Server].Connections {
				t.Fatalf("%v: %d connections to s%d, limit %d", e, n, e.Server, m.byID[e.Server].Connections)
			}
			if m.isBlocked(e.Server) || !m.byID[e.Server].Active {
				t.Fatalf("%v: server blocked or inactive", e)
			}
		case Assign:
			m.checkAssign(e)
		case SegmentDone:
			if !m.done[e.Segment] {
				t.Fatalf("%v without an OK report", e)
			}
		case SegmentFailed:
			if m.fail[e.Segment] || m.done[e.Segment] {
				t.Fatalf("%v: segment already ended", e)
			}
			if _, busy := m.inflight[e.Segment]; busy {
				t.Fatalf("%v: segment in flight", e)
			}
			anyActive := false
			for _, s := range m.servers {
				anyActive = anyActive || s.Active
				if !m.failed[e.Segment][s.ID] && s.Active && m.admits(e.Segment, s.ID) {
					t.Fatalf("%v: s%d could still deliver it", e, s.ID)
				}
			}
			if !anyActive {
				t.Fatalf("%v with no active server", e)
			}
			m.fail[e.Segment] = true
		case ServerBlocked:
			if m.isBlocked(e.Server) {
				t.Fatalf("%v: already blocked", e)
			}
			m.blocked[e.Server] = e.Until
		case ServerUnblocked:
			if m.isBlocked(e.Server) {
				t.Fatalf("%v before the block's end", e)
			}
			delete(m.blocked, e.Server)
		}
	}
}

func (m *model) checkAssign(e Assign) {
	t := m.t
	t.Helper()
	k, id := e.Segment, e.Server
	if c, busy := m.inflight[k]; busy {
		t.Fatalf("%v: segment already in flight on c%d", e, c)
	}
	if m.done[k] || m.fail[k] {
		t.Fatalf("%v: segment already ended", e)
	}
	if cid, ok := m.open[e.Conn]; !ok || cid != id {
		t.Fatalf("%v: connection not open to that server", e)
	}
	if len(m.reqs[e.Conn]) >= m.pipeline(id) {
		t.Fatalf("%v: pipeline of %d full", e, m.pipeline(id))
	}
	s := m.byID[id]
	if !s.Active || m.isBlocked(id) || m.failed[k][id] || !m.admits(k, id) {
		t.Fatalf("%v: server not eligible (active %v blocked %v failed %v admits %v)", e, s.Active, m.isBlocked(id), m.failed[k][id], m.admits(k, id))
	}
	for _, u := range m.servers {
		if u.Level < s.Level && !m.out(k, u.ID) {
			t.Fatalf("%v: level %d before s%d of level %d failed it", e, s.Level, u.ID, u.Level)
		}
	}
	// A retry wants its server while that server is at the segment's level
	// (a lower level may come back: an optional server's block ends).
	if w, ok := m.want[k]; ok && w != id && !m.isBlocked(w) && m.byID[w].Active {
		low := true
		for _, u := range m.servers {
			if u.Level < m.byID[w].Level && !m.out(k, u.ID) {
				low = false
			}
		}
		if low {
			t.Fatalf("%v: the retry wants s%d", e, w)
		}
	}
	if s.JoinGroup != (e.Group != "") {
		t.Fatalf("%v: join_group is %v", e, s.JoinGroup)
	}
	delete(m.want, k)
	m.inflight[k] = e.Conn
	m.reqs[e.Conn] = append(m.reqs[e.Conn], k)
}

// outcome applies the reference retry table to the model.
func (m *model) outcome(k Key, id int, o Outcome) {
	count := func(c map[Key]map[int]int, limit int) {
		if c[k] == nil {
			c[k] = map[int]int{}
		}
		c[k][id]++
		if c[k][id] > limit {
			m.setFailed(k, id)
			delete(m.want, k)
		} else {
			m.want[k] = id
		}
	}
	switch o {
	case OK:
		m.done[k] = true
	case Missing:
		m.setFailed(k, id)
		if g := m.byID[id].Group; g != 0 {
			for _, u := range m.servers {
				if u.Group == g && u.Level == m.byID[id].Level {
					m.setFailed(k, u.ID)
				}
			}
		}
	case Corrupt:
		count(m.corrupt, 1)
	case ConnError:
		retries := m.cfg.ArticleRetries // the documented meaning of the Config field
		switch {
		case retries == 0:
			retries = DefaultArticleRetries
		case retries < 0:
			retries = 0
		}
		count(m.conn, retries)
	case AuthError:
		delete(m.want, k) // the server is blocked; the segment forgets it
	}
}

func (m *model) setFailed(k Key, id int) {
	if m.failed[k] == nil {
		m.failed[k] = map[int]bool{}
	}
	m.failed[k][id] = true
}

// step makes one random input. rough allows every kind of failure; calm
// allows only OK and Missing so that the run ends.
func (m *model) step(rough bool) {
	t, rng := m.t, m.rng
	t.Helper()
	switch r := rng.IntN(100); {
	case r < 25 && len(m.dialing) > 0:
		c := pick(rng, m.dialing)
		id := m.dialing[c]
		delete(m.dialing, c)
		if rough && rng.IntN(10) < 3 {
			if err := m.s.DialFailed(m.now, c, DialCause(1+rng.IntN(5))); err != nil {
				t.Fatal(err)
			}
		} else {
			m.open[c] = id
			if err := m.s.Connected(m.now, c); err != nil {
				t.Fatal(err)
			}
		}
	case r < 80 && len(m.inflight) > 0:
		busy := map[ConnID]bool{}
		for c, ks := range m.reqs {
			if len(ks) > 0 {
				busy[c] = true
			}
		}
		c := pick(rng, busy)
		k := m.reqs[c][0]
		m.reqs[c] = m.reqs[c][1:]
		delete(m.inflight, k)
		o := OK
		if w := rng.IntN(100); rough {
			o = []Outcome{OK, OK, OK, OK, Missing, Missing, Missing, Corrupt, ConnError, ConnError, AuthError}[w%11]
		} else if w < 40 {
			o = Missing
		}
		m.outcome(k, m.open[c], o)
		if err := m.s.Report(m.now, c, k, o); err != nil {
			t.Fatal(err)
		}
	case r < 85 && rough && len(m.open) > 0:
		c := pick(rng, m.open)
		o := ConnError
		if rng.IntN(4) == 0 {
			o = AuthError
		}
		for _, k := range m.reqs[c] {
			delete(m.inflight, k)
			m.outcome(k, m.open[c], o)
		}
		delete(m.open, c)
		delete(m.reqs, c)
		if err := m.s.Closed(m.now, c, o); err != nil {
			t.Fatal(err)
		}
	default:
		m.now = m.now.Add(time.Duration(rng.IntN(30)) * time.Second)
		m.s.Timeout(m.now)
	}
	m.drain()
}

// pick returns a random key of a map, deterministically for the seed.
func pick[V any](rng *rand.Rand, mp map[ConnID]V) ConnID {
	var ks []ConnID
	for k := range mp {
		ks = append(ks, k)
	}
	// sort for determinism
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks[rng.IntN(len(ks))]
}
