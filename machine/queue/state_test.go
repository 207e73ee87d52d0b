package queue

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/table"
)

// File names the cases expect: t0 is 0x5db93971.
const (
	fB0 = "peer.B.5db93971"
	fB1 = "peer.B.5db93972"
	fD0 = "peer.D.5db93971"
	fD1 = "peer.D.5db93972"
	fJ0 = "peer.J.5db93971"
	fP  = "peer.P"
)

func deferredEnt(name string, attempts int) Entry {
	e := ent(name)
	e.Attempts, e.Resend = attempts, attempts > 0
	return e
}

// journaled is the entries of names as a journal holds their lines:
// marked as resends.
func journaled(names ...string) []Entry {
	es := ents(names...)
	for i := range es {
		es[i].Resend = true
	}
	return es
}

// resent is e marked as offered to the peer before.
func resent(e Entry) Entry {
	e.Resend = true
	return e
}

func offerDown(h *harness, names ...string) { h.offer(names...) }

// settledBatchThenWait replays a backlog of seven to one connection: the
// first batch of three is taken and accepted while the second is read,
// then d passes (the refill cases of RefillCheckpointGap).
func settledBatchThenWait(h *harness, d time.Duration) {
	offerDown(h, "a", "b", "c", "d", "e", "f", "g")
	h.up(1)
	h.q.Next(h.now, 1)
	h.step("Next")
	h.read([]Entry{disked(ent("a"), 0), disked(ent("b"), 0), disked(ent("c"), 0)}, 30, false)
	h.next(1, 3)
	h.read([]Entry{disked(ent("d"), 0), disked(ent("e"), 0), disked(ent("f"), 0)}, 60, false)
	h.done(1, "a", OutcomeAccepted)
	h.done(1, "b", OutcomeAccepted)
	h.done(1, "c", OutcomeAccepted)
	h.now = h.now.Add(d)
}

// transitionCase is one row of TestTransitions: a queue brought into a
// state by setup, one input, and what must come out.
type transitionCase struct {
	name        string
	cfg         func(*Config)
	setup       func(h *harness)
	input       func(h *harness) []string // returns what Next handed out, if anything
	wantNext    []string
	wantActions []Action
	wantEvents  []Event
	wantStats   Stats
	wantReplay  ReplayState // ReplayNone unless said
}

func transitionCases() []transitionCase {
	outcomes := []struct {
		o     Outcome
		stats Stats
	}{
		{OutcomeAccepted, Stats{Offered: 1, Accepted: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1}},
		{OutcomeRefused, Stats{Offered: 1, Refused: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1}},
		{OutcomeRejected, Stats{Offered: 1, Rejected: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1}},
		{OutcomeMissing, Stats{Offered: 1, Missing: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1}},
	}
	var cases []transitionCase
	for _, oc := range outcomes {
		cases = append(cases, transitionCase{
			name:      fmt.Sprintf("in flight -> %s ends the entry", oc.o),
			setup:     func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1) },
			input:     func(h *harness) []string { h.done(1, "a", oc.o); return nil },
			wantStats: oc.stats,
		})
	}
	return append(cases, []transitionCase{
		{
			name: "a file the manifest named that is gone at start: its entries are born lost",
			input: func(h *harness) []string {
				h.start(Recovered{
					Files: []FileInfo{{Name: fB1, Kind: KindBacklog, TS: t0.Unix() + 1, Bytes: 20, Entries: 2}},
					Lost:  []LostFile{{Name: fB0, Entries: 3, Bytes: 30}},
				})
				return nil
			},
			wantStats: Stats{Recovered: 5, Lost: 3, Backlog: 2, BacklogBytes: 20, BacklogFiles: 1},
		},
		{
			name:  "offer while a connection is up joins the memory queue, and its line the journal",
			setup: func(h *harness) { h.up(1) },
			input: func(h *harness) []string { h.offer("a"); return nil },
			wantActions: []Action{
				OpenJournal{File: fJ0},
				AppendJournal{File: fJ0, Entries: journaled("a")},
			},
			wantStats: Stats{Offered: 1, Queued: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1},
		},
		{
			name:  "offer with no connection up goes straight to .B (peer down)",
			input: func(h *harness) []string { h.offer("a"); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: fB0},
				AppendBacklog{Kind: KindBacklog, File: fB0, Entries: ents("a")},
			},
			wantStats: Stats{Offered: 1, Backlog: 1, BacklogBytes: 10, BacklogFiles: 1},
		},
		{
			name:      "next hands the head of the memory queue to the connection",
			setup:     func(h *harness) { h.up(1); h.offer("a", "b") },
			input:     func(h *harness) []string { return h.next(1, 1) },
			wantNext:  []string{"a"},
			wantStats: Stats{Offered: 2, Queued: 1, InFlight: 1, Journaled: 2, JournalBytes: 24, JournalFiles: 1},
		},
		{
			name:  "deferred goes to .D with one more attempt",
			setup: func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1) },
			input: func(h *harness) []string { h.done(1, "a", OutcomeDeferred); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindDeferred, Opened: fD1},
				AppendBacklog{Kind: KindDeferred, File: fD1, Entries: []Entry{deferredEnt("a", 1)}},
			},
			wantStats: Stats{Offered: 1, Deferred: 1, Retried: 1, BacklogBytes: 12, BacklogFiles: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1},
		},
		{
			name:       "a deferral beyond MaxDefers drops the entry and counts it",
			setup:      func(h *harness) { h.up(1); h.offerEntry(deferredEnt("a", 2)); h.next(1, 1) },
			input:      func(h *harness) []string { h.done(1, "a", OutcomeDeferred); return nil },
			wantEvents: []Event{Drop{Reason: ReasonAttempts, Count: 1}},
			wantStats:  Stats{Offered: 1, Dropped: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1},
		},
		{
			name:  "a lost connection puts its entries back at the head, in order",
			setup: func(h *harness) { h.up(1); h.offer("a", "b", "c"); h.next(1, 2) },
			input: func(h *harness) []string {
				h.down(1)
				h.up(2)
				return h.next(2, 3)
			},
			wantNext:  []string{"a", "b", "c"},
			wantStats: Stats{Offered: 3, InFlight: 3, Requeued: 2, Journaled: 3, JournalBytes: 36, JournalFiles: 1},
		},
		{
			name:  "a full memory queue spills its oldest third to .B",
			setup: func(h *harness) { h.up(1); h.offer("a", "b", "c", "d", "e", "f") },
			input: func(h *harness) []string { h.offer("g"); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: fB1},
				AppendBacklog{Kind: KindBacklog, File: fB1, Entries: ents("a", "b")},
				AppendJournal{File: fJ0, Entries: journaled("g")},
			},
			wantEvents: []Event{Spilled{Count: 2, File: fB1}},
			wantStats:  Stats{Offered: 7, Queued: 5, Backlog: 2, Spilled: 2, BacklogBytes: 20, BacklogFiles: 1, Journaled: 7, JournalBytes: 84, JournalFiles: 1},
		},
		{
			name: "entries requeued beyond capacity spill, the requeued ones first",
			setup: func(h *harness) {
				h.up(1)
				h.offer("a", "b", "c", "d", "e", "f")
				h.next(1, 3)
				h.offer("g", "h", "i")
			},
			input: func(h *harness) []string { h.down(1); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: fB1},
				AppendBacklog{Kind: KindBacklog, File: fB1, Entries: []Entry{resent(ent("a")), resent(ent("b")), resent(ent("c"))}},
			},
			wantEvents: []Event{Spilled{Count: 3, File: fB1}},
			wantStats:  Stats{Offered: 9, Queued: 6, Backlog: 3, Spilled: 3, Requeued: 3, BacklogBytes: 36, BacklogFiles: 1, Journaled: 9, JournalBytes: 108, JournalFiles: 1},
		},
		{
			name:        "a connection up with nothing queued promotes the oldest .B to <peer>.P",
			setup:       func(h *harness) { offerDown(h, "a", "b") },
			input:       func(h *harness) []string { h.up(1); return nil },
			wantActions: []Action{PromoteToReplay{File: fB0}},
			wantEvents:  []Event{ReplayStarted{File: fB0, Entries: 2}},
			wantStats:   Stats{Offered: 2, Replay: 2, BacklogBytes: 20},
			wantReplay:  ReplayIdle,
		},
		{
			name:  "an empty memory queue asks for half a queue from <peer>.P",
			setup: func(h *harness) { offerDown(h, "a", "b"); h.up(1) },
			input: func(h *harness) []string {
				if _, ok := h.q.Next(h.now, 1); ok {
					h.t.Fatal("Next gave an entry from an empty queue")
				}
				h.step("Next")
				return nil
			},
			wantActions: []Action{ReadReplay{Offset: 0, Max: 3}},
			wantStats:   Stats{Offered: 2, Replay: 2, BacklogBytes: 20},
			wantReplay:  ReplayReading,
		},
		{
			name:  "a read fills the memory queue from <peer>.P",
			setup: func(h *harness) { offerDown(h, "a", "b", "c", "d"); h.up(1); h.q.Next(h.now, 1); h.step("Next") },
			input: func(h *harness) []string {
				h.read([]Entry{disked(ent("a"), 0), disked(ent("b"), 0), disked(ent("c"), 0)}, 30, false)
				return h.next(1, 1)
			},
			wantNext:   []string{"a"},
			wantStats:  Stats{Offered: 4, Queued: 2, InFlight: 1, Replay: 1, BacklogBytes: 40},
			wantReplay: ReplayIdle,
		},
		{
			name:  "the last read reaches the end; <peer>.P is deleted once its entries are settled",
			setup: func(h *harness) { offerDown(h, "a", "b"); h.up(1); h.q.Next(h.now, 1); h.step("Next") },
			input: func(h *harness) []string {
				h.read([]Entry{disked(ent("a"), 0), disked(ent("b"), 0)}, 20, true)
				got := h.next(1, 2)
				h.done(1, "a", OutcomeAccepted)
				h.done(1, "b", OutcomeRefused)
				return got
			},
			wantNext:    []string{"a", "b"},
			wantActions: []Action{DeleteReplay{}},
			wantEvents:  []Event{ReplayFinished{}},
			wantStats:   Stats{Offered: 2, Accepted: 1, Refused: 1},
		},
		{
			name:  "a read at the end with nothing pending deletes <peer>.P at once",
			setup: func(h *harness) { offerDown(h, "a"); h.up(1); h.q.Next(h.now, 1); h.step("Next") },
			input: func(h *harness) []string {
				h.read([]Entry{disked(ent("a"), 0)}, 10, false)
				h.next(1, 1)
				h.done(1, "a", OutcomeAccepted) // the empty queue asks for more
				h.read(nil, 10, true)
				return nil
			},
			wantActions: []Action{ReadReplay{Offset: 10, Max: 3}, DeleteReplay{}},
			wantEvents:  []Event{ReplayFinished{}},
			wantStats:   Stats{Offered: 1, Accepted: 1},
		},
		{
			name:  "a replay file with fewer lines than written drops the difference",
			setup: func(h *harness) { offerDown(h, "a", "b", "c"); h.up(1); h.q.Next(h.now, 1); h.step("Next") },
			input: func(h *harness) []string {
				h.read([]Entry{disked(ent("a"), 0), disked(ent("b"), 0)}, 20, true)
				return nil
			},
			wantEvents: []Event{Drop{Reason: ReasonShortRead, Count: 1, File: fP}},
			wantStats:  Stats{Offered: 3, Queued: 2, Dropped: 1, BacklogBytes: 30},
			wantReplay: ReplayDraining,
		},
		{
			name:  "a replay file with more lines than counted finds the surplus",
			setup: func(h *harness) { offerDown(h, "a"); h.up(1); h.q.Next(h.now, 1); h.step("Next") },
			input: func(h *harness) []string {
				h.read([]Entry{disked(ent("a"), 0), disked(ent("b"), 0)}, 20, true)
				return nil
			},
			wantStats:  Stats{Offered: 1, Recovered: 1, Queued: 2, BacklogBytes: 10},
			wantReplay: ReplayDraining,
		},
		{
			name: "a failed read drops what was left and quarantines <peer>.P once settled",
			setup: func(h *harness) {
				offerDown(h, "a", "b", "c", "d")
				h.up(1)
				h.q.Next(h.now, 1)
				h.step("Next")
				h.read([]Entry{disked(ent("a"), 0), disked(ent("b"), 0), disked(ent("c"), 0)}, 30, false)
				h.next(1, 3) // asks for the next batch
			},
			input: func(h *harness) []string {
				h.fail(ReadReplay{Offset: 30, Max: 3})
				h.done(1, "a", OutcomeAccepted)
				h.done(1, "b", OutcomeAccepted)
				h.done(1, "c", OutcomeAccepted)
				return nil
			},
			wantActions: []Action{QuarantineReplay{To: "peer.Q.5db93972"}},
			wantEvents:  []Event{Drop{Reason: ReasonReadFailed, Count: 1, File: fP}, ReplayFinished{Quarantined: true}},
			wantStats:   Stats{Offered: 4, Accepted: 3, Dropped: 1},
		},
		{
			name:  "a failed rename puts the .B file back and tries again after DeferDelay",
			setup: func(h *harness) { offerDown(h, "a", "b"); h.up(1) },
			input: func(h *harness) []string {
				h.fail(PromoteToReplay{File: fB0})
				if d, ok := h.q.Deadline(); !ok || !d.Equal(t0) {
					h.t.Errorf("Deadline after a failure = %v %v, want a Tick now, %v", d, ok, t0)
				}
				h.tick(time.Minute - time.Second)
				if d, ok := h.q.Deadline(); !ok || !d.Equal(t0.Add(time.Minute)) {
					h.t.Errorf("Deadline after a failed promotion = %v %v, want %v", d, ok, t0.Add(time.Minute))
				}
				return nil
			},
			wantStats: Stats{Offered: 2, Backlog: 2, BacklogBytes: 20, BacklogFiles: 1},
		},
		{
			name:        "a .B file put back after a failed rename is promoted at its time",
			setup:       func(h *harness) { offerDown(h, "a", "b"); h.up(1); h.fail(PromoteToReplay{File: fB0}) },
			input:       func(h *harness) []string { h.tick(time.Minute); return nil },
			wantActions: []Action{PromoteToReplay{File: fB0}},
			wantEvents:  []Event{ReplayStarted{File: fB0, Entries: 2}},
			wantStats:   Stats{Offered: 2, Replay: 2, BacklogBytes: 20},
			wantReplay:  ReplayIdle,
		},
		{
			name: "a failed rename puts the .D file back",
			setup: func(h *harness) {
				h.up(1)
				h.offer("a")
				h.next(1, 1)
				h.done(1, "a", OutcomeDeferred)
				h.tick(time.Minute) // promotes it
			},
			input:     func(h *harness) []string { h.fail(PromoteToReplay{File: fD1}); return nil },
			wantStats: Stats{Offered: 1, Deferred: 1, Retried: 1, BacklogBytes: 12, BacklogFiles: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1},
		},
		{
			name:  "a .D file is promoted once DeferDelay has passed since its last line",
			setup: func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1); h.done(1, "a", OutcomeDeferred) },
			input: func(h *harness) []string {
				h.tick(time.Minute - time.Second)
				h.tick(time.Second)
				return nil
			},
			wantActions: []Action{PromoteToReplay{File: fD1}},
			wantEvents:  []Event{ReplayStarted{File: fD1, Entries: 1}},
			wantStats:   Stats{Offered: 1, Replay: 1, Retried: 1, BacklogBytes: 12, Journaled: 1, JournalBytes: 12, JournalFiles: 1},
			wantReplay:  ReplayIdle,
		},
		{
			name: "Shutdown writes what is in flight (marked as resends), connection by connection, then the memory queue",
			setup: func(h *harness) {
				h.up(1, 2)
				h.offer("a", "b", "c")
				h.next(2, 1)
				h.next(1, 1)
			},
			input: func(h *harness) []string { h.must("Shutdown", h.q.Shutdown(h.now)); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: fB1},
				AppendBacklog{Kind: KindBacklog, File: fB1, Entries: []Entry{resent(ent("b")), resent(ent("a")), ent("c")}},
				CloseJournal{File: fJ0},
				DeleteJournal{File: fJ0},
			},
			wantStats: Stats{Offered: 3, Backlog: 3, BacklogBytes: 34, BacklogFiles: 1, Journaled: 3},
		},
		{
			name: "Shutdown checkpoints the replay's progress",
			setup: func(h *harness) {
				offerDown(h, "a", "b", "c", "d")
				h.up(1)
				h.q.Next(h.now, 1)
				h.step("Next")
				h.read([]Entry{disked(ent("a"), 0), disked(ent("b"), 0), disked(ent("c"), 0)}, 30, false)
				h.next(1, 1)
				h.done(1, "a", OutcomeAccepted)
			},
			input: func(h *harness) []string { h.must("Shutdown", h.q.Shutdown(h.now)); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: fB1},
				AppendBacklog{Kind: KindBacklog, File: fB1, Entries: []Entry{disked(ent("b"), 0), disked(ent("c"), 0)}},
				Checkpoint{Offset: 30, Left: 1},
			},
			wantStats:  Stats{Offered: 4, Accepted: 1, Backlog: 2, Replay: 1, BacklogBytes: 60, BacklogFiles: 1},
			wantReplay: ReplayIdle,
		},
		{
			name: "Shutdown moves a replay file's last entries to .B and deletes it",
			setup: func(h *harness) {
				offerDown(h, "a")
				h.up(1)
				h.q.Next(h.now, 1)
				h.step("Next")
				h.read([]Entry{disked(ent("a"), 0)}, 10, true)
			},
			input: func(h *harness) []string { h.must("Shutdown", h.q.Shutdown(h.now)); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: fB1},
				AppendBacklog{Kind: KindBacklog, File: fB1, Entries: []Entry{disked(ent("a"), 0)}},
				DeleteReplay{},
			},
			wantEvents: []Event{ReplayFinished{}},
			wantStats:  Stats{Offered: 1, Backlog: 1, BacklogBytes: 10, BacklogFiles: 1},
		},
		{
			name: "files whose newest line is older than BacklogMaxAge are dropped",
			cfg:  func(c *Config) { c.BacklogMaxAge = time.Hour },
			setup: func(h *harness) {
				h.start(Recovered{Files: []FileInfo{
					{Name: "peer.D.5db93900", Kind: KindDeferred, TS: 0x5db93900, Bytes: 12, Entries: 1, MaxAttempts: 1, ModTime: t0},
					{Name: "peer.B.5db93970", Kind: KindBacklog, TS: 0x5db93970, Bytes: 20, Entries: 2, ModTime: t0.Add(time.Second)},
				}})
			},
			input: func(h *harness) []string {
				h.tick(time.Hour - time.Second)
				h.tick(time.Second)
				return nil
			},
			wantActions: []Action{DeleteBacklog{File: "peer.D.5db93900"}},
			wantEvents:  []Event{Drop{Reason: ReasonAge, Count: 1, File: "peer.D.5db93900"}},
			wantStats:   Stats{Recovered: 3, Dropped: 1, Backlog: 2, BacklogBytes: 20, BacklogFiles: 1},
		},
		{
			name: "a .B file older than BacklogMaxAge is dropped",
			cfg:  func(c *Config) { c.BacklogMaxAge = time.Hour },
			setup: func(h *harness) {
				h.start(Recovered{Files: []FileInfo{
					{Name: "peer.B.5db93970", Kind: KindBacklog, TS: 0x5db93970, Bytes: 20, Entries: 2, ModTime: t0},
				}})
			},
			input:       func(h *harness) []string { h.tick(time.Hour); return nil },
			wantActions: []Action{DeleteBacklog{File: "peer.B.5db93970"}},
			wantEvents:  []Event{Drop{Reason: ReasonAge, Count: 2, File: "peer.B.5db93970"}},
			wantStats:   Stats{Recovered: 2, Dropped: 2},
		},
		{
			name: "recovery counts the files and resumes <peer>.P at its checkpoint",
			input: func(h *harness) []string {
				h.start(Recovered{
					Files: []FileInfo{
						{Name: "peer.B.5db93970", Kind: KindBacklog, TS: 0x5db93970, Bytes: 20, Entries: 2},
						{Name: "peer.D.5db93960", Kind: KindDeferred, TS: 0x5db93960, Bytes: 12, Entries: 1, MaxAttempts: 1},
					},
					Replay: &ReplayInfo{Bytes: 40, Offset: 20, Entries: 2},
				})
				h.up(1)
				return nil
			},
			wantActions: []Action{ReadReplay{Offset: 20, Max: 3}},
			wantStats:   Stats{Recovered: 5, Backlog: 2, Deferred: 1, Replay: 2, BacklogBytes: 72, BacklogFiles: 2},
			wantReplay:  ReplayReading,
		},
		{
			name: "over BacklogMaxBytes the oldest other .B file is dropped first",
			cfg:  func(c *Config) { c.BacklogMaxBytes = 35 },
			setup: func(h *harness) {
				h.start(Recovered{Files: []FileInfo{
					{Name: "peer.B.5db93970", Kind: KindBacklog, TS: 0x5db93970, Bytes: 20, Entries: 2},
				}})
				offerDown(h, "a")
			},
			input: func(h *harness) []string { offerDown(h, "b"); return nil },
			wantActions: []Action{
				DeleteBacklog{File: "peer.B.5db93970"},
				AppendBacklog{Kind: KindBacklog, File: fB0, Entries: ents("b")},
			},
			wantEvents: []Event{Drop{Reason: ReasonBytes, Count: 2, File: "peer.B.5db93970"}},
			wantStats:  Stats{Offered: 2, Recovered: 2, Dropped: 2, Backlog: 2, BacklogBytes: 20, BacklogFiles: 1},
		},
		{
			name: "over BacklogMaxBytes the oldest other .D file is dropped first",
			cfg:  func(c *Config) { c.BacklogMaxBytes = 25 },
			setup: func(h *harness) {
				h.start(Recovered{Files: []FileInfo{
					{Name: "peer.D.5db93970", Kind: KindDeferred, TS: 0x5db93970, Bytes: 12, Entries: 1, MaxAttempts: 1},
				}})
				offerDown(h, "a")
			},
			input: func(h *harness) []string { offerDown(h, "b"); return nil },
			wantActions: []Action{
				DeleteBacklog{File: "peer.D.5db93970"},
				AppendBacklog{Kind: KindBacklog, File: fB0, Entries: ents("b")},
			},
			wantEvents: []Event{Drop{Reason: ReasonBytes, Count: 1, File: "peer.D.5db93970"}},
			wantStats:  Stats{Offered: 2, Recovered: 1, Dropped: 1, Backlog: 2, BacklogBytes: 20, BacklogFiles: 1},
		},
		{
			name:       "over BacklogMaxBytes with no other file, an offer for a down peer is dropped",
			cfg:        func(c *Config) { c.BacklogMaxBytes = 15 },
			setup:      func(h *harness) { offerDown(h, "a") },
			input:      func(h *harness) []string { offerDown(h, "b"); return nil },
			wantEvents: []Event{Drop{Reason: ReasonBytes, Count: 1}},
			wantStats:  Stats{Offered: 2, Dropped: 1, Backlog: 1, BacklogBytes: 10, BacklogFiles: 1},
		},
		{
			name:  "over BacklogMaxBytes a spill drops its oldest entries",
			cfg:   func(c *Config) { c.BacklogMaxBytes = 15 },
			setup: func(h *harness) { h.up(1); h.offer("a", "b", "c", "d", "e", "f") },
			input: func(h *harness) []string { h.offer("g"); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: fB1},
				AppendBacklog{Kind: KindBacklog, File: fB1, Entries: ents("b")},
				AppendJournal{File: fJ0, Entries: journaled("g")},
			},
			wantEvents: []Event{Drop{Reason: ReasonBytes, Count: 1}, Spilled{Count: 1, File: fB1}},
			wantStats:  Stats{Offered: 7, Queued: 5, Dropped: 1, Backlog: 1, Spilled: 1, BacklogBytes: 10, BacklogFiles: 1, Journaled: 7, JournalBytes: 84, JournalFiles: 1},
		},
		{
			name:        "over BacklogMaxBytes a deferral is dropped",
			cfg:         func(c *Config) { c.BacklogMaxBytes = 5 },
			setup:       func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1) },
			input:       func(h *harness) []string { h.done(1, "a", OutcomeDeferred); return nil },
			wantActions: []Action{RotateBacklog{Kind: KindDeferred, Opened: fD1}},
			wantEvents:  []Event{Drop{Reason: ReasonBytes, Count: 1}},
			wantStats:   Stats{Offered: 1, Dropped: 1, BacklogFiles: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1},
		},
		{
			name:  "a failed append to .B drops what it held",
			setup: func(h *harness) { offerDown(h, "a", "b") },
			input: func(h *harness) []string {
				h.fail(AppendBacklog{Kind: KindBacklog, File: fB0, Entries: ents("b")})
				return nil
			},
			wantEvents: []Event{Drop{Reason: ReasonWriteFailed, Count: 1, File: fB0}},
			wantStats:  Stats{Offered: 2, Backlog: 1, Dropped: 1, BacklogBytes: 10, BacklogFiles: 1},
		},
		{
			name:  "a failed append to .D drops what it held",
			setup: func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1); h.done(1, "a", OutcomeDeferred) },
			input: func(h *harness) []string {
				h.fail(AppendBacklog{Kind: KindDeferred, File: fD1, Entries: []Entry{deferredEnt("a", 1)}})
				return nil
			},
			wantEvents: []Event{Drop{Reason: ReasonWriteFailed, Count: 1, File: fD1}},
			wantStats:  Stats{Offered: 1, Dropped: 1, Retried: 1, BacklogFiles: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1},
		},
		{
			name:  "a failed file creation forgets the file; the next offer opens another",
			setup: func(h *harness) { offerDown(h, "a") },
			input: func(h *harness) []string {
				h.fail(RotateBacklog{Kind: KindBacklog, Opened: fB0})
				h.fail(AppendBacklog{Kind: KindBacklog, File: fB0, Entries: ents("a")})
				offerDown(h, "b")
				return nil
			},
			wantActions: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: fB1},
				AppendBacklog{Kind: KindBacklog, File: fB1, Entries: ents("b")},
			},
			wantEvents: []Event{Drop{Reason: ReasonWriteFailed, Count: 1, File: fB0}},
			wantStats:  Stats{Offered: 2, Dropped: 1, Backlog: 1, BacklogBytes: 10, BacklogFiles: 1},
		},
		{
			name: "a failed delete of <peer>.P is stuck, then retried after DeferDelay",
			setup: func(h *harness) {
				offerDown(h, "a")
				h.up(1)
				h.q.Next(h.now, 1)
				h.step("Next")
				h.read([]Entry{disked(ent("a"), 0)}, 10, true)
				h.next(1, 1)
				h.done(1, "a", OutcomeAccepted)
			},
			input: func(h *harness) []string {
				h.fail(DeleteReplay{})
				if h.q.ReplayState() != ReplayStuck {
					h.t.Errorf("after a failed delete the replay file is %s, want stuck", h.q.ReplayState())
				}
				h.tick(time.Minute)
				return nil
			},
			wantActions: []Action{DeleteReplay{}},
			wantStats:   Stats{Offered: 1, Accepted: 1},
		},
		{
			name:  "a file is rotated at RotateBytes, but not before RotateInterval",
			setup: func(h *harness) { offerDown(h, "a", "b", "c", "d") },
			input: func(h *harness) []string {
				offerDown(h, "e")
				h.tick(5 * time.Minute)
				offerDown(h, "f")
				return nil
			},
			wantActions: []Action{
				AppendBacklog{Kind: KindBacklog, File: fB0, Entries: ents("e")},
				RotateBacklog{Kind: KindBacklog, Closed: fB0, Opened: "peer.B.5db93a9d"},
				AppendBacklog{Kind: KindBacklog, File: "peer.B.5db93a9d", Entries: ents("f")},
			},
			wantStats: Stats{Offered: 6, Backlog: 6, BacklogBytes: 60, BacklogFiles: 2},
		},
		{
			name: "a .D file takes lines for DeferDelay, then a new one opens",
			setup: func(h *harness) {
				h.up(1)
				h.offer("a", "b", "c")
				h.next(1, 2)
				h.done(1, "a", OutcomeDeferred)
				h.tick(time.Minute) // "c" is queued: nothing is promoted
			},
			input: func(h *harness) []string { h.done(1, "b", OutcomeDeferred); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindDeferred, Closed: fD1, Opened: "peer.D.5db939ad"},
				AppendBacklog{Kind: KindDeferred, File: "peer.D.5db939ad", Entries: []Entry{deferredEnt("b", 1)}},
			},
			wantStats: Stats{Offered: 3, Queued: 1, Deferred: 2, Retried: 2, BacklogBytes: 24, BacklogFiles: 2, Journaled: 3, JournalBytes: 36, JournalFiles: 1},
		},
		{
			name: "the replay's progress is checkpointed on Tick after CheckpointInterval",
			setup: func(h *harness) {
				offerDown(h, "a", "b", "c", "d")
				h.up(1)
				h.q.Next(h.now, 1)
				h.step("Next")
				h.read([]Entry{disked(ent("a"), 0), disked(ent("b"), 0), disked(ent("c"), 0)}, 30, false)
				h.next(1, 3)
				h.done(1, "a", OutcomeAccepted)
				h.done(1, "b", OutcomeAccepted)
				h.done(1, "c", OutcomeAccepted)
			},
			input: func(h *harness) []string {
				h.tick(9 * time.Second)
				h.tick(time.Second)
				return nil
			},
			wantActions: []Action{Checkpoint{Offset: 30, Left: 1}},
			wantStats:   Stats{Offered: 4, Accepted: 3, Replay: 1, BacklogBytes: 40},
			wantReplay:  ReplayReading,
		},
		{
			name:        "a refill RefillCheckpointGap after the last checkpoint checkpoints the settled batches first",
			setup:       func(h *harness) { settledBatchThenWait(h, time.Second) }, // the promote counts as a checkpoint
			input:       func(h *harness) []string { return h.next(1, 3) },
			wantNext:    []string{"d", "e", "f"},
			wantActions: []Action{Checkpoint{Offset: 30, Left: 4}, ReadReplay{Offset: 60, Max: 3}},
			wantStats:   Stats{Offered: 7, Accepted: 3, InFlight: 3, Replay: 1, BacklogBytes: 70},
			wantReplay:  ReplayReading,
		},
		{
			name:        "a refill sooner than RefillCheckpointGap after the last checkpoint reads without one",
			setup:       func(h *harness) { settledBatchThenWait(h, time.Second-time.Millisecond) },
			input:       func(h *harness) []string { return h.next(1, 3) },
			wantNext:    []string{"d", "e", "f"},
			wantActions: []Action{ReadReplay{Offset: 60, Max: 3}},
			wantStats:   Stats{Offered: 7, Accepted: 3, InFlight: 3, Replay: 1, BacklogBytes: 70},
			wantReplay:  ReplayReading,
		},
		{
			name: "a journal a crash left behind is recovered as .B, its entries counted as Resent",
			input: func(h *harness) []string {
				h.start(Recovered{Files: []FileInfo{
					{Name: "peer.B.5db93970", Kind: KindBacklog, TS: 0x5db93970, Bytes: 20, Entries: 2, Journal: true},
				}})
				h.up(1)
				return nil
			},
			wantActions: []Action{PromoteToReplay{File: "peer.B.5db93970"}},
			wantEvents:  []Event{ReplayStarted{File: "peer.B.5db93970", Entries: 2}},
			wantStats:   Stats{Recovered: 2, Resent: 2, Replay: 2, BacklogBytes: 20},
			wantReplay:  ReplayIdle,
		},
		{
			name:  "a peer down for DownSpillDelay spills its whole memory queue to .B, settling the journal",
			setup: func(h *harness) { h.up(1); h.offer("a", "b", "c"); h.next(1, 1) },
			input: func(h *harness) []string {
				h.down(1)
				if d, ok := h.q.Deadline(); !ok || !d.Equal(t0.Add(30*time.Second)) {
					h.t.Errorf("Deadline with the last connection down = %v %v, want %v", d, ok, t0.Add(30*time.Second))
				}
				h.tick(29 * time.Second)
				if len(h.acts) != 0 {
					h.t.Errorf("spilled before DownSpillDelay: %v", h.acts)
				}
				h.tick(time.Second)
				return nil
			},
			wantActions: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: "peer.B.5db9398f"},
				AppendBacklog{Kind: KindBacklog, File: "peer.B.5db9398f", Entries: []Entry{resent(ent("a")), ent("b"), ent("c")}},
			},
			wantEvents: []Event{Spilled{Count: 3, File: "peer.B.5db9398f", Down: true}},
			wantStats: Stats{Offered: 3, Backlog: 3, Spilled: 3, Requeued: 1, BacklogBytes: 32, BacklogFiles: 1,
				Journaled: 3, JournalBytes: 36, JournalFiles: 1},
		},
		{
			name: "a connection back within DownSpillDelay keeps the memory queue",
			setup: func(h *harness) {
				h.up(1)
				h.offer("a", "b")
				h.down(1)
				h.tick(29 * time.Second)
			},
			input: func(h *harness) []string {
				h.up(2)
				h.tick(time.Minute)
				return h.next(2, 2)
			},
			wantNext:  []string{"a", "b"},
			wantStats: Stats{Offered: 2, InFlight: 2, Journaled: 2, JournalBytes: 24, JournalFiles: 1},
		},
		{
			name:  "a journal file of JournalRotateBytes is rotated at the next offer; it waits for its entries",
			cfg:   func(c *Config) { c.JournalRotateBytes = 20 },
			setup: func(h *harness) { h.up(1); h.offer("a", "b"); h.next(1, 1) },
			input: func(h *harness) []string { h.offer("c"); return nil },
			wantActions: []Action{
				CloseJournal{File: fJ0},
				OpenJournal{File: "peer.J.5db93972"},
				AppendJournal{File: "peer.J.5db93972", Entries: journaled("c")},
			},
			wantStats: Stats{Offered: 3, Queued: 2, InFlight: 1, Journaled: 3, JournalBytes: 36, JournalFiles: 2},
		},
		{
			name: "a rotated journal is deleted after the append that settles its last entry",
			cfg:  func(c *Config) { c.JournalRotateBytes = 20 },
			setup: func(h *harness) {
				h.up(1)
				h.offer("a", "b")
				h.next(1, 1)
				h.offer("c")
				h.done(1, "a", OutcomeAccepted)
				h.next(1, 1)
			},
			input: func(h *harness) []string { h.done(1, "b", OutcomeDeferred); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindDeferred, Opened: "peer.D.5db93973"},
				AppendBacklog{Kind: KindDeferred, File: "peer.D.5db93973", Entries: []Entry{deferredEnt("b", 1)}},
				DeleteJournal{File: fJ0},
			},
			wantStats: Stats{Offered: 3, Accepted: 1, Queued: 1, Deferred: 1, Retried: 1, BacklogBytes: 12, BacklogFiles: 1,
				Journaled: 3, JournalBytes: 12, JournalFiles: 1},
		},
		{
			name:  "a journal JournalRotateInterval old is rotated on Tick, and deleted at once when settled",
			setup: func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1); h.done(1, "a", OutcomeAccepted) },
			input: func(h *harness) []string {
				if d, ok := h.q.Deadline(); !ok || !d.Equal(t0.Add(10*time.Minute)) {
					h.t.Errorf("Deadline with a journal open = %v %v, want %v", d, ok, t0.Add(10*time.Minute))
				}
				h.tick(10*time.Minute - time.Second)
				h.tick(time.Second)
				if _, ok := h.q.Deadline(); ok {
					h.t.Error("a deadline with nothing left to do")
				}
				return nil
			},
			wantActions: []Action{CloseJournal{File: fJ0}, DeleteJournal{File: fJ0}},
			wantStats:   Stats{Offered: 1, Accepted: 1, Journaled: 1},
		},
		{
			name:  "a failed journal append breaks the file; the entry stays queued",
			setup: func(h *harness) { h.up(1); h.offer("a") },
			input: func(h *harness) []string {
				h.fail(AppendJournal{File: fJ0, Entries: journaled("a")})
				if d, ok := h.q.Deadline(); !ok || !d.Equal(t0) {
					h.t.Errorf("Deadline after a failure = %v %v, want a Tick now, %v", d, ok, t0)
				}
				return nil
			},
			wantStats: Stats{Offered: 1, Queued: 1, Journaled: 1, JournalBytes: 12, JournalFiles: 1},
		},
		{
			name:  "a broken journal is rotated at the next offer",
			setup: func(h *harness) { h.up(1); h.offer("a"); h.fail(OpenJournal{File: fJ0}) },
			input: func(h *harness) []string { h.offer("b"); return nil },
			wantActions: []Action{
				CloseJournal{File: fJ0},
				OpenJournal{File: "peer.J.5db93972"},
				AppendJournal{File: "peer.J.5db93972", Entries: journaled("b")},
			},
			wantStats: Stats{Offered: 2, Queued: 2, Journaled: 2, JournalBytes: 24, JournalFiles: 2},
		},
		{
			name:  "a broken journal is closed at Shutdown and deleted after the memory queue is in .B",
			setup: func(h *harness) { h.up(1); h.offer("a"); h.fail(AppendJournal{File: fJ0, Entries: journaled("a")}) },
			input: func(h *harness) []string { h.must("Shutdown", h.q.Shutdown(h.now)); return nil },
			wantActions: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: fB1},
				AppendBacklog{Kind: KindBacklog, File: fB1, Entries: ents("a")},
				CloseJournal{File: fJ0},
				DeleteJournal{File: fJ0},
			},
			wantStats: Stats{Offered: 1, Backlog: 1, BacklogBytes: 10, BacklogFiles: 1, Journaled: 1},
		},
		{
			name: "a failed journal delete is stuck, then retried after DeferDelay",
			setup: func(h *harness) {
				h.up(1)
				h.offer("a")
				h.next(1, 1)
				h.done(1, "a", OutcomeAccepted)
				h.tick(10 * time.Minute)
			},
			input: func(h *harness) []string {
				h.fail(DeleteJournal{File: fJ0})
				if s := h.q.Stats(); s.JournalFiles != 1 {
					h.t.Errorf("a journal whose delete failed is not counted: %+v", s)
				}
				h.tick(time.Minute - time.Second)
				if len(h.acts) != 0 {
					h.t.Errorf("retried before DeferDelay: %v", h.acts)
				}
				h.tick(time.Second)
				return nil
			},
			wantActions: []Action{DeleteJournal{File: fJ0}},
			wantStats:   Stats{Offered: 1, Accepted: 1, Journaled: 1},
		},
	}...)
}

// TestTransitions drives every row of the lifecycle table: each case sets a
// queue up, gives it one input, and compares actions, events, counters and
// the replay file's state. Afterwards every row of the table must have been
// taken by some case's input.
func TestTransitions(t *testing.T) {
	cases := transitionCases()
	taken := map[fmt.Stringer]bool{}
	ran := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ran++
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			h := newHarness(t, cfg)
			if tc.setup != nil {
				tc.setup(h)
			}
			h.reset()
			h.trace = func(r fmt.Stringer) { taken[r] = true }
			got := tc.input(h)
			if diff := cmp.Diff(tc.wantNext, got); diff != "" {
				t.Errorf("Next handed out (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantActions, h.acts); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, h.evs); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStats, h.q.Stats()); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			if got := h.q.ReplayState(); got != tc.wantReplay {
				t.Errorf("replay file in state %s, want %s", got, tc.wantReplay)
			}
		})
	}
	if ran != len(cases) || t.Failed() {
		return // a filtered or failed run proves nothing about coverage
	}
	for _, r := range everyRow() {
		if !taken[r.row] {
			t.Errorf("no case takes the transition %s", r.row)
		}
	}
}

// tracedRow is a row of one of the queue's tables, as the trace reports it,
// with its trigger.
type tracedRow struct {
	row fmt.Stringer // a table.Row[S, Trigger]
	on  Trigger
}

// everyRow lists the rows of every table of the queue: entry, connection,
// replay file, journal file and the queue's own.
func everyRow() []tracedRow {
	var rows []tracedRow
	rows = appendRows(rows, entryTable)
	rows = appendRows(rows, connTable)
	rows = appendRows(rows, replayTable)
	rows = appendRows(rows, journalTable)
	return appendRows(rows, runTable)
}

func appendRows[S table.State](rows []tracedRow, t *table.Table[S, Trigger]) []tracedRow {
	for _, r := range t.Rows() {
		rows = append(rows, tracedRow{row: r, on: r.On})
	}
	return rows
}

// TestTables checks each table against the states and triggers it names:
// every row leads where it says, and every (state, trigger) pair not in the
// table has no row, so the lookups the machine does are exactly the rows.
func TestTables(t *testing.T) {
	checkTable(t, entryTable, Lost)
	checkTable(t, connTable, ConnUp)
	checkTable(t, replayTable, ReplayStuck)
	checkTable(t, journalTable, JournalStuck)
	checkTable(t, runTable, Closed)
}

func checkTable[S table.State](t *testing.T, tb *table.Table[S, Trigger], last S) {
	t.Helper()
	want := map[[2]uint8]S{}
	for _, r := range tb.Rows() {
		want[[2]uint8{uint8(r.From), uint8(r.On)}] = r.To
	}
	for s := S(0); s <= last; s++ {
		for on := Trigger(0); on < numTriggers; on++ {
			got, ok := tb.Next(s, on)
			w, wok := want[[2]uint8{uint8(s), uint8(on)}]
			if ok != wok || got != w {
				t.Errorf("%s: %s/%s leads to %s (%t), want %s (%t)", tb.Name(), s, on, got, ok, w, wok)
			}
		}
	}
	if got := S(last + 1).String(); !strings.HasSuffix(got, fmt.Sprintf("(%d)", last+1)) {
		t.Errorf("%s: the state after the last is named %q", tb.Name(), got)
	}
}

// TestIllegal gives inputs the table does not allow: each must fail with an
// error naming the state and the event, and change nothing.
func TestIllegal(t *testing.T) {
	cases := []struct {
		name  string
		setup func(h *harness)
		input func(h *harness) error
		want  string
	}{
		{
			name:  "an answer on a connection that is not up",
			input: func(h *harness) error { return h.q.Done(h.now, 3, "<a@x>", OutcomeAccepted) },
			want:  "queue peer: conn 3 in state down: illegal event accepted",
		},
		{
			name:  "an answer for an id not in flight on that connection",
			setup: func(h *harness) { h.up(1, 2); h.offer("a"); h.next(2, 1) },
			input: func(h *harness) error { return h.q.Done(h.now, 1, "<a@x>", OutcomeRefused) },
			want:  "queue peer: entry <a@x> on conn 1 in state absent: illegal event refused",
		},
		{
			name:  "a second answer for the same entry",
			setup: func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1); h.done(1, "a", OutcomeAccepted) },
			input: func(h *harness) error { return h.q.Done(h.now, 1, "<a@x>", OutcomeDeferred) },
			want:  "queue peer: entry <a@x> on conn 1 in state absent: illegal event defer",
		},
		{
			name:  "a connection up twice",
			setup: func(h *harness) { h.up(1) },
			input: func(h *harness) error { return h.q.ConnUp(h.now, 1) },
			want:  "queue peer: conn 1 in state up: illegal event conn-up",
		},
		{
			name:  "a connection down that was never up",
			input: func(h *harness) error { return h.q.ConnDown(h.now, 2) },
			want:  "queue peer: conn 2 in state down: illegal event conn-down",
		},
		{
			name:  "a read result nobody asked for",
			input: func(h *harness) error { return h.q.ReplayRead(h.now, ents("a"), 10, false) },
			want:  "queue peer: replay file in state none: illegal event read",
		},
		{
			name:  "a read result while <peer>.P is idle",
			setup: func(h *harness) { offerDown(h, "a"); h.up(1) },
			input: func(h *harness) error { return h.q.ReplayRead(h.now, ents("a"), 10, true) },
			want:  "queue peer: replay file in state idle: illegal event read-eof",
		},
		{
			name:  "a failed read nobody asked for",
			input: func(h *harness) error { return h.q.Failed(h.now, ReadReplay{Max: 3}, errInjected) },
			want:  "queue peer: replay file in state none: illegal event read-failed",
		},
		{
			name:  "a failed rename of a file not being promoted",
			input: func(h *harness) error { return h.q.Failed(h.now, PromoteToReplay{File: fB0}, errInjected) },
			want:  "queue peer: replay file in state none: illegal event restore-B",
		},
		{
			name:  "a failed delete while <peer>.P is in use",
			setup: func(h *harness) { offerDown(h, "a"); h.up(1) },
			input: func(h *harness) error { return h.q.Failed(h.now, DeleteReplay{}, errInjected) },
			want:  "queue peer: replay file in state idle: illegal event delete-failed",
		},
		{
			name:  "a failed delete of the journal still taking lines",
			setup: func(h *harness) { h.up(1); h.offer("a") },
			input: func(h *harness) error { return h.q.Failed(h.now, DeleteJournal{File: fJ0}, errInjected) },
			want:  "queue peer: journal peer.J.5db93971 in state journal-open: illegal event delete-failed",
		},
		{
			name:  "an offer after Shutdown",
			setup: func(h *harness) { h.must("Shutdown", h.q.Shutdown(h.now)) },
			input: func(h *harness) error { return h.q.Offer(h.now, ent("a")) },
			want:  "queue peer: queue in state closed: illegal event offer",
		},
		{
			name:  "an answer after Shutdown",
			setup: func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1); h.must("Shutdown", h.q.Shutdown(h.now)) },
			input: func(h *harness) error { return h.q.Done(h.now, 1, "<a@x>", OutcomeAccepted) },
			want:  "queue peer: queue in state closed: illegal event accepted",
		},
		{
			name:  "Shutdown twice",
			setup: func(h *harness) { h.must("Shutdown", h.q.Shutdown(h.now)) },
			input: func(h *harness) error { return h.q.Shutdown(h.now) },
			want:  "queue peer: queue in state closed: illegal event shutdown",
		},
		{
			name:  "a connection up after Shutdown",
			setup: func(h *harness) { h.must("Shutdown", h.q.Shutdown(h.now)) },
			input: func(h *harness) error { return h.q.ConnUp(h.now, 1) },
			want:  "queue peer: queue in state closed: illegal event conn-up",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig())
			if tc.setup != nil {
				tc.setup(h)
			}
			before := h.q.Stats()
			err := tc.input(h)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			var te *TransitionError
			if !errors.As(err, &te) {
				t.Errorf("error %T is not a *TransitionError", err)
			}
			if diff := cmp.Diff(before, h.q.Stats()); diff != "" {
				t.Errorf("an illegal input changed the counters (-before +after):\n%s", diff)
			}
			h.step("illegal input")
		})
	}
}

// TestInputErrors covers inputs that are wrong but not transitions.
func TestInputErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	bad := ent("a")
	bad.Token = "has space"
	if err := h.q.Offer(h.now, bad); err == nil || !errors.Is(err, ErrBadLine) {
		t.Errorf("Offer of a token with a space: %v, want ErrBadLine", err)
	}
	offerDown(h, "a", "b")
	h.up(1)
	h.q.Next(h.now, 1)
	h.step("Next")
	if err := h.q.ReplayRead(h.now, ents("a"), 0, false); err == nil {
		t.Error("ReplayRead with entries and no progress: no error")
	}
	if err := h.q.ReplayRead(h.now, nil, 0, false); err == nil {
		t.Error("ReplayRead with no progress and no EOF: no error")
	}
	if err := h.q.ReplayRead(h.now, []Entry{bad}, 10, false); err == nil {
		t.Error("ReplayRead of an invalid entry: no error")
	}
	if _, ok := h.q.Next(h.now, 9); ok {
		t.Error("Next on a connection that is not up handed out an entry")
	}
	if _, err := New(Config{}, t0, Recovered{}); err == nil {
		t.Error("New without a peer name: no error")
	}
	if _, err := New(testConfig(), t0, Recovered{Files: []FileInfo{{Name: "other.B.1", Kind: KindBacklog, TS: 1}}}); err == nil {
		t.Error("New with another peer's file: no error")
	}
	if _, err := New(testConfig(), t0, Recovered{Files: []FileInfo{{Name: "peer.D.1", Kind: KindDeferred, TS: 1, Journal: true}}}); err == nil {
		t.Error("New with a .D file marked as a journal: no error")
	}
	if _, err := New(testConfig(), t0, Recovered{Replay: &ReplayInfo{Bytes: 5, Offset: 9}}); err == nil {
		t.Error("New with a checkpoint beyond the replay file: no error")
	}
	h.step("errors")
}

// TestDeferDelay checks the growing delay of a .D file: DeferDelay doubled
// per attempt beyond the first, capped at DeferMaxDelay.
func TestDeferDelay(t *testing.T) {
	q, err := New(testConfig(), t0, Recovered{})
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for a := 0; a <= 5; a++ {
		got = append(got, q.deferDelay(a))
	}
	want := []time.Duration{time.Minute, time.Minute, 2 * time.Minute, 4 * time.Minute, 4 * time.Minute, 4 * time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays by attempt (-want +got):\n%s", diff)
	}
	// And in the machine: an entry deferred for the second time waits 2m.
	h := newHarness(t, testConfig())
	h.up(1)
	h.offerEntry(deferredEnt("a", 1))
	h.next(1, 1)
	h.done(1, "a", OutcomeDeferred)
	if d, ok := h.q.Deadline(); !ok || !d.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("Deadline = %v %v, want %v", d, ok, t0.Add(2*time.Minute))
	}
	h.reset()
	h.tick(2*time.Minute - time.Second)
	if len(h.acts) != 0 {
		t.Errorf("promoted before its delay: %v", h.acts)
	}
	h.tick(time.Second)
	if diff := cmp.Diff([]Action{PromoteToReplay{File: fD1}}, h.acts); diff != "" {
		t.Errorf("at its delay (-want +got):\n%s", diff)
	}
}

// TestJournalSettledClose: once every entry of the current journal is
// answered, the journal is closed and deleted at the first Tick
// JournalSettledClose after it was opened, so that a crash after that
// sends none of them again; with an entry still in flight it stays.
func TestJournalSettledClose(t *testing.T) {
	cfg := testConfig()
	cfg.JournalSettledClose = time.Second
	h := newHarness(t, cfg)
	h.up(1)
	h.offer("a", "b")
	h.next(1, 2)
	h.done(1, "a", OutcomeAccepted)
	if d, _ := h.q.Deadline(); d.Equal(t0.Add(time.Second)) {
		t.Errorf("Deadline at the settled close with b in flight")
	}
	h.tick(time.Second)
	for _, a := range h.acts {
		if _, ok := a.(DeleteJournal); ok {
			t.Fatalf("journal deleted with b in flight: %v", h.acts)
		}
	}
	h.done(1, "b", OutcomeAccepted)
	h.reset()
	if d, ok := h.q.Deadline(); !ok || d.After(t0.Add(time.Second)) {
		t.Errorf("Deadline = %v %v, want the settled close", d, ok)
	}
	h.tick(0)
	var deleted bool
	for _, a := range h.acts {
		if _, ok := a.(DeleteJournal); ok {
			deleted = true
		}
	}
	if !deleted {
		t.Errorf("settled journal not deleted: %v", h.acts)
	}
}

// TestPauseKeepsBacklog: while the owner hands out no work (Pause), a
// queue with a connection up and its memory empty promotes no backlog file
// and asks for no replay read, however much time passes: what Flush wrote
// to .B stays there. Resuming starts the replay.
func TestPauseKeepsBacklog(t *testing.T) {
	h := newHarness(t, testConfig())
	h.up(1)
	h.q.Pause(h.now, true)
	h.step("Pause")
	h.offer("a", "b")
	n, err := h.q.Flush(h.now)
	h.must("Flush", err)
	if n != 2 {
		t.Fatalf("Flush wrote %d entries, want 2", n)
	}
	replays := func() (n int) {
		for _, a := range h.acts {
			switch a.(type) {
			case PromoteToReplay, ReadReplay:
				n++
			}
		}
		return n
	}
	h.reset()
	h.tick(time.Second)
	h.tick(time.Hour)
	if n := replays(); n != 0 {
		t.Fatalf("paused, the queue replays its backlog: %v", h.acts)
	}
	h.reset()
	h.q.Pause(h.now, false)
	h.step("Resume")
	if n := replays(); n == 0 {
		t.Fatalf("resumed, the queue does not replay its backlog: %v", h.acts)
	}
}
