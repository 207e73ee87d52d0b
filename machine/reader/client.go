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
//	PostArticle     POST -> 340 -> the article    240 -> PostResult;
//	                (dot-stuffed)                 440, 441 -> Failed with
//	                                              the server's reason
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
// the whole block. Before a step looks at its answers, an answer that
// concerns the connection (400, 483, 480, 401, 412) is acted on instead, for
// the whole batch: the table and its RFC rules are in answers.go. The
// answers of each step are read in steps.go; there a command refused as
// unknown or unsupported (500, 501, 503) demotes the thread-data strategy
// for the rest of the connection (HDR -> OVER -> HEAD) and the step is
// planned again with the next one.
//
// Every batch sets a deadline Config.Timeout after it was sent; received
// bytes push it back (a large article keeps the connection alive while it
// flows). Timeout past the deadline fails the request (Retry) and closes: a
// connection whose answer is late is out of step for good.

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/proto"
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout     = 30 * time.Second // per answer, measured from the last progress
	DefaultMaxResponse = 16 << 20         // largest multi-line answer (a group list); each connection may hold one
	// DefaultMaxArticle is the largest answer to ARTICLE, HEAD or BODY: one
	// article, which a page shows whole. A connection holds at most one
	// answer, and none once it is handed on or the connection closed.
	DefaultMaxArticle = 4 << 20
	// DefaultMaxLine is the longest line of a multi-line answer: an
	// article's header may carry a 100 KB Subject or a 300 KB References
	// (unfolded in OVER), which must not take a group down.
	DefaultMaxLine = 1 << 20
	// DefaultMaxOverviewLine is the longest OVER or HDR line used; a longer
	// one is skipped (counted in Skipped), its article left out of the lists.
	DefaultMaxOverviewLine = 64 << 10
	DefaultThreadLimit     = 1000        // most articles one GetThreads fetches
	DefaultHeadWindow      = 16          // HEAD commands pipelined at a time
	DefaultGroupMaxAge     = time.Second // a selection younger than this is reused
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

	Timeout time.Duration // per answer; DefaultTimeout when 0
	MaxLine int           // longest line in a multi-line answer; DefaultMaxLine when 0
	// MaxOverviewLine: OVER and HDR lines longer than this are skipped;
	// DefaultMaxOverviewLine when 0.
	MaxOverviewLine int
	MaxResponse     int // largest multi-line answer in bytes; DefaultMaxResponse when 0
	MaxArticle      int // largest answer to ARTICLE, HEAD or BODY in bytes; DefaultMaxArticle when 0; at most MaxResponse
	ThreadLimit     int // default Limit of thread requests; DefaultThreadLimit when 0
	HeadWindow      int // HEAD commands in flight; DefaultHeadWindow when 0

	// GroupMaxAge is how long a GROUP answer stays good for the next request
	// on the same group; after that GROUP is sent again for fresh marks
	// (INN's nnrpd serves no article above the high-water mark it read at
	// GROUP time). DefaultGroupMaxAge when 0; negative means never: GROUP
	// only when the group differs.
	GroupMaxAge time.Duration
}

func (c Config) withDefaults() Config {
	machine.Default(&c.Timeout, DefaultTimeout)
	machine.Default(&c.MaxLine, DefaultMaxLine)
	machine.Default(&c.MaxOverviewLine, DefaultMaxOverviewLine)
	machine.Default(&c.MaxResponse, DefaultMaxResponse)
	machine.Default(&c.MaxArticle, DefaultMaxArticle)
	c.MaxArticle = min(c.MaxArticle, c.MaxResponse)
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
	stNone     step = iota
	stList          // LIST ACTIVE + LIST NEWSGROUPS sent
	stArticle       // ARTICLE sent
	stGroup         // GROUP sent for the request's marks
	stSelect        // GROUP sent only to select the group again
	stHints         // LIST HEADERS / LIST OVERVIEW.FMT sent
	stFetch         // the strategy's thread-data commands sent
	stDate          // the newest article's Date asked
	stPost          // POST sent
	stPostBody      // the article sent after 340
)

// job is the request in hand.
type job struct {
	id        uint64
	req       Request
	group     string
	since     int64
	until     int64 // GetThreads.Until: the highest number wanted (0: the group's high mark)
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
	blkMax  int    // the most it may hold: Config.MaxArticle or MaxResponse

	job *job

	reauth         handshake.Reauth // 480 -> AUTHINFO -> the step again
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
		reauth:    handshake.NewReauth(cfg.User, cfg.Pass, false),
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
	c.reauth = handshake.NewReauth(cfg.User, cfg.Pass, ready.Authenticated)
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
	case PostArticle:
		if err := validPost(r); err != nil {
			c.events = append(c.events, Failed{ID: id, Req: req, Err: fmt.Errorf("reader: %w: %w", ErrBadRequest, err)})
			return nil
		}
	case GetArticle:
		if err := proto.ValidNNTPMessageID(r.MessageID); err != nil {
			c.events = append(c.events, Failed{ID: id, Req: req, Err: fmt.Errorf("reader: %w: %w", ErrBadRequest, err)})
			return nil
		}
	case GetGroupStats:
		j.group = r.Group
	case GetThreads:
		j.group, j.since, j.until, j.limit = r.Group, r.Since, r.Until, r.Limit
	case GetNewArticles:
		j.group, j.since, j.until, j.limit = r.Group, r.Since, r.Until, r.Limit
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
	case GetGroups, GetArticle, PostArticle:
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
	case PostArticle:
		// RFC 3977 §6.3.1: POST, and the article after 340.
		c.sendJob(now, stPost, proto.Post())
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
		if j.until > 0 {
			j.hi = min(j.hi, j.until)
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
			c.reading, c.blk, c.blkMax = true, []byte{}, c.cfg.MaxResponse
			switch cmd.Verb {
			case "ARTICLE", "HEAD", "BODY": // RFC 3977 §6.2: one article
				c.blkMax = c.cfg.MaxArticle
			}
			c.dec.Reset()
			continue
		}
		c.answered(now)
	}
	return nil
}

// readBlock decodes buffered bytes of the block being read.
func (c *Client) readBlock() (bool, error) {
	// Grow the block by doubling, never far past MaxResponse: append's
	// own growth (1.25x for large slices) allocated five times the limit
	// for every answer that reached it.
	if in := len(c.in.Peek()); cap(c.blk)-len(c.blk) < in {
		more := min(max(in, len(c.blk)), max(in, c.blkMax+in-len(c.blk)))
		c.blk = slices.Grow(c.blk, more)
	}
	out, n, done, err := c.dec.Decode(c.blk, c.in.Peek())
	c.blk = out
	c.in.Skip(n)
	if err != nil {
		return false, fmt.Errorf("answer to %s: %w", c.answers[len(c.answers)-1].cmd.Name(), err)
	}
	if len(c.blk) > c.blkMax {
		return false, fmt.Errorf("answer to %s exceeds %d bytes: %w",
			c.answers[len(c.answers)-1].cmd.Name(), c.blkMax, proto.ErrLineTooLong)
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

// jobAnswers handles the answers of a step: first one that concerns the
// connection, if any (answers.go), then the step's own (steps.go).
func (c *Client) jobAnswers(now time.Time, as []answer) {
	j := c.job
	if j == nil {
		return
	}
	if a, act := connAnswer(as); act != connStep {
		c.recover(now, a, act)
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
	case stPost, stPostBody:
		c.postAnswer(now, as[0])
	}
}

// recordSent registers a command that another sub-machine (Auth) already
// wrote to the output.
func (c *Client) recordSent(now time.Time, cmd proto.Command, t tag) {
	c.batch = append(c.batch, sent{cmd: cmd, tag: t})
	c.sentCount[cmd.Name()]++
	c.deadline = now.Add(c.cfg.Timeout)
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
	c.reading, c.blk = false, nil // a closed connection holds no answer
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
	c.reading, c.blk = false, nil // a closed connection holds no answer
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
