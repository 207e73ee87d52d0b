package feed

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// simPeer is a random NNTP peer: it parses what the Feed wrote and queues
// an answer for every command, mostly sensible ones, sometimes 400, 480,
// 500, garbage or a wrong message-id.
type simPeer struct {
	rng      *rand.Rand
	in       []byte // Feed output not yet parsed
	answers  []byte // answers not yet delivered
	bodyFor  string // the article expected after 335
	gone     bool   // the peer said 400 (or quit): it answers nothing more
	accepted map[string]bool
	err      error // the Feed wrote something malformed
}

func (p *simPeer) pick(weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := p.rng.Intn(total)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return len(weights) - 1
}

func (p *simPeer) answer(s string) {
	if !p.gone {
		p.answers = append(p.answers, s...)
		p.answers = append(p.answers, '\r', '\n')
	}
}

// read parses the Feed's output and answers each command.
func (p *simPeer) read(out []byte) {
	p.in = append(p.in, out...)
	for p.err == nil {
		if p.bodyFor != "" {
			want := wireArticle(p.bodyFor)
			if len(p.in) < len(want) {
				return
			}
			if !bytes.HasPrefix(p.in, want) {
				p.err = fmt.Errorf("article of %s: got %q", p.bodyFor, p.in[:len(want)])
				return
			}
			p.in = p.in[len(want):]
			id := p.bodyFor
			p.bodyFor = ""
			p.answerBody(id)
			continue
		}
		i := bytes.Index(p.in, []byte("\r\n"))
		if i < 0 {
			return
		}
		line := string(p.in[:i])
		p.in = p.in[i+2:]
		verb, id, _ := strings.Cut(line, " ")
		switch verb {
		case "CHECK":
			switch p.pick(50, 15, 15, 1, 2, 1, 1, 1, 1) {
			case 0:
				p.answer("238 " + id)
			case 1:
				p.answer("438 " + id)
			case 2:
				p.answer("431 " + id)
			case 3:
				p.answer("400 bye")
				p.gone = true
			case 4:
				p.answer("480 auth")
			case 5:
				p.answer("500 what")
			case 6:
				p.answer("garbage")
			case 7:
				p.answer("238 <other@x>")
			case 8:
				p.answer("502 no")
			}
		case "TAKETHIS":
			want := wireArticle(id)
			if len(p.in) < len(want) || !bytes.HasPrefix(p.in, want) {
				p.err = fmt.Errorf("TAKETHIS %s without its article", id)
				return
			}
			p.in = p.in[len(want):]
			switch p.pick(60, 20, 3, 1, 2, 1, 1) {
			case 0:
				p.answer("239 " + id)
				p.accepted[id] = true
			case 1:
				p.answer("439 " + id)
			case 2:
				p.answer("431 " + id)
			case 3:
				p.answer("400 bye")
				p.gone = true
			case 4:
				p.answer("480 auth")
			case 5:
				p.answer("garbage")
			case 6:
				p.answer("239 <other@x>")
			}
		case "IHAVE":
			switch p.pick(60, 10, 10, 3, 1, 2, 1) {
			case 0:
				p.answer("335 send")
				p.bodyFor = id
			case 1:
				p.answer("435 dup")
			case 2:
				p.answer("436 later")
			case 3:
				p.answer("437 no")
			case 4:
				p.answer("400 bye")
				p.gone = true
			case 5:
				p.answer("480 auth")
			case 6:
				p.answer("500 what")
			}
		case "AUTHINFO":
			switch p.pick(10, 10, 1) {
			case 0:
				p.answer("281 ok")
			case 1:
				if strings.HasPrefix(id, "USER") {
					p.answer("381 pass")
				} else {
					p.answer("281 ok")
				}
			case 2:
				p.answer("481 no")
			}
		case "QUIT":
			p.answer("205 bye")
			p.gone = true
		default:
			p.err = fmt.Errorf("unknown command line %q", line)
		}
	}
}

func (p *simPeer) answerBody(id string) {
	switch p.pick(60, 10, 10, 1, 2) {
	case 0:
		p.answer("235 ok")
		p.accepted[id] = true
	case 1:
		p.answer("436 later")
	case 2:
		p.answer("437 no")
	case 3:
		p.answer("400 bye")
		p.gone = true
	case 4:
		p.answer("480 auth")
	}
}

// op is one input given to the Feed, recorded so that a run can be
// repeated with another split of the received bytes.
type op struct {
	kind string // "offer", "recv", "time", "close", "abort", "eof"
	id   string
	data []byte
	d    time.Duration
}

// simRun drives a Feed against a simPeer for one seed and returns the
// inputs it gave, the output and the events.
func simRun(t *testing.T, seed int64) (cfg Config, ops []op, out []byte, evs []Event, offered []string, peer *simPeer) {
	rng := rand.New(rand.NewSource(seed))
	cfg = Config{
		Streaming:       rng.Intn(4) > 0,
		Window:          1 + rng.Intn(8),
		ResponseTimeout: time.Duration(1+rng.Intn(10)) * time.Second,
		NoCheckHigh:     float64(50 + rng.Intn(50)),
		NoCheckLow:      float64(10 + rng.Intn(40)),
		NoCheckFilter:   float64(1 + rng.Intn(5)),
		Bodies:          bodyMap{},
	}
	if rng.Intn(3) > 0 {
		cfg.User, cfg.Pass = "u", "p"
	}
	if rng.Intn(3) == 0 {
		cfg.IdleTimeout = 3 * time.Second
	}
	peer = &simPeer{rng: rng, accepted: map[string]bool{}}
	now := t0
	f := New(now, cfg)
	total := 1 + rng.Intn(60)
	apply := func(o op) {
		ops = append(ops, o)
		switch o.kind {
		case "offer":
			f.Offer(now, art(o.id))
		case "recv":
			f.Receive(now, o.data)
		case "time":
			now = now.Add(o.d)
			f.Timeout(now)
		case "close":
			f.Close(now)
		case "abort":
			f.Abort(now, "owner")
		case "eof":
			f.ReceiveEOF(now)
		}
		o2 := f.AppendOutgoing(nil)
		out = append(out, o2...)
		peer.read(o2)
	}
	for step := 0; step < 3000 && !f.Closed(); step++ {
		switch r := rng.Intn(100); {
		case r < 45 && len(peer.answers) > 0:
			n := 1 + rng.Intn(len(peer.answers))
			data := append([]byte(nil), peer.answers[:n]...)
			peer.answers = peer.answers[n:]
			apply(op{kind: "recv", data: data})
		case r < 45 && peer.gone:
			apply(op{kind: "eof"})
		case r < 75 && len(offered) < total:
			id := fmt.Sprintf("<%d.%d@x>", seed, len(offered))
			offered = append(offered, id)
			apply(op{kind: "offer", id: id})
		case r < 85:
			apply(op{kind: "time", d: time.Duration(rng.Intn(4000)) * time.Millisecond})
		case r == 85 && rng.Intn(4) == 0:
			apply(op{kind: "close"})
		case r == 86 && rng.Intn(8) == 0:
			apply(op{kind: "abort"})
		case r == 87 && rng.Intn(8) == 0:
			apply(op{kind: "eof"})
		}
		if peer.err != nil {
			t.Fatalf("seed %d: %v", seed, peer.err)
		}
	}
	if !f.Closed() {
		apply(op{kind: "abort"})
	}
	for {
		e, ok := f.NextEvent()
		if !ok {
			break
		}
		evs = append(evs, e)
	}
	return cfg, ops, out, evs, offered, peer
}

// TestNothingLost: with random replies and a random end (Close, Abort,
// EOF, timeouts, 400, protocol errors), every offered article comes back
// exactly once, the peer's acceptances are never reported as anything but
// accepted or requeued, and Closed is the last event.
func TestNothingLost(t *testing.T) {
	reasons := map[Reason]int{}
	for seed := int64(1); seed <= 400; seed++ {
		_, _, _, evs, offered, peer := simRun(t, seed)
		got := outcomes(evs)
		for _, id := range offered {
			if got[id] != 1 {
				t.Fatalf("seed %d: %s has %d outcomes, want 1\n%s", seed, id, got[id], summarize(evs))
			}
			delete(got, id)
		}
		if len(got) > 0 {
			t.Fatalf("seed %d: outcomes for articles never offered: %v", seed, sortedKeys(got))
		}
		last, ok := evs[len(evs)-1].(Closed)
		if !ok {
			t.Fatalf("seed %d: last event %#v, want Closed", seed, evs[len(evs)-1])
		}
		reasons[last.Reason]++
		for i, e := range evs[:len(evs)-1] {
			if _, ok := e.(Closed); ok {
				t.Fatalf("seed %d: Closed at %d of %d events", seed, i, len(evs))
			}
		}
		for _, e := range evs {
			switch e := e.(type) {
			case Refused, Deferred:
				if id := eventID(e); peer.accepted[id] {
					t.Fatalf("seed %d: %s accepted by the peer but reported %T", seed, id, e)
				}
			case Rejected:
				if peer.accepted[e.Article.MessageID] {
					t.Fatalf("seed %d: %s accepted by the peer but reported rejected", seed, e.Article.MessageID)
				}
			}
		}
	}
	// The seeds reach the ways a Feed can end.
	for _, r := range []Reason{ReasonQuit, ReasonTimeout, ReasonUnavailable, ReasonPeerClosed, ReasonProtocol, ReasonAborted} {
		if reasons[r] == 0 {
			t.Errorf("no seed ended with %s: %v", r, reasons)
		}
	}
}

func eventID(e Event) string {
	switch e := e.(type) {
	case Refused:
		return e.Article.MessageID
	case Deferred:
		return e.Article.MessageID
	}
	return ""
}

// TestSplitInvariance repeats random sessions with every received chunk
// split into single bytes, and into halves: output and events are the
// same.
func TestSplitInvariance(t *testing.T) {
	for seed := int64(1); seed <= 150; seed++ {
		cfg, ops, out, evs, _, _ := simRun(t, seed)
		for _, split := range []struct {
			name string
			cut  func([]byte) [][]byte
		}{
			{"bytes", func(b []byte) [][]byte {
				var p [][]byte
				for i := range b {
					p = append(p, b[i:i+1])
				}
				return p
			}},
			{"halves", func(b []byte) [][]byte { return [][]byte{b[:len(b)/2], b[len(b)/2:]} }},
		} {
			out2, evs2 := rerun(cfg, ops, split.cut)
			if !bytes.Equal(out, out2) {
				t.Fatalf("seed %d, %s: output differs:\n%s", seed, split.name, cmp.Diff(string(out), string(out2)))
			}
			if d := cmp.Diff(evs, evs2); d != "" {
				t.Fatalf("seed %d, %s: events differ (-whole +split):\n%s", seed, split.name, d)
			}
		}
	}
}

// rerun applies ops to a fresh Feed made like simRun's, cutting received
// chunks with cut.
func rerun(cfg Config, ops []op, cut func([]byte) [][]byte) (out []byte, evs []Event) {
	now := t0
	f := New(now, cfg)
	for _, o := range ops {
		switch o.kind {
		case "offer":
			f.Offer(now, art(o.id))
		case "recv":
			for _, p := range cut(o.data) {
				if len(p) > 0 && !f.Closed() {
					f.Receive(now, p)
					out = f.AppendOutgoing(out) // as a runtime does after every read
				}
			}
		case "time":
			now = now.Add(o.d)
			f.Timeout(now)
		case "close":
			f.Close(now)
		case "abort":
			f.Abort(now, "owner")
		case "eof":
			f.ReceiveEOF(now)
		}
		out = f.AppendOutgoing(out)
	}
	for {
		e, ok := f.NextEvent()
		if !ok {
			return out, evs
		}
		evs = append(evs, e)
	}
}
