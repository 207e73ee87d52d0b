package cluster

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Fast batch publishing (nats-server 2.14 and later, ADR-50; the shard
// streams have allow_batched): heads of small articles go into one open
// batch per shard stream, and JetStream acknowledges a batch with one
// PubAck when it is committed, and flow acknowledgements ("ack": every
// message up to seq is stored) while it grows, instead of one
// acknowledgement per message. On this machine that was a tenth of the
// CPU per 2 KB article at replicas 1 and a quarter at replicas 3 (there
// the acknowledgement also crosses a route), measured by publishing
// without any acknowledgement.
//
// The batch protocol lives in each message's reply subject,
// "<inbox>.<batch id>.<flow>.fail.<seq>.<op>.$FI", and the answers come
// to those subjects: the publisher's one subscription takes them.
//
// Each article keeps its own duplicate decision. A batch uses gap mode
// "fail": the first message that fails (here: its subject is taken, the
// article is a duplicate) ends the batch. The server then sends an "err"
// for that message and commits what came before, and its PubAck counts
// the messages stored (1..count, all of them stored); the failing message
// is count+1, and the messages after it were not stored at all. So:
//
//   - a flow ack for seq or a PubAck with count: those messages are stored
//     (exactly as a single publish's acknowledgement);
//   - message count+1 gets its "err" (ErrDuplicate for a taken subject);
//     without one (an error response that says nothing), it is published
//     again alone, whose acknowledgement decides;
//   - the messages after count+1 are published again alone.
//
// A publisher keeps a copy of each batched message until it is answered,
// for that. Only heads up to batchMax octets are batched: beyond, the
// per-message cost is small beside the octets, and a copy is not.
//
// A batch ends (End Of Batch, not stored) when its owner asks for the
// acknowledgements (commit, after every step of an ingest connection and
// before a connection waits for acknowledgements), so a batch holds the
// articles published meanwhile by all of the node's ingest connections.
// An error response to a batch's message (the server lost the batch: its
// leader changed; or batches are disabled) ends it too; the messages not
// known stored are published again alone, and "disabled" turns batching
// off for the publisher.

// batchMax is the largest message published in a batch.
const batchMax = 64 << 10

// Operations of a fast batch's reply subject (nats-server's
// FastBatchOp*).
const (
	batchStart  = 0
	batchAppend = 1
	batchCommit = 2
)

// errCodeBatchPublishDisabled is JetStream's error code for a stream
// without allow_batched (nats-server's JSBatchPublishDisabledErr).
const errCodeBatchPublishDisabled jetstream.ErrorCode = 10205

// batchFlow is the flow asked for: a flow acknowledgement every so many
// messages (the server may ask for fewer while several batches are open
// on a stream).
const batchFlow = 500

// batch is one fast batch published and not yet answered.
type batch struct {
	id        string
	ws        []*ackWait // by batch sequence less one
	committed time.Time  // when it was published
}

// batchAnswer is any answer to a batch's message: a flow message (Type
// "ack", "err", "gap"), a PubAck (Stream, Seq, Batch, Count) or an error
// response.
type batchAnswer struct {
	Type   string              `json:"type"`
	Seq    uint64              `json:"seq"`
	Stream string              `json:"stream"`
	Batch  string              `json:"batch"`
	Count  uint64              `json:"count"`
	Error  *jetstream.APIError `json:"error"`
}

// batchReply is the reply subject of message seq of batch id.
func (p *publisher) batchReply(id string, seq uint64, op int) string {
	return p.prefix + id + "." + strconv.Itoa(batchFlow) + ".fail." + strconv.FormatUint(seq, 10) + "." + strconv.Itoa(op) + ".$FI"
}

// parseBatchReply reads the batch id and sequence of a reply subject
// (less the publisher's prefix): ok false when it is not one.
func parseBatchReply(s string) (id string, seq uint64, ok bool) {
	rest, found := strings.CutSuffix(s, ".$FI")
	if !found {
		return "", 0, false
	}
	f := strings.Split(rest, ".")
	if len(f) != 5 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(f[3], 10, 64)
	if err != nil || seq == 0 || f[0] == "" {
		return "", 0, false
	}
	return f[0], seq, true
}

// publishBatched queues a copy of m for the next commit, which publishes
// the messages queued for the stream key in one batch (or alone, if it
// is the only one). Without batching it is publish.
func (p *publisher) publishBatched(key string, m *nats.Msg) (*ackWait, error) {
	if !p.batching.Load() || len(m.Data) > batchMax {
		return p.publish(m)
	}
	w := &ackWait{done: make(chan struct{}), deadline: time.Now().Add(pubTimeout),
		msg: &nats.Msg{Subject: m.Subject, Header: m.Header, Data: append([]byte(nil), m.Data...)}}
	p.mu.Lock()
	p.queued[key] = append(p.queued[key], w)
	p.mu.Unlock()
	return w, nil
}

// commit publishes the queued messages: per stream one batch, its last
// message committing it (a lone message goes alone: a batch answers even
// a short one twice, its flow settings and its PubAck). It also forgets
// batches committed more than pubTimeout ago whose answers never came
// (their waiters failed by then).
func (p *publisher) commit() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queued) == 0 && len(p.batches) == 0 {
		return
	}
	now := time.Now()
	for key, ws := range p.queued {
		delete(p.queued, key)
		if len(ws) == 1 {
			p.alone(ws[0])
			continue
		}
		p.batchN++
		b := &batch{id: p.batchID + strconv.FormatUint(p.batchN, 36), ws: ws, committed: now}
		p.batches[b.id] = b
		for i, w := range ws {
			w.b, w.bseq = b, uint64(i+1)
			op := batchAppend
			switch {
			case i == 0:
				op = batchStart
			case i == len(ws)-1:
				op = batchCommit
			}
			m := *w.msg // the copy stays as it was, for a publish alone
			m.Reply = p.batchReply(b.id, w.bseq, op)
			if err := p.nc.PublishMsg(&m); err != nil {
				// The connection is closed: the server ends the
				// batch; the rest fail alone.
				for _, w := range ws[i:] {
					p.settle(w, err)
				}
				break
			}
		}
	}
	for id, b := range p.batches {
		if now.Sub(b.committed) > pubTimeout {
			delete(p.batches, id)
		}
	}
}

// answerBatch handles an answer to message seq of batch id (the
// subscription's goroutine).
func (p *publisher) answerBatch(id string, seq uint64, m *nats.Msg) {
	var a batchAnswer
	if len(m.Data) == 0 || json.Unmarshal(m.Data, &a) != nil {
		// An empty answer (503: no responders, no leader) or garbage:
		// the batch is lost; what is not known stored goes alone.
		a = batchAnswer{Error: &jetstream.APIError{Description: fmt.Sprintf("batch answer %q (status %q)", clip(string(m.Data)), m.Header.Get("Status"))}}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.batches[id]
	if b == nil {
		return // answered already, or forgotten
	}
	switch {
	case a.Type == "ack":
		p.stored(b, a.Seq)
	case a.Type == "err":
		if a.Seq >= 1 && a.Seq <= uint64(len(b.ws)) && a.Error != nil {
			b.ws[a.Seq-1].batchErr = a.Error
		}
	case a.Type == "gap":
		// Gap mode "fail": the PubAck that ends the batch follows.
	case a.Error != nil:
		// An error response (not a flow message): message seq was not
		// stored, and the batch is over on the server's side (seq 1
		// failed, the batch id is unknown there, batches are off).
		if a.Error.ErrorCode == errCodeBatchPublishDisabled {
			p.batching.Store(false)
		}
		if seq >= 1 && seq <= uint64(len(b.ws)) && b.ws[seq-1].batchErr == nil {
			b.ws[seq-1].batchErr = a.Error
		}
		p.end(b, seq-1)
	case a.Batch == id:
		// The PubAck: 1..count stored, the batch over.
		p.stored(b, a.Count)
		p.end(b, a.Count)
	case a.Stream != "":
		// A plain acknowledgement: a server that does not know fast
		// batches stored this one message as a single publish.
		if seq >= 1 && seq <= uint64(len(b.ws)) {
			p.settle(b.ws[seq-1], nil)
		}
	}
}

// stored answers messages 1..n of b: stored.
func (p *publisher) stored(b *batch, n uint64) {
	for _, w := range b.ws[:min(n, uint64(len(b.ws)))] {
		p.settle(w, nil)
	}
}

// end closes b after its first n messages were stored: message n+1
// fails with its error if it has one that says why (a duplicate), and
// every other message not answered goes again alone.
func (p *publisher) end(b *batch, n uint64) {
	delete(p.batches, b.id)
	for i, w := range b.ws {
		switch {
		case w.settled:
		case uint64(i) == n && isWrongLastSeq(w.batchErr):
			p.settle(w, w.batchErr)
		default:
			p.alone(w)
		}
	}
}

// settle answers w (once).
func (p *publisher) settle(w *ackWait, err error) {
	if w.settled {
		return
	}
	w.settled, w.err, w.msg = true, err, nil
	close(w.done)
}

// alone publishes w's message again outside any batch; its single
// acknowledgement answers w.
func (p *publisher) alone(w *ackWait) {
	m := w.msg
	if m == nil || w.settled {
		return
	}
	p.next++
	w.n = p.next
	p.waiting[w.n] = w
	m.Reply = p.prefix + strconv.FormatUint(w.n, 10)
	if err := p.nc.PublishMsg(m); err != nil {
		delete(p.waiting, w.n)
		p.settle(w, err)
	}
}
