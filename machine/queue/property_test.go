package queue

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/table"
)

// world is the randomized test's view of one peer across restarts: which
// tokens were offered, which of them the owner acknowledged upstream (after
// a group-commit sync), how often each was answered, and how many answers a
// crash-replay may legitimately repeat.
type world struct {
	t          *testing.T
	rng        *rand.Rand
	h          *harness
	next       int
	held       map[Conn][]string // what each connection holds, as the test saw Next hand it out
	answered   map[string]int
	dupAllowed map[string]int
	acked      map[string]bool // offered, then covered by a sync in which no write failed
	pending    []string        // offered since the last sync
	offered    int
	dropped    int64 // Stats.Dropped of lives that ended
	resent     int64 // Stats.Resent of every life
	restarts   int
	crashes    int
}

// TestRandomized drives queues with random inputs against the fake disk
// (seeded, bounded steps) and checks after every step that the counters add
// up (Check). Across the whole run no entry is handed out twice at once or
// answered twice, except the documented crash-replay (the lines of journal
// files, and of <peer>.P after its checkpoint, at a crash or restart).
//
// The modes: single-life must balance exactly (unanswered == dropped);
// restarts (clean Shutdowns) lose nothing uncounted; crashes kill the
// process at random, between inputs or in the middle of carrying out an
// input's actions, half of the time with a power loss that throws away
// unsynced writes: then every entry offered and acknowledged (synced)
// before the crash must still be answered at least once unless counted as
// dropped; crashes-strict does the same with no limits and no failed
// writes, so nothing may be dropped at all and every acknowledged entry
// must be answered.
func TestRandomized(t *testing.T) {
	taken := map[fmt.Stringer]int{}
	for seed := int64(1); seed <= 400; seed++ {
		mode := []string{"single-life", "restarts", "crashes", "crashes-strict"}[seed%4]
		t.Run(fmt.Sprintf("seed=%d/%s", seed, mode), func(t *testing.T) {
			runRandom(t, seed, mode, 400, taken)
		})
	}
	if t.Failed() {
		return
	}
	// The random walk must reach every transition but those that need a
	// file changed behind the machine's back (covered by TestTransitions).
	for _, r := range everyRow() {
		if taken[r.row] == 0 && r.on != OnFound && r.on != OnShortRead && r.on != OnRecoverLost {
			t.Errorf("the random walk never took %s", r.row)
		}
	}
	// The fake disk never changes behind the machine's back, so a replay
	// file always holds exactly what the machine counted: a short read or
	// a surplus would be a write the machine lost track of.
	for _, on := range []Trigger{OnShortRead, OnFound} {
		for r, n := range taken {
			if er, ok := r.(table.Row[EntryState, Trigger]); ok && er.On == on && n > 0 {
				t.Errorf("the random walk took %s %d times", r, n)
			}
		}
	}
}

func runRandom(t *testing.T, seed int64, mode string, steps int, taken map[fmt.Stringer]int) {
	rng := rand.New(rand.NewSource(seed))
	strict := mode == "crashes-strict"
	cfg := testConfig()
	cfg.QueueSize = 3 + rng.Intn(8)
	cfg.MaxDefers = []int{-1, 1, 2}[rng.Intn(3)]
	if rng.Intn(2) == 0 && !strict {
		cfg.BacklogMaxBytes = int64(100 + rng.Intn(400))
	}
	if rng.Intn(2) == 0 && !strict {
		cfg.BacklogMaxAge = time.Duration(10+rng.Intn(60)) * time.Minute
	}
	if strict {
		cfg.MaxDefers = 1 << 20
	}
	cfg.JournalRotateBytes = int64(20 + rng.Intn(60))
	cfg.JournalRotateInterval = time.Duration(1+rng.Intn(5)) * time.Minute
	cfg.DownSpillDelay = []time.Duration{-1, time.Second, 30 * time.Second, 5 * time.Minute}[rng.Intn(4)]
	h := newHarness(t, cfg)
	h.exec = true
	h.trace = func(r fmt.Stringer) { taken[r]++ }
	w := &world{t: t, rng: rng, h: h, held: map[Conn][]string{},
		answered: map[string]int{}, dupAllowed: map[string]int{}, acked: map[string]bool{}}
	failRate := 0.03
	if strict {
		failRate = 0
	}
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
		if h.crashed {
			w.restart(true)
		}
	}
	failRate = 0
	h.crashIn = 0 // no crash armed during the drain
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
		w.pending = append(w.pending, name)
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
	case r < 86:
		w.answer(up)
	case r < 91:
		w.sync()
	case r < 97:
		h.tick(time.Duration(rng.Intn(90)) * time.Second)
	case r < 98:
		if mode != "single-life" {
			w.restart(false)
		}
	default:
		if mode == "crashes" || mode == "crashes-strict" {
			if rng.Intn(2) == 0 {
				w.restart(true)
			} else if h.crashIn == 0 {
				h.crashIn = 1 + rng.Intn(4) // dies while carrying out a later action
			}
		}
	}
}

// sync is the owner's group commit: every write so far becomes durable,
// and the offers since the last sync are acknowledged upstream unless one
// of the writes failed (the owner's Sync reports it, and the offers are
// not acknowledged).
func (w *world) sync() {
	w.h.disk.sync()
	if !w.h.writeFailed {
		for _, name := range w.pending {
			w.acked[name] = true
		}
	}
	w.pending, w.h.writeFailed = nil, false
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

// restart ends the queue's life, by Shutdown (whose writes the owner syncs)
// or by a crash (losing the memory queue and what is in flight, and with a
// power loss whatever was not synced), and starts a new one from the disk.
// The lines of the journal files left behind, and those of <peer>.P after
// its checkpoint, may be sent again: that is the documented crash-replay,
// and the new life must count the journal's part as Resent.
func (w *world) restart(crash bool) {
	h := w.h
	if crash {
		w.crashes++
		h.disk.crash(w.rng.Intn(2) == 0, w.rng)
		w.pending = nil // never acknowledged: they may be lost
	} else {
		h.must("Shutdown", h.q.Shutdown(h.now))
		w.sync()
	}
	w.dropped += h.q.Stats().Dropped
	if b, ok := h.disk.files[ReplayName(peer)]; ok {
		for _, e := range h.disk.lines(b[max(h.disk.ckpt, 0):]) {
			w.dupAllowed[e.Token[1:len(e.Token)-1]]++
		}
	}
	journaled := int64(0)
	for _, name := range sortedKeys(h.disk.files) {
		if _, ok := ParseJournalName(peer, name); ok {
			for _, e := range h.disk.lines(h.disk.files[name]) {
				w.dupAllowed[e.Token[1:len(e.Token)-1]]++
				journaled++
			}
		}
	}
	w.held = map[Conn][]string{}
	w.restarts++
	h.now = h.now.Add(time.Duration(w.rng.Intn(10)) * time.Second)
	h.start(h.disk.recover())
	if got := h.q.Stats().Resent; got != journaled {
		w.t.Fatalf("restart found %d journal lines, Resent = %d", journaled, got)
	}
	w.resent += journaled
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
	// With everything settled, the journal goes at its rotation (a failed
	// delete is retried DeferDelay later).
	for range 3 {
		h.tick(h.cfg.JournalRotateInterval + h.cfg.DeferDelay)
	}
	if n := h.q.Stats().JournalFiles; n != 0 {
		w.t.Errorf("%d journal files left after the drain", n)
	}
	for name := range h.disk.files {
		if _, ok := ParseJournalName(peer, name); ok {
			w.t.Errorf("journal %s still on disk after the drain", name)
		}
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
	unanswered, unackedLost := int64(0), int64(0)
	var missing []string
	dups := int64(0)
	for i := 1; i <= w.next; i++ {
		name := fmt.Sprintf("t%d", i)
		n := w.answered[name]
		switch {
		case n == 0 && w.acked[name]:
			unanswered++
			missing = append(missing, name)
		case n == 0:
			unackedLost++
		case n > 1:
			dups += int64(n - 1)
		}
	}
	crashy := mode == "crashes" || mode == "crashes-strict"
	if !crashy {
		unanswered += unackedLost // without a crash nothing may be lost, acknowledged or not
	}
	switch {
	case mode == "single-life" && unanswered != w.dropped:
		w.t.Errorf("%d entries never answered, %d counted dropped (offered %d)", unanswered, w.dropped, w.offered)
	case mode == "crashes-strict" && (unanswered != 0 || w.dropped != 0):
		w.t.Errorf("%d acknowledged entries never answered (%v), %d dropped; want none (offered %d, %d crashes)",
			unanswered, missing, w.dropped, w.offered, w.crashes)
	case unanswered > w.dropped:
		w.t.Errorf("%d acknowledged entries never answered (%v), only %d counted dropped (offered %d, %d restarts, %d crashes)",
			unanswered, missing, w.dropped, w.offered, w.restarts, w.crashes)
	}
	if dups > w.resent+int64(len(w.dupAllowed)) && dups > 0 {
		// Per-entry bounds are checked on every answer; this is the total.
		w.t.Errorf("%d duplicate answers, more than %d resent from journals plus replay", dups, w.resent)
	}
	if w.offered != w.next {
		w.t.Errorf("offered %d, generated %d", w.offered, w.next)
	}
}
