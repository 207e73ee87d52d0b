package queue

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRejectedResend: a 439 (OutcomeRejected) counts as rejected for an
// entry offered to the peer the first time, and as refused for one that
// may have reached the peer before without its answer reaching the queue
// (in flight on a connection that went down, or from a journal a crash
// left behind), whose first copy the peer holds.
func TestRejectedResend(t *testing.T) {
	journal := Recovered{Files: []FileInfo{
		{Name: "peer.B.5db93970", Kind: KindBacklog, TS: 0x5db93970, Bytes: 10, Entries: 1, Journal: true},
	}}
	backlog := Recovered{Files: []FileInfo{
		{Name: "peer.B.5db93970", Kind: KindBacklog, TS: 0x5db93970, Bytes: 10, Entries: 1},
	}}
	// fromFile starts the queue on r, whose one file holds "a", and hands
	// "a" out on connection 1 after reading it back from <peer>.P.
	fromFile := func(r Recovered) func(h *harness) {
		return func(h *harness) {
			h.start(r)
			h.up(1)
			h.q.Next(h.now, 1)
			h.step("Next")
			h.read([]Entry{disked(ent("a"), 0)}, 10, true)
			h.next(1, 1)
		}
	}
	tests := []struct {
		name    string
		setup   func(h *harness)
		outcome Outcome
		want    Stats // the answer's counts only
	}{
		{"first offer, 439", func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1) }, OutcomeRejected, Stats{Rejected: 1}},
		{"sent again after its connection went down, 439",
			func(h *harness) { h.up(1, 2); h.offer("a"); h.next(1, 1); h.down(1); h.next(2, 1) }, OutcomeRejected, Stats{Refused: 1}},
		{"sent again on the same connection after it came back, 439",
			func(h *harness) {
				h.up(1)
				h.offer("a")
				h.next(1, 1)
				h.down(1)
				h.up(1)
				h.next(1, 1)
			}, OutcomeRejected, Stats{Refused: 1}},
		{"sent again after its connection went down, 239",
			func(h *harness) { h.up(1, 2); h.offer("a"); h.next(1, 1); h.down(1); h.next(2, 1) }, OutcomeAccepted, Stats{Accepted: 1}},
		{"from a journal a crash left behind, 439", fromFile(journal), OutcomeRejected, Stats{Refused: 1}},
		{"from a .B written while the peer was down, 439", fromFile(backlog), OutcomeRejected, Stats{Rejected: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig())
			tc.setup(h)
			conn := Conn(1)
			if _, ok := h.q.conns[2]; ok {
				conn = 2
			}
			h.done(conn, "a", tc.outcome)
			s := h.q.Stats()
			got := Stats{Accepted: s.Accepted, Refused: s.Refused, Rejected: s.Rejected}
			if got != tc.want {
				t.Errorf("answer counted as %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestResendAcrossRestart: the resend mark goes with an entry into .B and
// .D files, so a 439 (OutcomeRejected) to an entry read back after a
// restart counts as refused when the peer was offered it in the last life
// (in flight at a clean stop or when its connection went down, deferred,
// or from a crash journal), and as rejected when it was never offered.
// The first life runs on the fake disk and stops; the second starts from
// what the disk holds, sends everything and gets 439 for each.
func TestResendAcrossRestart(t *testing.T) {
	shutdown := func(h *harness) { h.must("Shutdown", h.q.Shutdown(h.now)) }
	tests := []struct {
		name      string
		life      func(h *harness) // ends in a stop
		wantLines []string         // of the backlog files after the stop, by file name
		want      Stats            // the answers' counts in the second life
	}{
		{"in flight at a clean stop, and one queued behind it",
			func(h *harness) { h.up(1); h.offer("a", "b"); h.next(1, 1); shutdown(h) },
			[]string{"@a@ <a@x> 0", "@b@ <b@x>"}, Stats{Refused: 1, Rejected: 1}},
		{"deferred, read back from .D",
			func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1); h.done(1, "a", OutcomeDeferred); shutdown(h) },
			[]string{"@a@ <a@x> 1"}, Stats{Refused: 1}},
		{"in flight when its connection went down, then a clean stop",
			func(h *harness) { h.up(1); h.offer("a"); h.next(1, 1); h.down(1); shutdown(h) },
			[]string{"@a@ <a@x> 0"}, Stats{Refused: 1}},
		{"in flight when its connection went down, spilled while the peer was down",
			func(h *harness) {
				h.up(1)
				h.offer("a", "b")
				h.next(1, 1)
				h.down(1)
				h.tick(h.cfg.DownSpillDelay)
				shutdown(h)
			},
			[]string{"@a@ <a@x> 0", "@b@ <b@x>"}, Stats{Refused: 1, Rejected: 1}},
		{"from a crash journal, promoted to <peer>.P, then a clean stop",
			func(h *harness) {
				h.up(1)
				h.offer("a")
				h.next(1, 1)
				h.start(h.disk.recover()) // a crash: the journal becomes a .B
				h.up(1)                   // promotes it to <peer>.P
				shutdown(h)
			},
			[]string{"@a@ <a@x> 0"}, Stats{Refused: 1}},
		{"first offer, queued in memory at a clean stop",
			func(h *harness) { h.up(1); h.offer("a"); shutdown(h) },
			[]string{"@a@ <a@x>"}, Stats{Rejected: 1}},
		{"first offer, written to .B while the peer was down",
			func(h *harness) { h.offer("a"); shutdown(h) },
			[]string{"@a@ <a@x>"}, Stats{Rejected: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig())
			h.exec = true
			tc.life(h)
			var lines []string
			for _, name := range sortedKeys(h.disk.files) {
				if _, _, ok := ParseFileName(peer, name); ok || name == ReplayName(peer) {
					lines = append(lines, strings.Split(strings.TrimSuffix(string(h.disk.files[name]), "\n"), "\n")...)
				}
			}
			if diff := cmp.Diff(tc.wantLines, lines); diff != "" {
				t.Errorf("backlog lines after the stop (-want +got):\n%s", diff)
			}

			// The restart, once any .D file is due: every entry goes out
			// and is answered 439.
			h.now = h.now.Add(h.cfg.DeferMaxDelay)
			h.start(h.disk.recover())
			h.up(1)
			for range 20 {
				e, ok := h.q.Next(h.now, 1)
				h.step("Next")
				if ok {
					h.must("Done "+e.MessageID, h.q.Done(h.now, 1, e.MessageID, OutcomeRejected))
				}
			}
			s := h.q.Stats()
			got := Stats{Accepted: s.Accepted, Refused: s.Refused, Rejected: s.Rejected}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answers counted (-want +got):\n%s", diff)
			}
			if left := s.Queued + s.InFlight + s.Backlog + s.Deferred + s.Replay; left != 0 {
				t.Errorf("%d entries left unsent after the restart: %+v", left, s)
			}
		})
	}
}
