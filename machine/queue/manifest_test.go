package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestManifest follows the manifest through a file's life: it lists a name
// only after the action that puts the file on disk, and unlists it before
// the action that removes it, with the counts the queue holds then.
func TestManifest(t *testing.T) {
	pName := ReplayName(peer)
	fBLater := FileName(peer, KindBacklog, t0.Add(10*time.Minute).Unix())
	cases := []struct {
		name  string
		setup func(h *harness)
		input func(h *harness)
		want  []Action // the input's actions, manifests included
	}{
		{
			name:  "a rotation lists the new file open, after creating it",
			input: func(h *harness) { h.offer("a") },
			want: []Action{
				RotateBacklog{Kind: KindBacklog, Opened: fB0},
				WriteManifest{Files: []ManifestFile{{Name: fB0, Open: true}}},
				AppendBacklog{Kind: KindBacklog, File: fB0, Entries: ents("a")},
			},
		},
		{
			name:  "a rotation lists the closed file sealed, with its count",
			setup: func(h *harness) { h.offer("a", "b", "c", "d") },
			input: func(h *harness) { h.now = h.now.Add(10 * time.Minute); h.offer("e") },
			want: []Action{
				RotateBacklog{Kind: KindBacklog, Closed: fB0, Opened: fBLater},
				WriteManifest{Files: []ManifestFile{{Name: fB0, Entries: 4, Bytes: 40}, {Name: fBLater, Open: true}}},
				AppendBacklog{Kind: KindBacklog, File: fBLater, Entries: ents("e")},
			},
		},
		{
			name:  "a promotion lists <peer>.P in place of the file, after the rename",
			setup: func(h *harness) { h.offer("a", "b") },
			input: func(h *harness) { h.up(1); h.q.Next(h.now, 1); h.step("Next") },
			want: []Action{
				PromoteToReplay{File: fB0},
				WriteManifest{Files: []ManifestFile{{Name: pName, Entries: 2, Bytes: 20}}},
				ReadReplay{Max: 3},
			},
		},
		{
			name: "a drained <peer>.P is unlisted before it is deleted",
			setup: func(h *harness) {
				h.offer("a")
				h.up(1)
				h.q.Next(h.now, 1)
				h.step("Next")
				h.read([]Entry{disked(ent("a"), 0)}, 10, true)
				h.next(1, 1)
			},
			input: func(h *harness) { h.done(1, "a", OutcomeAccepted) },
			want:  []Action{WriteManifest{Files: []ManifestFile{}}, DeleteReplay{}},
		},
		{
			name:  "a file dropped for its age is unlisted before it is deleted",
			setup: func(h *harness) { h.offer("a"); h.now = h.now.Add(time.Hour) },
			input: func(h *harness) { h.tick(0) },
			want:  []Action{WriteManifest{Files: []ManifestFile{}}, DeleteBacklog{File: fB0}},
		},
		{
			name:  "Shutdown lists every file sealed, with exact counts",
			setup: func(h *harness) { h.offer("a") },
			input: func(h *harness) { h.offer("b"); h.must("Shutdown", h.q.Shutdown(h.now)); h.step("Shutdown") },
			want: []Action{
				AppendBacklog{Kind: KindBacklog, File: fB0, Entries: ents("b")},
				WriteManifest{Files: []ManifestFile{{Name: fB0, Entries: 2, Bytes: 20}}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.BacklogMaxAge = time.Hour
			h := newHarness(t, cfg)
			if tc.setup != nil {
				tc.setup(h)
			}
			h.reset()
			h.keepManifests = true
			tc.input(h)
			if diff := cmp.Diff(tc.want, h.acts); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}
