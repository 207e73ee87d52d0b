package queue

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// t0 makes the first file names look like "peer.B.5db93971".
var t0 = time.Unix(0x5db93971, 0)

const peer = "peer"

// ent is the entry the tests call name: token @name@, message-id <name@x>.
func ent(name string) Entry {
	return Entry{Token: "@" + name + "@", MessageID: "<" + name + "@x>", Size: 100, Offered: t0}
}

// disked is e as it comes back from a file: only token, id, attempts and
// the resend mark (which a deferred entry has).
func disked(e Entry, attempts int) Entry {
	return Entry{Token: e.Token, MessageID: e.MessageID, Attempts: attempts, Resend: e.Resend || attempts > 0}
}

func ents(names ...string) []Entry {
	out := make([]Entry, len(names))
	for i, n := range names {
		out[i] = ent(n)
	}
	return out
}

// fakeDisk carries out the queue's actions on an in-memory directory, with
// the same file format as spoolfs (AppendLine/ParseLine), so offsets and
// byte counts are real. It keeps spoolfs's durability contract: names
// (create, rename, remove) and checkpoints are durable at once, appended
// lines only once synced (sync, a rotation's or promotion's close, and the
// sync-everything-first of Checkpoint, DeleteReplay, QuarantineReplay and
// DeleteJournal). crash throws away what a power loss may lose.
type fakeDisk struct {
	files   map[string][]byte
	durable map[string]int // octets of each file known to be on disk
	mtime   map[string]time.Time
	ckpt    int64 // -1: no <peer>.P.ckpt
	fail    func(a Action) bool
}

func newFakeDisk() *fakeDisk {
	return &fakeDisk{files: map[string][]byte{}, durable: map[string]int{}, mtime: map[string]time.Time{}, ckpt: -1}
}

// sync makes every file durable: the owner's group commit.
func (d *fakeDisk) sync() {
	for name, b := range d.files {
		d.durable[name] = len(b)
	}
}

func (d *fakeDisk) syncFile(name string) {
	if b, ok := d.files[name]; ok {
		d.durable[name] = len(b)
	}
}

func (d *fakeDisk) rename(from, to string) {
	d.files[to], d.durable[to], d.mtime[to] = d.files[from], d.durable[from], d.mtime[from]
	d.remove(from)
}

func (d *fakeDisk) remove(name string) {
	delete(d.files, name)
	delete(d.durable, name)
	delete(d.mtime, name)
}

// crash ends the process. With powerLoss, each file keeps its durable part
// and a random prefix of the rest, which may end in a torn line.
func (d *fakeDisk) crash(powerLoss bool, rng interface{ Intn(int) int }) {
	if !powerLoss {
		return
	}
	for _, name := range sortedKeys(d.files) {
		b := d.files[name]
		keep := d.durable[name] + rng.Intn(len(b)-d.durable[name]+1)
		d.files[name] = b[:keep:keep]
		d.durable[name] = keep
	}
}

var errInjected = errors.New("injected failure")

// readResult is what a ReadReplay action produced.
type readResult struct {
	entries []Entry
	off     int64
	eof     bool
}

func (d *fakeDisk) do(now time.Time, a Action) (*readResult, error) {
	if d.fail != nil && d.fail(a) {
		return nil, errInjected
	}
	p := ReplayName(peer)
	switch a := a.(type) {
	case RotateBacklog:
		if _, ok := d.files[a.Opened]; ok {
			return nil, fmt.Errorf("create %s: exists", a.Opened)
		}
		d.syncFile(a.Closed)
		d.files[a.Opened] = []byte{}
		d.durable[a.Opened] = 0
		d.mtime[a.Opened] = now
	case AppendBacklog:
		return nil, d.append(now, a.File, a.Entries)
	case OpenJournal:
		if _, ok := d.files[a.File]; ok {
			return nil, fmt.Errorf("create %s: exists", a.File)
		}
		d.files[a.File] = []byte{}
		d.durable[a.File] = 0
	case AppendJournal:
		return nil, d.append(now, a.File, a.Entries)
	case CloseJournal:
		d.syncFile(a.File)
	case DeleteJournal:
		d.sync()
		d.remove(a.File)
	case PromoteToReplay:
		if _, ok := d.files[p]; ok {
			return nil, fmt.Errorf("promote %s: %s exists", a.File, p)
		}
		if _, ok := d.files[a.File]; !ok {
			return nil, fmt.Errorf("promote %s: no such file", a.File)
		}
		d.ckpt = -1
		d.syncFile(a.File)
		d.rename(a.File, p)
	case ReadReplay:
		b, ok := d.files[p]
		if !ok {
			return nil, fmt.Errorf("read %s: no such file", p)
		}
		r := &readResult{off: a.Offset}
		for len(r.entries) < a.Max {
			i := bytes.IndexByte(b[r.off:], '\n')
			if i < 0 {
				break
			}
			e, err := ParseLine(b[r.off : r.off+int64(i)+1])
			if err != nil {
				return nil, err
			}
			r.entries = append(r.entries, e)
			r.off += int64(i) + 1
		}
		r.eof = bytes.IndexByte(b[r.off:], '\n') < 0
		return r, nil
	case Checkpoint:
		if _, ok := d.files[p]; !ok {
			return nil, fmt.Errorf("checkpoint: no %s", p)
		}
		d.sync()
		d.ckpt = a.Offset
	case DeleteReplay:
		d.sync()
		d.ckpt = -1
		d.remove(p)
	case QuarantineReplay:
		d.sync()
		d.ckpt = -1
		d.rename(p, a.To)
	case DeleteBacklog:
		d.remove(a.File)
	case WriteManifest:
		// Nothing to simulate: what it lists is spoolfs's concern.
	default:
		return nil, fmt.Errorf("unknown action %T", a)
	}
	return nil, nil
}

func (d *fakeDisk) append(now time.Time, name string, es []Entry) error {
	b, ok := d.files[name]
	if !ok {
		return fmt.Errorf("append %s: no such file", name)
	}
	for _, e := range es {
		b = AppendLine(b, e)
	}
	d.files[name] = b
	d.mtime[name] = now
	return nil
}

// recover lists the directory as spoolfs.Backlog.Recover does, renaming
// every journal file to .B first.
func (d *fakeDisk) recover() Recovered {
	var r Recovered
	journal := map[string]bool{}
	for _, name := range sortedKeys(d.files) {
		if ts, ok := ParseJournalName(peer, name); ok {
			b := FileName(peer, KindBacklog, ts)
			d.rename(name, b)
			journal[b] = true
		}
	}
	for name, b := range d.files {
		if name == ReplayName(peer) {
			off := max(d.ckpt, 0)
			r.Replay = &ReplayInfo{Bytes: int64(len(b)), Offset: off, Entries: len(d.lines(b[off:]))}
			continue
		}
		k, ts, ok := ParseFileName(peer, name)
		if !ok {
			continue
		}
		fi := FileInfo{Name: name, Kind: k, TS: ts, Bytes: int64(len(b)), ModTime: d.mtime[name], Journal: journal[name]}
		if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
			fi.Bytes = int64(i + 1) // a torn last line does not count
		}
		for _, e := range d.lines(b) {
			fi.Entries++
			fi.MaxAttempts = max(fi.MaxAttempts, e.Attempts)
		}
		r.Files = append(r.Files, fi)
	}
	sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Name < r.Files[j].Name })
	return r
}

func (d *fakeDisk) lines(b []byte) []Entry {
	var out []Entry
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		e, err := ParseLine(b[:i+1])
		if err != nil {
			panic(err)
		}
		out = append(out, e)
		b = b[i+1:]
	}
	return out
}

// harness drives one queue step by step and checks its invariants after
// every step.
type harness struct {
	t      testing.TB
	q      *Queue
	cfg    Config
	now    time.Time
	disk   *fakeDisk
	trace  func(fmt.Stringer) // a table.Row of the transition taken
	exec   bool               // carry actions out on disk instead of collecting them
	acts   []Action
	evs    []Event
	reads  []*readResult
	failed []Action

	manifests     []WriteManifest // every manifest asked for, in order
	keepManifests bool            // list them in acts too

	dropEvents int64 // sum of Drop events in this life

	// crashIn > 0 counts down the actions still carried out: at 0 the
	// process dies, crashed is set, and nothing more reaches the disk
	// until start.
	crashIn int
	crashed bool
	// writeFailed says a write (create, append, close) failed since the
	// last sync: the owner must not acknowledge that group.
	writeFailed bool
}

func testConfig() Config {
	return Config{
		Peer:               peer,
		QueueSize:          6, // spill 2, refill 3
		RotateBytes:        40,
		RotateInterval:     5 * time.Minute,
		DeferDelay:         time.Minute,
		DeferMaxDelay:      4 * time.Minute,
		MaxDefers:          2,
		CheckpointInterval: 10 * time.Second,

		JournalRotateBytes:    1 << 20,
		JournalRotateInterval: 10 * time.Minute,
		JournalSettledClose:   10 * time.Minute,
		DownSpillDelay:        30 * time.Second,
	}
}

func newHarness(t testing.TB, cfg Config) *harness {
	h := &harness{t: t, cfg: cfg, now: t0, disk: newFakeDisk()}
	h.start(Recovered{})
	return h
}

func (h *harness) start(r Recovered) {
	h.t.Helper()
	q, err := newQueue(h.cfg, h.now, r, func(r fmt.Stringer) {
		if h.trace != nil {
			h.trace(r)
		}
	})
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	h.q = q
	h.dropEvents = 0
	h.crashed, h.crashIn, h.reads = false, 0, nil
	h.step("New")
}

// step drains outputs and checks the invariants.
func (h *harness) step(what string) {
	h.t.Helper()
	if err := h.q.Check(); err != nil {
		h.t.Fatalf("after %s: %v", what, err)
	}
	for {
		a, ok := h.q.NextAction()
		if !ok {
			break
		}
		if m, ok := a.(WriteManifest); ok {
			// Manifest writes are checked by TestManifest; the other
			// cases compare the actions that move entries.
			h.manifests = append(h.manifests, m)
			if !h.exec && !h.keepManifests {
				continue
			}
		}
		if !h.exec {
			h.acts = append(h.acts, a)
			continue
		}
		if h.crashIn > 0 {
			h.crashIn--
			h.crashed = h.crashIn == 0
		}
		if h.crashed {
			continue // the process is dead: the action never happens
		}
		if debugActions {
			fmt.Printf("%s action %#v\n", what, a)
		}
		r, err := h.disk.do(h.now, a)
		if err != nil {
			switch a.(type) {
			case RotateBacklog, AppendBacklog, OpenJournal, AppendJournal, CloseJournal:
				h.writeFailed = true
			}
			h.failed = append(h.failed, a)
			if err := h.q.Failed(h.now, a, err); err != nil {
				h.t.Fatalf("Failed(%#v): %v", a, err)
			}
			if err := h.q.Check(); err != nil {
				h.t.Fatalf("after failed %T: %v", a, err)
			}
		}
		if r != nil {
			h.reads = append(h.reads, r)
		}
	}
	for {
		e, ok := h.q.NextEvent()
		if !ok {
			break
		}
		if d, ok := e.(Drop); ok {
			h.dropEvents += int64(d.Count)
		}
		h.evs = append(h.evs, e)
	}
	// Every drop is reported by an event, never silent.
	if got := h.q.Stats().Dropped; got != h.dropEvents {
		h.t.Fatalf("after %s: %d entries dropped, Drop events report %d", what, got, h.dropEvents)
	}
	// Deliver read results once every action of the input has been carried
	// out, as the contract asks.
	if h.crashed {
		h.reads = nil
	}
	if h.exec && len(h.reads) > 0 {
		r := h.reads[0]
		h.reads = h.reads[1:]
		if err := h.q.ReplayRead(h.now, r.entries, r.off, r.eof); err != nil {
			h.t.Fatalf("ReplayRead: %v", err)
		}
		h.step("ReplayRead")
	}
}

func (h *harness) reset() { h.acts, h.evs, h.failed, h.manifests = nil, nil, nil, nil }

func (h *harness) must(what string, err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
	h.step(what)
}

func (h *harness) up(cs ...Conn) {
	h.t.Helper()
	for _, c := range cs {
		h.must(fmt.Sprintf("ConnUp %d", c), h.q.ConnUp(h.now, c))
	}
}

func (h *harness) down(c Conn) {
	h.t.Helper()
	h.must(fmt.Sprintf("ConnDown %d", c), h.q.ConnDown(h.now, c))
}

func (h *harness) offer(names ...string) {
	h.t.Helper()
	for _, n := range names {
		h.must("Offer "+n, h.q.Offer(h.now, ent(n)))
	}
}

func (h *harness) offerEntry(e Entry) {
	h.t.Helper()
	h.must("Offer "+e.MessageID, h.q.Offer(h.now, e))
}

// next takes n entries on c and returns their names.
func (h *harness) next(c Conn, n int) []string {
	h.t.Helper()
	var got []string
	for i := 0; i < n; i++ {
		e, ok := h.q.Next(h.now, c)
		h.step("Next")
		if !ok {
			h.t.Fatalf("Next %d on conn %d: nothing", i, c)
		}
		got = append(got, strings.Trim(e.Token, "@"))
	}
	return got
}

func (h *harness) done(c Conn, name string, o Outcome) {
	h.t.Helper()
	h.must(fmt.Sprintf("Done %s %s", name, o), h.q.Done(h.now, c, "<"+name+"@x>", o))
}

func (h *harness) read(entries []Entry, off int64, eof bool) {
	h.t.Helper()
	h.must("ReplayRead", h.q.ReplayRead(h.now, entries, off, eof))
}

func (h *harness) fail(a Action) {
	h.t.Helper()
	h.must(fmt.Sprintf("Failed %T", a), h.q.Failed(h.now, a, errInjected))
}

func (h *harness) tick(d time.Duration) {
	h.t.Helper()
	h.now = h.now.Add(d)
	h.q.Tick(h.now)
	h.step("Tick")
}

// lineLen is the octets of ent(name)'s line with attempts a.
func lineLen(name string, a int) int64 {
	e := ent(name)
	e.Attempts, e.Resend = a, a > 0
	return LineLen(e)
}

func sortedKeys[M ~map[K]V, K string, V any](m M) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

var debugActions = os.Getenv("QDEBUG") != ""
