package queue

import "testing"

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
