package newsfeed

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/queue"
)

// TestAgentAnswersBeforeConnDown: answers a step handed to the agent, and
// that the agent had not reported when the session ended, reach the queue
// before the connection goes down; what was in flight unanswered (the
// agent's ready entries) goes back to the queue, once.
func TestAgentAnswersBeforeConnDown(t *testing.T) {
	now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	q, err := openPeerQueue(t.TempDir(), queue.DefaultConfig("p"), clock, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer q.shutdown(now)
	var es []queue.Entry
	for i := range 5 {
		es = append(es, queue.Entry{Token: fmt.Sprintf("@%040X@", i+1), MessageID: fmt.Sprintf("<%d@test>", i), Size: 100, Offered: now})
	}
	if err := q.offer(now, es); err != nil {
		t.Fatal(err)
	}
	p := &peer{r: &Relay{now: clock}, cfg: &PeerConfig{Name: "p"}, q: q}
	c := &outConn{p: p, id: 1}
	q.connUp(now, c.id)
	got := q.next(now, c.id, 5, nil)
	if len(got) != 5 {
		t.Fatalf("next handed %d entries, want 5", len(got))
	}
	// An agent whose goroutine never ran: what step hands it stays
	// unreported until the session ends.
	ag := &agent{c: c, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	close(ag.done)
	ag.ask([]answer{{got[0].MessageID, queue.OutcomeAccepted}, {got[1].MessageID, queue.OutcomeRefused}}, 0, 0)
	// The last drain of the run, not handed to the agent yet.
	c.answers = append(c.answers, answer{got[2].MessageID, queue.OutcomeAccepted})
	c.endSession(ag)

	st := q.stats()
	if st.Accepted != 2 || st.Refused != 1 || st.InFlight != 0 || st.Queued != 2 || st.Requeued != 2 {
		t.Errorf("after the session: accepted %d refused %d in flight %d queued %d requeued %d; want 2, 1, 0, 2, 2",
			st.Accepted, st.Refused, st.InFlight, st.Queued, st.Requeued)
	}
	q.connUp(now, c.id)
	again := q.next(now, c.id, 5, nil)
	var ids []string
	for _, e := range again {
		ids = append(ids, e.MessageID)
	}
	if want := fmt.Sprint([]string{got[3].MessageID, got[4].MessageID}); fmt.Sprint(ids) != want {
		t.Errorf("handed out again %v, want %v (only the unanswered ones)", ids, want)
	}
}
