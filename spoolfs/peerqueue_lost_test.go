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

// TestLostBacklogFileReported deletes one backlog file between two runs of
// a peer's queue (issue 16, finding 6: 55,270 acknowledged articles went
// silently) and checks that the next start logs it at error with its
// article count, that the queue counts those articles Lost (the counters
// still add up), and that the next start reports nothing more.
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
