// Package feed is newsfeed's streaming client: the sans-I/O machine for one
// outgoing connection that offers articles to a peer with CHECK/TAKETHIS
// (RFC 4644), or IHAVE (RFC 3977 §6.3.2) when the peer cannot stream.
package feed

// Theory of operation
//
// A Feed starts on a connection that machine/handshake has set up (greeting,
// CAPABILITIES, MODE STREAM, AUTHINFO, STARTTLS): Config.Streaming is the
// handshake's Ready.Streaming, and the handshake's Leftover bytes, if any,
// go to Receive first. One connection's queues are inside the machine:
//
//	offer-queue  articles from Offer, not yet sent; sent as CHECK, or as
//	             TAKETHIS in ModeTakeThis, or as IHAVE in ModeIHave
//	take-queue   articles a 238 asked for, waiting for their TAKETHIS;
//	             served before the offer-queue
//	recv-queue   commands sent and not yet answered, in order (RFC 4644
//	             §2.1: replies come in command order); at most Window of them
//	retry        commands that drew 480 or 500 while the recv-queue drained
//
// After every reply line the Feed looks the code up in the reply table
// (table.go) for the command at the head of the recv-queue, checks the
// message-id, acts, and then pumps: it sends from the take-queue, then the
// offer-queue, while the recv-queue has room (a 238 frees the CHECK's slot
// and its TAKETHIS takes it, so wanted articles never wait behind new
// CHECKs). Because decisions are made one line at a time, the output and
// events do not depend on how the input was split.
//
// ModeIHave sends one IHAVE at a time: IHAVE <id>, 335, the article, then
// 235/436/437. A peer that advertised streaming but answers CHECK with 500
// or 501 gets the same treatment after the outstanding replies drained.
//
// innfeed's no-CHECK mode: every CHECK answer (238 wanted, 431/438 not) and
// every answer to a TAKETHIS sent without CHECK (239 wanted; 439, 431, 438
// not) feeds a low-pass filter of time constant NoCheckFilter articles
// (innfeed.conf no-check-filter). Above NoCheckHigh percent the Feed sends
// TAKETHIS without CHECK; below NoCheckLow it asks again. Both switches
// emit ModeChanged.
//
// A 480 stops new commands; when the outstanding replies are in, the Feed
// runs AUTHINFO USER/PASS (handshake.Reauth, the step every client machine
// shares) and sends the commands that drew 480 again. A second 480 after
// authenticating, or a 480 without credentials, closes the Feed.
//
// Nothing offered is lost: every article comes back in exactly one
// Accepted, Refused, Rejected, Deferred or Requeue event. Whenever the Feed
// closes other than gracefully (400, a protocol error, a timeout, EOF,
// Abort) everything queued or sent-but-unanswered is given back in one
// Requeue before Closed. Close(now) is graceful: queued-but-unsent articles
// are requeued at once, the replies still due (and the TAKETHIS for
// articles they want) drain, then QUIT, 205, Closed.
//
// Time is an input. While commands are outstanding, the deadline is
// ResponseTimeout after the last reply (or after the first command sent
// when none was outstanding); at it the Feed closes with ReasonTimeout and
// requeues. With nothing to send and IdleTimeout set, the Feed sends QUIT
// IdleTimeout after it became idle.
//
// Output is segments (machine.SegmentSender): command lines as bytes, and
// article bodies as tokens that the runtime writes from the spool itself.
// AppendOutgoing expands tokens through Config.Bodies for runtimes (and the
// transcript replay harness) that want plain bytes.

import (
	"fmt"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/proto"
)

// Defaults for zero Config fields.
const (
	DefaultWindow          = 100               // outstanding commands
	DefaultResponseTimeout = 300 * time.Second // innfeed's response-timeout
	DefaultNoCheckHigh     = 95.0              // innfeed's no-check-high, percent
	DefaultNoCheckLow      = 90.0              // innfeed's no-check-low, percent
	DefaultNoCheckFilter   = 50.0              // innfeed's no-check-filter, articles
)

// Config says how a Feed works. The zero value streams nothing (IHAVE)
// with the defaults above; set Streaming from the handshake.
type Config struct {
	// Streaming is the handshake's Ready.Streaming: MODE STREAM was
	// accepted, so CHECK/TAKETHIS are used; otherwise IHAVE.
	Streaming bool
	// Window is the most commands sent and not yet answered; it is also
	// how many articles the Feed holds (WantMore). DefaultWindow when <= 0.
	Window int
	// ResponseTimeout is how long the peer may stay silent while commands
	// are outstanding. DefaultResponseTimeout when <= 0.
	ResponseTimeout time.Duration
	// IdleTimeout, when positive, sends QUIT after this long with nothing to
	// send or await.
	IdleTimeout time.Duration
	// User and Pass answer a 480 (RFC 4643); no User means a 480 closes.
	User, Pass string
	// NoCheckOff disables the switch to TAKETHIS-only mode.
	NoCheckOff bool
	// NoCheckHigh and NoCheckLow are the percentages of wanted articles
	// above which CHECK is skipped and below which it is used again;
	// NoCheckFilter is the filter's time constant in articles. Zero means
	// the default; NoCheckLow above NoCheckHigh is lowered to it.
	NoCheckHigh, NoCheckLow, NoCheckFilter float64
	// Bodies gives article bodies to AppendOutgoing. Runtimes that write
	// segments (AppendSegments) do not need it.
	Bodies machine.BodySource
}

// phase is where the Feed is in its life; see the theory of operation.
type phase uint8

const (
	phRun   phase = iota // sending and receiving
	phDrain              // after a 480 or a 500 to CHECK: no new commands until the replies are in
	phAuth               // AUTHINFO exchange running
	phQuit               // QUIT sent, waiting for 205 or EOF
	phDone               // closed: Closed was emitted
)

// entry is a command in the recv-queue (or one to send again).
type entry struct {
	art     Article
	cmd     cmd
	noCheck bool // TAKETHIS sent without CHECK: its answer feeds the filter
}

// seg is a piece of pending output: bytes out[start:end], or a token.
type seg struct {
	start, end int
	token      string
	size       int64
}

// Feed is the sans-I/O machine for one outgoing feed connection
// (machine.Conn, machine.SegmentSender, machine.EOFReceiver). It performs
// no I/O and never reads a clock. After every input (Receive, ReceiveEOF,
// Timeout, Offer, Close, Abort) drain AppendSegments (or AppendOutgoing)
// and NextEvent until empty.
type Feed struct {
	cfg   Config
	mode  Mode
	phase phase
	auth  handshake.Reauth // 480 -> drain -> AUTHINFO -> resend (RFC 4643 §2.1)

	closing     bool   // Close or the idle timer: QUIT once drained
	closeReason Reason // ReasonQuit or ReasonIdle, for the graceful end
	fallback    bool   // a 500 to CHECK came: switch to IHAVE when drained

	in     proto.LineBuffer
	offerQ deque[Article]
	takeQ  deque[Article]
	recvQ  deque[entry]
	retry  []entry

	out    []byte
	segs   []seg
	handed bool // out's bytes were handed to AppendSegments

	events []Event
	evHead int
	taken  []Article // the current block of Accepted events' Articles (see accepted)

	credit    int       // articles asked for by WantMore and not yet offered
	rate      float64   // filtered percentage of wanted articles
	progress  time.Time // last reply, or the first command sent after silence
	idleSince time.Time
	idle      bool
	stats     Stats
}

// New returns a Feed on a connection set up at now. Its first event is
// WantMore{Window}.
func New(now time.Time, cfg Config) *Feed {
	machine.Default(&cfg.Window, DefaultWindow)
	machine.Default(&cfg.ResponseTimeout, DefaultResponseTimeout)
	machine.Default(&cfg.NoCheckHigh, DefaultNoCheckHigh)
	machine.Default(&cfg.NoCheckLow, DefaultNoCheckLow)
	if cfg.NoCheckLow > cfg.NoCheckHigh {
		cfg.NoCheckLow = cfg.NoCheckHigh
	}
	if cfg.NoCheckFilter < 1 {
		cfg.NoCheckFilter = DefaultNoCheckFilter
	}
	f := &Feed{
		cfg:       cfg,
		in:        proto.LineBuffer{Name: "response line"},
		mode:      ModeIHave,
		auth:      handshake.NewReauth(cfg.User, cfg.Pass, false),
		idle:      true,
		idleSince: now,
	}
	if cfg.Streaming {
		f.mode = ModeCheck
	}
	f.ask()
	return f
}

// Mode returns how the Feed offers articles now.
func (f *Feed) Mode() Mode { return f.mode }

// Stats returns the Feed's counters.
func (f *Feed) Stats() Stats {
	s := f.stats
	s.InFlight = f.held()
	return s
}

// Offer gives the Feed an article to send. Call it after WantMore asked
// for articles (more is accepted, and queued). An article that cannot be
// offered (a malformed message-id, no token) comes back at once as Rejected
// with Code 0; one offered to a closing or closed Feed as Requeue.
func (f *Feed) Offer(now time.Time, a Article) {
	f.reclaim()
	f.stats.Offered++
	if f.credit > 0 {
		f.credit--
	}
	if err := sendable(a); err != nil {
		f.stats.Rejected++
		f.emit(Rejected{Article: a, Reason: err.Error()})
		return
	}
	if f.phase == phDone || f.closing {
		f.requeue([]Article{a})
		return
	}
	f.offerQ.pushBack(a)
	f.pump(now)
	f.ask()
	f.after(now)
}

// sendable checks that a can go on a command line and has a body.
func sendable(a Article) error {
	if err := proto.ValidNNTPMessageID(a.MessageID); err != nil {
		return fmt.Errorf("feed: cannot offer: %w", err)
	}
	if a.Token == "" || a.Size <= 0 {
		return fmt.Errorf("feed: cannot offer %s: no stored article (token %q, %d bytes)", a.MessageID, a.Token, a.Size)
	}
	return nil
}

// Receive takes bytes from the peer (machine.Conn). An error means the peer
// broke the protocol: the Feed has requeued everything and is Closed.
func (f *Feed) Receive(now time.Time, p []byte) error {
	f.reclaim()
	if f.phase == phDone {
		return fmt.Errorf("feed: %d bytes received after close", len(p))
	}
	f.in.Add(p)
	for f.phase != phDone {
		line, ok, err := f.in.Next()
		if err != nil {
			return f.protocolError(err.Error())
		}
		if !ok {
			break
		}
		if err := f.reply(now, line); err != nil {
			return err
		}
		f.pump(now)
		f.ask()
	}
	f.after(now)
	return nil
}

// reply handles one response line.
func (f *Feed) reply(now time.Time, line []byte) error {
	f.progress = now
	switch f.phase {
	case phAuth:
		return f.authReply(now, line)
	case phQuit:
		// RFC 3977 §5.4: 205, then the server closes. Whatever it says,
		// the Feed is leaving.
		f.finish()
		return nil
	}
	c := cmdNone
	if f.recvQ.len() > 0 {
		c = f.recvQ.front().cmd
	}
	// The common answers (238, 239, 438, 235) are handled from the line's
	// bytes; the parsed Response, whose text is a new string, is built
	// only where it is needed (failures, rejects, warnings).
	code, text, ok := statusLine(line)
	if !ok {
		code = codeGarbage
	}
	resp := func() proto.Response { r, _ := proto.ParseResponse(line); return r }
	r := lookup(c, code)
	switch r.act {
	case actGarbage:
		_, perr := proto.ParseResponse(line)
		if perr == nil {
			perr = fmt.Errorf("feed: malformed response %q", clip(line))
		}
		return f.protocolError(perr.Error())
	case actUnexpected:
		return f.protocolError(fmt.Sprintf("response %q to %s", clip(line), c))
	}
	var e entry
	if c != cmdNone {
		e = *f.recvQ.front()
		if r.id && string(firstWord(text)) != e.art.MessageID {
			// The peer answers for another article than the one asked
			// about: its idea of what was accepted cannot be trusted.
			return f.protocolError(fmt.Sprintf("response %q to %s %s: message-id mismatch", clip(line), c, e.art.MessageID))
		}
	}
	switch r.act {
	case actUnavailable:
		f.fail(ReasonUnavailable, resp().String())
		return nil
	case actDenied:
		f.fail(ReasonDenied, resp().String())
		return nil
	case actOutOfStep:
		f.fail(ReasonNoStreaming, fmt.Sprintf("%s to TAKETHIS %s", resp(), e.art.MessageID))
		return nil
	case actNoTransfer:
		f.fail(ReasonNoTransfer, fmt.Sprintf("%s to IHAVE %s", resp(), e.art.MessageID))
		return nil
	case actSendBody:
		// RFC 3977 §6.3.2: the article follows 335; the same entry now
		// waits for the second response.
		f.recvQ.front().cmd = cmdIHaveBody
		f.writeBody(e.art)
		return nil
	}
	f.recvQ.popFront()
	switch r.act {
	case actWanted:
		f.sample(now, true)
		f.takeQ.pushBack(e.art)
	case actAccepted:
		if e.noCheck {
			f.sample(now, true)
		}
		f.stats.Accepted++
		f.emit(f.accepted(e.art))
	case actRefused:
		if c == cmdCheck {
			f.sample(now, false)
		}
		f.stats.Refused++
		f.emit(Refused{Article: e.art})
	case actRejected:
		if e.noCheck {
			f.sample(now, false)
		}
		f.stats.Rejected++
		f.emit(Rejected{Article: e.art, Code: code, Reason: resp().Text})
	case actDeferred:
		if c == cmdCheck {
			f.sample(now, false)
		}
		f.stats.Deferred++
		f.emit(Deferred{Article: e.art, Code: code})
	case actOddReject:
		// RFC 4644 §2.5: TAKETHIS is answered 239 or 439 only. The
		// article was sent, so it counts as rejected: a peer that answers
		// out of protocol has still seen it.
		if e.noCheck {
			f.sample(now, false)
		}
		f.emit(Warning{Article: e.art, Response: resp().String(),
			Text: fmt.Sprintf("%d to TAKETHIS is not allowed by RFC 4644 §2.5; treated as a reject", code)})
		f.stats.Rejected++
		f.emit(Rejected{Article: e.art, Code: code, Reason: resp().Text})
	case actAuth:
		if err := f.auth.Need(); err != nil {
			f.recvQ.pushFront(e)
			f.fail(ReasonAuth, fmt.Sprintf("%s to %s %s: %s", resp(), c, e.art.MessageID, err))
			return nil
		}
		f.retry = append(f.retry, e)
		f.phase = phDrain
	case actFallback:
		// RFC 4644 §2.4 presumes STREAMING; this peer does not stream
		// after all. Offer the article again, with IHAVE.
		f.retry = append(f.retry, entry{art: e.art, cmd: cmdCheck})
		f.fallback, f.phase = true, phDrain
	}
	if f.phase == phDrain && f.recvQ.len() == 0 {
		f.settle(now)
	}
	return nil
}

// authReply passes a response to the AUTHINFO sub-machine.
func (f *Feed) authReply(now time.Time, line []byte) error {
	resp, err := proto.ParseResponse(line)
	if err != nil {
		return f.protocolError(err.Error())
	}
	start := len(f.out)
	out, outcome, reason := f.auth.Handle(resp, f.out)
	f.out = out
	f.noteBytes(start)
	switch outcome {
	case handshake.AuthOK:
		f.phase = phDrain
		f.settle(now)
	case handshake.AuthFailed:
		r := ReasonAuth
		if reason == handshake.ReasonUnavailable {
			r = ReasonUnavailable
		}
		f.fail(r, fmt.Sprintf("AUTHINFO: %s: %s", reason, resp))
	}
	return nil
}

// settle runs when the recv-queue has drained in phDrain: authenticate if
// a 480 asked for it, else switch to IHAVE if a 500 asked for that, and
// put the commands that drew them back in front of the queues.
func (f *Feed) settle(now time.Time) {
	if f.auth.State() == handshake.ReauthDraining {
		start := len(f.out)
		out, err := f.auth.Drained(f.out)
		if err != nil {
			f.fail(ReasonAuth, err.Error())
			return
		}
		f.out = out
		f.noteBytes(start)
		f.phase, f.progress = phAuth, now
		return
	}
	if f.fallback {
		f.fallback = false
		if f.mode != ModeIHave {
			f.emit(ModeChanged{From: f.mode, To: ModeIHave, Why: "the peer answered CHECK with 500/501"})
			f.mode = ModeIHave
		}
	}
	f.phase = phRun
	if f.mode == ModeIHave {
		// Articles a 238 asked for must now be offered with IHAVE.
		for f.takeQ.len() > 0 {
			a := f.takeQ.popFront()
			f.offerQ.pushFront(a)
		}
	}
	for i := len(f.retry) - 1; i >= 0; i-- {
		e := f.retry[i]
		if e.cmd == cmdTakeThis && f.mode != ModeIHave {
			f.takeQ.pushFront(e.art)
		} else {
			f.offerQ.pushFront(e.art)
		}
	}
	f.retry = f.retry[:0]
	if f.closing {
		f.requeueOffers()
	}
}

// pump sends what the queues hold while the window has room, and QUIT
// when a closing Feed has drained.
func (f *Feed) pump(now time.Time) {
	if f.phase != phRun {
		return
	}
	if f.mode == ModeIHave {
		if f.recvQ.len() == 0 && f.offerQ.len() > 0 {
			f.send(now, entry{art: f.offerQ.popFront(), cmd: cmdIHave})
		}
	} else {
		for f.recvQ.len() < f.cfg.Window {
			if f.takeQ.len() > 0 {
				f.send(now, entry{art: f.takeQ.popFront(), cmd: cmdTakeThis})
			} else if f.offerQ.len() > 0 {
				a := f.offerQ.popFront()
				if f.mode == ModeTakeThis {
					f.send(now, entry{art: a, cmd: cmdTakeThis, noCheck: true})
				} else {
					f.send(now, entry{art: a, cmd: cmdCheck})
				}
			} else {
				break
			}
		}
	}
	if f.closing && f.held() == 0 {
		f.writeString("QUIT\r\n")
		f.phase, f.progress = phQuit, now
	}
}

// send writes one command (and, for TAKETHIS, the article) and puts it on
// the recv-queue.
func (f *Feed) send(now time.Time, e entry) {
	if f.recvQ.len() == 0 {
		f.progress = now
	}
	switch e.cmd {
	case cmdCheck:
		f.writeCommand("CHECK ", e.art.MessageID)
		f.stats.Checks++
	case cmdTakeThis:
		// RFC 4644 §2.5: the article follows the command line at once.
		f.writeCommand("TAKETHIS ", e.art.MessageID)
		f.writeBody(e.art)
		f.stats.TakeThis++
	case cmdIHave:
		f.writeCommand("IHAVE ", e.art.MessageID)
		f.stats.IHave++
	}
	f.recvQ.pushBack(e)
}

// sample feeds one answer to the no-CHECK filter and switches mode when it
// crosses a threshold (innfeed.conf: no-check-high, no-check-low,
// no-check-filter).
func (f *Feed) sample(now time.Time, wanted bool) {
	if f.cfg.NoCheckOff || f.mode == ModeIHave || f.fallback {
		return
	}
	s := 0.0
	if wanted {
		s = 100
	}
	f.rate += (s - f.rate) / f.cfg.NoCheckFilter
	switch {
	case f.mode == ModeCheck && f.rate > f.cfg.NoCheckHigh:
		f.emit(ModeChanged{From: ModeCheck, To: ModeTakeThis, Percent: f.rate,
			Why: fmt.Sprintf("wanted %.1f%% > no-check-high %.1f%%", f.rate, f.cfg.NoCheckHigh)})
		f.mode = ModeTakeThis
	case f.mode == ModeTakeThis && f.rate < f.cfg.NoCheckLow:
		f.emit(ModeChanged{From: ModeTakeThis, To: ModeCheck, Percent: f.rate,
			Why: fmt.Sprintf("wanted %.1f%% < no-check-low %.1f%%", f.rate, f.cfg.NoCheckLow)})
		f.mode = ModeCheck
	}
}

// ReceiveEOF notes that the peer closed the connection
// (machine.EOFReceiver): after QUIT that is the end; otherwise everything
// outstanding is requeued.
func (f *Feed) ReceiveEOF(now time.Time) {
	f.reclaim()
	switch f.phase {
	case phDone:
		return
	case phQuit:
		f.finish()
		return
	}
	f.fail(ReasonPeerClosed, fmt.Sprintf("with %d articles held", f.held()))
}

// Timeout tells the Feed its deadline has come (machine.Conn); an early or
// repeated call is a no-op.
func (f *Feed) Timeout(now time.Time) {
	d, ok := f.Deadline()
	if !ok || now.Before(d) {
		return
	}
	f.reclaim()
	switch {
	case f.phase == phQuit:
		f.finish() // no 205 in time: close anyway
	case f.phase == phAuth || f.recvQ.len() > 0:
		f.fail(ReasonTimeout, fmt.Sprintf("no response within %v", f.cfg.ResponseTimeout))
	default:
		f.closing, f.closeReason = true, ReasonIdle
		f.pump(now)
	}
}

// Close starts a graceful end: articles not yet sent are requeued at once,
// the replies still due drain (with the TAKETHIS of articles they want),
// then QUIT; Closed{ReasonQuit} follows the peer's 205 or EOF. Calling it
// again, or after the Feed closed, does nothing.
func (f *Feed) Close(now time.Time) {
	f.reclaim()
	if f.phase == phDone || f.closing {
		return
	}
	f.closing, f.closeReason = true, ReasonQuit
	f.requeueOffers()
	f.pump(now)
}

// Abort closes the Feed at once, requeueing everything: for the owner, when
// the connection failed (a write error, the runtime's Run returned) or a
// stored article could not be read. detail says why.
func (f *Feed) Abort(now time.Time, detail string) {
	f.reclaim()
	f.fail(ReasonAborted, detail)
}

// Deadline is when Timeout must next be called (machine.Conn).
func (f *Feed) Deadline() (time.Time, bool) {
	switch {
	case f.phase == phDone:
		return time.Time{}, false
	case f.phase == phQuit || f.phase == phAuth || f.recvQ.len() > 0:
		return f.progress.Add(f.cfg.ResponseTimeout), true
	case f.idle && f.cfg.IdleTimeout > 0:
		return f.idleSince.Add(f.cfg.IdleTimeout), true
	}
	return time.Time{}, false
}

// Closed reports that the Feed is finished with the connection
// (machine.Conn).
func (f *Feed) Closed() bool { return f.phase == phDone }

// NextEvent returns the next event for the owner.
func (f *Feed) NextEvent() (Event, bool) {
	if f.evHead == len(f.events) {
		if f.evHead > 0 {
			clear(f.events)
			f.events, f.evHead = f.events[:0], 0
		}
		return nil, false
	}
	e := f.events[f.evHead]
	f.evHead++
	return e, true
}

// AppendSegments appends the output to write, in order
// (machine.SegmentSender): command lines as bytes, article bodies as
// tokens. The bytes stay valid until the next input.
func (f *Feed) AppendSegments(dst []machine.Segment) []machine.Segment {
	for _, s := range f.segs {
		if s.token != "" {
			dst = append(dst, machine.Segment{Token: s.token, Size: s.size})
		} else {
			dst = append(dst, machine.Segment{Bytes: f.out[s.start:s.end:s.end]})
		}
	}
	if len(f.segs) > 0 {
		f.handed = true
		f.segs = f.segs[:0]
	}
	return dst
}

// AppendOutgoing appends the output as bytes (machine.Conn), reading
// article bodies from Config.Bodies. If a body cannot be read, the Feed
// aborts: it requeues everything and closes.
func (f *Feed) AppendOutgoing(dst []byte) []byte {
	if len(f.segs) == 0 {
		return dst
	}
	for _, s := range f.segs {
		if s.token == "" {
			dst = append(dst, f.out[s.start:s.end]...)
			continue
		}
		var err error
		dst, err = machine.AppendSegmentBytes(dst, []machine.Segment{{Token: s.token, Size: s.size}}, f.cfg.Bodies)
		if err != nil {
			// The command line went out without its article: the stream
			// is broken, nothing after it can be sent.
			f.segs, f.out, f.handed = f.segs[:0], f.out[:0], false
			f.fail(ReasonAborted, err.Error())
			return dst
		}
	}
	f.segs, f.out, f.handed = f.segs[:0], f.out[:0], false
	return dst
}

// finish ends a graceful close.
func (f *Feed) finish() {
	f.fail(f.closeReason, "")
}

// fail closes the Feed: everything it holds is requeued and Closed is
// emitted. Output already produced stays pending (the runtime writes it
// before it closes), so that what goes out does not depend on how the
// input was split; the articles it carries are requeued all the same.
func (f *Feed) fail(r Reason, detail string) {
	if f.phase == phDone {
		return
	}
	var arts []Article
	f.recvQ.drain(func(e entry) { arts = append(arts, e.art) })
	for _, e := range f.retry {
		arts = append(arts, e.art)
	}
	f.retry = nil
	f.takeQ.drain(func(a Article) { arts = append(arts, a) })
	f.offerQ.drain(func(a Article) { arts = append(arts, a) })
	if len(arts) > 0 {
		f.requeue(arts)
	}
	f.phase, f.idle = phDone, false
	f.emit(Closed{Reason: r, Detail: detail})
}

// protocolError fails with ReasonProtocol and returns the error for Receive.
func (f *Feed) protocolError(detail string) error {
	f.fail(ReasonProtocol, detail)
	return Closed{Reason: ReasonProtocol, Detail: detail}
}

// requeueOffers gives back the articles not yet sent.
func (f *Feed) requeueOffers() {
	if f.offerQ.len() == 0 {
		return
	}
	arts := make([]Article, 0, f.offerQ.len())
	f.offerQ.drain(func(a Article) { arts = append(arts, a) })
	f.requeue(arts)
}

func (f *Feed) requeue(arts []Article) {
	f.stats.Requeued += int64(len(arts))
	f.emit(Requeue{Articles: arts})
}

// held is the number of articles the Feed holds.
func (f *Feed) held() int {
	return f.offerQ.len() + f.takeQ.len() + f.recvQ.len() + len(f.retry)
}

// ask emits WantMore when the Feed has room beyond what it asked for.
func (f *Feed) ask() {
	if f.phase == phDone || f.closing {
		return
	}
	if room := f.cfg.Window - f.held() - f.credit; room > 0 {
		f.credit += room
		f.emit(WantMore{N: room})
	}
}

// after notes, at the end of an input, when the Feed became idle.
func (f *Feed) after(now time.Time) {
	idle := f.phase == phRun && !f.closing && f.held() == 0
	if idle && !f.idle {
		f.idleSince = now
	}
	f.idle = idle
}

func (f *Feed) emit(e Event) { f.events = append(f.events, e) }

// acceptedBlock is how many Accepted events' Articles are allocated at once.
const acceptedBlock = 64

// accepted returns the Accepted event of a: its Article is the next slot
// of a block allocated acceptedBlock at a time. A slot is written once
// and never reused (the owner may keep the event), so a full block is
// left to the garbage collector and a new one taken.
func (f *Feed) accepted(a Article) Accepted {
	if len(f.taken) == cap(f.taken) {
		f.taken = make([]Article, 0, acceptedBlock)
	}
	f.taken = append(f.taken, a)
	return Accepted{Article: &f.taken[len(f.taken)-1]}
}

// reclaim reuses the output buffer once its bytes were handed out, at the
// start of an input (AppendSegments' bytes are valid until then).
func (f *Feed) reclaim() {
	if f.handed && len(f.segs) == 0 {
		f.out, f.handed = f.out[:0], false
	}
}

// noteBytes records out[start:] as pending output.
func (f *Feed) noteBytes(start int) {
	end := len(f.out)
	if end == start {
		return
	}
	if n := len(f.segs); n > 0 && f.segs[n-1].token == "" && f.segs[n-1].end == start {
		f.segs[n-1].end = end
		return
	}
	f.segs = append(f.segs, seg{start: start, end: end})
}

func (f *Feed) writeString(s string) {
	start := len(f.out)
	f.out = append(f.out, s...)
	f.noteBytes(start)
}

// writeCommand writes verb (with its space), the message-id and CRLF; Offer
// checked that the id fits a command line (RFC 3977 §3.6).
func (f *Feed) writeCommand(verb, id string) {
	start := len(f.out)
	f.out = append(f.out, verb...)
	f.out = append(f.out, id...)
	f.out = append(f.out, '\r', '\n')
	f.noteBytes(start)
}

// writeBody queues the stored article as a token segment.
func (f *Feed) writeBody(a Article) {
	f.segs = append(f.segs, seg{token: a.Token, size: a.Size})
	f.stats.BodyBytes += a.Size
}

func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// statusLine reads a status line as proto.ParseResponse does (RFC 3977
// §3.2: three digits of class 1-5, then the end or a space or tab and
// text; a trailing CRLF or LF removed), without allocating: ok is false
// exactly where ParseResponse fails.
func statusLine(line []byte) (code int, text []byte, ok bool) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	if len(line) < 3 || line[0] < '1' || line[0] > '5' {
		return 0, nil, false
	}
	for _, c := range line[:3] {
		if c < '0' || c > '9' {
			return 0, nil, false
		}
		code = code*10 + int(c-'0')
	}
	if len(line) == 3 {
		return code, nil, true
	}
	if line[3] != ' ' && line[3] != '\t' {
		return 0, nil, false
	}
	return code, line[4:], true
}

// firstWord is the text up to the first space or tab: the message-id of
// an RFC 4644 answer (as proto.Response.StreamID).
func firstWord(text []byte) []byte {
	for i, c := range text {
		if c == ' ' || c == '\t' {
			return text[:i]
		}
	}
	return text
}
