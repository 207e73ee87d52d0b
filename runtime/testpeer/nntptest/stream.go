package nntptest

import (
	"fmt"
	"strings"
	"sync"

	"github.com/newsflow/newsflow/proto"
)

// A Verdict is what the streaming peer does with an offered article.
//
//	          CHECK   TAKETHIS   IHAVE
//	Want      238     239        335, then 235
//	Defer     431     439        436
//	Refuse    438     439        435
//	Reject    238     439        335, then 437
//
// RFC 4644 §2.5 allows only 239 and 439 to TAKETHIS, so Defer and Refuse
// both reject there. Reject wants the article by CHECK and IHAVE and then
// refuses it once received (a filter rejecting the content).
type Verdict int

const (
	Want   Verdict = iota // send it / accepted
	Defer                 // try again later
	Refuse                // not wanted (already have it)
	Reject                // wanted, then rejected on receipt
)

var verdictNames = [...]string{"want", "defer", "refuse", "reject"}

func (v Verdict) String() string {
	if v >= 0 && int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// ParseVerdict parses "want", "defer", "refuse" or "reject".
func ParseVerdict(s string) (Verdict, error) {
	for i, n := range verdictNames {
		if strings.EqualFold(s, n) {
			return Verdict(i), nil
		}
	}
	return 0, fmt.Errorf("nntptest: unknown verdict %q (want, defer, refuse, reject)", s)
}

// A Rule decides the verdict for one offer: cmd is "CHECK", "TAKETHIS" or
// "IHAVE" and id the message-id argument. It is called once per CHECK, once
// per TAKETHIS and once per IHAVE (whose verdict also decides 235 or 437),
// from the connection's goroutine without the server's lock held, so it may
// call the server's methods (Has, say) but must be safe for concurrent use.
type Rule func(cmd, id string) Verdict

// SetRule replaces the streaming rule; nil restores the default (refuse
// what the server has, want the rest).
func (s *Server) SetRule(r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rule = r
}

// Has reports whether the server holds the article with message-id id: in
// its store, or accepted through TAKETHIS, IHAVE or POST.
func (s *Server) Has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store.byID[id] != nil || s.accepted[id]
}

func (s *Server) verdict(cmd, id string) Verdict {
	s.mu.Lock()
	r := s.rule
	s.mu.Unlock()
	if r != nil {
		return r(cmd, id)
	}
	if s.Has(id) {
		return Refuse
	}
	return Want
}

// Verdicts is a Rule that looks the message-id up in m and gives otherwise
// for ids not there.
func Verdicts(m map[string]Verdict, otherwise Verdict) Rule {
	return func(_, id string) Verdict {
		if v, ok := m[id]; ok {
			return v
		}
		return otherwise
	}
}

// Sequence is a Rule that gives, for each message-id in m, its verdicts one
// call after another (CHECK and TAKETHIS each take one), repeating the last;
// ids not in m get otherwise. Sequence{"<a@b>": {Defer, Want}} defers the
// first CHECK of <a@b> and wants it after.
func Sequence(m map[string][]Verdict, otherwise Verdict) Rule {
	var mu sync.Mutex
	calls := make(map[string]int)
	return func(_, id string) Verdict {
		seq, ok := m[id]
		if !ok || len(seq) == 0 {
			return otherwise
		}
		mu.Lock()
		defer mu.Unlock()
		i := min(calls[id], len(seq)-1)
		calls[id]++
		return seq[i]
	}
}

// streaming returns the refusal for streaming commands, or nil if they are
// served: NoStreaming refuses them, and so does a transit server after MODE
// READER.
func (c *conn) streaming() []byte {
	if c.s.opts.NoStreaming || (c.s.opts.Transit && c.reader) {
		return resp(proto.CodeUnknownCommand, "What?")
	}
	return nil
}

// keep stores an accepted article when the server keeps what it receives.
func (c *conn) keep(id string, art []byte) {
	if !c.s.opts.KeepReceived {
		return
	}
	c.s.mu.Lock()
	_, err := c.s.store.add(Article{MessageID: id, Raw: art}, c.s.now())
	c.s.mu.Unlock()
	if err != nil {
		c.s.logf("nntptest: conn %d: keep %s: %v", c.id, id, err)
	}
}

// RFC 4644 §2.3: MODE STREAM.
func cmdModeStream(c *conn, cmd proto.Command) []byte {
	if r := c.streaming(); r != nil {
		return r
	}
	return resp(proto.CodeStreamingOK, "Streaming permitted")
}

// RFC 4644 §2.4: CHECK.
func cmdCheck(c *conn, cmd proto.Command) []byte {
	if r := c.streaming(); r != nil {
		return r
	}
	id := arg(cmd, 0)
	if len(cmd.Args) != 1 || !proto.IsMessageIDArg(id) {
		return resp(proto.CodeSyntaxError, "Syntax: CHECK <message-id>")
	}
	switch c.s.verdict("CHECK", id) {
	case Defer:
		return resp(proto.CodeCheckLater, id)
	case Refuse:
		return resp(proto.CodeCheckNotWanted, id)
	default:
		return resp(proto.CodeCheckSend, id)
	}
}

// RFC 4644 §2.5: TAKETHIS; the article follows the command line at once.
func cmdTakeThis(c *conn, cmd proto.Command) []byte {
	if r := c.streaming(); r != nil {
		return r
	}
	art, err := c.readBlock()
	if err != nil {
		c.then = func() error { return errClosing }
		return nil
	}
	id := arg(cmd, 0)
	code := proto.CodeTakeThisReject
	if len(cmd.Args) == 1 && proto.IsMessageIDArg(id) && c.s.verdict("TAKETHIS", id) == Want {
		code = proto.CodeTakeThisOK
		c.keep(id, art)
	}
	c.s.recordTransfer(Transfer{Conn: c.id, Cmd: "TAKETHIS", MessageID: id, Article: art, Code: code})
	return resp(code, id)
}

// RFC 3977 §6.3.2: IHAVE; 335 asks for the article, then 235/436/437.
func cmdIHave(c *conn, cmd proto.Command) []byte {
	id := arg(cmd, 0)
	if len(cmd.Args) != 1 || !proto.IsMessageIDArg(id) {
		return resp(proto.CodeSyntaxError, "Syntax: IHAVE <message-id>")
	}
	v := c.s.verdict("IHAVE", id)
	switch v {
	case Defer:
		return resp(proto.CodeTransferLater, "Try again later")
	case Refuse:
		return resp(proto.CodeNotWanted, "Duplicate")
	}
	c.then = func() error {
		art, err := c.readBlock()
		if err != nil {
			return errClosing
		}
		code, text := proto.CodeTransferOK, "Article transferred OK"
		if v == Reject {
			code, text = proto.CodeTransferReject, "Article rejected"
		} else {
			c.keep(id, art)
		}
		c.s.recordTransfer(Transfer{Conn: c.id, Cmd: "IHAVE", MessageID: id, Article: art, Code: code})
		return c.write(resp(code, text))
	}
	return resp(proto.CodeSendArticle, "Send it; end with <CR-LF>.<CR-LF>")
}
