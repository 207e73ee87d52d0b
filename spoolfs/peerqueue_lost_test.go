package spoolfs

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/newsflow/newsflow/machine/queue"
)

// TestLostBacklogFileReported deletes one backlog file between two runs of a
// peer's queue (acknowledged articles must not go silently) and checks that
// the next start logs it at error with its article count, that the queue
// counts those articles Lost (the counters still add up), and that the next
// start reports nothing more.
func TestLostBacklogFileReported(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, p *PeerQueue, now time.Time) // leaves the file to delete
		kind  string                                          // ".B.", ".D." or ".P"
		want  int64                                           // articles lost
	}{
		{
			name: "a .B file",
			setup: func(t *testing.T, p *PeerQueue, now time.Time) {
				pqOffer(t, p, now, 0, 7) // no connection: straight to .B
			},
			kind: ".B.", want: 7,
		},
		{
			name: "a .D file",
			setup: func(t *testing.T, p *PeerQueue, now time.Time) {
				pqMust(t, p.ConnUp(now, 1))
				pqOffer(t, p, now, 0, 4)
				for range 4 {
					e, ok, err := p.Next(now, 1)
					if err != nil || !ok {
						t.Fatalf("Next: %v %v", ok, err)
					}
					pqMust(t, p.Done(now, 1, e.MessageID, queue.OutcomeDeferred))
				}
			},
			kind: ".D.", want: 4,
		},
		{
			name: "<peer>.P, with the articles not yet sent",
			setup: func(t *testing.T, p *PeerQueue, now time.Time) {
				pqOffer(t, p, now, 0, 9)
				pqMust(t, p.Shutdown(now))
				p2, err := OpenPeerQueue(filepath.Dir(p.b.replayPath()), pqConfig(), now, nil)
				if err != nil {
					t.Fatal(err)
				}
				*p = *p2
				pqMust(t, p.ConnUp(now, 1))
				// <peer>.P holds 9: a refill reads 4, three are
				// accepted, and Shutdown writes the fourth to .B and
				// checkpoints: 5 are left in <peer>.P.
				for i := range 3 {
					e, ok, err := p.Next(now, 1)
					if err != nil || !ok {
						t.Fatalf("Next %d: %v %v", i, ok, err)
					}
					pqMust(t, p.Done(now, 1, e.MessageID, queue.OutcomeAccepted))
				}
			},
			kind: ".P", want: 5,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			now := time.Now().Truncate(time.Second)
			p, err := OpenPeerQueue(dir, pqConfig(), now, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.setup(t, p, now)
			pqMust(t, p.Shutdown(now))
			victim := ""
			des, _ := os.ReadDir(dir)
			for _, de := range des {
				if strings.HasPrefix(de.Name(), "peer"+tc.kind) && !strings.HasSuffix(de.Name(), ".ckpt") {
					victim = de.Name()
				}
			}
			if victim == "" {
				t.Fatalf("no %s file to delete in %v", tc.kind, des)
			}
			if err := os.Remove(filepath.Join(dir, victim)); err != nil {
				t.Fatal(err)
			}

			var log bytes.Buffer
			p2, err := OpenPeerQueue(dir, pqConfig(), now, slog.New(slog.NewTextHandler(&log, nil)))
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("level=ERROR msg=\"backlog: a file the peer's queue named is gone; the acknowledged articles in it are lost\" peer=peer file=%s articles=%d", victim, tc.want)
			if !strings.Contains(log.String(), want) {
				t.Errorf("start log lacks\n%s\nin\n%s", want, log.String())
			}
			if n := strings.Count(log.String(), "level=ERROR"); n != 1 {
				t.Errorf("%d errors logged, want 1:\n%s", n, log.String())
			}
			if got := p2.LostFiles(); len(got) != 1 || got[0].Name != victim || got[0].Entries != tc.want {
				t.Errorf("LostFiles = %+v, want %s with %d", got, victim, tc.want)
			}
			s := p2.Stats()
			if s.Lost != tc.want {
				t.Errorf("Stats.Lost = %d, want %d (%+v)", s.Lost, tc.want, s)
			}
			pqMust(t, p2.Check())
			pqMust(t, p2.Shutdown(now))

			// Reported once: the queue's first manifest forgot it.
			p3, err := OpenPeerQueue(dir, pqConfig(), now, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]LostFile(nil), p3.LostFiles()); diff != "" || p3.Stats().Lost != 0 {
				t.Errorf("reported again at the next start (-want +got):\n%s", diff)
			}
			pqMust(t, p3.Shutdown(now))
		})
	}
}

func pqMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func pqOffer(t *testing.T, p *PeerQueue, now time.Time, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		pqMust(t, p.Offer(now, queue.Entry{Token: fmt.Sprintf("@%032X@", i), MessageID: pqID(i), Offered: now}))
	}
	pqMust(t, p.Sync())
}

// TestManifestWriteFailure makes every manifest write fail (its temp name
// is taken by a directory). The failure costs no article: offers are still
// acknowledged (Sync succeeds; a disk-full test once saw new articles
// refused for it). The old manifest stays, so the failure frees no space,
// until the queue removes a file it may list: then it goes first, so it
// cannot accuse the queue of a deletion it made itself.
func TestManifestWriteFailure(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().Truncate(time.Second)
	cfg := pqConfig()
	cfg.BacklogMaxAge = time.Hour
	cfg.RotateBytes = 1 // rotate whenever RotateInterval allows
	p, err := OpenPeerQueue(dir, cfg, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	pqOffer(t, p, now, 0, 3) // rotation: the first manifest lists p.B.<ts>
	mPath := filepath.Join(dir, ManifestName("peer"))
	if _, err := os.Stat(mPath); err != nil {
		t.Fatalf("no manifest after the first rotation: %v", err)
	}
	if err := os.Mkdir(mPath+".tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	later := now.Add(10 * time.Minute)
	pqMust(t, p.Offer(later, queue.Entry{Token: "@A@", MessageID: "<rotated@x>", Offered: later})) // rotates: a manifest
	if err := p.Sync(); err != nil {
		t.Errorf("Sync after a failed manifest write: %v (no article depends on it)", err)
	}
	if _, err := os.Stat(mPath); err != nil {
		t.Errorf("the old manifest was removed at once: %v", err)
	}
	// BacklogMaxAge drops the first file (not the second, written later):
	// the stale manifest, which lists it, goes before it.
	end := now.Add(65 * time.Minute)
	pqMust(t, p.Tick(end))
	if got := p.Stats().BacklogFiles; got != 1 {
		t.Fatalf("%d files left, want the second one", got)
	}
	if _, err := os.Stat(mPath); !os.IsNotExist(err) {
		t.Errorf("stale manifest still there after the queue deleted a file: %v", err)
	}
	if err := os.Remove(mPath + ".tmp"); err != nil {
		t.Fatal(err)
	}
	pqMust(t, p.Shutdown(end))
	p2, err := OpenPeerQueue(dir, cfg, end, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p2.LostFiles(); len(got) != 0 {
		t.Errorf("files the queue deleted itself reported lost: %+v", got)
	}
	pqMust(t, p2.Shutdown(end))
}

// TestDropLogNamesFile: past backlog_max_bytes the log line of a drop
// names the file removed; when the oldest of the lines being written are
// cut instead (no older file to remove), it names no file (not an empty
// one).
func TestDropLogNamesFile(t *testing.T) {
	dir := t.TempDir()
	cfg := pqConfig()
	cfg.BacklogMaxBytes = 200
	now := time.Now()
	var log bytes.Buffer
	p, err := OpenPeerQueue(dir, cfg, now, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(now)
	for i := range 20 {
		if err := p.Offer(now, queue.Entry{Token: fmt.Sprintf("@%032X@", i), MessageID: pqID(i), Offered: now}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Flush(now); err != nil {
		t.Fatal(err)
	}
	if p.Drops()[queue.ReasonBytes] == 0 {
		t.Fatalf("no drops past backlog_max_bytes; log:\n%s", log.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if strings.Contains(l, "dropped") && strings.Contains(l, `file=""`) {
			t.Errorf("drop logged with an empty file: %s", l)
		}
	}
}
