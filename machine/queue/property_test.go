package queue

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// world is the randomized test's view of one peer across restarts: which
// tokens were offered, how often each was answered, and how many answers a
// crash-replay may legitimately repeat.
type world struct {
	t          *testing.T
	rng        *rand.Rand
	h          *harness
	next       int
	held       map[Conn][]string // what each connection holds, as the test saw Next hand it out
	answered   map[string]int
	dupAllowed map[string]int
	offered    int
	dropped    int64 // Stats.Dropped of lives that ended
	lost       int64 // entries in memory or in flight at a crash
	restarts   int
}

// TestRandomized drives queues with random inputs against the fake disk
// (seeded, bounded steps) and checks after every step that the counters add
// up (Check). Across the whole run no entry is handed out twice at once or
// answered twice, except the documented crash-replay (entries of <peer>.P
// after its checkpoint at a crash or restart), and every entry never
// answered is accounted for as dropped (counted) or lost in memory at a
// crash. Seeds without restarts must balance exactly: unanswered ==
// dropped.
func TestRandomized(t *testing.T) {
	taken := map[rule]int{}
	for seed := int64(1); seed <= 300; seed++ {
		mode := []string{"single-life", "restarts", "crashes"}[seed%3]
		t.Run(fmt.Sprintf("seed=%d/%s", seed, mode), func(t *testing.T) {
			runRandom(t, seed, mode, 400, taken)
		})
	}
	if t.Failed() {
		return
	}
	// The random walk must reach every transition but those that need a
	// file changed behind the machine's back (covered by TestTransitions).
	for _, r := range table {
		if taken[r] == 0 && r.On != OnFound && r.On != OnShortRead {
			t.Errorf("the random walk never took %s --%s--> %s", r.From, r.On, r.To)
		}
	}
	// The fake disk never changes behind the machine's back, so a replay
	// file always holds exactly what the machine counted: a short read or
	// a surplus would be a write the machine lost track of.
	for _, on := range []Trigger{OnShortRead, OnFound} {
		for r, n := range taken {
			if r.On == on && n > 0 {
				t.Errorf("the random walk took %s --%s--> %s %d times", r.From, r.On, r.To, n)
			}
		}
	}
}

func runRandom(t *testing.T, seed int64, mode string, steps int, taken map[rule]int) {
	rng := rand.New(rand.NewSource(seed))
	cfg := testConfig()
	cfg.QueueSize = 3 + rng.Intn(8)
	cfg.MaxDefers = []int{-1, 1, 2}[rng.Intn(3)]
	if rng.Intn(2) == 0 {
		cfg.BacklogMaxBytes = int64(100 + rng.Intn(400))
	}
	if rng.Intn(2) == 0 {
		cfg.BacklogMaxAge = time.Duration(10+rng.Intn(60)) * time.Minute
	}
	h := newHarness(t, cfg)
	h.exec = true
	h.trace = func(s State, tr Trigger) {
		to, _ := lookup(s, tr)
		taken[rule{s, tr, to}]++
	}
	w := &world{t: t, rng: rng, h: h, held: map[Conn][]string{},
		answered: map[string]int{}, dupAllowed: map[string]int{}}
	failRate := 0.03
	h.disk.fail = func(a Action) bool {
		switch a.(type) {
		case DeleteBacklog:
			// The machine has counted the file's entries dropped; a file
			// left behind would come back after a restart.
			if mode != "single-life" {
				return false
			}
		case ReadReplay, QuarantineReplay:
			// A file that failed to read is quarantined; one left in place
			// would be read again after a restart.
			if mode != "single-life" {
				return false
			}
		}
		return rng.Float64() < failRate
	}
	for i := 0; i < steps; i++ {
		w.step(mode)
	}
	failRate = 0
	w.drain()
	w.finish(mode)
}

func (w *world) upConns() []Conn {
	cs := make([]Conn, 0, len(w.h.q.conns))
	for c := range w.h.q.conns {
		cs = append(cs, c)
	}
	slices.Sort(cs)
	return cs
}

func (w *world) step(mode string) {
	h, rng := w.h, w.rng
	up := w.upConns()
	switch r := rng.Intn(100); {
	case r < 30:
		w.next++
		name := fmt.Sprintf("t%d", w.next)
		e := ent(name)
		e.Offered = h.now
		h.offerEntry(e)
		w.offered++
	case r < 36:
		c := Conn(1 + rng.Intn(3))
		if _, ok := h.q.conns[c]; !ok {
			h.up(c)
		}
	case r < 40:
		if len(up) > 0 {
			c := up[rng.Intn(len(up))]
			h.down(c)
			w.held[c] = nil
		}
	case r < 65:
		if len(up) > 0 {
			w.take(up[rng.Intn(len(up))])
		}
	case r < 90:
		w.answer(up)
	case r < 97:
		h.tick(time.Duration(rng.Intn(90)) * time.Second)
	case r < 99:
		if mode != "single-life" {
			w.restart(false)
		}
	default:
		if mode == "crashes" {
			w.restart(true)
		}
	}
}

// take asks connection c for an entry and checks it is not already out.
func (w *world) take(c Conn) {
	h := w.h
	e, ok := h.q.Next(h.now, c)
	h.step("Next")
	if !ok {
		return
	}
	name := e.Token[1 : len(e.Token)-1]
	if e.MessageID != "<"+name+"@x>" {
		w.t.Fatalf("Next gave token %s with message-id %s", e.Token, e.MessageID)
	}
	out := 0
	for _, held := range w.held {
		for _, n := range held {
			if n == name {
				out++
			}
		}
	}
	if out > w.dupAllowed[name] {
		w.t.Fatalf("%s handed out while already in flight (%d allowed duplicates)", name, w.dupAllowed[name])
	}
	w.held[c] = append(w.held[c], name)
}

// answer gives a random answer for a random entry in flight.
func (w *world) answer(up []Conn) {
	h, rng := w.h, w.rng
	var cs []Conn
	for _, c := range up {
		if len(w.held[c]) > 0 {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return
	}
	c := cs[rng.Intn(len(cs))]
	held := w.held[c]
	i := rng.Intn(len(held))
	name := held[i]
	// The machine answers the oldest entry with this id on c.
	i = slices.Index(held, name)
	w.held[c] = slices.Delete(held, i, i+1)
	o := []Outcome{OutcomeAccepted, OutcomeAccepted, OutcomeAccepted, OutcomeRefused,
		OutcomeRejected, OutcomeDeferred, OutcomeDeferred, OutcomeMissing}[rng.Intn(8)]
	h.done(c, name, o)
	if o != OutcomeDeferred {
		w.settled(name)
	}
}

func (w *world) settled(name string) {
	w.answered[name]++
	if w.answered[name] > 1+w.dupAllowed[name] {
		w.t.Fatalf("%s answered %d times, %d duplicates allowed by crash-replay", name, w.answered[name], w.dupAllowed[name])
	}
}

// restart ends the queue's life, by Shutdown or by a crash (losing the
// memory queue and what is in flight), and starts a new one from the disk.
// Entries of <peer>.P after its checkpoint may be sent again: that is the
// documented crash-replay.
func (w *world) restart(crash bool) {
	h := w.h
	if crash {
		for i := 0; i < h.q.mem.n; i++ {
			if h.q.mem.at(i).batch == 0 {
				w.lost++
			}
		}
		for _, cs := range h.q.conns {
			for _, it := range cs.items {
				if it.batch == 0 {
					w.lost++
				}
			}
		}
	} else {
		h.must("Shutdown", h.q.Shutdown(h.now))
	}
	w.dropped += h.q.Stats().Dropped
	if b, ok := h.disk.files[ReplayName(peer)]; ok {
		for _, e := range h.disk.lines(b[max(h.disk.ckpt, 0):]) {
			w.dupAllowed[e.Token[1:len(e.Token)-1]]++
		}
	}
	w.held = map[Conn][]string{}
	w.restarts++
	h.now = h.now.Add(time.Duration(w.rng.Intn(10)) * time.Second)
	h.start(h.disk.recover())
}

// drain brings a connection up and accepts everything until the queue and
// its files are empty.
func (w *world) drain() {
	h := w.h
	if len(h.q.conns) == 0 {
		h.up(1)
	}
	for round := 0; ; round++ {
		if round > 10000 {
			w.t.Fatalf("queue did not drain: %+v, replay %s", h.q.Stats(), h.q.ReplayState())
		}
		for _, c := range w.upConns() {
			for _, name := range w.held[c] {
				h.done(c, name, OutcomeAccepted)
				w.settled(name)
			}
			w.held[c] = nil
			for {
				e, ok := h.q.Next(h.now, c)
				h.step("Next")
				if !ok {
					break
				}
				name := e.Token[1 : len(e.Token)-1]
				w.held[c] = append(w.held[c], name)
			}
		}
		s := h.q.Stats()
		if s.Queued+s.InFlight+s.Backlog+s.Deferred+s.Replay == 0 && h.q.ReplayState() == ReplayNone &&
			len(w.held[w.upConns()[0]]) == 0 {
			break
		}
		h.tick(time.Minute)
	}
	for name, b := range h.disk.files {
		if _, _, ok := ParseFileName(peer, name); !ok || len(b) == 0 {
			continue
		}
		// Files the machine dropped but could not delete stay on disk
		// (single-life injects DeleteBacklog failures); all others must be
		// gone.
		if !slices.ContainsFunc(h.failed, func(a Action) bool { d, ok := a.(DeleteBacklog); return ok && d.File == name }) {
			w.t.Errorf("%s still holds entries after the drain", name)
		}
	}
}

func (w *world) finish(mode string) {
	w.dropped += w.h.q.Stats().Dropped
	unanswered := int64(0)
	for i := 1; i <= w.next; i++ {
		if w.answered[fmt.Sprintf("t%d", i)] == 0 {
			unanswered++
		}
	}
	switch {
	case mode == "single-life" && unanswered != w.dropped:
		w.t.Errorf("%d entries never answered, %d counted dropped (offered %d)", unanswered, w.dropped, w.offered)
	case unanswered > w.dropped+w.lost:
		w.t.Errorf("%d entries never answered, only %d dropped + %d lost at crashes (offered %d, %d restarts)",
			unanswered, w.dropped, w.lost, w.offered, w.restarts)
	}
	if w.offered != w.next {
		w.t.Errorf("offered %d, generated %d", w.offered, w.next)
	}
}
