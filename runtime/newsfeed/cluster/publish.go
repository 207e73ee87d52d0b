package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publishing articles: each message is a core NATS publish whose reply
// subject, "<inbox>.<n>", names it, and JetStream's acknowledgement comes
// back to one subscription on "<inbox>.*", where its waiter is woken.
//
// This is what nats.go's PublishMsgAsync does, less what an article's
// publish does not need and what the profile of newsbench cluster showed
// it costs: the client decoded every acknowledgement with encoding/json
// (8% of newsfeed's CPU at 2 KB) and kept the message and a timer for
// retries. Here a successful acknowledgement ({"stream":..,"seq":..}, no
// "error") is recognised without decoding; an error (a duplicate:
// wrong last subject sequence) is decoded as JetStream's API error.
// A message whose acknowledgement does not come (its server died, the
// reply was lost) fails after pubTimeout: the caller answers "later" and
// the sender offers the article again.
//
// A publish answered "no responders" (status 503: no stream listens on
// the subject at the moment) is sent again, the same message with the
// same reply subject, after a doubling delay, until pubTimeout of its
// first publish: a stream has no leader for a moment after it is created
// and while its leader moves (a server died or stepped down), and its
// subjects' interest reaches the other servers of the cluster a moment
// after the leader takes them. Failing at once refused the articles of
// that moment, and a TAKETHIS that cannot be stored closes the upstream
// connection (RFC 4644 has no "later" for it), so failing at once drops
// the upstream connections of a replicas-3 cluster's first seconds.
//
// A publish that meets a stream's server after its leadership has gone
// gets no answer at all (the server drops what it may no longer
// propose): one still unanswered resendSilent after it was sent is sent
// again too, while the wait lasts, unless its stream (the subject's
// first three tokens, "<name>.art.<shard>") is busy: it answered since,
// and only copies sent before this one. A stream answers in the order it
// takes publishes, so one that answers a copy sent later (another
// publish, or an earlier one sent again) has dropped this one, and one
// still answering earlier copies has it queued: with 64 articles of
// 500 KB in flight per connection a loaded replicas-3 run saw heads wait
// more than resendSilent behind them, sent again, and the copies refused
// as duplicates (439 for articles offered once). A head stored the first time is then
// refused by its own condition (wrong last subject sequence), and
// answered ErrDuplicate: it is stored, and the sender told not to send it
// again; only the count of duplicates is off by it.

// pubTimeout bounds the wait for an acknowledgement.
const pubTimeout = 2 * opTimeout

// Delays before a publish answered "no responders" is sent again: the
// first, doubled each time up to the last.
const (
	resendFirst = 20 * time.Millisecond
	resendMax   = 500 * time.Millisecond
	// resendSilent is how long an unanswered publish waits before it is
	// sent again: well above an acknowledgement's time under load.
	resendSilent = 3 * time.Second
)

// errNoResponders: no stream took the publish (no leader at the moment).
var errNoResponders = errors.New("no stream answered (no responders)")

// publisher sends messages and matches their acknowledgements.
type publisher struct {
	nc     *nats.Conn
	prefix string // "<inbox>."
	sub    *nats.Subscription

	// silent is resendSilent (shorter in tests).
	silent time.Duration

	mu      sync.Mutex
	next    uint64
	waiting map[uint64]*ackWait
	heard   map[string]*heard // by stream key (streamKey)
}

// heard is what a publisher last heard from one stream.
type heard struct {
	at   time.Time // its last acknowledgement (not "no responders")
	sent time.Time // the latest send of a copy it acknowledged
}

// streamKey is the part of a subject that names its stream in the store:
// the first three tokens ("<name>.art.<shard>"; the name has no dots),
// or the whole subject.
func streamKey(subject string) string {
	dots := 0
	for i := range len(subject) {
		if subject[i] == '.' {
			if dots++; dots == 3 {
				return subject[:i]
			}
		}
	}
	return subject
}

// ackWait is one message waiting for its acknowledgement: done is closed
// once err holds the answer.
type ackWait struct {
	n        uint64
	key      string    // streamKey of the subject
	deadline time.Time // pubTimeout after the publish
	sent     time.Time // the last send (publisher.mu)
	done     chan struct{}
	err      error
	// msg is the message as published, sent again on "no responders"
	// while the message waits (publisher.mu); resends counts that.
	msg     *nats.Msg
	resends int
	// buf, when not nil, holds msg.Data: a wire buffer given to
	// publishOwned, given back to wireBufs once nobody can send msg
	// again.
	buf *[]byte
}

// newPublisher subscribes to nc's acknowledgements.
func newPublisher(nc *nats.Conn) (*publisher, error) {
	p := &publisher{nc: nc, prefix: nc.NewInbox() + ".", silent: resendSilent,
		waiting: map[uint64]*ackWait{}, heard: map[string]*heard{}}
	sub, err := nc.Subscribe(p.prefix+"*", p.answer)
	if err != nil {
		return nil, fmt.Errorf("cluster: acknowledgement subscription: %w", err)
	}
	p.sub = sub
	return p, nil
}

// publish sends m (its Reply is set here) and returns what waits for its
// acknowledgement. m (its Data) must stay unchanged until the
// acknowledgement is waited for or forgotten: it may be sent again (see
// publishOwned for a caller that reuses its buffer).
func (p *publisher) publish(m *nats.Msg) (*ackWait, error) {
	return p.send(m, nil)
}

// publishOwned is publish of m whose Data is *buf, a wire buffer
// (wireBuffer) the publisher takes over: it goes back to the buffers once
// nobody can send m again, and on failure. The caller may build the
// message in such a buffer, or copy a buffer it reuses into one.
func (p *publisher) publishOwned(m *nats.Msg, buf *[]byte) (*ackWait, error) {
	return p.send(m, buf)
}

// send publishes m as the message waiting for acknowledgement w.n.
func (p *publisher) send(m *nats.Msg, buf *[]byte) (*ackWait, error) {
	now := time.Now()
	w := &ackWait{done: make(chan struct{}), key: streamKey(m.Subject), deadline: now.Add(pubTimeout), sent: now, msg: m, buf: buf}
	p.mu.Lock()
	p.next++
	w.n = p.next
	p.waiting[w.n] = w
	p.mu.Unlock()
	m.Reply = p.prefix + strconv.FormatUint(w.n, 10)
	if err := p.nc.PublishMsg(m); err != nil {
		p.forget(w)
		return nil, err
	}
	return w, nil
}

// wireBufs are the buffers messages are built and published from, by
// capacity class: class c holds buffers of cap in [1<<c, 1<<(c+1)). One
// pool for all sizes would give a 2 KB article a buffer that once held a
// 500 KB one, and a connection holds up to storeWindow of them at once.
// A buffer has less than twice the room its article needs when new (the
// next power of two) and less than four times when taken from its class,
// so the storeBytes a connection may have in flight hold less than four
// times that in buffers (about twice for articles of one size).
var wireBufs [bits.UintSize]sync.Pool

// wireBuffer is an empty buffer of capacity at least n (and below 4n)
// from wireBufs; give it back with putWire.
func wireBuffer(n int) *[]byte {
	c := bits.Len(uint(max(n, 1) - 1)) // 1<<c >= n
	if b, ok := wireBufs[c].Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, 1<<c)
	return &b
}

// putWire gives buf back to wireBufs; it must not be used after.
func putWire(buf *[]byte) {
	if cap(*buf) == 0 {
		return
	}
	wireBufs[bits.Len(uint(cap(*buf)))-1].Put(buf)
}

// release gives w's buffer back; w is out of waiting (no resend can
// come).
func (w *ackWait) release() {
	if w.buf != nil {
		putWire(w.buf)
		w.buf, w.msg = nil, nil
	}
}

// forget drops messages from waiting (their answers, should they come,
// are ignored, and they are not sent again).
func (p *publisher) forget(ws ...*ackWait) {
	p.mu.Lock()
	for _, w := range ws {
		if p.waiting[w.n] == w {
			delete(p.waiting, w.n)
			w.release()
		}
	}
	p.mu.Unlock()
}

// answer is the subscription's handler: an acknowledgement.
func (p *publisher) answer(m *nats.Msg) {
	n, err := strconv.ParseUint(m.Subject[min(len(p.prefix), len(m.Subject)):], 10, 64)
	if err != nil {
		return
	}
	err = parseAck(m)
	p.mu.Lock()
	w := p.waiting[n]
	if w == nil {
		p.mu.Unlock()
		return // timed out already
	}
	if err != errNoResponders {
		h := p.heard[w.key]
		if h == nil {
			h = &heard{}
			p.heard[w.key] = h
		}
		h.at = time.Now()
		if w.sent.After(h.sent) {
			h.sent = w.sent
		}
	}
	if err == errNoResponders {
		delay := min(resendMax, resendFirst<<min(w.resends, 10))
		if time.Now().Add(delay).Before(w.deadline) {
			w.resends++
			p.mu.Unlock()
			time.AfterFunc(delay, func() { p.resend(w) })
			return
		}
	}
	delete(p.waiting, n)
	w.release()
	p.mu.Unlock()
	w.err = err
	close(w.done)
}

// resend publishes w's message again (answered "no responders", or no
// answer at all), unless it is no longer waited for (answered, timed
// out, or its waiter gave up). A message that cannot be sent fails now.
func (p *publisher) resend(w *ackWait) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting[w.n] != w {
		return
	}
	w.sent = time.Now()
	err := p.nc.PublishMsg(w.msg)
	if err == nil {
		return
	}
	delete(p.waiting, w.n)
	w.release()
	w.err = fmt.Errorf("cluster: publish again: %w", err)
	close(w.done)
}

// parseAck reads a JetStream publish acknowledgement: nil for success,
// the *jetstream.APIError it carries, or why it is not one.
func parseAck(m *nats.Msg) error {
	if len(m.Data) == 0 {
		if m.Header.Get("Status") == "503" {
			return errNoResponders
		}
		return fmt.Errorf("cluster: empty publish acknowledgement (status %q)", m.Header.Get("Status"))
	}
	if !bytes.Contains(m.Data, []byte(`"error"`)) {
		// {"stream":"<name>", "seq":<n>}: a name is never empty.
		if bytes.HasPrefix(m.Data, []byte(`{"stream":"`)) && len(m.Data) > 11 && m.Data[11] != '"' {
			return nil
		}
		return fmt.Errorf("cluster: not a publish acknowledgement: %q", clip(string(m.Data)))
	}
	var a struct {
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &a); err != nil || a.Error == nil {
		return fmt.Errorf("cluster: bad publish acknowledgement %q", clip(string(m.Data)))
	}
	return a.Error
}

// wait returns the acknowledgement's answer, or fails when it has not
// come within pubTimeout of the publish or ctx ends first. The deadline
// counts from the publish, not from the wait: one goroutine waits for a
// connection's publishes one after the other, and when a server dies
// with many unanswered they all fail within pubTimeout, not one after
// the other.
func (p *publisher) wait(ctx context.Context, w *ackWait) error {
	select {
	case <-w.done:
		return w.err
	default:
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		p.mu.Lock()
		at := p.silentAt(w)
		p.mu.Unlock()
		if at.After(w.deadline) {
			at = w.deadline
		}
		t.Reset(time.Until(at))
		select {
		case <-w.done:
			return w.err
		case <-t.C:
			if !time.Now().Before(w.deadline) {
				p.forget(w)
				return fmt.Errorf("cluster: no publish acknowledgement within %v", pubTimeout)
			}
			p.mu.Lock()
			silent := !time.Now().Before(p.silentAt(w))
			if silent {
				w.resends++
			}
			p.mu.Unlock()
			if silent {
				p.resend(w)
			}
		case <-ctx.Done():
			p.forget(w)
			return ctx.Err()
		}
	}
}

// silentAt is when w, unanswered, is sent again: silent after its last
// send, or after its stream's last answer while the stream is busy (it
// answered since w was sent, and only copies sent before w)
// (publisher.mu).
func (p *publisher) silentAt(w *ackWait) time.Time {
	at := w.sent
	if h := p.heard[w.key]; h != nil && h.at.After(at) && h.sent.Before(w.sent) {
		at = h.at
	}
	return at.Add(p.silent)
}

// waitAll waits for the acknowledgements of ws in order, and returns the
// first failure. The ones after it are forgotten then: nobody waits for
// them, and one whose acknowledgement never comes (its server died)
// would stay in waiting for good.
func (p *publisher) waitAll(ctx context.Context, ws []*ackWait) error {
	for i, w := range ws {
		if err := p.wait(ctx, w); err != nil {
			p.forget(ws[i+1:]...)
			return err
		}
	}
	return nil
}

// close ends the subscription (what still waits times out).
func (p *publisher) close() {
	p.sub.Unsubscribe()
}
