package ingest

import (
	"fmt"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
)

// t0 is the clock at the start of every test (transcript.Epoch, so that
// unit tests and replayed transcripts see the same Date window).
var t0 = transcript.Epoch

// An owner is a scripted relay: a policy for Check and Article events,
// answered synchronously, as a relay with an in-memory history does.
type owner struct {
	verdict  Verdict            // for ids without an override
	newOnly  bool               // "want new": refuse ids seen before on this owner
	result   Outcome            // for ids without an override
	reason   string             // with StoreRejected and StoreLater
	perID    map[string]Verdict // per-id verdicts
	perStore map[string]Outcome // per-id outcomes
	seen     map[string]bool
	users    map[string]string // "user <name> <password>": the good credentials
	failures int               // failed logins so far
	block    int               // "block after <n>": failures before AuthBlocked (0: never)
	stored   []Article         // what was stored, in order
	log      []string          // event summaries
}

func newOwner() *owner {
	return &owner{verdict: Want, result: StoreAccepted, perID: map[string]Verdict{}, perStore: map[string]Outcome{}, seen: map[string]bool{}}
}

// parseOwner reads a policy: comma-separated phrases such as "want all",
// "refuse all", "defer all", "want new", "store ok", "store duplicate",
// "store reject <reason words>", "store later <reason words>", and per-id
// overrides "refuse <id>", credentials "user <name> <password>", "block after <n>" failed logins, "defer <id>", "duplicate <id>", "reject <id>",
// "later <id>".
func parseOwner(s string) (*owner, error) {
	o := newOwner()
	for _, ph := range strings.Split(s, ",") {
		f := strings.Fields(ph)
		if len(f) < 2 {
			return nil, fmt.Errorf("owner policy %q: phrase %q", s, ph)
		}
		rest := strings.Join(f[1:], " ")
		switch f[0] {
		case "want", "refuse", "defer":
			v := map[string]Verdict{"want": Want, "refuse": Refuse, "defer": Defer}[f[0]]
			switch rest {
			case "all":
				o.verdict = v
			case "new":
				o.verdict, o.newOnly = Want, true
			default:
				o.perID[rest] = v
			}
		case "store":
			switch f[1] {
			case "ok":
				o.result = StoreAccepted
			case "duplicate":
				o.result = StoreDuplicate
			case "reject":
				o.result = StoreRejected
			case "later":
				o.result = StoreLater
			default:
				return nil, fmt.Errorf("owner policy: store %q", f[1])
			}
			o.reason = strings.Join(f[2:], " ")
		case "user":
			if len(f) != 3 {
				return nil, fmt.Errorf("owner policy: user needs a name and a password: %q", ph)
			}
			if o.users == nil {
				o.users = map[string]string{}
			}
			o.users[f[1]] = f[2]
		case "block":
			if _, err := fmt.Sscanf(rest, "after %d", &o.block); err != nil {
				return nil, fmt.Errorf("owner policy: %q: %v", ph, err)
			}
		case "duplicate", "reject", "later":
			o.perStore[rest] = map[string]Outcome{"duplicate": StoreDuplicate, "reject": StoreRejected, "later": StoreLater}[f[0]]
		default:
			return nil, fmt.Errorf("owner policy: unknown phrase %q", ph)
		}
	}
	return o, nil
}

// serve drains g's events and answers them by policy.
func (o *owner) serve(now time.Time, g *Ingest) {
	for {
		ev, ok := g.NextEvent()
		if !ok {
			return
		}
		o.log = append(o.log, summary(ev))
		switch e := ev.(type) {
		case Auth:
			v := AuthRejected
			if pw, ok := o.users[e.User]; ok && pw == e.Password {
				v = AuthAccepted
			} else if o.failures++; o.block > 0 && o.failures >= o.block {
				v = AuthBlocked
			}
			if err := g.AuthDone(now, e.Seq, v); err != nil {
				panic(err)
			}
		case Check:
			v, ok := o.perID[e.MessageID]
			if !ok {
				v = o.verdict
				if o.newOnly && o.seen[e.MessageID] {
					v = Refuse
				}
			}
			if err := g.Decide(now, e.Seq, v); err != nil {
				panic(err)
			}
		case Article:
			r, ok := o.perStore[e.MessageID]
			if !ok {
				r = o.result
				if o.newOnly && o.seen[e.MessageID] {
					r = StoreDuplicate
				}
			}
			if r == StoreAccepted {
				o.seen[e.MessageID] = true
				o.stored = append(o.stored, e)
			}
			if err := g.Stored(now, e.Seq, Result{Outcome: r, Reason: o.reason}); err != nil {
				panic(err)
			}
		}
	}
}

// ownedConn is an Ingest whose owner answers within each input, so that it
// can be driven as a plain machine.Conn by transcript.Replay and by the
// goroutine runtime.
type ownedConn struct {
	*Ingest
	o *owner
}

var (
	_ machine.Conn        = (*ownedConn)(nil)
	_ machine.EOFReceiver = (*ownedConn)(nil)
)

func (c *ownedConn) Receive(now time.Time, p []byte) error {
	err := c.Ingest.Receive(now, p)
	c.o.serve(now, c.Ingest)
	return err
}

func (c *ownedConn) Timeout(now time.Time) {
	c.Ingest.Timeout(now)
	c.o.serve(now, c.Ingest)
}

func (c *ownedConn) ReceiveEOF(now time.Time) {
	c.Ingest.ReceiveEOF(now)
	c.o.serve(now, c.Ingest)
}

// summary writes an event as one line for comparisons.
func summary(ev Event) string {
	switch e := ev.(type) {
	case Check:
		return fmt.Sprintf("check %d %s %s", e.Seq, e.Cmd, e.MessageID)
	case Article:
		return fmt.Sprintf("article %d %s %s %d", e.Seq, e.Cmd, e.MessageID, len(e.Data))
	case Rejected:
		return fmt.Sprintf("rejected %s %s %s: %s", e.Cmd, e.MessageID, e.Kind, e.Reason)
	case Closed:
		return "closed " + e.Reason
	case Auth:
		return fmt.Sprintf("auth %d %s", e.Seq, e.User)
	case TLSStarted:
		return "tls started"
	}
	return fmt.Sprintf("%T", ev)
}

// events drains g's events as summaries.
func events(g *Ingest) []string {
	var s []string
	for {
		ev, ok := g.NextEvent()
		if !ok {
			return s
		}
		s = append(s, summary(ev))
	}
}

// header is one header field of a test article.
type header struct{ name, value string }

// baseHeaders are a valid article's headers, Message-ID added by article.
var baseHeaders = []header{
	{"Path", "upstream.example!not-for-mail"},
	{"From", "Poster <poster@example.com>"},
	{"Newsgroups", "misc.test"},
	{"Subject", "test article"},
	{"Date", "Fri, 31 Dec 1999 12:00:00 +0000"},
}

// article builds an article (CRLF lines, not stuffed) for id. Each edit is
// "Name: value" to set or add a field, "-Name" to drop it, or "body:text"
// to replace the body.
func article(id string, edits ...string) string {
	hs := append([]header(nil), baseHeaders...)
	hs = append(hs, header{"Message-ID", id})
	body := "Hello.\r\n.a line that begins with a dot\r\n"
	for _, e := range edits {
		switch {
		case strings.HasPrefix(e, "-"):
			for i := range hs {
				if strings.EqualFold(hs[i].name, e[1:]) {
					hs = append(hs[:i], hs[i+1:]...)
					break
				}
			}
		case strings.HasPrefix(e, "body:"):
			body = e[len("body:"):]
		default:
			name, value, _ := strings.Cut(e, ": ")
			found := false
			for i := range hs {
				if strings.EqualFold(hs[i].name, name) {
					hs[i].value, found = value, true
				}
			}
			if !found {
				hs = append(hs, header{name, value})
			}
		}
	}
	var b strings.Builder
	for _, h := range hs {
		b.WriteString(h.name + ": " + h.value + "\r\n")
	}
	b.WriteString("\r\n" + body)
	return b.String()
}

// block is an article as sent after TAKETHIS or 335: dot-stuffed and
// terminated.
func block(art string) string { return string(proto.AppendBlock(nil, []byte(art))) }

// takethis is a TAKETHIS command with its article.
func takethis(id, art string) string { return "TAKETHIS " + id + "\r\n" + block(art) }

func (c *ownedConn) TLSDone(now time.Time, err error) error {
	e := c.Ingest.TLSDone(now, err)
	c.o.serve(now, c.Ingest)
	return e
}
