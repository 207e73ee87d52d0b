package jobs

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wantRows lists every legal transition with the reason it exists, written
// independently of the table: a row added to or lost from the table fails
// TestEveryTransition.
var wantRows = []struct {
	from State
	on   Event
	to   State
	why  string
}{
	{Absent, OnEnqueue, Writing, "Enqueue writes the entry's data before linking it"},
	{Writing, OnCommit, Queued, "the link in queue/ commits the entry"},
	{Writing, OnAbort, Removed, "an Enqueue that failed before its commit point removes what it wrote"},
	{Queued, OnSendStart, InFlight, "a download starts"},
	{Queued, OnReschedule, Queued, "a queued entry gets a new schedule and stays queued"},
	{InFlight, OnRead, InFlight, "a download reads its NZB and metadata"},
	{InFlight, OnProgress, InFlight, "a download records finished and missing segments"},
	{InFlight, OnCompact, InFlight, "a download folds its progress log into the metadata"},
	{InFlight, OnSendCancel, Queued, "a stopped download goes back to the queue with its progress"},
	{InFlight, OnSendDone, Cleanup, "a finished download is removed"},
	{Queued, OnDrop, Cleanup, "a queued entry is abandoned and removed"},
	{Cleanup, OnCleanup, Removed, "removal finishes"},
	{Writing, OnRecover, Queued, "recovery links an entry whose job passed its commit point (roll forward)"},
	{Writing, OnRecoverUncommitted, Removed, "recovery removes an Enqueue that never reached its commit point (roll back)"},
	{Writing, OnRecoverCorrupt, Quarantined, "recovery quarantines a damaged entry of a committed job"},
	{Queued, OnRecover, Queued, "recovery keeps a queued entry"},
	{Queued, OnRecoverCorrupt, Quarantined, "recovery quarantines a damaged queued entry"},
	{InFlight, OnRecover, Queued, "recovery puts what was in flight back in the queue"},
	{InFlight, OnRecoverCorrupt, Quarantined, "recovery quarantines a damaged in-flight entry"},
	{Cleanup, OnRecover, Removed, "recovery finishes a half-done removal"},
	{Cleanup, OnRecoverCorrupt, Removed, "recovery finishes removing a damaged entry that was being removed anyway"},
}

// TestEveryTransition checks every (state, event) pair: the rows above are
// legal and lead where they say, every other pair is an error naming the
// entry, the state and the event, and leaves the state as it was.
func TestEveryTransition(t *testing.T) {
	legal := map[[2]uint8]State{}
	for _, r := range wantRows {
		legal[[2]uint8{uint8(r.from), uint8(r.on)}] = r.to
	}
	id := ID{Job: "j1", Dest: "d1"}
	for s := range numStates {
		for e := range numEvents {
			got, err := Next(id, s, e)
			want, ok := legal[[2]uint8{uint8(s), uint8(e)}]
			if ok {
				if err != nil || got != want {
					t.Errorf("Next(%s, %s) = %s, %v; want %s", s, e, got, err, want)
				}
				continue
			}
			var te *TransitionError
			if !errors.As(err, &te) {
				t.Errorf("Next(%s, %s) = %s, %v; want a *TransitionError", s, e, got, err)
				continue
			}
			if diff := cmp.Diff(&TransitionError{Machine: "jobs", Subject: "entry " + id.String(), State: s, Event: e}, te); diff != "" {
				t.Errorf("Next(%s, %s) error (-want +got):\n%s", s, e, diff)
			}
			if got != s {
				t.Errorf("Next(%s, %s) illegal, but returned state %s", s, e, got)
			}
		}
	}
	if n := len(lifecycle.Rows()); n != len(wantRows) {
		t.Errorf("table has %d rows, want %d", n, len(wantRows))
	}
}

func TestTransitionErrorText(t *testing.T) {
	_, err := Next(ID{Job: "j1", Dest: "d2"}, Queued, OnSendDone)
	want := "jobs: entry j1_d2 in state queued: illegal event send-done"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	if got := State(99).String(); got != "State(99)" {
		t.Errorf("State(99) = %q", got)
	}
	if got := Event(99).String(); got != "Event(99)" {
		t.Errorf("Event(99) = %q", got)
	}
}

// TestFinalStates: nothing leads out of a final state, and only Removed
// and Quarantined are final.
func TestFinalStates(t *testing.T) {
	for s := range numStates {
		outs := 0
		for e := range numEvents {
			if _, err := Next(ID{}, s, e); err == nil {
				outs++
			}
		}
		if s.Final() != (outs == 0) {
			t.Errorf("%s: Final() = %t, but %d events lead out", s, s.Final(), outs)
		}
	}
	if !Removed.Final() || !Quarantined.Final() || Queued.Final() {
		t.Error("Final() wrong")
	}
}

// TestLedgerScenarios drives entries through whole lifecycles, step by
// step, checking the state after each step.
func TestLedgerScenarios(t *testing.T) {
	type step struct {
		on      Event
		want    State
		wantErr bool
	}
	tests := []struct {
		name  string
		start State
		steps []step
	}{
		{"downloaded", Absent, []step{{OnEnqueue, Writing, false}, {OnCommit, Queued, false}, {OnSendStart, InFlight, false},
			{OnProgress, InFlight, false}, {OnCompact, InFlight, false}, {OnSendDone, Cleanup, false}, {OnCleanup, Absent, false}}},
		{"retried later", Absent, []step{{OnEnqueue, Writing, false}, {OnCommit, Queued, false}, {OnSendStart, InFlight, false},
			{OnSendCancel, Queued, false}, {OnReschedule, Queued, false}, {OnSendStart, InFlight, false}}},
		{"dropped", Absent, []step{{OnEnqueue, Writing, false}, {OnCommit, Queued, false}, {OnDrop, Cleanup, false}, {OnCleanup, Absent, false}}},
		{"enqueue failed", Absent, []step{{OnEnqueue, Writing, false}, {OnAbort, Absent, false}}},
		{"progress while queued is refused", Queued, []step{{OnProgress, Queued, true}, {OnSendStart, InFlight, false}, {OnProgress, InFlight, false}}},
		{"send-done twice is refused", InFlight, []step{{OnSendDone, Cleanup, false}, {OnSendDone, Cleanup, true}}},
		{"drop in flight is refused", InFlight, []step{{OnDrop, InFlight, true}}},
		{"reschedule in flight is refused", InFlight, []step{{OnReschedule, InFlight, true}}},
		{"crash in flight", InFlight, []step{{OnRecover, Queued, false}, {OnSendStart, InFlight, false}}},
		{"crash in cleanup", Cleanup, []step{{OnRecover, Absent, false}}},
		{"corrupt queued entry", Queued, []step{{OnRecoverCorrupt, Absent, false}, {OnSendStart, Absent, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l Ledger
			id := ID{Job: "j", Dest: "d"}
			l.Set(id, tc.start)
			for i, s := range tc.steps {
				_, err := l.Apply(id, s.on)
				if (err != nil) != s.wantErr {
					t.Fatalf("step %d (%s): error %v, want error %t", i, s.on, err, s.wantErr)
				}
				if got := l.State(id); got != s.want {
					t.Fatalf("step %d (%s): state %s, want %s", i, s.on, got, s.want)
				}
			}
		})
	}
}

func TestLedgerList(t *testing.T) {
	var l Ledger
	ids := []ID{{"b", "1"}, {"a", "2"}, {"a", "1"}, {"c", "1"}}
	for _, id := range ids {
		l.Set(id, Queued)
	}
	if _, err := l.Apply(ID{"c", "1"}, OnSendStart); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ID{{"a", "1"}, {"a", "2"}, {"b", "1"}}, l.List(Queued)); diff != "" {
		t.Errorf("List(Queued) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]ID{{"c", "1"}}, l.List(InFlight)); diff != "" {
		t.Errorf("List(InFlight) (-want +got):\n%s", diff)
	}
	l.Set(ID{"a", "1"}, Removed)
	if l.Len() != 3 {
		t.Errorf("Len = %d after Set(Removed), want 3", l.Len())
	}
}
