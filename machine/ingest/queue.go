package ingest

// The response queue: one slot per command, in command order. Responses
// leave from the head only, so they go out in order however the owner's
// answers arrive (RFC 4644 §2.4/§2.5 pair responses with commands by order
// as well as by message-id; RFC 3977 §3.5 requires order when pipelining).

import (
	"fmt"
	"strconv"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// slotKind says what, if anything, the owner owes a slot.
type slotKind uint8

const (
	slotFixed   slotKind = iota // resolved by the machine
	slotCheck                   // waits for Decide
	slotArticle                 // waits for Stored
	slotAuth                    // waits for AuthDone
)

// slot is one queued response.
type slot struct {
	seq     uint64
	kind    slotKind
	cmd     Cmd
	id      string // the command's message-id
	echo    bool   // RFC 4644 responses carry the id after the code
	waiting bool   // the owner has not answered yet
	code    int
	text    string
	block   string // a multi-line block after the status line, terminator included
	close   bool   // the connection closes after this response
	reason  string // the Closed reason when close is set
}

// queued is the number of queued responses.
func (g *Ingest) queued() int { return len(g.q) - g.head }

// push queues s and returns its sequence number. Every response gets the
// next number, so numbers do not depend on how input was split, and queued
// slots have consecutive numbers. A resolved response with nothing queued
// before it goes straight out.
func (g *Ingest) push(now time.Time, s slot) uint64 {
	s.seq = g.nextSeq
	g.nextSeq++
	if !s.waiting && g.queued() == 0 {
		g.write(now, &s)
		return s.seq
	}
	if g.head > 0 && g.head == len(g.q) {
		g.q, g.head = g.q[:0], 0
	}
	g.q = append(g.q, s)
	return s.seq
}

// lookup finds the slot numbered seq, which must be waiting for the
// owner's answer of kind k.
func (g *Ingest) lookup(seq uint64, k slotKind, call string) (*slot, error) {
	if g.queued() > 0 {
		first := g.q[g.head].seq
		if seq >= first && seq-first < uint64(g.queued()) {
			s := &g.q[g.head+int(seq-first)]
			if s.waiting && s.kind == k {
				return s, nil
			}
		}
	}
	want := map[slotKind]string{slotCheck: "Check", slotArticle: "Article", slotAuth: "Auth"}[k]
	return nil, fmt.Errorf("ingest: %s(%d): no %s with this sequence number awaits an answer", call, seq, want)
}

// release writes the resolved responses at the head of the queue.
func (g *Ingest) release(now time.Time) {
	for g.head < len(g.q) && !g.q[g.head].waiting {
		s := g.q[g.head]
		g.q[g.head] = slot{}
		g.head++
		g.write(now, &s)
		if g.closed {
			return
		}
	}
	if g.head == len(g.q) {
		g.q, g.head = g.q[:0], 0
		if g.stopping && !g.closed {
			g.finish(g.stopReason)
		}
	}
	// Compact a queue whose head has wandered far.
	if g.head > 64 && g.head > len(g.q)/2 {
		n := copy(g.q, g.q[g.head:])
		clear(g.q[n:])
		g.q, g.head = g.q[:n], 0
	}
}

// write sends one response.
func (g *Ingest) write(now time.Time, s *slot) {
	id := ""
	if s.echo {
		id = s.id
	}
	g.out = appendStatus(g.out, s.code, id, s.text)
	g.out = append(g.out, s.block...)
	g.lastSend = now
	g.writeDue = now.Add(g.cfg.WriteTimeout)
	if s.close {
		g.finish(s.reason)
	}
}

// appendStatus appends a status line (RFC 3977 §3.2): the code, the
// message-id if any (RFC 4644 responses), the text. Control characters
// become '?', and the line is cut to 512 octets with its CRLF (§3.1).
func appendStatus(dst []byte, code int, id, text string) []byte {
	start := len(dst)
	dst = strconv.AppendInt(dst, int64(code), 10)
	if id != "" {
		dst = append(dst, ' ')
		dst = appendPrintable(dst, id)
	}
	if text != "" {
		dst = append(dst, ' ')
		dst = appendPrintable(dst, text)
	}
	if max := start + proto.MaxResponseLine - 2; len(dst) > max {
		dst = dst[:max]
	}
	return append(dst, '\r', '\n')
}

func appendPrintable(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c == 0x7f {
			c = '?'
		}
		dst = append(dst, c)
	}
	return dst
}
