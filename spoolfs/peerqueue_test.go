package spoolfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
)

// pqWorld drives a PeerQueue through a scenario the way newsfeed's runtime
// would, and remembers what the test needs to judge a crash: which ids were
// acknowledged upstream (offered, then covered by a Sync that returned nil),
// and how often each reached the peer.
type pqWorld struct {
	t        *testing.T
	dir      string
	cfg      queue.Config
	now      time.Time
	p        *PeerQueue
	held     []string // in flight on conn 1, oldest first
	answered map[string]int
	acked    map[string]bool
	pending  []string // offered since the last Sync
}

func pqConfig() queue.Config {
	cfg := queue.DefaultConfig("peer")
	cfg.QueueSize = 9
	cfg.MaxDefers = 5
	cfg.JournalRotateBytes = 300
	cfg.JournalRotateInterval = 30 * time.Second
	cfg.DownSpillDelay = 2 * time.Second
	return cfg
}

func newPQWorld(t *testing.T) *pqWorld {
	// Recover reads real mtimes (a .D file's delay counts from its last
	// write), so the clock starts at the real time; nothing depends on how
	// long the test takes.
	w := &pqWorld{t: t, dir: t.TempDir(), cfg: pqConfig(), now: time.Now().Truncate(time.Second),
		answered: map[string]int{}, acked: map[string]bool{}}
	w.open()
	return w
}

func (w *pqWorld) open() {
	w.t.Helper()
	p, err := OpenPeerQueue(w.dir, w.cfg, w.now, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.p, w.held = p, nil
}

// ok fails the test on an error other than the simulated crash, and reports
// whether the process is still alive.
func (w *pqWorld) ok(err error) bool {
	w.t.Helper()
	if err != nil && !errors.Is(err, errPeerQueueCrash) {
		w.t.Fatal(err)
	}
	if err == nil {
		if cerr := w.p.Check(); cerr != nil {
			w.t.Fatal(cerr)
		}
	}
	return w.p.dead == nil
}

func pqID(i int) string { return fmt.Sprintf("<%d@example.org>", i) }

func (w *pqWorld) offer(from, to int) {
	for i := from; i < to && w.p.dead == nil; i++ {
		e := queue.Entry{Token: fmt.Sprintf("@%032X@", i), MessageID: pqID(i), Offered: w.now}
		if w.ok(w.p.Offer(w.now, e)) {
			w.pending = append(w.pending, e.MessageID)
		}
	}
}

// sync is the group commit; the pending offers are acknowledged upstream
// only if it succeeds.
func (w *pqWorld) sync() {
	if w.p.dead != nil {
		return
	}
	if err := w.p.Sync(); err != nil {
		w.t.Fatal(err) // a healthy disk
	}
	for _, id := range w.pending {
		w.acked[id] = true
	}
	w.pending = nil
}

func (w *pqWorld) up() { _ = w.p.dead == nil && w.ok(w.p.ConnUp(w.now, 1)) }
func (w *pqWorld) down() {
	if w.p.dead == nil && w.ok(w.p.ConnDown(w.now, 1)) {
		w.held = nil // back in the memory queue
	}
}

func (w *pqWorld) tick(d time.Duration) {
	w.now = w.now.Add(d)
	_ = w.p.dead == nil && w.ok(w.p.Tick(w.now))
}

func (w *pqWorld) take(n int) {
	for i := 0; i < n && w.p.dead == nil; i++ {
		e, got, err := w.p.Next(w.now, 1)
		if !w.ok(err) || !got {
			return
		}
		w.held = append(w.held, e.MessageID)
	}
}

func (w *pqWorld) answer(os ...queue.Outcome) {
	for _, o := range os {
		if w.p.dead != nil || len(w.held) == 0 {
			return
		}
		id := w.held[0]
		err := w.p.Done(w.now, 1, id, o)
		if !w.ok(err) {
			return
		}
		w.held = w.held[1:]
		if o != queue.OutcomeDeferred {
			w.answered[id]++
		}
	}
}

// pqScenario goes through every kind of file: journal rotation by size and
// time, spills of a full queue, the down-spill, offers straight to .B,
// deferrals to .D, a promoted and checkpointed replay, and, last, offers
// that were never synced.
func pqScenario(w *pqWorld) {
	acc, def, ref := queue.OutcomeAccepted, queue.OutcomeDeferred, queue.OutcomeRefused
	w.up()
	w.offer(0, 8)
	w.sync()
	w.take(5)
	w.answer(acc, acc, def, ref)
	w.offer(8, 16) // the queue fills: thirds spill to .B
	w.sync()
	w.tick(5 * time.Second)
	w.down()                // the one in flight goes back
	w.tick(3 * time.Second) // down for DownSpillDelay: all of memory to .B
	w.offer(16, 20)         // no connection: straight to .B
	w.sync()
	w.up() // promotes the oldest .B
	w.take(6)
	w.answer(acc, acc, acc, def)
	w.tick(11 * time.Second) // checkpoint
	w.offer(20, 26)
	w.sync()
	w.take(9)
	w.answer(acc, acc, acc, acc, acc)
	w.tick(31 * time.Second) // the journal rotates by age
	w.offer(26, 29)          // never synced: a crash may lose these
	w.take(3)
	w.answer(acc, acc)
	// Defer everything until the replay file is read to the end: its
	// last entries settle by going to .D, and only then may it go.
	for range 6 {
		w.take(9)
		w.answer(def, def, def, def, def, def, def, def, def, def)
	}
}

// resendable counts what a restart will send again: the lines of the
// journal files, and of <peer>.P after its checkpoint.
func (w *pqWorld) resendable() (journal, replay int) {
	w.t.Helper()
	des, err := os.ReadDir(w.dir)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, de := range des {
		data, err := os.ReadFile(filepath.Join(w.dir, de.Name()))
		if err != nil {
			w.t.Fatal(err)
		}
		switch _, isJ := queue.ParseJournalName("peer", de.Name()); {
		case isJ:
			valid, _, _ := backlogReferenceLines(data)
			journal += len(valid)
		case de.Name() == queue.ReplayName("peer"):
			off := int64(0)
			if ck, err := os.ReadFile(filepath.Join(w.dir, queue.CheckpointName("peer"))); err == nil {
				c, _ := backlogParseCheckpoint(ck)
				off = c.offset
			}
			valid, _, _ := backlogReferenceLines(data[off:])
			replay += len(valid)
		}
	}
	return journal, replay
}

// drain brings a connection up and accepts everything until nothing is left,
// then lets the journal rotate away and shuts down.
func (w *pqWorld) drain() {
	w.t.Helper()
	w.up()
	for round := 0; ; round++ {
		if round > 1000 {
			w.t.Fatalf("no drain: %+v", w.p.Stats())
		}
		w.take(w.cfg.QueueSize)
		for len(w.held) > 0 {
			w.answer(queue.OutcomeAccepted)
		}
		s := w.p.Stats()
		// Empty files (a power loss may leave some) hold no entries but
		// still go through promotion and replay before they are deleted.
		left := slices.ContainsFunc(w.files(), func(n string) bool {
			_, _, ok := queue.ParseFileName("peer", n)
			return ok || n == queue.ReplayName("peer")
		})
		if s.Queued+s.InFlight+s.Backlog+s.Deferred+s.Replay == 0 && !left {
			break
		}
		w.tick(time.Minute)
	}
	w.tick(w.cfg.JournalRotateInterval)
	if s := w.p.Stats(); s.JournalFiles != 0 {
		w.t.Errorf("journal files left after the drain: %+v", s)
	}
	if err := w.p.Shutdown(w.now); err != nil {
		w.t.Fatal(err)
	}
}

func (w *pqWorld) files() []string {
	des, err := os.ReadDir(w.dir)
	if err != nil {
		w.t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// abandonPowerLoss is abandon after a power loss: every open file loses
// what was appended since its last fsync. (Closed files were synced when
// they were closed, and every create, rename and remove was followed by a
// directory sync.)
func (b *Backlog) abandonPowerLoss() {
	for _, bf := range b.open {
		bf.f.Truncate(bf.synced)
	}
	b.abandon()
}

// TestPeerQueueCrash runs pqScenario on a real directory and kills the
// process after every single file operation in turn (k = 1, 2, ...), once
// as kill -9 (what was written stays) and once as a power loss (what was
// not synced is lost). After each restart it drains the peer and checks
// the durability promise: every article acknowledged upstream reaches the
// peer at least once; duplicates are at most what the restart resent
// (journal lines, counted as Stats.Resent, and <peer>.P after its
// checkpoint); and the directory ends empty.
func TestPeerQueueCrash(t *testing.T) {
	// A run without a crash counts the operations.
	w := newPQWorld(t)
	w.p.crashAfter = 1 << 30
	pqScenario(w)
	total := 1<<30 - w.p.crashAfter
	if total < 50 {
		t.Fatalf("the scenario carried out only %d file operations", total)
	}
	step := 1
	if testing.Short() {
		step = 7
	}
	var maxDup, maxResent int
	for k := 1; k <= total+1; k += step {
		for _, power := range []bool{false, true} {
			t.Run(fmt.Sprintf("crash-after=%d/power-loss=%t", k, power), func(t *testing.T) {
				w := newPQWorld(t)
				w.p.crashAfter = k
				pqScenario(w)
				if power {
					w.p.b.abandonPowerLoss()
				} else {
					w.p.b.abandon()
				}
				journal, replay := w.resendable()
				w.now = w.now.Add(time.Second)
				w.open()
				// Our own crash, at any step of a manifest update or
				// elsewhere, deletes nothing behind the queue's back.
				if lost, s := w.p.LostFiles(), w.p.Stats(); len(lost) != 0 || s.Lost != 0 {
					t.Errorf("a crash reported %d lost articles in %+v", s.Lost, lost)
				}
				if got := w.p.Stats().Resent; got != int64(journal) {
					t.Errorf("Resent = %d after a crash that left %d journal lines", got, journal)
				}
				w.drain()
				dups := 0
				for i := range 29 {
					id := pqID(i)
					n := w.answered[id]
					if n == 0 && w.acked[id] {
						t.Errorf("%s was acknowledged upstream and never reached the peer", id)
					}
					dups += max(0, n-1)
				}
				if dups > journal+replay {
					t.Errorf("%d duplicates, more than the %d journal + %d replay lines resent", dups, journal, replay)
				}
				if got := w.files(); len(got) != 0 {
					t.Errorf("files left after the drain: %v", got)
				}
				maxDup, maxResent = max(maxDup, dups), max(maxResent, journal)
			})
		}
	}
	t.Logf("%d crash points x 2; at most %d duplicates, at most %d journal lines resent", (total+step)/step, maxDup, maxResent)
}

// TestPeerQueueShutdown stops cleanly after the scenario: no journal is
// left behind, nothing is resent, and after the restart every article
// offered (synced or not) reaches the peer exactly once.
func TestPeerQueueShutdown(t *testing.T) {
	w := newPQWorld(t)
	pqScenario(w)
	if err := w.p.Shutdown(w.now); err != nil {
		t.Fatal(err)
	}
	for _, name := range w.files() {
		if _, ok := queue.ParseJournalName("peer", name); ok {
			t.Errorf("journal %s left by a clean Shutdown", name)
		}
	}
	if err := w.p.Offer(w.now, queue.Entry{Token: "@x@", MessageID: "<x@y>"}); err == nil {
		t.Error("Offer after Shutdown: no error")
	}
	w.now = w.now.Add(time.Second)
	w.open()
	if s := w.p.Stats(); s.Resent != 0 {
		t.Errorf("Resent = %d after a clean stop", s.Resent)
	}
	w.drain()
	for i := range 29 {
		if n := w.answered[pqID(i)]; n != 1 {
			t.Errorf("%s reached the peer %d times, want once", pqID(i), n)
		}
	}
	if got := w.files(); len(got) != 0 {
		t.Errorf("files left after the drain: %v", got)
	}
}

// TestPeerQueueSyncReportsFailedWrites makes a journal append fail (the
// open journal's descriptor is swapped for a read-only one): the offer
// itself is taken, but the next Sync must fail, so the runtime does not
// acknowledge it; the broken journal is rotated at the next offer, and the
// Sync after that is clean again.
func TestPeerQueueSyncReportsFailedWrites(t *testing.T) {
	w := newPQWorld(t)
	w.up()
	w.offer(0, 1)
	w.sync()
	// Break the open journal under the machine's feet: the next write
	// fails with EBADF.
	var jname string
	for name, bf := range w.p.b.open {
		if _, ok := queue.ParseJournalName("peer", name); ok {
			jname = name
			ro, err := os.Open(filepath.Join(w.dir, name))
			if err != nil {
				t.Fatal(err)
			}
			bf.f.Close()
			bf.f = ro
		}
	}
	if jname == "" {
		t.Fatalf("no open journal: %v", w.files())
	}
	if err := w.p.Offer(w.now, queue.Entry{Token: "@1@", MessageID: pqID(1)}); err != nil {
		t.Fatalf("Offer with a failing journal: %v (the entry must still be taken)", err)
	}
	if err := w.p.Sync(); err == nil {
		t.Fatal("Sync after a failed journal append: no error")
	}
	// The broken journal is rotated at the next offer; a fresh file takes it.
	w.offer(2, 3)
	if err := w.p.Sync(); err != nil {
		t.Fatalf("Sync after the journal rotated: %v", err)
	}
	if s := w.p.Stats(); s.Queued != 3 || s.JournalFiles != 2 {
		t.Errorf("stats after the failure: %+v, want 3 queued in 2 journals", s)
	}
	names := slices.DeleteFunc(w.files(), func(n string) bool { _, ok := queue.ParseJournalName("peer", n); return !ok })
	if len(names) != 2 {
		t.Errorf("journal files on disk: %v, want the broken one and a new one", names)
	}
	data, _ := os.ReadFile(filepath.Join(w.dir, names[len(names)-1]))
	if !bytes.Contains(data, []byte(pqID(2))) {
		t.Errorf("the new journal holds %q, want %s", data, pqID(2))
	}
}

// TestPeerQueueFlush is `newsfeed ctl flush`: the memory queue goes to a .B
// file at once (Memory 0, Backlog n) while the queue keeps running, and
// every article still reaches the peer exactly once afterwards.
func TestPeerQueueFlush(t *testing.T) {
	w := newPQWorld(t)
	w.up() // a peer that is down gets its offers in .B already
	w.offer(0, 5)
	w.sync()
	if s := w.p.Stats(); s.Queued != 5 || s.Backlog != 0 {
		t.Fatalf("before Flush: queued %d backlog %d, want 5 and 0", s.Queued, s.Backlog)
	}
	n, err := w.p.Flush(w.now)
	if err != nil || n != 5 {
		t.Fatalf("Flush = %d, %v; want 5, nil", n, err)
	}
	if err := w.p.Sync(); err != nil {
		t.Fatal(err)
	}
	if s := w.p.Stats(); s.Queued != 0 || s.Backlog != 5 {
		t.Errorf("after Flush: queued %d backlog %d, want 0 and 5", s.Queued, s.Backlog)
	}
	if n, err := w.p.Flush(w.now); err != nil || n != 0 {
		t.Errorf("second Flush = %d, %v; want 0, nil", n, err)
	}
	w.offer(5, 7) // the queue still takes offers
	w.sync()
	w.down()
	w.drain()
	for i := range 7 {
		if n := w.answered[pqID(i)]; n != 1 {
			t.Errorf("%s reached the peer %d times, want once", pqID(i), n)
		}
	}
}
