// Package ingest is the server side of news feeding: the sans-I/O machine
// that runs one upstream connection to the relay's ingest listener (MODE
// STREAM, CHECK, TAKETHIS per RFC 4644, and IHAVE per RFC 3977 §6.3.2).
package ingest

// Theory of operation
//
// One Ingest serves one accepted connection. It reads commands, answers
// what it can by itself, and asks its owner (the relay, which holds the
// history and the spool) about the rest through events:
//
//	peer bytes --Receive--> [command table] --Check{Seq,id}--------> owner
//	                                        --Article{Seq,data}----> owner
//	peer <--AppendOutgoing-- [response queue] <--Decide(Seq,verdict)-- owner
//	                                          <--Stored(Seq,result)--- owner
//
// Commands are dispatched by one table (table.go), keyed by the command's
// name. Every command gets exactly one response slot in a FIFO queue, in
// the order the commands arrived; responses leave only from the head of the
// queue, and only once resolved. A slot is resolved at once by the machine
// (CAPABILITIES, a malformed message-id, an invalid article), or later by the
// owner: Decide for a Check, Stored for an Article. The owner may answer in
// any order (a batch fsync acknowledges many articles at once, a history
// lookup answers at once); the queue keeps RFC 4644's rule that responses go
// out in command order. IHAVE has two responses: its slot first gets 335 (or
// 435/436), and the transferred article gets a slot of its own. Slots are
// numbered in order (the Seq of events), whether or not the owner is asked,
// so the numbers do not depend on how input was split into reads.
//
// Back-pressure. At most Config.MaxPending slots may be queued. When the
// queue is full the parser stops at the next command line and Paused reports
// true: a runtime should stop reading (and so let TCP push back on the
// peer) until an owner answer frees a slot. Bytes that still arrive are held,
// up to Config.MaxBuffered, beyond which Receive fails. The parser also stops
// after IHAVE until the owner decides, because the peer waits for 335 before
// it sends the article (RFC 3977 §6.3.2; §3.5 on pipelining).
//
// Articles. After TAKETHIS, or IHAVE's 335, the article block is decoded
// incrementally (proto.BlockDecoder: dot-unstuffing, any split) into a
// buffer that becomes Article.Data; the block is always read to its end, even
// when the article will be refused (a malformed id, over the size limit:
// the excess is decoded and discarded), so the command stream stays in step
// (RFC 4644 §2.5). The complete article is checked (article.go) and either
// refused by the machine (439/437 and a Rejected event) or handed to the
// owner. The owner prepends the relay's Path identity and stores the spool's
// wire form (proto.PrependPathIdentity, proto.AppendWire) before it answers
// Stored.
//
// Refusals that are not about one article. When the owner says the relay is
// not accepting (SetAccepting false: disk full, shutting down), CHECK draws
// 431 and IHAVE 436 without asking the owner; TAKETHIS, which has no
// temporary-failure code, draws 400 and the connection closes (the peer will
// offer it again later). Config.Unavailable makes the greeting 400 and
// closes. Ten consecutive unknown or malformed commands (500/501) draw 400
// and close, since a stream that desynchronised (article text read as
// commands) would otherwise draw a 500 per line.
//
// Time. The machine keeps these deadlines: IdleTimeout after the last byte
// in either direction when nothing is in progress (no partial input,
// nothing owed); TransferTimeout while the peer is in the middle of sending
// something (a partial command line, an article), since its last byte; for
// an article also a whole-transfer deadline from its first byte,
// ArticleTimeout plus one second per MinRate octets received, so a peer
// that drips a byte now and then cannot hold the connection (and its
// buffer) for ever; and WriteTimeout after the machine last handed out
// output. The last is the runtime's write deadline: both runtimes fail a
// write that outlasts the machine's deadline, so a peer that stops reading
// is closed and its reservations released; when the runtime calls Timeout
// after it instead, the output was written and that deadline is cleared.
// When the owner owes an answer, or the machine is paused, only the write
// deadline (and an article's) runs: the wait is the relay's, not the
// peer's. A timeout drops whatever is unanswered, sends "400 <reason>" and
// closes.
//
// Hold. The owner may hold the machine (SetHold): Paused reports true, as
// when the response queue is full, so the runtime stops reading. The relay
// holds connections that would grow its buffered article bytes past a
// global budget; an article's deadlines keep running while it is held.
//
// Budget. An article that outgrows its slab is read into fixed chunks of
// ArticleChunk octets that Config.Budget hands out, each charged before it
// is handed out, and takes back when the article is copied out to the
// owner or dropped; a chunk is never copied or doubled while the article
// grows, and chunks are reused, so article buffers hold no more than the
// budget and leave no garbage behind. When the budget refuses a chunk, the machine stops decoding
// and is Starved (Paused, so the runtime stops reading) until the owner
// calls Resume.
//
// Closing. QUIT (205), MODE READER (502, RFC 3977 §5.3: a transit-only
// server closes after it), a fatal 400, Shutdown or the peer's EOF stop the
// parser; queued responses still go out as the owner resolves them, then
// Closed reports true. After Closed, Decide and Stored are no-ops: the owner
// forgets this connection's outstanding sequence numbers.

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/proto"
)

// Defaults for the zero fields of Config.
const (
	// DefaultIdleTimeout closes an upstream connection that has had
	// nothing to do for ten minutes (a feeder that went away without
	// closing); busy feeders keep their connections in use.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultTransferTimeout is how long a peer may stall in the middle of
	// a command line or an article.
	DefaultTransferTimeout = 2 * time.Minute
	// DefaultMaxArticleSize bounds one article, dot-unstuffed, in octets.
	// The spool's wire form (proto.AppendWire) is a little larger (stuffing dots,
	// the Path identity, the terminator): keep the spool's limit above it.
	DefaultMaxArticleSize = 16 << 20
	// DefaultMaxPending bounds the responses queued for one connection.
	DefaultMaxPending = 256
	// DefaultMaxBuffered bounds the input held while paused.
	DefaultMaxBuffered = 4 << 20
	// DefaultWriteTimeout is how long output handed to the runtime may take
	// to be written.
	DefaultWriteTimeout = 2 * time.Minute
	// DefaultArticleTimeout is the time any article is granted whole,
	// before DefaultMinRate adds to it.
	DefaultArticleTimeout = 10 * time.Minute
	// DefaultMinRate is the slowest an article may arrive on average, in
	// octets per second, beyond the ArticleTimeout it is granted first:
	// 16 MiB at 1 KiB/s is over four hours.
	DefaultMinRate = 1024
	// DefaultImplementation is the IMPLEMENTATION capability's text.
	DefaultImplementation = "newsflow"
)

// maxBadCommands is how many consecutive 500/501 responses end a connection
// (innd: "Too many unrecognized commands").
const maxBadCommands = 10

// blockMaxLine is the decoder's line limit: effectively none, since the
// article size limit already bounds what is kept, and a line limit error
// would lose the block's end.
const blockMaxLine = math.MaxInt32

// Config says how an Ingest serves its peer.
type Config struct {
	// PathHost is the relay's path identity (RFC 5536 §3.1.5): it names the
	// server in the greeting, and an article whose Path already holds it
	// has looped and is rejected. Empty turns the loop check off.
	PathHost string
	// Implementation is the IMPLEMENTATION capability; DefaultImplementation
	// when empty.
	Implementation string
	// Unavailable, when not empty, makes the greeting "400 <Unavailable>"
	// and closes: the owner is not accepting connections (disk full,
	// shutting down).
	Unavailable string
	// Budget, when not nil, is charged for the chunks articles are read
	// into before they are allocated (see Budget in the theory of
	// operation); nil means no limit beyond MaxArticleSize.
	Budget Budget
	// MaxArticleSize is the largest article accepted, dot-unstuffed, in
	// octets; DefaultMaxArticleSize when zero.
	MaxArticleSize int64
	// MaxPending is the most responses queued (commands not yet answered)
	// before the machine pauses; DefaultMaxPending when zero.
	MaxPending int
	// MaxBuffered is the most input held while paused before Receive
	// fails; DefaultMaxBuffered when zero.
	MaxBuffered int
	// IdleTimeout closes a connection with nothing in progress;
	// DefaultIdleTimeout when zero.
	IdleTimeout time.Duration
	// TransferTimeout closes a connection stalled in the middle of a
	// command line or an article; DefaultTransferTimeout when zero.
	TransferTimeout time.Duration
	// ArticleTimeout and MinRate bound a whole article: it must arrive
	// within ArticleTimeout plus one second per MinRate octets, counted
	// from its first octet (DefaultArticleTimeout, DefaultMinRate when
	// zero; no whole-article limit when MinRate is negative).
	ArticleTimeout time.Duration
	MinRate        int64
	// WriteTimeout closes a connection whose output is not written within
	// it (the peer stopped reading); DefaultWriteTimeout when zero.
	WriteTimeout time.Duration
	// MaxAge and MaxFuture are the Date window of proto.ValidateOptions:
	// MaxAge 0 means no limit, MaxFuture 0 means 24 hours and a negative
	// MaxFuture turns that check off.
	MaxAge, MaxFuture time.Duration

	// AuthRequired makes every feeding command draw 480 until the peer
	// authenticates with AUTHINFO USER/PASS (auth.go); the owner checks
	// the credentials. Without it AUTHINFO is an unknown command.
	AuthRequired bool
	// StartTLS offers STARTTLS (RFC 4642); the runtime must be able to
	// perform the handshake as the server.
	StartTLS bool
	// Secure says the connection is encrypted from the first byte
	// (implicit TLS): STARTTLS is refused and AUTHINFO allowed.
	Secure bool
	// TLSRequired refuses AUTHINFO (483) on a connection not encrypted.
	TLSRequired bool
}

func (c Config) withDefaults() Config {
	if c.Implementation == "" {
		c.Implementation = DefaultImplementation
	}
	machine.Default(&c.MaxArticleSize, DefaultMaxArticleSize)
	machine.Default(&c.MaxPending, DefaultMaxPending)
	machine.Default(&c.MaxBuffered, DefaultMaxBuffered)
	machine.Default(&c.IdleTimeout, DefaultIdleTimeout)
	machine.Default(&c.TransferTimeout, DefaultTransferTimeout)
	machine.Default(&c.ArticleTimeout, DefaultArticleTimeout)
	machine.Default(&c.WriteTimeout, DefaultWriteTimeout)
	if c.MinRate == 0 { // negative: no minimum rate
		c.MinRate = DefaultMinRate
	}
	return c
}

// parseState is what the parser expects next from the peer.
type parseState uint8

const (
	stCommand   parseState = iota // a command line
	stSkipLine                    // the rest of an over-long command line, discarded
	stIHaveWait                   // nothing: IHAVE waits for the owner's Decide
	stArticle                     // the article block of TAKETHIS or IHAVE
	stTLSWait                     // nothing: 382 went out, the runtime does the TLS handshake
	stAuthWait                    // nothing: AUTHINFO PASS waits for the owner's AuthDone
	stStopped                     // nothing ever again: input is dropped
)

// current is the article being read.
type current struct {
	cmd     Cmd
	id      string
	syntax  bool   // TAKETHIS without exactly one argument: answer 501
	badID   bool   // the id fails RFC 5536 §3.1.3: answer 439
	discard bool   // decode and drop (badID, syntax, or over the size limit)
	tooBig  bool   // the article exceeded MaxArticleSize
	why     string // badID: what is wrong with the id
}

// Ingest is the sans-I/O machine for one upstream feeding connection. It
// implements machine.Conn and machine.EOFReceiver. It performs no I/O and
// never reads a clock. After any input (Receive, Timeout, ReceiveEOF,
// Decide, Stored, SetAccepting, Shutdown) drain NextEvent and AppendOutgoing
// until empty.
type Ingest struct {
	cfg Config

	state parseState
	in    []byte // unparsed input: own[:n], or the caller's p during Receive
	off   int    // parsed up to here
	own   []byte // the buffer held input lives in between calls
	lent  bool   // in is the caller's p

	arg     [1]string // fastCommand's Args
	cur     current
	art     []byte   // the article being decoded (becomes Article.Data)
	chunks  [][]byte // the article's filled chunks before art, when it outgrew its slab
	sealed  int      // octets in chunks
	inChunk bool     // art is a chunk of its own, not a piece of the slab
	starved bool     // decoding waits for the budget (Starved)
	slab    []byte   // article buffers are carved from its tail (see newArt)
	fields  []proto.HeaderField
	scratch []byte // decoder output that is discarded
	dec     *proto.BlockDecoder

	q       []slot // response queue; q[head:] are queued
	head    int
	nextSeq uint64
	ihave   uint64 // the slot stIHaveWait waits for

	out    []byte
	events []Event
	evHead int

	accepting  bool
	notReason  string // why not accepting
	streaming  bool
	bad        int // consecutive 500/501 responses
	stopping   bool
	stopReason string // the Closed reason once the queue drains (EOF)
	closed     bool

	lastRecv, lastSend time.Time
	writeDue           time.Time // output handed out must be written by then; zero when none
	artStart           time.Time // first octet of the article being read
	artIn              int64     // octets of it received so far (before unstuffing)
	hold               bool      // the owner holds the machine (SetHold)
	authed             bool      // AUTHINFO succeeded (auth.go)
	user               string    // AUTHINFO USER's name, kept for PASS
	secure             bool      // the connection is encrypted
	counters           Counters
}

// New returns the machine for a connection accepted at now; its greeting is
// ready in AppendOutgoing (RFC 3977 §5.1: 200, or 400 and close when
// cfg.Unavailable is set).
func New(now time.Time, cfg Config) *Ingest {
	g := &Ingest{
		cfg:       cfg.withDefaults(),
		dec:       proto.NewBlockDecoder(blockMaxLine),
		nextSeq:   1,
		accepting: true,
		lastRecv:  now,
		lastSend:  now,
	}
	g.secure = g.cfg.Secure
	if g.cfg.Unavailable != "" {
		g.out = appendStatus(g.out, proto.CodeUnavailable, "", g.cfg.Unavailable)
		g.writeDue = now.Add(g.cfg.WriteTimeout)
		g.state = stStopped
		g.finish("unavailable: " + g.cfg.Unavailable)
		return g
	}
	host := g.cfg.PathHost
	if host == "" {
		host = "newsflow"
	}
	g.out = appendStatus(g.out, proto.CodePostingOK, "", host+" "+g.cfg.Implementation+" ready (transit mode)")
	g.writeDue = now.Add(g.cfg.WriteTimeout)
	return g
}

// Receive takes bytes from the peer (machine.Conn). It fails only when the
// runtime went on reading while Paused and the held input passed
// Config.MaxBuffered; the machine has then sent 400 and closed.
func (g *Ingest) Receive(now time.Time, p []byte) error {
	if g.closed || g.state == stStopped || len(p) == 0 {
		return nil
	}
	g.lastRecv = now
	if g.held() == 0 {
		// Nothing held: parse straight from p and keep only the rest.
		g.in, g.off, g.lent = p, 0, true
	} else {
		g.own = append(g.own, p...)
		g.in = g.own
	}
	g.advance(now)
	g.keep()
	if n := g.held(); n > g.cfg.MaxBuffered {
		g.abort(now, "input buffer overflow")
		return fmt.Errorf("ingest: %d octets of input held while paused exceed the limit of %d: the runtime must stop reading while Paused", n, g.cfg.MaxBuffered)
	}
	return nil
}

// ReceiveEOF tells the machine the peer closed its side
// (machine.EOFReceiver). Partial input is dropped; responses still owed go
// out as the owner resolves them, then the machine closes.
func (g *Ingest) ReceiveEOF(now time.Time) {
	if g.closed {
		return
	}
	g.stop()
	g.stopping, g.stopReason = true, "peer closed the connection"
	g.release(now)
}

// Timeout tells the machine its deadline passed (machine.Conn); an early or
// repeated call is a no-op.
func (g *Ingest) Timeout(now time.Time) {
	if !g.writeDue.IsZero() && !now.Before(g.writeDue) {
		// The runtime would have failed a write still pending at the
		// write deadline: what was handed out is written.
		g.writeDue = time.Time{}
	}
	if g.closed {
		return
	}
	if d, ok := g.articleDeadline(); ok && !now.Before(d) {
		g.abort(now, fmt.Sprintf("article transfer too slow (%d octets in %s)", g.artIn, now.Sub(g.artStart).Round(time.Second)))
		return
	}
	d, ok := g.peerDeadline()
	if !ok || now.Before(d) {
		return
	}
	if g.midTransfer() {
		g.abort(now, "transfer timeout")
	} else {
		g.abort(now, "idle timeout")
	}
}

// Deadline is when Timeout must next be called (machine.Conn): the
// nearest of the peer's deadline, the article's and the write deadline.
func (g *Ingest) Deadline() (time.Time, bool) {
	d, ok := g.peerDeadline()
	if ad, aok := g.articleDeadline(); aok && (!ok || ad.Before(d)) {
		d, ok = ad, true
	}
	if !g.writeDue.IsZero() && (!ok || g.writeDue.Before(d)) {
		d, ok = g.writeDue, true
	}
	return d, ok
}

// articleDeadline is when the article being read must be complete.
func (g *Ingest) articleDeadline() (time.Time, bool) {
	if g.closed || g.state != stArticle || g.cfg.MinRate < 0 {
		return time.Time{}, false
	}
	grace := g.cfg.ArticleTimeout + time.Duration(float64(g.artIn)/float64(g.cfg.MinRate)*float64(time.Second))
	return g.artStart.Add(grace), true
}

// peerDeadline is the idle or transfer deadline.
func (g *Ingest) peerDeadline() (time.Time, bool) {
	if g.closed {
		return time.Time{}, false
	}
	last := g.lastRecv
	if g.lastSend.After(last) {
		last = g.lastSend
	}
	switch {
	case g.midTransfer():
		return last.Add(g.cfg.TransferTimeout), true
	case g.state == stCommand && g.held() == 0 && g.queued() == 0:
		return last.Add(g.cfg.IdleTimeout), true
	}
	return time.Time{}, false
}

// midTransfer reports that the peer is in the middle of sending something
// the machine is ready to take.
func (g *Ingest) midTransfer() bool {
	switch g.state {
	case stArticle, stSkipLine:
		return true
	case stCommand:
		return g.held() > 0 && g.queued() < g.cfg.MaxPending
	}
	return false
}

// AppendOutgoing appends the bytes to write to the peer and forgets them
// (machine.Conn).
func (g *Ingest) AppendOutgoing(dst []byte) []byte {
	dst = append(dst, g.out...)
	g.out = g.out[:0]
	return dst
}

// Closed reports that the machine is finished with the connection
// (machine.Conn): write what AppendOutgoing still holds, then close.
func (g *Ingest) Closed() bool { return g.closed }

// Paused reports that the machine takes no more input for now: its response
// queue is full (Config.MaxPending), or IHAVE waits for the owner's verdict.
// A runtime should not read from the peer while it is true; it becomes
// false after the owner's Decide or Stored.
func (g *Ingest) Paused() bool {
	if g.closed {
		return false
	}
	return g.hold || g.starved || g.state == stIHaveWait || g.state == stTLSWait || g.state == stAuthWait || g.state == stCommand && g.queued() >= g.cfg.MaxPending
}

// SetHold holds the machine (Paused reports true, so the runtime stops
// reading) or lets it go; see Hold in the theory of operation. Input that
// still arrives while held is parsed as usual.
func (g *Ingest) SetHold(now time.Time, hold bool) { g.hold = hold }

// Buffered is how many octets the machine holds for the peer now that
// Config.Budget was not charged for: input not yet parsed, and the
// article being decoded while it is still in its slab.
func (g *Ingest) Buffered() int {
	if g.inChunk {
		return g.held()
	}
	return g.held() + len(g.art)
}

// Pending is the number of responses queued: commands received and not yet
// answered on the wire.
func (g *Ingest) Pending() int { return g.queued() }

// Streaming reports that the peer sent MODE STREAM (RFC 4644 §2.3). CHECK
// and TAKETHIS are accepted with or without it, as STREAMING is advertised.
func (g *Ingest) Streaming() bool { return g.streaming }

// Counters returns what this connection has offered and what became of it.
func (g *Ingest) Counters() Counters { return g.counters }

// NextEvent returns the next event for the owner, or false when there is
// none. Drain it after every input.
func (g *Ingest) NextEvent() (Event, bool) {
	if g.evHead == len(g.events) {
		return nil, false
	}
	e := g.events[g.evHead]
	g.events[g.evHead] = nil
	g.evHead++
	if g.evHead == len(g.events) {
		g.events, g.evHead = g.events[:0], 0
	}
	return e, true
}

func (g *Ingest) emit(e Event) { g.events = append(g.events, e) }

// Decide answers the Check with sequence number seq. It fails if no Check
// with that number awaits a verdict, or v is not a Verdict; after Closed it
// does nothing.
func (g *Ingest) Decide(now time.Time, seq uint64, v Verdict) error {
	if g.closed {
		return nil
	}
	s, err := g.lookup(seq, slotCheck, "Decide")
	if err != nil {
		return err
	}
	if v < Want || v > Defer {
		return fmt.Errorf("ingest: Decide(%d): unknown verdict %d", seq, v)
	}
	s.waiting = false
	switch s.cmd {
	case CmdCheck: // RFC 4644 §2.4
		switch v {
		case Want:
			s.code, s.text = proto.CodeCheckSend, "Send it"
		case Refuse:
			s.code, s.text = proto.CodeCheckNotWanted, "Not wanted"
			g.counters.Refused++
		case Defer:
			s.code, s.text = proto.CodeCheckLater, "Try again later"
			g.counters.Deferred++
		}
	case CmdIHave: // RFC 3977 §6.3.2
		switch v {
		case Want:
			s.code, s.text = proto.CodeSendArticle, "Send it; end with <CR-LF>.<CR-LF>"
		case Refuse:
			s.code, s.text = proto.CodeNotWanted, "Not wanted"
			g.counters.Refused++
		case Defer:
			s.code, s.text = proto.CodeTransferLater, "Try again later"
			g.counters.Deferred++
		}
		if g.state == stIHaveWait && g.ihave == seq {
			g.state = stCommand
			if v == Want {
				g.startArticle(CmdIHave, s.id)
			}
		}
	}
	g.release(now)
	g.advance(now)
	g.keep()
	return nil
}

// Stored answers the Article with sequence number seq, once the owner has
// made it durable (or failed to). It fails if no Article with that number
// awaits a result; after Closed it does nothing.
func (g *Ingest) Stored(now time.Time, seq uint64, r Result) error {
	if g.closed {
		return nil
	}
	s, err := g.lookup(seq, slotArticle, "Stored")
	if err != nil {
		return err
	}
	if r.Outcome < StoreAccepted || r.Outcome > StoreLater {
		return fmt.Errorf("ingest: Stored(%d): unknown outcome %d", seq, r.Outcome)
	}
	s.waiting = false
	if s.cmd == CmdTakeThis { // RFC 4644 §2.5
		switch r.Outcome {
		case StoreAccepted:
			s.code, s.text = proto.CodeTakeThisOK, "Transferred"
			g.counters.Accepted++
		case StoreDuplicate:
			s.code, s.text = proto.CodeTakeThisReject, "Duplicate"
			g.counters.Refused++
		case StoreRejected:
			s.code, s.text = proto.CodeTakeThisReject, orText(r.Reason, "Rejected")
			g.counters.Rejected[RejectOwner]++
		case StoreLater:
			// TAKETHIS has no "try later" (431 is CHECK's only): close
			// the connection so the peer keeps the article and offers it
			// again (RFC 3977 §3.2.1: 400, then close).
			s.code, s.echo, s.text = proto.CodeUnavailable, false, orText(r.Reason, "Cannot store articles now")
			s.close, s.reason = true, "cannot store: "+s.text
			g.counters.Deferred++
			g.stop()
		}
	} else { // IHAVE after the transfer, RFC 3977 §6.3.2
		switch r.Outcome {
		case StoreAccepted:
			s.code, s.text = proto.CodeTransferOK, "Article transferred OK"
			g.counters.Accepted++
		case StoreDuplicate:
			s.code, s.text = proto.CodeTransferReject, "Duplicate"
			g.counters.Refused++
		case StoreRejected:
			s.code, s.text = proto.CodeTransferReject, orText(r.Reason, "Rejected")
			g.counters.Rejected[RejectOwner]++
		case StoreLater:
			s.code, s.text = proto.CodeTransferLater, orText(r.Reason, "Try again later")
			g.counters.Deferred++
		}
	}
	g.release(now)
	g.advance(now)
	g.keep()
	return nil
}

// SetAccepting tells the machine whether the relay accepts articles now.
// While it does not (disk full, shutting down), CHECK draws 431 and IHAVE
// 436 with reason, and TAKETHIS draws "400 reason" and closes. Commands
// already handed to the owner are not affected.
func (g *Ingest) SetAccepting(now time.Time, accepting bool, reason string) {
	g.accepting, g.notReason = accepting, reason
}

// Shutdown ends the connection gracefully: no more commands are read (an
// article in progress is dropped), responses already owed go out as the
// owner resolves them, then "400 reason" and close.
func (g *Ingest) Shutdown(now time.Time, reason string) {
	if g.closed || g.state == stStopped {
		return // already closing
	}
	g.stop()
	g.push(now, slot{code: proto.CodeUnavailable, text: orText(reason, "Shutting down"), close: true, reason: "shutdown: " + reason})
}

// stop ends parsing for good and drops held input.
func (g *Ingest) stop() {
	g.state = stStopped
	g.dropChunks()
	g.in, g.off, g.lent = nil, 0, false
	g.own, g.art = nil, nil
	g.starved = false
}

// abort drops every unanswered command, sends "400 reason" and closes.
func (g *Ingest) abort(now time.Time, reason string) {
	if g.closed {
		return
	}
	g.stop()
	g.q, g.head = nil, 0
	g.out = appendStatus(g.out, proto.CodeUnavailable, "", capitalize(reason))
	g.lastSend = now
	g.writeDue = now.Add(g.cfg.WriteTimeout)
	g.finish(reason)
}

// finish marks the machine closed and tells the owner.
func (g *Ingest) finish(reason string) {
	g.closed, g.stopping = true, true
	g.q, g.head = nil, 0
	g.emit(Closed{Reason: reason})
}

// held is the number of input octets not yet parsed.
func (g *Ingest) held() int { return len(g.in) - g.off }

// keep makes the unparsed input the machine's own before the caller's
// buffer is reused, and compacts it.
func (g *Ingest) keep() {
	switch {
	case g.lent:
		g.own = append(g.own[:0], g.in[g.off:]...)
		g.in, g.off, g.lent = g.own, 0, false
	case g.off == len(g.in):
		g.own = g.own[:0]
		g.in, g.off = g.own, 0
	case g.off > len(g.in)/2:
		n := copy(g.own, g.in[g.off:])
		g.own = g.own[:n]
		g.in, g.off = g.own, 0
	}
}

// advance parses as much held input as the state allows.
func (g *Ingest) advance(now time.Time) {
	for !g.closed {
		switch g.state {
		case stCommand:
			if g.queued() >= g.cfg.MaxPending {
				return // paused
			}
			src := g.in[g.off:]
			i := indexLF(src)
			if i < 0 && len(src) < proto.MaxCommandLine {
				return // a partial line: wait for more
			}
			if i < 0 || i+1 > proto.MaxCommandLine {
				// RFC 3977 §3.1: at most 512 octets with CRLF. Answer
				// now and skip to the line's end.
				g.syntaxError(now, proto.CodeSyntaxError, "Command line too long")
				if g.state == stCommand {
					g.state = stSkipLine
				}
				continue
			}
			g.off += i + 1
			g.dispatch(now, src[:i+1])
		case stSkipLine:
			src := g.in[g.off:]
			i := indexLF(src)
			if i < 0 {
				g.off = len(g.in)
				return
			}
			g.off += i + 1
			g.state = stCommand
		case stArticle:
			if !g.readArticle(now) {
				return
			}
		default: // stIHaveWait, stTLSWait, stAuthWait, stStopped
			return
		}
	}
}

func indexLF(b []byte) int { return bytes.IndexByte(b, '\n') }

// orText returns s, or def when s is empty.
func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// capitalize upper-cases the first letter of an ASCII reason.
func capitalize(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}
