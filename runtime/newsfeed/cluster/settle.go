package cluster

import "time"

// What becomes of a queue entry once its connection is done with it: the
// relay's queue outcomes mapped onto JetStream acknowledgements. This is
// a pure decision (no NATS, no clock), tested by a table.
//
//	peer answer                    outcome    queue entry
//	239, 235, 438, 435, 439, 437   ack        Ack: it leaves the work queue
//	431, 436                       deferral   NakWithDelay(defer_delay doubling per
//	                                          delivery up to defer_max_delay); Term
//	                                          (dropped) after max_defers deliveries
//	connection gone, unanswered    requeue    NakWithDelay(1s): any node's connection
//	                                          takes it again
//
// A node that dies answers nothing: AckWait later JetStream redelivers its
// entries to the others, as a relay resends its .P/.R entries after a
// crash.

// outcome is how a connection finished with an entry.
type outcome uint8

const (
	ack      outcome = iota + 1 // the peer answered for good
	deferral                    // the peer said later
	requeue                     // the connection gave it back
)

type actKind uint8

const (
	actAck actKind = iota + 1
	actNak
	actDrop
)

// action is what to do with the entry.
type action struct {
	Kind  actKind
	Delay time.Duration // with actNak
}

// requeueDelay spaces the redelivery of entries a failed connection gave
// back, so a peer that is down is not offered them in a tight loop.
const requeueDelay = time.Second

// settleAction decides about an entry delivered delivered times (1 the
// first time). maxDefers 0 drops at the first deferral, as the single-node
// queue does; delay doubles from first up to most.
func settleAction(o outcome, delivered uint64, maxDefers int, first, most time.Duration) action {
	switch o {
	case ack:
		return action{Kind: actAck}
	case requeue:
		return action{Kind: actNak, Delay: requeueDelay}
	}
	if delivered > uint64(maxDefers) {
		return action{Kind: actDrop}
	}
	d := first
	for i := uint64(1); i < delivered && d < most; i++ {
		d *= 2
	}
	return action{Kind: actNak, Delay: min(d, most)}
}
