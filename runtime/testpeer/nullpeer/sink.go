// Package nullpeer is a fast NNTP peer that takes every article and keeps none:
// the receiving end of throughput measurements (newsbench feed), written so
// that it is not the bottleneck of what it measures.
//
// # Theory of operation
//
// Each connection is one goroutine with one large read buffer. It answers the
// greeting, CAPABILITIES, MODE STREAM, CHECK (238), TAKETHIS (239), IHAVE
// (335 then 235) and QUIT; anything else draws 500. An article block is
// scanned for its terminating line by blockScan (memchr from dot to dot, or
// proto's BlockDecoder where dots are dense), so a 500 KB article costs a few
// searches, not a pass per line: the sink must cost far less CPU than the
// feeders it measures. Whatever was scanned is counted and dropped, so the
// buffer never grows and large articles are never copied. Line endings are
// taken as proto's decoder takes them (CRLF, or a tolerated bare LF). Answers
// are appended to an output buffer that is written only when the input buffer
// holds no complete command (about to block in read) or the output is large:
// a pipelined window of CHECKs or TAKETHISes is answered with one write.
//
// Counters are per sink, updated once per read (not per article) with
// atomic adds; Wait blocks until a target count is reached, woken by the
// connection that reaches it.
//
// A sink can hold its greetings (Options.Hold): connections are accepted
// and counted, but nothing is said until Release, so a measurement can let
// a feeder connect and set itself up first and start the clock when every
// connection is there.
package nullpeer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// Options configure a Sink; the zero value is a streaming sink that greets
// at once.
type Options struct {
	// Hold delays every greeting until Release.
	Hold bool
	// ReadBuffer is each connection's read buffer; 1 MiB when zero.
	ReadBuffer int
	// RecordIDs keeps every message-id taken (tests; it costs memory and an
	// allocation per article).
	RecordIDs bool
	// NoStreaming answers MODE STREAM, CHECK and TAKETHIS with 500 and
	// leaves STREAMING out of CAPABILITIES, so feeders fall back to IHAVE.
	NoStreaming bool
}

// Sink is a listening NNTP sink on loopback.
type Sink struct {
	opts Options
	ln   net.Listener

	articles atomic.Int64 // articles taken (TAKETHIS and IHAVE)
	bytes    atomic.Int64 // octets of their blocks, dot-stuffed, without the terminating ".\r\n"
	checks   atomic.Int64 // CHECK commands answered
	conns    atomic.Int64 // connections accepted so far

	gate     chan struct{} // closed by Release
	gateOnce sync.Once

	target atomic.Int64 // Wait's target, 0 when no one waits

	mu      sync.Mutex
	reached chan struct{} // closed when articles >= target
	ids     []string
	open    map[net.Conn]struct{}
	closed  bool

	wg sync.WaitGroup
}

// Listen starts a sink on addr (a loopback host:port; port 0 picks one).
func Listen(addr string, opts Options) (*Sink, error) {
	if opts.ReadBuffer <= 0 {
		opts.ReadBuffer = 1 << 20
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sink: listen: %w", err)
	}
	s := &Sink{opts: opts, ln: ln, gate: make(chan struct{}), open: map[net.Conn]struct{}{}}
	if !opts.Hold {
		s.Release()
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the sink's address, "127.0.0.1:port".
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// Port is the sink's port.
func (s *Sink) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Release sends the greetings held by Options.Hold, and greets every later
// connection at once.
func (s *Sink) Release() { s.gateOnce.Do(func() { close(s.gate) }) }

// Articles is how many articles the sink has taken.
func (s *Sink) Articles() int64 { return s.articles.Load() }

// Bytes is how many octets of article blocks the sink has read (as sent:
// dot-stuffed, CRLF, without the terminating ".\r\n").
func (s *Sink) Bytes() int64 { return s.bytes.Load() }

// Checks is how many CHECK commands the sink has answered.
func (s *Sink) Checks() int64 { return s.checks.Load() }

// Conns is how many connections the sink has accepted.
func (s *Sink) Conns() int64 { return s.conns.Load() }

// IDs returns the message-ids taken so far, in arrival order per
// connection (Options.RecordIDs only).
func (s *Sink) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}

// WaitConns waits until at least n connections were accepted, or ctx ends.
func (s *Sink) WaitConns(ctx context.Context, n int64) error {
	for s.conns.Load() < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("sink: %d of %d connections: %w", s.conns.Load(), n, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// Wait blocks until the sink has taken at least n articles, or ctx ends.
// One Wait at a time.
func (s *Sink) Wait(ctx context.Context, n int64) error {
	s.mu.Lock()
	if s.articles.Load() >= n {
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.reached = ch
	s.target.Store(n)
	s.mu.Unlock()
	// A connection may have counted between the check and the target
	// being set: look again.
	s.notify()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		s.target.Store(0)
		s.reached = nil
		s.mu.Unlock()
		return fmt.Errorf("sink: %d of %d articles: %w", s.articles.Load(), n, ctx.Err())
	}
}

// notify wakes Wait when its target is reached; it takes the mutex only
// then.
func (s *Sink) notify() {
	t := s.target.Load()
	if t == 0 || s.articles.Load() < t {
		return
	}
	s.mu.Lock()
	if s.reached != nil && s.articles.Load() >= s.target.Load() {
		close(s.reached)
		s.target.Store(0)
		s.reached = nil
	}
	s.mu.Unlock()
}

// Reset zeroes the counters (and recorded ids) between measurements.
func (s *Sink) Reset() {
	s.mu.Lock()
	s.articles.Store(0)
	s.bytes.Store(0)
	s.checks.Store(0)
	s.conns.Store(0)
	s.ids = nil
	s.mu.Unlock()
}

// CloseConns closes every open connection (between measurements, so that a
// feeder that stays connected does not carry over).
func (s *Sink) CloseConns() {
	s.mu.Lock()
	for c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
}

// Close stops listening, closes every connection and waits for their
// goroutines.
func (s *Sink) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.CloseConns()
	s.Release()
	s.wg.Wait()
	return err
}

func (s *Sink) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.open[c] = struct{}{}
		s.mu.Unlock()
		s.conns.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			c.Close()
			s.mu.Lock()
			delete(s.open, c)
			s.mu.Unlock()
		}()
	}
}

// errLineTooLong ends a connection whose command line does not fit.
var errLineTooLong = errors.New("sink: command line too long")

// maxCommand is the longest command line the sink reads (RFC 3977 §3.1
// allows 512 octets; a little slack for long message-ids).
const maxCommand = 4096

// conn is the state of one connection.
type conn struct {
	s   *Sink
	rd  io.Reader
	wr  io.Writer
	buf []byte // input: buf[r:w] not yet handled
	r   int
	w   int
	out []byte

	// In a block: the message-id to answer and the answer code.
	inBlock  bool
	blockID  []byte
	blockOK  string // "239 " or "235 "
	blockLen int64  // block octets read so far
	scan     blockScan

	articles, bytes int64 // counted since the last flush to the sink
}

func (s *Sink) serve(nc net.Conn) {
	<-s.gate
	s.newConn(nc, nc).loop()
}

func (s *Sink) newConn(rd io.Reader, wr io.Writer) *conn {
	return &conn{s: s, rd: rd, wr: wr, buf: make([]byte, s.opts.ReadBuffer), out: make([]byte, 0, 64<<10)}
}

// loop greets, then reads and answers until QUIT, an error or EOF.
func (c *conn) loop() {
	c.out = append(c.out, "200 newsflow sink ready (transit)\r\n"...)
	for {
		quit, err := c.handle()
		c.publish()
		if err != nil {
			return
		}
		if len(c.out) > 0 {
			if _, err := c.wr.Write(c.out); err != nil {
				return
			}
			c.out = c.out[:0]
		}
		if quit {
			return
		}
		if err := c.fill(); err != nil {
			return
		}
	}
}

// publish adds the connection's counts to the sink's.
func (c *conn) publish() {
	if c.articles == 0 && c.bytes == 0 {
		return
	}
	c.s.bytes.Add(c.bytes)
	c.s.articles.Add(c.articles)
	c.articles, c.bytes = 0, 0
	c.s.notify()
}

// fill makes room (moving the unhandled tail to the front) and reads once.
func (c *conn) fill() error {
	if c.r > 0 {
		n := copy(c.buf, c.buf[c.r:c.w])
		c.r, c.w = 0, n
	}
	if c.w == len(c.buf) {
		return errLineTooLong
	}
	n, err := c.rd.Read(c.buf[c.w:])
	c.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// handle works through buf[r:w] until it needs more input; quit reports a
// QUIT. Output is appended to c.out (and written early when it grows).
func (c *conn) handle() (quit bool, err error) {
	for {
		if len(c.out) >= 256<<10 {
			if _, err := c.wr.Write(c.out); err != nil {
				return false, err
			}
			c.out = c.out[:0]
		}
		if c.inBlock {
			if !c.block() {
				return false, nil
			}
			continue
		}
		i := bytes.IndexByte(c.buf[c.r:c.w], '\n')
		if i < 0 {
			if c.w-c.r > maxCommand {
				return false, errLineTooLong
			}
			return false, nil
		}
		line := c.buf[c.r : c.r+i+1]
		c.r += i + 1
		if c.command(line) {
			return true, nil
		}
	}
}

// block reads on through the current article block; false means more
// input is needed. Whatever it read is counted and dropped.
func (c *conn) block() bool {
	data := c.buf[c.r:c.w]
	n, done := c.scan.next(data)
	c.r += n
	c.blockLen += int64(n)
	if !done {
		return false
	}
	c.inBlock = false
	c.articles++
	c.bytes += c.blockLen - int64(c.scan.termLen)
	if c.s.opts.RecordIDs {
		c.s.mu.Lock()
		c.s.ids = append(c.s.ids, string(c.blockID))
		c.s.mu.Unlock()
	}
	c.out = append(c.out, c.blockOK...)
	c.out = append(c.out, c.blockID...)
	c.out = append(c.out, "\r\n"...)
	return true
}

// blockScan finds the end of a multi-line block (RFC 3977 §3.1.1: the
// first line that is exactly "."), without keeping it. It has two ways:
//
//   - It jumps from one '.' to the next with bytes.IndexByte (memchr, SIMD)
//     and looks only at the bytes around each: a '.' that begins a line and
//     is followed by CRLF (or a bare LF, as proto's decoder tolerates) ends
//     the block; any other '.' is text or a stuffing dot. Text with few
//     dots goes at memory speed (9 GB/s through the whole sink where proto's
//     decoder managed 6).
//   - Where dots are dense (more than one per 256 octets: prose, some yEnc),
//     a call per dot would cost more than decoding, so at the next line
//     start it hands the rest of the block to proto's BlockDecoder, which
//     searches for line-initial dots only ("\n."), decoding in place into
//     the buffer the sink drops anyway.
//
// The density is remembered across blocks (halved at each), so a feeder
// whose articles are dense goes to the decoder at once. Input may be split
// anywhere.
type blockScan struct {
	atLineStart bool // memchr way: the byte before the next input ends a line
	dense       bool // the decoder way, for the rest of this block
	toLineStart bool // dense, but first skip to the next line start
	termLen     int  // length of the terminating line found (3, or 2 for ".\n")
	dots, seen  int  // dots looked at and octets scanned (memchr way)
	dec         *proto.BlockDecoder
}

// reset starts a block: the block begins at a line start.
func (b *blockScan) reset() {
	b.atLineStart, b.dense, b.toLineStart, b.termLen = true, false, false, 0
	b.dots, b.seen = b.dots/2, b.seen/2
}

// next scans data and returns how much of it belongs to the block so far
// and whether the block ended (n then includes the terminating line). When
// data ends in a possible terminator that is not complete yet ("." or ".\r"
// at a line start), n stops before it, so that it is looked at again with
// the bytes that follow.
func (b *blockScan) next(data []byte) (n int, done bool) {
	if b.toLineStart {
		// No line starts before the next LF (see below): skip to it.
		j := bytes.IndexByte(data, '\n')
		if j < 0 {
			return len(data), false
		}
		b.toLineStart = false
		n = j + 1
		if b.dec == nil {
			b.dec = proto.NewBlockDecoder(1 << 30)
		}
		b.dec.Reset()
	}
	if b.dense {
		m, done := b.decode(data[n:])
		return n + m, done
	}
	i := 0
	for {
		j := bytes.IndexByte(data[i:], '.')
		if j < 0 {
			if len(data) > 0 {
				b.atLineStart = data[len(data)-1] == '\n'
			}
			b.seen += len(data) - i
			return len(data), false
		}
		p := i + j
		b.dots++
		b.seen += j + 1
		lineStart := p == 0 && b.atLineStart || p > 0 && data[p-1] == '\n'
		if lineStart {
			rest := data[p+1:]
			switch {
			case len(rest) >= 1 && rest[0] == '\n':
				b.termLen = 2
				return p + 2, true
			case len(rest) >= 2 && rest[0] == '\r' && rest[1] == '\n':
				b.termLen = 3
				return p + 3, true
			case len(rest) == 0 || len(rest) == 1 && rest[0] == '\r':
				// Maybe the terminator: wait for more input.
				b.atLineStart = true
				return p, false
			}
		}
		i = p + 1
		if b.dots > 16 && b.dots*256 > b.seen {
			// Dense: switch to the decoder at the next line start. The
			// byte before i is this '.', so no line starts before the
			// next LF. The decoder way does not count dots: remember the
			// block as dense, so that the next one switches at its first.
			b.dense, b.toLineStart = true, true
			b.dots, b.seen = 64, 1024
			m, done := b.next(data[i:])
			return i + m, done
		}
	}
}

// decode runs the decoder way over data.
func (b *blockScan) decode(data []byte) (int, bool) {
	_, n, done, err := b.dec.DecodeInPlace(data)
	if err != nil {
		// Only a line over a gigabyte: count it all and go on scanning
		// the memchr way.
		b.dense = false
		b.atLineStart = false
		return len(data), false
	}
	if done {
		// The terminator's bytes are the last consumed; decoding in
		// place never writes over them.
		b.termLen = 2
		if n >= 3 && data[n-3] == '.' && data[n-2] == '\r' {
			b.termLen = 3
		}
	}
	return n, done
}

// command handles one command line; it reports QUIT.
func (c *conn) command(line []byte) bool {
	line = bytes.TrimRight(line, "\r\n")
	verb, arg, _ := bytes.Cut(line, []byte(" "))
	arg = bytes.TrimSpace(arg)
	stream := !c.s.opts.NoStreaming
	switch {
	case stream && equalFold(verb, "CHECK") && len(arg) > 0:
		c.s.checks.Add(1)
		c.out = append(c.out, "238 "...)
		c.out = append(c.out, arg...)
		c.out = append(c.out, "\r\n"...)
	case stream && equalFold(verb, "TAKETHIS") && len(arg) > 0:
		c.startBlock(arg, "239 ")
	case equalFold(verb, "IHAVE") && len(arg) > 0:
		c.out = append(c.out, "335 send it\r\n"...)
		c.startBlock(arg, "235 ")
	case stream && equalFold(verb, "MODE") && equalFold(arg, "STREAM"):
		c.out = append(c.out, "203 streaming permitted\r\n"...)
	case equalFold(verb, "CAPABILITIES"):
		c.out = append(c.out, "101 capability list follows\r\nVERSION 2\r\nIHAVE\r\n"...)
		if stream {
			c.out = append(c.out, "STREAMING\r\n"...)
		}
		c.out = append(c.out, ".\r\n"...)
	case equalFold(verb, "QUIT"):
		c.out = append(c.out, "205 bye\r\n"...)
		return true
	default:
		c.out = append(c.out, "500 unknown command\r\n"...)
	}
	return false
}

// startBlock begins reading an article block for the message-id arg.
func (c *conn) startBlock(arg []byte, ok string) {
	c.blockID = append(c.blockID[:0], arg...)
	c.blockOK = ok
	c.inBlock = true
	c.blockLen = 0
	c.scan.reset()
}

// equalFold compares an ASCII command word without allocating.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x := b[i]
		if x >= 'a' && x <= 'z' {
			x -= 'a' - 'A'
		}
		if x != s[i] {
			return false
		}
	}
	return true
}
