package download

// Theory of operation
//
// A Fetch is one NNTP reader connection after machine/handshake has set it
// up (greeting, MODE READER, STARTTLS, AUTHINFO); the handshake's Leftover
// bytes go to Receive first. The owner gives it requests (Request, at most
// Pipeline unanswered at a time), and it sends, for each:
//
//	GROUP <group>      when the request names a group that is not the
//	                   current one
//	BODY <message-id>  RFC 3977 §6.2.3
//
// without waiting for earlier answers: commands are pipelined (RFC 3977
// §3.5 allows it; responses come back in command order). The Fetch keeps
// the commands it sent in a queue and matches every response line to the
// head of the queue.
//
// A 222 (or 220) answer starts a body. Body bytes are never collected: each
// run of bytes received goes straight through proto.YencDecoder, which
// removes dot-stuffing, finds the terminating "." line, decodes yEnc and
// updates the CRC-32 in one pass, writing into the Fetch's output buffer;
// the decoded bytes leave at once as a Data event with their file offset
// (=ypart begin=). The decoder says how many input bytes the body used, so
// the bytes after the terminator - the next pipelined response - are read
// as a status line again. A body whose first lines are not yEnc goes to
// proto.UUDecoder as well until one of the two finds its header; a body
// with neither is reported bad at its end.
//
// At the terminator the part is verified (size and pcrc32/crc32 against
// =yend) and the request ends in SegmentOK or SegmentBad. Garbage in a body
// (bad escapes, data past the declared size, a broken header) is reported
// once and the decoder skips to the terminator, so the connection stays in
// step for the next response. 430 and 423 end a request with NotFound;
// 502/481 and other single-line answers with RequestFailed; 400 closes the
// connection (ReasonUnavailable). Every request gets exactly one Result or
// appears in ConnClosed.Pending.
//
// 480 (RFC 4643 §2.1, "authentication required") to GROUP or BODY stops new
// commands; the requests that drew it are kept. When every command sent has
// been answered, the Fetch runs AUTHINFO USER/PASS (handshake.Reauth, the
// step every client machine shares) and, on 281, sends those requests again,
// then the ones that waited. A 480 without credentials, a refused AUTHINFO,
// or a 480 after authenticating closes with ReasonAuth.
//
// Time is an input: while a response is due, the deadline is Timeout after
// the last bytes received (or after the first command sent into silence).
// A server that stalls, even in the middle of a body, is closed with
// ReasonTimeout at that deadline. Close asks for QUIT once every request
// has been answered.
//
// Output buffer: decoded bytes of one Receive never outnumber its input, so
// the Fetch keeps one buffer of the largest input size and reuses it on the
// next input; Data events slice it, which is why they stay valid only until
// the next input.

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/proto"
)

// Fetch defaults.
const (
	DefaultFetchTimeout = 60 * time.Second // NZBGet's ArticleTimeout
	// maxStatusLine is the longest status line accepted, CRLF included.
	// RFC 3977 §3.1 allows 512 octets; some servers send longer texts.
	maxStatusLine = 4 * proto.MaxResponseLine
	// decSlack is room beyond the input size in the output buffer: a UU
	// line decoded in an earlier input may still wait to be written.
	decSlack = 128
	// MaxBody bounds a body whose size nothing trustworthy declares (no
	// NZB bytes=); a yEnc header may lower it, never raise it.
	MaxBody = 64 << 20
)

// bodyLimit is how many wire bytes the current body may take before it
// counts as endless: twice what the NZB (bytes=) or, when that is absent,
// the yEnc header (=ypart, capped at MaxBody) declares, plus 1 MiB; MaxBody
// when neither does. A server that never ends a body is cut there instead
// of being read for ever (a fast one would fill a disk in minutes).
func (f *Fetch) bodyLimit() int64 {
	declared := f.cur.Bytes
	if p := f.yenc.Part(); declared <= 0 && p.HasHeader && p.End >= p.Begin {
		declared = min(p.PartSize(), MaxBody)
	}
	if declared <= 0 {
		return MaxBody
	}
	return 2*declared + 1<<20
}

// FetchConfig says how a Fetch works; zero fields take the defaults.
type FetchConfig struct {
	Pipeline   int           // most requests unanswered at a time; DefaultPipeline when 0
	Timeout    time.Duration // silence allowed while a response is due; DefaultFetchTimeout when 0
	User, Pass string        // credentials for a 480; no User means a 480 closes the Fetch
}

// cmdKind is the kind of a command sent.
type cmdKind uint8

const (
	cmdGroup cmdKind = iota + 1
	cmdBody
	cmdAuth
	cmdQuit
)

// fphase is where the Fetch is in its life.
type fphase uint8

const (
	fpRun   fphase = iota // sending and receiving
	fpDrain               // a 480 came: no new commands until every answer is in
	fpAuth                // AUTHINFO running
	fpQuit                // QUIT sent
	fpDone                // ConnClosed emitted
)

// encoding of the current body.
type encoding uint8

const (
	encUnknown encoding = iota // no header seen yet: both decoders read
	encYenc
	encUU
)

// request is a Request and its progress.
type request struct {
	Request
	id     string // "<...>"
	resend bool   // it drew 480: send it again after AUTHINFO
}

// sentCmd is a command waiting for its response.
type sentCmd struct {
	kind cmdKind
	req  *request
}

// FetchStats counts a Fetch's work.
type FetchStats struct {
	Requests int   // Request calls accepted
	Bodies   int   // bodies received (good or bad)
	BodyIn   int64 // bytes of bodies received, as on the wire
	Decoded  int64 // bytes of data decoded
	Groups   int   // GROUP commands sent
}

// Fetch is the sans-I/O machine for one download connection
// (machine.Conn, machine.EOFReceiver); see the theory of operation. It
// performs no I/O and never reads a clock. After every input (Receive,
// ReceiveEOF, Timeout, Request, Close, Abort) drain AppendOutgoing and
// NextEvent until empty.
type Fetch struct {
	cfg   FetchConfig
	phase fphase
	auth  handshake.Reauth // 480 -> drain -> AUTHINFO -> resend (RFC 4643 §2.1)

	closing bool // Close was called

	reqs    []*request // unanswered, in request order
	unsent  []*request // accepted but not yet sent (after a 480, while draining/authenticating)
	sent    []sentCmd  // commands awaiting responses, in order
	sentOff int
	group   string // the group the server has (or will have) selected

	out     []byte // bytes to write
	partial []byte // a status line split across inputs

	inBody bool
	enc    encoding
	cur    *request
	yenc   proto.YencDecoder
	uu     proto.UUDecoder
	uuOut  int64  // UU bytes handed out for the current body
	uuCRC  uint32 // their CRC-32
	bodyIn int64  // wire bytes of the current body so far
	dec    []byte // output buffer of the current input

	events   []FetchEvent
	evHead   int
	dataLive bool // Data events not yet drained reference dec

	progress time.Time
	stats    FetchStats
}

// NewFetch returns a Fetch for a connection that is ready at now.
func NewFetch(now time.Time, cfg FetchConfig) *Fetch {
	if cfg.Pipeline <= 0 {
		cfg.Pipeline = DefaultPipeline
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultFetchTimeout
	}
	return &Fetch{cfg: cfg, progress: now, auth: handshake.NewReauth(cfg.User, cfg.Pass, false)}
}

// Free is how many more requests the Fetch takes now.
func (f *Fetch) Free() int {
	if f.phase == fpDone || f.phase == fpQuit || f.closing {
		return 0
	}
	return f.cfg.Pipeline - len(f.reqs)
}

// Request asks for a segment. It fails when the Fetch is full (Free is 0),
// closing or closed, or when the message-id or group cannot be sent as a
// command argument.
func (f *Fetch) Request(now time.Time, r Request) error {
	if f.Free() <= 0 {
		return fmt.Errorf("download: fetch %s: no free request slot (pipeline %d, closing %v)", r.Segment, f.cfg.Pipeline, f.closing || f.phase >= fpQuit)
	}
	id := r.MessageID
	if !strings.HasPrefix(id, "<") {
		id = "<" + id + ">"
	}
	if _, err := proto.Body(id).Append(nil); err != nil {
		return fmt.Errorf("download: fetch %s: message-id %q: %w", r.Segment, r.MessageID, err)
	}
	if r.Group != "" {
		if _, err := proto.Group(r.Group).Append(nil); err != nil {
			return fmt.Errorf("download: fetch %s: group %q: %w", r.Segment, r.Group, err)
		}
	}
	q := &request{Request: r, id: id}
	f.reqs = append(f.reqs, q)
	f.stats.Requests++
	if f.phase == fpRun {
		f.send(now, q)
	} else {
		f.unsent = append(f.unsent, q)
	}
	return nil
}

// Close ends the connection gracefully: no more requests; QUIT once the
// outstanding ones are answered.
func (f *Fetch) Close(now time.Time) {
	if f.phase == fpDone || f.closing {
		return
	}
	f.closing = true
	f.maybeQuit(now)
}

// Abort closes the connection at once (the owner could not go on, e.g. a
// write to the output file failed): ConnClosed with ReasonAborted.
func (f *Fetch) Abort(now time.Time, detail string) {
	f.finish(ReasonAborted, proto.Response{}, detail)
}

// Receive takes bytes from the server.
func (f *Fetch) Receive(now time.Time, p []byte) error {
	if f.phase == fpDone {
		return fmt.Errorf("download: fetch: %d bytes received after close", len(p))
	}
	if len(p) == 0 {
		return nil
	}
	f.progress = now
	f.prepare(len(p))
	for len(p) > 0 && f.phase != fpDone {
		if f.inBody {
			p = p[f.body(now, p):]
			continue
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(f.partial)+len(p) > maxStatusLine {
				return f.protocol(fmt.Errorf("status line of more than %d octets: %w", maxStatusLine, proto.ErrLineTooLong))
			}
			f.partial = append(f.partial, p...)
			return nil
		}
		line := p[:i+1]
		p = p[i+1:]
		if len(f.partial) > 0 {
			f.partial = append(f.partial, line...)
			line = f.partial
		}
		if len(line) > maxStatusLine {
			return f.protocol(fmt.Errorf("status line of more than %d octets: %w", maxStatusLine, proto.ErrLineTooLong))
		}
		err := f.status(now, line)
		f.partial = f.partial[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

// ReceiveEOF tells the Fetch that the server closed the connection.
func (f *Fetch) ReceiveEOF(now time.Time) {
	if f.phase == fpQuit {
		f.finish(ReasonQuit, proto.Response{}, "")
		return
	}
	f.finish(ReasonEOF, proto.Response{}, "")
}

// Timeout closes the Fetch with ReasonTimeout when a response is overdue.
func (f *Fetch) Timeout(now time.Time) {
	if d, ok := f.Deadline(); ok && !now.Before(d) {
		f.finish(ReasonTimeout, proto.Response{}, fmt.Sprintf("no data for %v with %d commands unanswered", f.cfg.Timeout, f.outstanding()))
	}
}

// Deadline is when Timeout must be called: Timeout after the last progress
// while a response is due.
func (f *Fetch) Deadline() (time.Time, bool) {
	if f.phase == fpDone || f.outstanding() == 0 {
		return time.Time{}, false
	}
	return f.progress.Add(f.cfg.Timeout), true
}

// AppendOutgoing appends the commands to write and forgets them.
func (f *Fetch) AppendOutgoing(dst []byte) []byte {
	dst = append(dst, f.out...)
	f.out = f.out[:0]
	return dst
}

// Closed reports that the Fetch is finished with the connection.
func (f *Fetch) Closed() bool { return f.phase == fpDone }

// NextEvent returns the next event; false when there is none.
func (f *Fetch) NextEvent() (FetchEvent, bool) {
	if f.evHead == len(f.events) {
		f.events, f.evHead = f.events[:0], 0
		f.dataLive = false
		return nil, false
	}
	e := f.events[f.evHead]
	f.events[f.evHead] = nil
	f.evHead++
	return e, true
}

// Stats returns the counters so far.
func (f *Fetch) Stats() FetchStats { return f.stats }

// Pending is the number of requests not yet answered.
func (f *Fetch) Pending() int { return len(f.reqs) }

// ---- internals ----

func (f *Fetch) emit(e FetchEvent) { f.events = append(f.events, e) }

// outstanding counts the commands whose answers are due, the body being
// read included.
func (f *Fetch) outstanding() int {
	n := len(f.sent) - f.sentOff
	if f.inBody {
		n++
	}
	return n
}

// prepare makes room in the output buffer for the decode of n input bytes.
// A buffer that undrained Data events still reference is not reused.
func (f *Fetch) prepare(n int) {
	if f.dataLive || cap(f.dec) < n+decSlack {
		f.dec = make([]byte, 0, max(n+decSlack, 2*cap(f.dec)))
		f.dataLive = false
		return
	}
	f.dec = f.dec[:0]
}

// push records a command sent; the deadline starts with the first command
// sent into silence.
func (f *Fetch) push(now time.Time, c sentCmd) {
	if f.outstanding() == 0 {
		f.progress = now
		f.sent, f.sentOff = f.sent[:0], 0
	}
	f.sent = append(f.sent, c)
}

// send writes the commands for a request: GROUP if needed, then BODY.
func (f *Fetch) send(now time.Time, q *request) {
	if q.Group != "" && q.Group != f.group {
		f.out, _ = proto.Group(q.Group).Append(f.out) // checked in Request
		f.group = q.Group
		f.stats.Groups++
		f.push(now, sentCmd{kind: cmdGroup, req: q})
	}
	f.out, _ = proto.Body(q.id).Append(f.out)
	f.push(now, sentCmd{kind: cmdBody, req: q})
}

// answered removes a request from reqs.
func (f *Fetch) answered(q *request) {
	for i, r := range f.reqs {
		if r == q {
			f.reqs = append(f.reqs[:i], f.reqs[i+1:]...)
			return
		}
	}
}

// protocol closes the Fetch for a protocol error and returns it.
func (f *Fetch) protocol(err error) error {
	err = fmt.Errorf("download: fetch: %w", err)
	f.finish(ReasonProtocol, proto.Response{}, err.Error())
	return err
}

// finish emits ConnClosed with every unanswered request and closes.
func (f *Fetch) finish(r Reason, resp proto.Response, detail string) {
	if f.phase == fpDone {
		return
	}
	f.phase = fpDone
	f.inBody = false
	ev := ConnClosed{Reason: r, Response: resp, Detail: detail}
	for _, q := range f.reqs {
		ev.Pending = append(ev.Pending, q.Segment)
	}
	f.reqs, f.unsent = nil, nil
	f.sent, f.sentOff = nil, 0
	f.emit(ev)
}

// maybeQuit sends QUIT when Close was called and nothing is outstanding.
func (f *Fetch) maybeQuit(now time.Time) {
	if f.closing && f.phase == fpRun && len(f.reqs) == 0 && f.outstanding() == 0 {
		f.out, _ = proto.Quit().Append(f.out)
		f.phase = fpQuit
		f.push(now, sentCmd{kind: cmdQuit})
	}
}

// status handles one status line: the response to the command at the
// head of the sent queue.
func (f *Fetch) status(now time.Time, line []byte) error {
	if f.outstanding() == 0 {
		return f.protocol(fmt.Errorf("response %q with no command outstanding", clip(line)))
	}
	resp, err := proto.ParseResponse(line)
	if err != nil {
		return f.protocol(err)
	}
	c := f.sent[f.sentOff]
	f.sentOff++
	switch c.kind {
	case cmdGroup:
		return f.groupResponse(now, c.req, resp)
	case cmdBody:
		return f.bodyResponse(now, c.req, resp)
	case cmdAuth:
		f.authResponse(now, resp)
	case cmdQuit:
		// RFC 3977 §5.4: 205, then the server closes; any answer ends it.
		f.finish(ReasonQuit, resp, "")
	}
	return nil
}

// groupResponse handles the answer to GROUP (RFC 3977 §6.1.1). Only 480
// and 400 matter: BODY by message-id works in any group, so 411 (no such
// group) just forgets the current group.
func (f *Fetch) groupResponse(now time.Time, q *request, r proto.Response) error {
	switch {
	case r.Code == proto.CodeGroupSelected:
	case r.Code == proto.CodeAuthRequired:
		f.group = ""
		f.need480(q)
	case r.Code == proto.CodeUnavailable:
		f.finish(ReasonUnavailable, r, "")
	case r.Class() == 4 || r.Class() == 5:
		f.group = ""
	default:
		return f.protocol(fmt.Errorf("GROUP %s: unexpected response %q", q.Group, r.String()))
	}
	f.afterAnswer(now)
	return nil
}

// bodyResponse handles the answer to BODY (RFC 3977 §6.2.3).
func (f *Fetch) bodyResponse(now time.Time, q *request, r proto.Response) error {
	switch r.Code {
	case proto.CodeBodyFollows, proto.CodeArticleFollows:
		// 220 is not an answer to BODY, but a server that sends the
		// whole article is understood: the decoders skip header lines.
		if info, err := proto.ParseArticleResponse(r); err == nil && strings.HasPrefix(info.MessageID, "<") &&
			!strings.EqualFold(info.MessageID, q.id) {
			return f.protocol(fmt.Errorf("BODY %s answered for %s: out of step", q.id, info.MessageID))
		}
		q.resend = false // its GROUP may have drawn 480; the body came all the same
		f.startBody(q)
		return nil
	case proto.CodeNoSuchID, proto.CodeNoSuchNumber:
		f.answered(q)
		f.emit(NotFound{Segment: q.Segment, Response: r})
	case proto.CodeAuthRequired:
		f.need480(q)
	case proto.CodeUnavailable:
		f.finish(ReasonUnavailable, r, "")
		return nil
	default:
		if c := r.Class(); c != 4 && c != 5 {
			// 1xx, 2xx or 3xx: possibly multi-line; the stream is lost.
			return f.protocol(fmt.Errorf("BODY %s: unexpected response %q", q.id, r.String()))
		}
		f.answered(q)
		f.emit(RequestFailed{Segment: q.Segment, Response: r})
	}
	f.afterAnswer(now)
	return nil
}

// need480 notes a 480 (RFC 4643 §2.1) for a request: no new commands until
// the answers are in, then AUTHINFO, then the request again.
func (f *Fetch) need480(q *request) {
	q.resend = true
	if f.phase == fpRun {
		f.phase = fpDrain
	}
}

// afterAnswer moves on after a single-line answer or a body's end: start
// AUTHINFO once a 480 drained, or QUIT when closing.
func (f *Fetch) afterAnswer(now time.Time) {
	if f.phase == fpDrain && f.outstanding() == 0 {
		if err := f.auth.Need(); err != nil {
			why := "480 and no credentials"
			if errors.Is(err, handshake.ErrAuthAgain) {
				why = "480 after authenticating"
			}
			f.finish(ReasonAuth, proto.Response{Code: proto.CodeAuthRequired}, why)
			return
		}
		var err error
		f.out, err = f.auth.Drained(f.out)
		if err != nil {
			f.finish(ReasonAuth, proto.Response{}, err.Error())
			return
		}
		f.phase = fpAuth
		f.push(now, sentCmd{kind: cmdAuth})
		return
	}
	f.maybeQuit(now)
}

// authResponse feeds the AUTHINFO exchange and, when it succeeds, sends the
// requests that drew 480 and those that waited, in request order.
func (f *Fetch) authResponse(now time.Time, r proto.Response) {
	var outcome handshake.AuthOutcome
	var why handshake.Reason
	f.out, outcome, why = f.auth.Handle(r, f.out)
	switch outcome {
	case handshake.AuthPending:
		f.push(now, sentCmd{kind: cmdAuth})
	case handshake.AuthFailed:
		reason := ReasonAuth
		if r.Code == proto.CodeUnavailable {
			reason = ReasonUnavailable
		}
		f.finish(reason, r, why.String())
	case handshake.AuthOK:
		f.phase = fpRun
		f.group = "" // some servers forget it; join again
		f.unsent = f.unsent[:0]
		for _, q := range f.reqs {
			q.resend = false
			f.send(now, q)
		}
		f.maybeQuit(now)
	}
}

// startBody prepares the decoders for a body.
func (f *Fetch) startBody(q *request) {
	f.inBody, f.cur, f.enc, f.uuOut, f.uuCRC, f.bodyIn = true, q, encUnknown, 0, 0, 0
	f.yenc.Reset()
	f.uu.Reset()
}

// body decodes body bytes from p and returns how many it used.
func (f *Fetch) body(now time.Time, p []byte) int {
	dst := f.dec[len(f.dec):len(f.dec)]
	var out []byte
	var n int
	switch f.enc {
	case encUnknown:
		out, n, _ = f.yenc.Feed(dst, p)
		if f.yenc.Part().HasHeader || f.yenc.Err() != nil {
			f.enc = encYenc
			break
		}
		// No yEnc header yet, so no output: let the UU decoder read the
		// same bytes. It stops where yEnc stopped (the terminator) or
		// earlier if it found "begin" and filled its room.
		var un int
		out, un, _ = f.uu.Feed(dst, p[:n])
		if f.uu.File().HasBegin {
			f.enc, n = encUU, un
		}
	case encYenc:
		out, n, _ = f.yenc.Feed(dst, p)
	case encUU:
		out, n, _ = f.uu.Feed(dst, p)
	}
	f.stats.BodyIn += int64(n)
	if len(out) > 0 {
		f.dataOut(out)
	}
	if f.bodyDone() {
		f.endBody(now)
		return n
	}
	if f.bodyIn += int64(n); f.bodyIn > f.bodyLimit() {
		f.finish(ReasonProtocol, proto.Response{}, fmt.Sprintf("download: fetch: body of %s: %d bytes and no end, more than the %d allowed (an endless body)",
			f.cur.id, f.bodyIn, f.bodyLimit()))
		return n
	}
	if n == 0 && len(out) == 0 {
		// The decoder needs room; take a fresh buffer (the old one
		// stays with the Data events that reference it).
		f.dec = make([]byte, 0, 2*cap(f.dec)+decSlack)
		f.dataLive = false
	}
	return n
}

// dataOut hands out decoded bytes as a Data event.
func (f *Fetch) dataOut(out []byte) {
	f.dec = f.dec[:len(f.dec)+len(out)]
	var off int64
	switch f.enc {
	case encYenc:
		part := f.yenc.Part()
		off = part.Offset() + part.Decoded - int64(len(out))
	case encUU:
		off = f.uuOut
		f.uuOut += int64(len(out))
		f.uuCRC = crc32.Update(f.uuCRC, crc32.IEEETable, out)
	}
	f.stats.Decoded += int64(len(out))
	f.dataLive = true
	f.emit(Data{Segment: f.cur.Segment, Offset: off, Bytes: out[:len(out):len(out)]})
}

// bodyDone reports that the current body's terminator was consumed.
func (f *Fetch) bodyDone() bool {
	if f.enc == encUU {
		return f.uu.Done()
	}
	return f.yenc.Done()
}

// endBody verifies the finished body and reports the request's result.
func (f *Fetch) endBody(now time.Time) {
	q := f.cur
	f.inBody, f.cur = false, nil
	f.stats.Bodies++
	f.answered(q)
	switch f.enc {
	case encUU:
		if err := f.uu.Verify(); err != nil {
			f.emit(SegmentBad{Segment: q.Segment, Err: err})
			break
		}
		file := f.uu.File()
		f.emit(SegmentOK{Segment: q.Segment, Name: file.Name, Size: f.uuOut, CRC: f.uuCRC, UU: true})
	default:
		if err := f.yenc.Verify(); err != nil {
			f.emit(SegmentBad{Segment: q.Segment, Err: err})
			break
		}
		p := f.yenc.Part()
		f.emit(SegmentOK{Segment: q.Segment, Name: p.Name, Offset: p.Offset(), Size: p.Decoded, CRC: p.CRC,
			FileSize: p.Size, FileCRC: p.CRC32, HasFileCRC: p.HasCRC32, Part: p.Part, Total: p.Total})
	}
	// The body's end is an answer like any other.
	f.afterAnswer(now)
}

func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
