package spoolfs

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
)

// backlogDriver runs a queue.Queue against a real Backlog directory the way
// a runtime does: carry each action out, report failures, hand read results
// back once the actions of an input are done.
type backlogDriver struct {
	t        *testing.T
	dir      string
	cfg      queue.Config
	now      time.Time
	b        *Backlog
	q        *queue.Queue
	held     []string // in flight on conn 1, oldest first
	answered map[string]int
}

func newBacklogDriver(t *testing.T) *backlogDriver {
	cfg := queue.DefaultConfig("peer")
	cfg.QueueSize = 9
	cfg.MaxDefers = 5
	// Recover reads real mtimes (a .D file's delay counts from its last
	// write), so the driver's clock starts at the real time; nothing here
	// depends on how long the test takes.
	d := &backlogDriver{t: t, dir: t.TempDir(), cfg: cfg, now: time.Now().Truncate(time.Second), answered: map[string]int{}}
	d.start()
	return d
}

// start opens the directory and a new queue from what Recover finds.
func (d *backlogDriver) start() {
	d.t.Helper()
	b, err := OpenBacklog(d.dir, "peer", nil)
	if err != nil {
		d.t.Fatal(err)
	}
	rec, err := b.Recover()
	if err != nil {
		d.t.Fatal(err)
	}
	q, err := queue.New(d.cfg, d.now, rec)
	if err != nil {
		d.t.Fatal(err)
	}
	d.b, d.q, d.held = b, q, nil
}

// act carries out the queue's actions until there are none left.
func (d *backlogDriver) act() {
	d.t.Helper()
	for {
		var reads []ReplayBatch
		for {
			a, ok := d.q.NextAction()
			if !ok {
				break
			}
			batch, err := d.b.Do(a)
			if err != nil {
				d.t.Fatalf("%T: %v", a, err) // no failures expected on a healthy disk
			}
			if _, ok := a.(queue.ReadReplay); ok {
				reads = append(reads, batch)
			}
		}
		for {
			if _, ok := d.q.NextEvent(); !ok {
				break
			}
		}
		if err := d.q.Check(); err != nil {
			d.t.Fatal(err)
		}
		if len(reads) == 0 {
			return
		}
		for _, r := range reads {
			if err := d.q.ReplayRead(d.now, r.Entries, r.Offset, r.EOF); err != nil {
				d.t.Fatal(err)
			}
		}
	}
}

func (d *backlogDriver) offer(n, from int) {
	for i := from; i < from+n; i++ {
		e := queue.Entry{Token: fmt.Sprintf("@%032X@", i), MessageID: fmt.Sprintf("<%d@example.org>", i), Offered: d.now}
		if err := d.q.Offer(d.now, e); err != nil {
			d.t.Fatal(err)
		}
		d.act()
	}
}

// take moves up to n entries onto conn 1.
func (d *backlogDriver) take(n int) {
	for i := 0; i < n; i++ {
		e, ok := d.q.Next(d.now, 1)
		d.act()
		if !ok {
			if e, ok = d.q.Next(d.now, 1); !ok { // the refill has arrived
				return
			}
			d.act()
		}
		d.held = append(d.held, e.MessageID)
	}
}

// answer answers the oldest entry in flight.
func (d *backlogDriver) answer(o queue.Outcome) {
	id := d.held[0]
	d.held = d.held[1:]
	if err := d.q.Done(d.now, 1, id, o); err != nil {
		d.t.Fatal(err)
	}
	if o != queue.OutcomeDeferred {
		d.answered[id]++
	}
	d.act()
}

// drain accepts everything, letting time pass for deferred files.
func (d *backlogDriver) drain() {
	for round := 0; round < 1000; round++ {
		d.take(d.cfg.QueueSize)
		for len(d.held) > 0 {
			d.answer(queue.OutcomeAccepted)
		}
		s := d.q.Stats()
		if s.Queued+s.InFlight+s.Backlog+s.Deferred+s.Replay == 0 && d.q.ReplayState() == queue.ReplayNone {
			return
		}
		d.now = d.now.Add(time.Minute)
		d.q.Tick(d.now)
		d.act()
	}
	d.t.Fatalf("no drain: %+v", d.q.Stats())
}

func (d *backlogDriver) files() []string {
	des, err := os.ReadDir(d.dir)
	if err != nil {
		d.t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// TestBacklogQueueCrash runs the machine on real files through a peer that
// is down (everything to .B), comes up (promote, refill, checkpoint), defers
// some articles (.D) and crashes. After the restart every article reaches
// the peer; the only ones sent twice are those of <peer>.P after its last
// checkpoint, and the directory ends empty.
func TestBacklogQueueCrash(t *testing.T) {
	d := newBacklogDriver(t)
	d.offer(30, 0) // no connection: straight to .B
	if err := d.q.ConnUp(d.now, 1); err != nil {
		t.Fatal(err)
	}
	d.act()
	d.take(9)
	for i := 0; i < 6; i++ {
		d.answer(queue.OutcomeAccepted)
	}
	d.answer(queue.OutcomeDeferred)
	d.answer(queue.OutcomeDeferred)
	d.take(6) // the next refill checkpoints the first batch
	d.answer(queue.OutcomeAccepted)

	// Crash: no Shutdown, no Close, no Sync.
	var resend map[string]bool
	if data, err := os.ReadFile(d.b.replayPath()); err == nil {
		off := int64(0)
		if ck, err := os.ReadFile(d.b.ckptPath()); err == nil {
			c, _ := backlogParseCheckpoint(ck)
			off = c.offset
		}
		resend = map[string]bool{}
		valid, _, _ := backlogReferenceLines(data[off:])
		for _, e := range valid {
			resend[e.MessageID] = true
		}
	} else {
		t.Fatalf("no replay file at the crash: %v (files %v)", err, d.files())
	}
	d.b.abandon()
	d.now = d.now.Add(time.Second)
	d.start()
	if err := d.q.ConnUp(d.now, 1); err != nil {
		t.Fatal(err)
	}
	d.act()
	d.drain()

	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("<%d@example.org>", i)
		switch n := d.answered[id]; {
		case n == 0:
			t.Errorf("%s never reached the peer", id)
		case n > 1 && !resend[id]:
			t.Errorf("%s reached the peer %d times, and was not in <peer>.P after the checkpoint", id, n)
		}
	}
	if got := d.files(); len(got) != 0 {
		t.Errorf("files left after the drain: %v", got)
	}
	dups := 0
	for _, n := range d.answered {
		dups += n - 1
	}
	t.Logf("duplicates after the crash: %d (at most %d allowed)", dups, len(resend))
}

// TestBacklogQueueShutdown stops cleanly in the middle of a replay: memory
// and in-flight entries go to .B, the replay is checkpointed, and after the
// restart every article reaches the peer exactly once.
func TestBacklogQueueShutdown(t *testing.T) {
	d := newBacklogDriver(t)
	d.offer(20, 0)
	if err := d.q.ConnUp(d.now, 1); err != nil {
		t.Fatal(err)
	}
	d.act()
	d.take(7)
	d.answer(queue.OutcomeAccepted)
	d.answer(queue.OutcomeDeferred)
	d.offer(5, 100) // fresh articles while the replay runs
	if err := d.q.Shutdown(d.now); err != nil {
		t.Fatal(err)
	}
	d.act()
	if err := d.b.Close(); err != nil {
		t.Fatal(err)
	}
	d.now = d.now.Add(time.Second)
	d.start()
	if err := d.q.ConnUp(d.now, 1); err != nil {
		t.Fatal(err)
	}
	d.act()
	d.drain()
	for _, i := range append(backlogSeq(0, 20), backlogSeq(100, 105)...) {
		id := fmt.Sprintf("<%d@example.org>", i)
		if n := d.answered[id]; n != 1 {
			t.Errorf("%s reached the peer %d times, want once", id, n)
		}
	}
	if got := d.files(); len(got) != 0 {
		t.Errorf("files left after the drain: %v", strings.Join(got, " "))
	}
}

func backlogSeq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}
