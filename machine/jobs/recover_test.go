package jobs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRecover covers every combination of links, data condition and commit
// that start-up can find.
func TestRecover(t *testing.T) {
	tests := []struct {
		name    string
		found   Found
		want    Decision
		wantErr bool
	}{
		{"queued, intact: kept", Found{Links: InQueue}, Decision{Queued, OnRecover, Queued, 0}, false},
		{"queued, corrupt: quarantined", Found{Links: InQueue, Data: DataCorrupt}, Decision{Queued, OnRecoverCorrupt, Quarantined, 0}, false},
		{"queued, dangling: quarantined", Found{Links: InQueue, Data: DataMissing}, Decision{Queued, OnRecoverCorrupt, Quarantined, 0}, false},
		{"in flight: back to the queue", Found{Links: InInflight}, Decision{InFlight, OnRecover, Queued, 0}, false},
		{"in flight, corrupt: quarantined", Found{Links: InInflight, Data: DataCorrupt}, Decision{InFlight, OnRecoverCorrupt, Quarantined, 0}, false},
		{"in flight and queued (torn rename): back to the queue, one link", Found{Links: InQueue | InInflight}, Decision{InFlight, OnRecover, Queued, InQueue}, false},
		{"cleanup: finished", Found{Links: InCleanup}, Decision{Cleanup, OnRecover, Removed, 0}, false},
		{"cleanup, data half removed: finished", Found{Links: InCleanup, Data: DataCorrupt}, Decision{Cleanup, OnRecoverCorrupt, Removed, 0}, false},
		{"cleanup, data gone: finished", Found{Links: InCleanup, Data: DataMissing}, Decision{Cleanup, OnRecoverCorrupt, Removed, 0}, false},
		{"cleanup and in flight (torn rename): finished, both links go", Found{Links: InCleanup | InInflight}, Decision{Cleanup, OnRecover, Removed, InInflight}, false},
		{"everywhere", Found{Links: InCleanup | InInflight | InQueue}, Decision{Cleanup, OnRecover, Removed, InInflight | InQueue}, false},
		{"unlinked, uncommitted: rolled back", Found{}, Decision{Writing, OnRecoverUncommitted, Removed, 0}, false},
		{"unlinked, uncommitted, half written: rolled back", Found{Data: DataCorrupt}, Decision{Writing, OnRecoverUncommitted, Removed, 0}, false},
		{"unlinked, committed: rolled forward", Found{Committed: true}, Decision{Writing, OnRecover, Queued, 0}, false},
		{"unlinked, committed, corrupt: quarantined", Found{Committed: true, Data: DataCorrupt}, Decision{Writing, OnRecoverCorrupt, Quarantined, 0}, false},
		{"nothing at all", Found{Data: DataMissing}, Decision{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Recover(ID{"j", "d"}, tc.found)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Recover: error %v, want error %t", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Recover(%+v) (-want +got):\n%s", tc.found, diff)
			}
		})
	}
}

func TestPlacesString(t *testing.T) {
	for p, want := range map[Places]string{0: "none", InQueue: "queue", InQueue | InCleanup: "queue+cleanup"} {
		if got := p.String(); got != want {
			t.Errorf("%d: %q, want %q", p, got, want)
		}
	}
}
