package cluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSettleAction(t *testing.T) {
	const s = time.Second
	for _, tc := range []struct {
		name      string
		o         outcome
		delivered uint64
		maxDefers int
		want      action
	}{
		{"accepted leaves the queue", ack, 1, 10, action{Kind: actAck}},
		{"accepted after deferrals", ack, 7, 10, action{Kind: actAck}},
		{"first deferral waits defer_delay", deferral, 1, 10, action{Kind: actNak, Delay: 60 * s}},
		{"second doubles", deferral, 2, 10, action{Kind: actNak, Delay: 120 * s}},
		{"capped at defer_max_delay", deferral, 9, 10, action{Kind: actNak, Delay: 3600 * s}},
		{"max_defers reached drops", deferral, 11, 10, action{Kind: actDrop}},
		{"max_defers 0 drops at once", deferral, 1, 0, action{Kind: actDrop}},
		{"requeue comes back soon", requeue, 3, 10, action{Kind: actNak, Delay: requeueDelay}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := settleAction(tc.o, tc.delivered, tc.maxDefers, 60*s, 3600*s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("settleAction (-want +got):\n%s", diff)
			}
		})
	}
}
