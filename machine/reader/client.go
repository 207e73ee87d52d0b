package reader

// Theory of operation: the reader client machine.
//
// A Client runs newsweb's requests on one NNTP connection that a
// handshake.Handshake has set up (greeting, CAPABILITIES, MODE READER,
// STARTTLS, AUTHINFO). It is a sans-I/O machine (machine.Conn,
// machine.EOFReceiver): the owner gives it one request at a time with Do,
// drains AppendOutgoing and NextEvent after every input, and gets exactly
// one result event per request (or Failed), and Closed last.
//
// Each request is a small plan of steps; each step sends one batch of
// commands and waits for all their answers before deciding the next step:
//
//	GetGroups       LIST ACTIVE + LIST NEWSGROUPS (one batch, pipelined)
//	GetArticle      ARTICLE <id>                  430 -> NotFound
//	GetGroupStats   [GROUP] -> date of the newest article: HDR Date, OVER,
//	                XOVER over the last ten numbers, or HEAD high
//	GetThreads,     [GROUP] -> [LIST HEADERS | LIST OVERVIEW.FMT once per
//	GetNewArticles,  connection] -> the strategy's fetch over the range:
//	GetThread        HDR x5 (pipelined) | OVER | XOVER | HEAD n, a window
//	                 of Config.HeadWindow at a time
//
// Pipelining is used only inside a batch, for commands that are independent
// reads of the same state (RFC 3977 §3.5 allows pipelining; none of these
// changes the selected group or article). GROUP is always a batch of its
// own because the range of the next step depends on its answer.
//
// GROUP is sent when the connection's selected group differs from the
// request's, and also when the selection is older than Config.GroupMaxAge
// (1 s by default): INN's nnrpd fixes a group's high-water mark when the
// group is selected ("OVER 3-" answers 423 for an article that arrived after
// GROUP; after a new GROUP it is there), so a long-lived connection must
// select again to see new articles. Within GroupMaxAge the selection and its
// marks are reused, which is what makes back-to-back requests for one group
// (a page load and its background refresh) cost one GROUP.
//
// Answers are read line by line; multi-line answers (proto.MultiLine) go
// through proto.BlockDecoder with the configured line limit and a limit on
// the whole block. Before a step looks at its answers, answers that concern
// the connection are handled, for the whole batch:
//
//   - 400: the server is closing (RFC 3977 §3.2.1): Failed (Retry), Closed.
//   - 483: encryption required: Failed (Retry), Closed; the runtime must
//     reconnect with TLS.
//   - 480 (RFC 4643 §2.1): AUTHINFO USER/PASS with handshake.Auth, then the
//     step is planned again (with GROUP first: the selection is not assumed
//     to survive). Without credentials, or a second time, Failed, Closed.
//   - 401 MODE-READER (RFC 3977 §3.2.1; INN's innd on its transit port):
//     MODE READER, CAPABILITIES again (RFC 3977 §5.3.2: they change; the
//     strategy is chosen anew), then the step is planned again. Once.
//   - 412 (no group selected) to a command that needs one: GROUP, then the
//     step again. Once per request.
//
// A command refused as unknown or unsupported (500, 501, 503) demotes the
// thread-data strategy for the rest of the connection (HDR -> OVER -> HEAD)
// and the step is planned again with the next one.
//
// Every batch sets a deadline Config.Timeout after it was sent; received
// bytes push it back (a large article keeps the connection alive while it
// flows). Timeout past the deadline fails the request (Retry) and closes: a
// connection whose answer is late is out of step for good.

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/proto"
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout     = 30 * time.Second // per answer, measured from the last progress
	DefaultMaxResponse = 64 << 20         // largest multi-line answer (an article)
	DefaultThreadLimit = 1000             // most articles one GetThreads fetches
	DefaultHeadWindow  = 16               // HEAD commands pipelined at a time
	DefaultGroupMaxAge = time.Second      // a selection younger than this is reused
)

// statsSpan is how many of a group's newest numbers GetGroupStats asks the
// Date of, so that a cancelled high article still yields a date.
const statsSpan = 10

// Config says how a Client talks to its server.
type Config struct {
	// Capabilities and Legacy are what the handshake learnt (handshake.Ready).
	Capabilities proto.CapabilitySet
	Legacy       bool

	// User and Pass answer a 480 mid-session (RFC 4643 §2.1).
	User, Pass string

	// Strategy forces a thread-data strategy; 0 chooses by ChooseStrategy.
	// A forced strategy the server refuses is demoted like a chosen one.
	Strategy Strategy

	Timeout     time.Duration // per answer; DefaultTimeout when 0
	MaxLine     int           // longest line in a multi-line answer; proto.DefaultMaxLine when 0
	MaxResponse int           // largest multi-line answer in bytes; DefaultMaxResponse when 0
	ThreadLimit int           // default Limit of thread requests; DefaultThreadLimit when 0
	HeadWindow  int           // HEAD commands in flight; DefaultHeadWindow when 0

	// GroupMaxAge is how long a GROUP answer stays good for the next request
	// on the same group; after that GROUP is sent again for fresh marks
	// (INN's nnrpd serves no article above the high-water mark it read at
	// GROUP time). DefaultGroupMaxAge when 0; negative means never: GROUP
	// only when the group differs.
	GroupMaxAge time.Duration
}

func (c Config) withDefaults() Config {
	machine.Default(&c.Timeout, DefaultTimeout)
	machine.Default(&c.MaxLine, proto.DefaultMaxLine)
	machine.Default(&c.MaxResponse, DefaultMaxResponse)
	machine.Default(&c.ThreadLimit, DefaultThreadLimit)
	machine.Default(&c.HeadWindow, DefaultHeadWindow)
	if c.GroupMaxAge == 0 {
		c.GroupMaxAge = DefaultGroupMaxAge
	}
	return c
}

// tag says what a sent command belongs to.
type tag uint8

const (
	tagJob        tag = iota // a step of the current request
	tagAuth                  // AUTHINFO USER/PASS after a 480
	tagModeReader            // MODE READER after a 401
	tagCaps                  // CAPABILITIES after MODE READER
)

// sent is a command whose answer is awaited.
type sent struct {
	cmd proto.Command
	tag tag
}

// answer is a command's answer, with its decoded block if it has one.
type answer struct {
	cmd   proto.Command
	resp  proto.Response
	block []byte
}

// step is where a request's plan is.
type step uint8

const (
	stNone    step = iota
	stList         // LIST ACTIVE + LIST NEWSGROUPS sent
	stArticle      // ARTICLE sent
	stGroup        // GROUP sent for the request's marks
	stSelect       // GROUP sent only to select the group again
	stHints        // LIST HEADERS / LIST OVERVIEW.FMT sent
	stFetch        // the strategy's thread-data commands sent
	stDate         // the newest article's Date asked
)

// job is the request in hand.
type job struct {
	id        uint64
	req       Request
	group     string
	since     int64
	limit     int
	step      step
	haveInfo  bool
	info      proto.GroupInfo
	regrouped bool // a 412 was answered by selecting the group again
	ranged    bool
	lo, hi    int64
	truncated bool
	next      int64 // HEAD strategy: the next number to ask for
	window    int64 // HEAD strategy: the first number of the window in flight
	sums      map[int64]*Summary
	skipped   int
	used      Strategy
	date      time.Time
}

// Client is the sans-I/O reader client for one connection after the
// handshake. It performs no I/O and reads no clock. After every input (Do,
// Receive, Timeout, ReceiveEOF, Close) drain AppendOutgoing and NextEvent.
type Client struct {
	cfg    Config
	caps   proto.CapabilitySet
	hints  Hints
	askedH bool // LIST HEADERS asked on this connection
	askedF bool // LIST OVERVIEW.FMT asked on this connection

	in       proto.LineBuffer
	out      []byte
	events   []Event
	closed   bool
	deadline time.Time

	batch   []sent   // commands awaiting answers, in order
	answers []answer // answers to batch received so far
	dec     *proto.BlockDecoder
	reading bool   // a multi-line block is being read
	blk     []byte // its decoded bytes so far

	job *job

	auth           handshake.Auth
	authenticated  bool
	modeReaderDone bool

	curGroup string
	curInfo  proto.GroupInfo
	curAt    time.Time

	sentCount map[string]int
}

// New returns an idle Client for a connection whose handshake finished at
// now with the capabilities in cfg.
func New(now time.Time, cfg Config) *Client {
	cfg = cfg.withDefaults()
	return &Client{
		cfg:       cfg,
		caps:      cfg.Capabilities,
		hints:     Hints{Legacy: cfg.Legacy},
		dec:       proto.NewBlockDecoder(cfg.MaxLine),
		in:        proto.LineBuffer{Name: "status line"},
		auth:      handshake.Auth{User: cfg.User, Pass: cfg.Pass},
		sentCount: make(map[string]int),
	}
}

// FromHandshake returns a Client that takes over a connection from a
// handshake that emitted ready, with the bytes it received beyond its last
// answer (Handshake.Leftover). cfg's Capabilities and Legacy are taken from
// ready; Authenticated in ready is remembered, so a later 480 is final.
func FromHandshake(now time.Time, cfg Config, ready handshake.Ready, leftover []byte) (*Client, error) {
	cfg.Capabilities, cfg.Legacy = ready.Capabilities, ready.Legacy
	c := New(now, cfg)
	c.authenticated = ready.Authenticated
	if len(leftover) > 0 {
		if err := c.Receive(now, leftover); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Capabilities returns the server's current capabilities (they change after
// a MODE READER the Client sent).
func (c *Client) Capabilities() proto.CapabilitySet { return c.caps }

// Strategy returns the thread-data strategy the Client would use now.
func (c *Client) Strategy() Strategy {
	if s := c.cfg.Strategy; s != 0 && !c.hints.refused(s) {
		return s
	}
	return ChooseStrategy(c.caps, c.hints)
}

// Hints returns what the Client learnt about the server beyond CAPABILITIES.
func (c *Client) Hints() Hints { return c.hints }

// Busy reports whether a request is in hand; Do is refused until it is answered.
func (c *Client) Busy() bool { return c.job != nil }

// Sent returns how many commands of each name (proto.Command.Name: "GROUP",
// "HDR", "LIST ACTIVE", ...) the Client has sent.
func (c *Client) Sent() map[string]int { return maps.Clone(c.sentCount) }

// Group returns the group selected on the connection, "" if none is known.
func (c *Client) Group() string { return c.curGroup }

// Do starts request req, identified in its events by id. It returns an error,
// and does nothing, when the Client is closed or busy. A request that cannot
// be sent (an empty group, a message-id with spaces) is answered at once
// with Failed wrapping ErrBadRequest.
func (c *Client) Do(now time.Time, id uint64, req Request) error {
	if c.closed {
		return fmt.Errorf("reader: Do(%s) on a closed client", req.Key())
	}
	if c.job != nil {
		return fmt.Errorf("reader: Do(%s) while request %d (%s) is in hand", req.Key(), c.job.id, c.job.req.Key())
	}
	j := &job{id: id, req: req}
	switch r := req.(type) {
	case GetGroups:
	case GetArticle:
		if err := proto.ValidNNTPMessageID(r.MessageID); err != nil {
			c.events = append(c.events, Failed{ID: id, Req: req, Err: fmt.Errorf("reader: %w: %w", ErrBadRequest, err)})
			return nil
		}
	case GetGroupStats:
		j.group = r.Group
	case GetThreads:
		j.group, j.since, j.limit = r.Group, r.Since, r.Limit
	case GetNewArticles:
		j.group, j.since, j.limit = r.Group, r.Since, r.Limit
	case GetThread:
		j.group, j.limit = r.Group, r.Limit
		if err := proto.ValidNNTPMessageID(r.MessageID); err != nil {
			c.events = append(c.events, Failed{ID: id, Req: req, Err: fmt.Errorf("reader: %w: %w", ErrBadRequest, err)})
			return nil
		}
	default:
		return fmt.Errorf("reader: Do: unknown request %T", req)
	}
	switch req.(type) {
	case GetGroups, GetArticle:
	default:
		if j.group == "" {
			c.events = append(c.events, Failed{ID: id, Req: req, Err: fmt.Errorf("reader: %w: no group", ErrBadRequest)})
			return nil
		}
	}
	if j.limit <= 0 {
		j.limit = c.cfg.ThreadLimit
	}
	c.job = j
	c.advance(now)
	return nil
}

// advance sends the next batch of the request in hand, or finishes it.
func (c *Client) advance(now time.Time) {
	j := c.job
	if j == nil || c.closed {
		return
	}
	switch r := j.req.(type) {
	case GetGroups:
		// RFC 3977 §7.6.3 and §7.6.6.
		c.sendJob(now, stList, proto.List("ACTIVE", ""), proto.List("NEWSGROUPS", ""))
		return
	case GetArticle:
		// RFC 3977 §6.2.1.
		c.sendJob(now, stArticle, proto.Article(r.MessageID))
		return
	}
	if !j.haveInfo {
		if c.curGroup == j.group && c.selectionFresh(now) {
			j.info, j.haveInfo = c.curInfo, true
		} else {
			// RFC 3977 §6.1.1.
			c.sendJob(now, stGroup, proto.Group(j.group))
			return
		}
	}
	if c.curGroup != j.group {
		c.sendJob(now, stSelect, proto.Group(j.group))
		return
	}
	if _, ok := j.req.(GetGroupStats); ok {
		c.planDate(now)
		return
	}
	c.planFetch(now)
}

// selectionFresh reports whether the last GROUP answer may be reused at now.
func (c *Client) selectionFresh(now time.Time) bool {
	return c.cfg.GroupMaxAge < 0 || now.Sub(c.curAt) < c.cfg.GroupMaxAge
}

// planDate asks for the Date of the group's newest article.
func (c *Client) planDate(now time.Time) {
	j := c.job
	in := j.info
	if in.Count == 0 || in.High <= 0 || in.High < in.Low {
		c.finishStats()
		return
	}
	lo := max(in.Low, in.High-statsSpan+1)
	rng := proto.Range(lo, in.High)
	j.used = c.Strategy()
	switch j.used {
	case StrategyHDR:
		c.sendJob(now, stDate, proto.Hdr("Date", rng))
	case StrategyOVER:
		c.sendJob(now, stDate, proto.Over(rng))
	case StrategyXOVER:
		c.sendJob(now, stDate, proto.XOver(rng))
	default:
		c.sendJob(now, stDate, proto.Head(proto.Number(in.High)))
	}
}

// planFetch sends the hints wanted, then the thread-data commands.
func (c *Client) planFetch(now time.Time) {
	j := c.job
	h, f := wantHints(c.caps, c.hints, c.Strategy())
	h, f = h && !c.askedH, f && !c.askedF
	if h || f {
		var cmds []proto.Command
		if h {
			c.askedH = true
			cmds = append(cmds, proto.List("HEADERS", "")) // RFC 3977 §8.6
		}
		if f {
			c.askedF = true
			cmds = append(cmds, proto.List("OVERVIEW.FMT", "")) // RFC 3977 §8.4
		}
		c.sendJob(now, stHints, cmds...)
		return
	}
	if !j.ranged {
		j.ranged = true
		j.lo, j.hi = j.info.Low, j.info.High
		if j.since > 0 {
			j.lo = max(j.lo, j.since+1)
		}
		if j.hi-j.lo+1 > int64(j.limit) {
			j.lo, j.truncated = j.hi-int64(j.limit)+1, true
		}
	}
	if j.lo > j.hi || j.hi <= 0 {
		c.finishThreads()
		return
	}
	s := c.Strategy()
	if s != j.used {
		j.used, j.sums, j.next = s, nil, 0
	}
	rng := proto.Range(j.lo, j.hi)
	switch s {
	case StrategyHDR:
		// RFC 3977 §8.5: one field per command; the five are pipelined.
		cmds := make([]proto.Command, 0, len(hdrFields))
		for _, f := range hdrFields {
			cmds = append(cmds, proto.Hdr(f, rng))
		}
		c.sendJob(now, stFetch, cmds...)
	case StrategyOVER:
		c.sendJob(now, stFetch, proto.Over(rng)) // RFC 3977 §8.3
	case StrategyXOVER:
		c.sendJob(now, stFetch, proto.XOver(rng))
	default:
		if j.next < j.lo {
			j.next = j.lo
		}
		j.window = j.next
		var cmds []proto.Command
		for ; j.next <= j.hi && len(cmds) < c.cfg.HeadWindow; j.next++ {
			cmds = append(cmds, proto.Head(proto.Number(j.next))) // RFC 3977 §6.2.2
		}
		c.sendJob(now, stFetch, cmds...)
	}
}

// sendJob sends one batch for the request in hand and enters step st.
func (c *Client) sendJob(now time.Time, st step, cmds ...proto.Command) {
	for _, cmd := range cmds {
		if err := cmd.Validate(); err != nil {
			c.failJob(fmt.Errorf("reader: %w: %w", ErrBadRequest, err), false)
			return
		}
	}
	c.job.step = st
	for _, cmd := range cmds {
		c.send(now, cmd, tagJob)
	}
}

// send writes one command (already validated) and awaits its answer.
func (c *Client) send(now time.Time, cmd proto.Command, t tag) {
	c.out, _ = cmd.Append(c.out)
	c.batch = append(c.batch, sent{cmd: cmd, tag: t})
	c.sentCount[cmd.Name()]++
	c.deadline = now.Add(c.cfg.Timeout)
}

// Receive takes bytes from the server (machine.Conn).
func (c *Client) Receive(now time.Time, p []byte) error {
	if c.closed {
		return fmt.Errorf("reader: %d bytes received after close", len(p))
	}
	c.in.Add(p)
	if len(c.batch) > 0 && len(p) > 0 {
		c.deadline = now.Add(c.cfg.Timeout) // progress
	}
	for !c.closed && c.in.Buffered() > 0 {
		if c.reading {
			done, err := c.readBlock()
			if err != nil {
				return c.protocolError(err)
			}
			if !done {
				return nil
			}
			a := &c.answers[len(c.answers)-1]
			a.block, c.blk, c.reading = c.blk, nil, false
			c.answered(now)
			continue
		}
		line, ok, err := c.in.Next()
		if err != nil {
			return c.protocolError(err)
		}
		if !ok {
			return nil
		}
		if len(c.answers) >= len(c.batch) {
			return c.protocolError(fmt.Errorf("unsolicited line %q", clip(line)))
		}
		resp, err := proto.ParseResponse(line)
		if err != nil {
			return c.protocolError(err)
		}
		cmd := c.batch[len(c.answers)].cmd
		c.answers = append(c.answers, answer{cmd: cmd, resp: resp})
		if proto.MultiLine(cmd.Verb, resp.Code) {
			c.reading, c.blk = true, []byte{}
			c.dec.Reset()
			continue
		}
		c.answered(now)
	}
	return nil
}

// readBlock decodes buffered bytes of the block being read.
func (c *Client) readBlock() (bool, error) {
	out, n, done, err := c.dec.Decode(c.blk, c.in.Peek())
	c.blk = out
	c.in.Skip(n)
	if err != nil {
		return false, fmt.Errorf("answer to %s: %w", c.answers[len(c.answers)-1].cmd.Name(), err)
	}
	if len(c.blk) > c.cfg.MaxResponse {
		return false, fmt.Errorf("answer to %s exceeds %d bytes: %w",
			c.answers[len(c.answers)-1].cmd.Name(), c.cfg.MaxResponse, proto.ErrLineTooLong)
	}
	return done, nil
}

// answered is called when the last answer is complete; when the batch is
// all answered it is handed on.
func (c *Client) answered(now time.Time) {
	if len(c.answers) < len(c.batch) {
		return
	}
	batch, answers := c.batch, c.answers
	c.batch, c.answers, c.deadline = nil, nil, time.Time{}
	switch batch[0].tag {
	case tagAuth:
		c.authAnswer(now, answers[0].resp)
	case tagModeReader:
		c.modeReaderAnswer(now, answers[0].resp)
	case tagCaps:
		c.capsAnswer(now, answers[0])
	default:
		c.jobAnswers(now, answers)
	}
}

// needsGroup reports whether cmd works on the selected group.
func needsGroup(cmd proto.Command) bool {
	switch cmd.Verb {
	case "HDR", "XHDR", "OVER", "XOVER":
		return len(cmd.Args) == 0 || !proto.IsMessageIDArg(cmd.Args[len(cmd.Args)-1])
	case "HEAD", "ARTICLE":
		return len(cmd.Args) == 0 || !proto.IsMessageIDArg(cmd.Args[0])
	}
	return false
}

// jobAnswers handles the answers of a step: first those that concern the
// connection (see the theory of operation), then the step's own.
func (c *Client) jobAnswers(now time.Time, as []answer) {
	j := c.job
	if j == nil {
		return
	}
	for _, a := range as {
		switch a.resp.Code {
		case proto.CodeUnavailable:
			// RFC 3977 §3.2.1: 400 means the server is closing the connection.
			c.fatal(fmt.Errorf("reader: %s: %w: %q", a.cmd.Name(), ErrUnavailable, a.resp.String()), true, false)
			return
		case proto.CodeEncryptRequired:
			c.fatal(fmt.Errorf("reader: %s: %w: %q", a.cmd.Name(), ErrEncryptionReq, a.resp.String()), true, true)
			return
		}
	}
	for _, a := range as {
		if a.resp.Code != proto.CodeAuthRequired {
			continue
		}
		// RFC 4643 §2.1: authenticate, then send the command again.
		if c.cfg.User == "" || c.authenticated {
			c.fatal(fmt.Errorf("reader: %s: %w: %q", a.cmd.Name(), ErrAuthRequired, a.resp.String()), false, true)
			return
		}
		c.rewind()
		out, err := c.auth.Start(c.out)
		if err != nil {
			c.fatal(fmt.Errorf("reader: %w: %w", ErrAuthFailed, err), false, true)
			return
		}
		c.out = out
		c.recordSent(now, proto.AuthinfoUser(c.cfg.User), tagAuth)
		return
	}
	for _, a := range as {
		if a.resp.Code != proto.CodeWrongMode {
			continue
		}
		// RFC 3977 §3.2.1: 401's first word names the capability that
		// would make the command available; INN's innd says MODE-READER.
		if !strings.EqualFold(a.resp.StreamID(), proto.CapModeReader) {
			c.failJob(refusal(a.cmd, a.resp), false)
			return
		}
		if c.modeReaderDone {
			c.fatal(fmt.Errorf("reader: %s: %w: %q after MODE READER", a.cmd.Name(), ErrNoReader, a.resp.String()), false, true)
			return
		}
		c.rewind()
		c.send(now, proto.ModeReader(), tagModeReader)
		return
	}
	for _, a := range as {
		if a.resp.Code != proto.CodeNoGroup || !needsGroup(a.cmd) {
			continue
		}
		// 412: the server lost (or never had) the selection; select again.
		if j.regrouped {
			c.failJob(refusal(a.cmd, a.resp), false)
			return
		}
		j.regrouped, c.curGroup = true, ""
		c.rewind()
		c.advance(now)
		return
	}
	switch j.step {
	case stList:
		c.listAnswers(as)
	case stArticle:
		c.articleAnswer(as[0])
	case stGroup, stSelect:
		c.groupAnswer(now, as[0])
	case stHints:
		c.hintAnswers(now, as)
	case stFetch:
		c.fetchAnswers(now, as)
	case stDate:
		c.dateAnswer(now, as[0])
	}
}

// rewind makes the step in hand start over when it is planned again after
// a recovery (AUTHINFO, MODE READER, GROUP): a HEAD window is asked again.
func (c *Client) rewind() {
	if j := c.job; j != nil && j.step == stFetch && j.used == StrategyHEAD {
		j.next = j.window
	}
}

// recordSent registers a command that another sub-machine (Auth) already
// wrote to the output.
func (c *Client) recordSent(now time.Time, cmd proto.Command, t tag) {
	c.batch = append(c.batch, sent{cmd: cmd, tag: t})
	c.sentCount[cmd.Name()]++
	c.deadline = now.Add(c.cfg.Timeout)
}

// authAnswer passes an AUTHINFO answer to the Auth sub-machine.
func (c *Client) authAnswer(now time.Time, r proto.Response) {
	out, outcome, reason := c.auth.Handle(r, c.out)
	c.out = out
	switch outcome {
	case handshake.AuthPending:
		c.recordSent(now, proto.AuthinfoPass(c.cfg.Pass), tagAuth)
	case handshake.AuthOK:
		// The selection is not assumed to survive authentication.
		c.authenticated, c.curGroup = true, ""
		c.advance(now)
	default:
		c.fatal(fmt.Errorf("reader: AUTHINFO: %w: %s (%q)", ErrAuthFailed, reason, r.String()), false, reason != handshake.ReasonUnavailable)
	}
}

// modeReaderAnswer handles the answer to MODE READER sent after a 401.
func (c *Client) modeReaderAnswer(now time.Time, r proto.Response) {
	switch r.Code {
	case proto.CodePostingOK, proto.CodeNoPosting:
		// RFC 3977 §5.3.2: the capabilities may have changed.
		c.modeReaderDone, c.curGroup = true, ""
		c.send(now, proto.Capabilities(), tagCaps)
	case proto.CodeUnavailable:
		c.fatal(fmt.Errorf("reader: MODE READER: %w: %q", ErrUnavailable, r.String()), true, false)
	default:
		c.fatal(fmt.Errorf("reader: MODE READER: %w: %q", ErrNoReader, r.String()), false, true)
	}
}

// capsAnswer takes the capability list asked for after MODE READER and
// plans the request's step again.
func (c *Client) capsAnswer(now time.Time, a answer) {
	if a.resp.Code == proto.CodeCapabilities {
		c.caps = proto.ParseCapabilitiesLoose(proto.PayloadLines(a.block))
		c.hints = Hints{}
	} else {
		c.caps, c.hints = proto.CapabilitySet{}, Hints{Legacy: true}
	}
	c.askedH, c.askedF = false, false
	c.advance(now)
}

// listAnswers finishes GetGroups: LIST ACTIVE merged with LIST NEWSGROUPS.
func (c *Client) listAnswers(as []answer) {
	active := as[0]
	if active.resp.Code != proto.CodeListFollows {
		c.failJob(refusal(active.cmd, active.resp), false)
		return
	}
	res := GroupsResult{ID: c.job.id}
	idx := make(map[string]int)
	for _, l := range lines(active.block) {
		g, err := proto.ParseActiveLine(l)
		if err != nil {
			res.Skipped++
			continue
		}
		if _, dup := idx[g.Name]; dup {
			continue
		}
		idx[g.Name] = len(res.Groups)
		res.Groups = append(res.Groups, GroupListing{Name: g.Name, High: g.High, Low: g.Low, Status: g.Status})
	}
	// RFC 3977 §7.6.6: a server without descriptions answers 503; the
	// list is still good.
	if len(as) > 1 && as[1].resp.Code == proto.CodeListFollows {
		for _, l := range lines(as[1].block) {
			d, err := proto.ParseNewsgroupsLine(l)
			if err != nil {
				continue
			}
			if i, ok := idx[d.Name]; ok && res.Groups[i].Description == "" {
				res.Groups[i].Description = d.Description
			}
		}
	}
	slices.SortFunc(res.Groups, func(a, b GroupListing) int { return strings.Compare(a.Name, b.Name) })
	c.finish(res)
}

// lines splits a decoded block into lines without their endings.
func lines(block []byte) [][]byte {
	var out [][]byte
	for len(block) > 0 {
		i := bytes.IndexByte(block, '\n')
		if i < 0 {
			out = append(out, block)
			break
		}
		out = append(out, bytes.TrimSuffix(block[:i], []byte("\r")))
		block = block[i+1:]
	}
	return out
}

// articleAnswer finishes GetArticle.
func (c *Client) articleAnswer(a answer) {
	r := c.job.req.(GetArticle)
	switch a.resp.Code {
	case proto.CodeArticleFollows:
		info, _ := proto.ParseArticleResponse(a.resp)
		c.finish(ArticleResult{ID: c.job.id, MessageID: r.MessageID, Number: info.Number, Raw: a.block})
	case proto.CodeNoSuchID, proto.CodeNoSuchNumber:
		// RFC 3977 §6.2.1.2: 430, no article with that message-id.
		c.finish(NotFound{ID: c.job.id, Req: c.job.req, Response: a.resp})
	default:
		c.failJob(refusal(a.cmd, a.resp), false)
	}
}

// groupAnswer takes the answer to GROUP.
func (c *Client) groupAnswer(now time.Time, a answer) {
	j := c.job
	switch a.resp.Code {
	case proto.CodeGroupSelected:
		info, err := proto.ParseGroupResponse(a.resp)
		if err != nil {
			c.failJob(fmt.Errorf("reader: GROUP %s: %w: %w", j.group, ErrProtocol, err), false)
			return
		}
		c.curGroup, c.curInfo, c.curAt = j.group, info, now
		if j.step == stGroup {
			j.info, j.haveInfo = info, true
		}
		c.advance(now)
	case proto.CodeNoSuchGroup:
		// RFC 3977 §6.1.1.2: 411, no such newsgroup.
		c.curGroup = ""
		c.finish(NotFound{ID: j.id, Req: j.req, Response: a.resp})
	default:
		c.failJob(refusal(a.cmd, a.resp), false)
	}
}

// hintAnswers takes LIST HEADERS and LIST OVERVIEW.FMT answers.
func (c *Client) hintAnswers(now time.Time, as []answer) {
	for _, a := range as {
		if a.resp.Code != proto.CodeListFollows {
			continue // unknown: the choice goes on without the hint
		}
		switch a.cmd.Name() {
		case "LIST HEADERS":
			hs := []string{}
			for _, l := range lines(a.block) {
				if h, err := proto.ParseListHeadersLine(l); err == nil {
					hs = append(hs, h)
				}
			}
			c.hints.Headers = hs
		case "LIST OVERVIEW.FMT":
			f, err := proto.ParseOverviewFmt(proto.PayloadLines(a.block))
			if err != nil {
				c.hints.BadOverviewFmt = true
			} else {
				c.hints.OverviewFmt = f
			}
		}
	}
	c.advance(now)
}

// refusedCode reports answers that mean "this command is not available
// here" (RFC 3977 §3.2.1: 500 unknown, 501 syntax, 503 not supported).
func refusedCode(code int) bool {
	return code == proto.CodeUnknownCommand || code == proto.CodeSyntaxError || code == proto.CodeUnsupported
}

// emptyRange reports answers that mean "no articles there" (RFC 3977 §8.3.2:
// 423 for an empty range; 420 from older servers).
func emptyRange(code int) bool {
	return code == proto.CodeNoSuchNumber || code == proto.CodeCurrentInvalid || code == proto.CodeNoSuchID
}

// refuse demotes strategy s for the rest of the connection.
func (c *Client) refuse(s Strategy) {
	if !c.hints.refused(s) {
		c.hints.Refused = append(c.hints.Refused, s)
	}
}

// fetchAnswers takes the thread data of one batch.
func (c *Client) fetchAnswers(now time.Time, as []answer) {
	j := c.job
	if j.sums == nil {
		j.sums = make(map[int64]*Summary)
	}
	sum := func(n int64) *Summary {
		s := j.sums[n]
		if s == nil {
			s = &Summary{Number: n}
			j.sums[n] = s
		}
		return s
	}
	if j.used != StrategyHEAD {
		for _, a := range as {
			if refusedCode(a.resp.Code) {
				c.refuse(j.used)
				j.sums = nil
				c.advance(now)
				return
			}
		}
	}
	for i, a := range as {
		switch {
		case emptyRange(a.resp.Code):
			continue
		case j.used == StrategyHDR && (a.resp.Code == proto.CodeHdrFollows || a.resp.Code == proto.CodeHeadFollows):
			field := hdrFields[i]
			for _, l := range lines(a.block) {
				h, err := proto.ParseHdrLine(l)
				if err != nil || h.Number < j.lo || h.Number > j.hi {
					j.skipped++
					continue
				}
				sum(h.Number).setField(field, h.Value)
			}
		case (j.used == StrategyOVER || j.used == StrategyXOVER) && a.resp.Code == proto.CodeOverFollows:
			for _, l := range lines(a.block) {
				o, err := proto.ParseOverviewLine(l, c.hints.OverviewFmt)
				if err != nil || o.Number < j.lo || o.Number > j.hi {
					j.skipped++
					continue
				}
				s := SummaryFromOverview(o)
				j.sums[o.Number] = &s
			}
		case j.used == StrategyHEAD && a.resp.Code == proto.CodeHeadFollows:
			n := headNumber(a)
			h, _, err := proto.ParseHeaders(a.block)
			if err != nil {
				j.skipped++
				continue
			}
			s := SummaryFromHeader(n, h)
			j.sums[n] = &s
		default:
			c.failJob(refusal(a.cmd, a.resp), false)
			return
		}
	}
	if j.used == StrategyHEAD && j.next <= j.hi {
		c.advance(now)
		return
	}
	c.finishThreads()
}

// headNumber is the article number of a HEAD answer: from the 221 line, or
// the number asked for.
func headNumber(a answer) int64 {
	if info, err := proto.ParseArticleResponse(a.resp); err == nil && info.Number > 0 {
		return info.Number
	}
	if len(a.cmd.Args) > 0 {
		n, _ := strconv.ParseInt(a.cmd.Args[0], 10, 64)
		return n
	}
	return 0
}

// dateAnswer takes the Date of the newest article for GetGroupStats.
func (c *Client) dateAnswer(now time.Time, a answer) {
	j := c.job
	if refusedCode(a.resp.Code) && j.used != StrategyHEAD {
		c.refuse(j.used)
		c.advance(now)
		return
	}
	var best int64 = -1
	switch a.resp.Code {
	case proto.CodeHdrFollows:
		for _, l := range lines(a.block) {
			if h, err := proto.ParseHdrLine(l); err == nil && h.Number > best {
				if d := parseDate(h.Value); !d.IsZero() {
					best, j.date = h.Number, d
				}
			}
		}
	case proto.CodeOverFollows:
		for _, l := range lines(a.block) {
			if o, err := proto.ParseOverviewLine(l, c.hints.OverviewFmt); err == nil && o.Number > best {
				if d := parseDate(o.Date); !d.IsZero() {
					best, j.date = o.Number, d
				}
			}
		}
	case proto.CodeHeadFollows:
		if h, _, err := proto.ParseHeaders(a.block); err == nil {
			j.date = parseDate(h.Get(proto.HeaderDate))
		}
	}
	// Any other answer leaves the date unknown: the counts are still good.
	c.finishStats()
}

// finishStats answers GetGroupStats.
func (c *Client) finishStats() {
	j := c.job
	c.finish(StatsResult{ID: j.id, Group: j.group, Count: j.info.Count, Low: j.info.Low, High: j.info.High, LastDate: j.date})
}

// finishThreads answers GetThreads, GetNewArticles or GetThread.
func (c *Client) finishThreads() {
	j := c.job
	res := ThreadsResult{ID: j.id, Group: j.group, Since: j.since, Low: j.lo, High: j.hi,
		Truncated: j.truncated, Skipped: j.skipped}
	if j.hi < j.since {
		res.High = j.since
	}
	if len(j.sums) > 0 {
		res.Strategy = j.used
	}
	nums := slices.Sorted(maps.Keys(j.sums))
	for _, n := range nums {
		s := j.sums[n]
		if s.MessageID == "" {
			res.Skipped++ // nothing to thread it by
			continue
		}
		res.Articles = append(res.Articles, *s)
	}
	r, ok := j.req.(GetThread)
	if !ok {
		c.finish(res)
		return
	}
	forest := Thread(res.Articles)
	root, _ := Find(forest, r.MessageID)
	if root == nil {
		c.finish(NotFound{ID: j.id, Req: j.req})
		return
	}
	c.finish(ThreadResult{ID: j.id, Group: j.group, Root: root, High: res.High, Strategy: res.Strategy})
}

// finish emits the request's result and makes the Client idle.
func (c *Client) finish(e Event) {
	c.events = append(c.events, e)
	c.job, c.deadline = nil, time.Time{}
}

// failJob fails the request in hand; the connection stays usable.
func (c *Client) failJob(err error, retry bool) {
	if c.job == nil {
		return
	}
	c.finish(Failed{ID: c.job.id, Req: c.job.req, Err: err, Retry: retry})
}

// fatal fails the request in hand (if any) and closes: QUIT first when the
// connection is still in step (RFC 3977 §5.4).
func (c *Client) fatal(err error, retry, quit bool) {
	if c.closed {
		return
	}
	c.failJob(err, retry)
	if quit {
		c.out, _ = proto.Quit().Append(c.out)
		c.sentCount["QUIT"]++
	}
	c.closed, c.deadline, c.batch, c.answers = true, time.Time{}, nil, nil
	c.events = append(c.events, Closed{Err: err})
}

// protocolError closes on input that is not NNTP and returns the error.
func (c *Client) protocolError(err error) error {
	err = fmt.Errorf("reader: %w: %w", ErrProtocol, err)
	c.fatal(err, true, false)
	return err
}

// Timeout fails the request in hand and closes when the deadline has
// passed (machine.Conn); an early call does nothing.
func (c *Client) Timeout(now time.Time) {
	if c.closed || c.deadline.IsZero() || now.Before(c.deadline) {
		return
	}
	var err error
	switch {
	case c.reading:
		err = fmt.Errorf("reader: %w: the answer to %s stopped for %v", ErrTimeout, c.answers[len(c.answers)-1].cmd.Name(), c.cfg.Timeout)
	case len(c.answers) < len(c.batch):
		err = fmt.Errorf("reader: %w: no answer to %s within %v", ErrTimeout, c.batch[len(c.answers)].cmd.Name(), c.cfg.Timeout)
	default:
		err = fmt.Errorf("reader: %w: within %v", ErrTimeout, c.cfg.Timeout)
	}
	c.fatal(err, true, false)
}

// ReceiveEOF notes that the server closed the connection
// (machine.EOFReceiver): the request in hand fails (Retry) and the Client
// closes.
func (c *Client) ReceiveEOF(now time.Time) {
	c.fatal(fmt.Errorf("reader: %w", ErrConnClosed), true, false)
}

// Close ends the connection at the owner's wish: the request in hand, if
// any, fails (Retry), QUIT is sent and the Client is Closed.
func (c *Client) Close(now time.Time) {
	if c.closed {
		return
	}
	if c.job != nil {
		c.failJob(fmt.Errorf("reader: %w", ErrClientShutdown), true)
	}
	c.out, _ = proto.Quit().Append(c.out)
	c.sentCount["QUIT"]++
	c.closed, c.deadline, c.batch, c.answers = true, time.Time{}, nil, nil
	c.events = append(c.events, Closed{})
}

// AppendOutgoing appends the commands to send (machine.Conn).
func (c *Client) AppendOutgoing(dst []byte) []byte {
	dst = append(dst, c.out...)
	c.out = c.out[:0]
	return dst
}

// Deadline is when Timeout must be called: while answers are awaited.
func (c *Client) Deadline() (time.Time, bool) {
	if c.closed || c.deadline.IsZero() {
		return time.Time{}, false
	}
	return c.deadline, true
}

// Closed reports that the connection must be closed (machine.Conn).
func (c *Client) Closed() bool { return c.closed }

// NextEvent returns the next event for the owner.
func (c *Client) NextEvent() (Event, bool) {
	if len(c.events) == 0 {
		return nil, false
	}
	e := c.events[0]
	c.events = c.events[1:]
	return e, true
}

func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
