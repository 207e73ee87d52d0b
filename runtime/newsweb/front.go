package newsweb

// Front: newsweb's own HTTP/1.1 path for plain GET and HEAD requests, in
// front of net/http.
//
// Theory of operation. Front accepts the connections of a listener and
// serves each on a goroutine of its own. It reads request heads into a
// per-connection buffer; a head it serves (parseHead: GET or HEAD,
// HTTP/1.1, no body, nothing doubtful) becomes an *http.Request for the
// http.Server's handler, the answer is kept whole (frontWriter) and goes
// out with its headers in one write. The first request it does not serve
// hands the connection, with every byte read and not yet answered, to the
// http.Server (through a listener whose Accept returns such connections),
// which serves it from then on exactly as it serves any connection; TLS
// connections go to it at once (it negotiates HTTP/2 and fills r.TLS).
//
// Why: on a cached page net/http cost about four times newsweb's handler
// (newsbench web, article pages: 28 µs of server CPU a request for a
// 5 µs handler). A request there reads its head into a header map
// (textproto), starts a background read to notice a closed connection,
// moves the socket's deadlines three or four times (each a timer change),
// clones the handler's header map, sorts and checks it on the way out. The
// front parses into one string, notices nothing in the background (a
// request's work is bounded by Options.Timeout and coalesced, whether or
// not its client waits), and appends a cached page's headers as strings.
//
// Limits, as NewHTTPServer's http.Server has them (the front reads them
// from it):
//   - a head must be complete within ReadHeaderTimeout of its first byte
//     (of the connection's start for the first head, as net/http has
//     it), and be at most MaxHeaderBytes (longer ones go to net/http,
//     which answers 431);
//   - an idle connection is closed after IdleTimeout (the deadline is
//     moved at most once a second, so idle means between IdleTimeout-1s
//     and IdleTimeout);
//   - an answer must be written within WriteTimeout of being ready (also
//     moved at most once a second).
//
// Shutdown closes the listener and the idle connections, lets each busy
// one finish its answer (then closes it, with Connection: close), and
// waits for them and for net/http's.

import (
	"context"
	"crypto/tls"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// deadlineSlack is how stale a read or write deadline may grow before it
// is moved (see the file comment).
const deadlineSlack = time.Second

// Front serves an http.Server's handler on a listener through newsweb's
// HTTP/1.1 path; see the file comment.
type Front struct {
	hs *http.Server
	ln net.Listener

	handoff chan net.Conn // connections for hs
	stop    chan struct{} // closed when the listener closes
	once    sync.Once
	err     error // why accepting stopped (set before stop closes)
	lnOnce  sync.Once
	lnErr   error

	// served counts the requests the front answered, handedOff the
	// connections it gave to net/http.
	served, handedOff atomic.Int64

	closing atomic.Bool
	mu      sync.Mutex
	conns   map[*frontConn]struct{}
	wg      sync.WaitGroup
}

// NewFront returns a Front for hs on ln. Call Serve to start it.
func NewFront(hs *http.Server, ln net.Listener) *Front {
	return &Front{hs: hs, ln: ln, handoff: make(chan net.Conn), stop: make(chan struct{}), conns: map[*frontConn]struct{}{}}
}

// Serve accepts connections until Shutdown or Close; it returns
// http.ErrServerClosed after them, as http.Server.Serve does.
func (f *Front) Serve() error {
	go f.accept()
	return f.hs.Serve(handoffListener{f})
}

// Shutdown stops accepting, closes idle connections and waits, until ctx
// ends, for busy ones to finish their answer (http.Server.Shutdown).
func (f *Front) Shutdown(ctx context.Context) error {
	err := f.hs.Shutdown(ctx) // closes handoffListener: f.close
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		f.closeConns(false)
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}

// Close closes the listener and every connection at once.
func (f *Front) Close() error {
	err := f.hs.Close()
	f.close()
	f.closeConns(false)
	return err
}

// accept runs the accept loop, retrying temporary errors as net/http does.
func (f *Front) accept() {
	var delay time.Duration
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if f.closing.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				f.logf("newsweb: accept error: %v; retrying in %v", err, delay)
				time.Sleep(delay)
				continue
			}
			f.stopAccepting(err)
			return
		}
		delay = 0
		if _, ok := c.(*tls.Conn); ok {
			go f.handOff(c)
			continue
		}
		fc := &frontConn{f: f, c: c}
		f.mu.Lock()
		if f.closing.Load() {
			f.mu.Unlock()
			c.Close()
			return
		}
		f.conns[fc] = struct{}{}
		f.wg.Add(1)
		f.mu.Unlock()
		go fc.serve()
	}
}

// stopAccepting ends the accept loop's life: handoffListener's Accept
// returns err from now on.
func (f *Front) stopAccepting(err error) {
	f.once.Do(func() {
		f.err = err
		close(f.stop)
	})
}

// close is handoffListener's Close: stop accepting, close the idle
// connections; busy ones close after their answer.
func (f *Front) close() error {
	f.closing.Store(true)
	f.lnOnce.Do(func() { f.lnErr = f.ln.Close() })
	f.stopAccepting(net.ErrClosed)
	f.closeConns(true)
	return f.lnErr
}

// closeConns closes the connections, only the idle ones when idleOnly.
func (f *Front) closeConns(idleOnly bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for fc := range f.conns {
		if !idleOnly || fc.state.CompareAndSwap(connIdle, connClosed) {
			fc.c.Close()
		}
	}
}

// handOff gives c to the http.Server (or closes it when that has stopped).
func (f *Front) handOff(c net.Conn) {
	f.handedOff.Add(1)
	select {
	case f.handoff <- c:
	case <-f.stop:
		c.Close()
	}
}

func (f *Front) logf(format string, args ...any) {
	if f.hs.ErrorLog != nil {
		f.hs.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// handoffListener is the listener the http.Server serves: its
// connections are those the front handed off.
type handoffListener struct{ f *Front }

func (l handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.f.handoff:
		return c, nil
	case <-l.f.stop:
		return nil, l.f.err
	}
}

func (l handoffListener) Close() error   { return l.f.close() }
func (l handoffListener) Addr() net.Addr { return l.f.ln.Addr() }

// Connection states (frontConn.state).
const (
	connActive int32 = iota // reading or answering a request
	connIdle                // waiting for a request's first byte
	connClosed              // closed by Shutdown while idle
)

// frontConn is one connection on the front.
type frontConn struct {
	f     *Front
	c     net.Conn
	state atomic.Int32

	buf      []byte // read buffer; buf[start:end] is unread
	start    int
	end      int
	scan     headScan // how far the head at buf[start:] was read
	head     requestHead
	req      http.Request // the request of head, remade for each
	out      []byte       // the answer being written
	w        frontWriter
	rd, wd   time.Time // the deadlines set on c
	reqStart time.Time // the start of the head being read (zero: none yet, idle)
	remote   string    // c.RemoteAddr().String(), made once
	date     []byte    // Date value, for dateSec
	dateSec  int64
}

// Buffer sizes of a connection.
const (
	frontReadBuffer = 4 << 10
	frontKeepOut    = 64 << 10 // a larger answer buffer is not kept for the next
)

// serve runs the connection: heads are parsed and answered until the
// client closes, a limit is hit, or a head goes to net/http.
func (fc *frontConn) serve() {
	f := fc.f
	handedOff := false
	defer func() {
		if p := recover(); p != nil && p != http.ErrAbortHandler {
			f.logf("newsweb: panic serving %v: %v", fc.c.RemoteAddr(), p)
		}
		if !handedOff {
			fc.c.Close()
		}
		f.mu.Lock()
		delete(f.conns, fc)
		f.mu.Unlock()
		f.wg.Done()
	}()
	maxHead := f.hs.MaxHeaderBytes
	if maxHead <= 0 {
		maxHead = http.DefaultMaxHeaderBytes
	}
	maxHead += 4096 // net/http's slack for the request line
	fc.buf = make([]byte, frontReadBuffer)
	fc.remote = fc.c.RemoteAddr().String()
	fc.reqStart = time.Now() // the first head is bounded from here, as net/http does
	fc.w.header = make(http.Header, 8)
	for {
		n, verdict := parseHead(&fc.head, fc.buf[fc.start:fc.end], maxHead, &fc.scan)
		switch verdict {
		case headIncomplete:
			if err := fc.fill(maxHead); err != nil {
				return
			}
			continue
		case headHandoff:
			handedOff = true
			fc.handOff()
			return
		}
		fc.start += n
		fc.reqStart = time.Time{}
		if fc.start == fc.end {
			fc.start, fc.end = 0, 0
		}
		if closing, err := fc.answer(); err != nil || closing {
			return
		}
	}
}

// fill reads more of a head into buf, moving the read deadline as the
// file comment says.
func (fc *frontConn) fill(maxHead int) error {
	if fc.start > 0 { // keep the partial head at the start
		fc.end = copy(fc.buf, fc.buf[fc.start:fc.end])
		fc.start = 0
	}
	if fc.end == len(fc.buf) {
		if len(fc.buf) > maxHead {
			return errors.New("head too long") // parseHead hands it off first
		}
		fc.buf = append(fc.buf, make([]byte, len(fc.buf))...)
	}
	now := time.Now()
	hs := fc.f.hs
	if fc.end > 0 && fc.reqStart.IsZero() {
		fc.reqStart = now // a head came in part (with the read before)
	}
	if !fc.reqStart.IsZero() {
		// A connection's first head, or one that came in part: within
		// ReadHeaderTimeout of the connection's start or of its first
		// part, exactly.
		if t := headTimeout(hs); t > 0 {
			if want := fc.reqStart.Add(t); fc.rd.IsZero() || fc.rd.After(want) {
				fc.setReadDeadline(want)
			}
		}
	} else {
		// Between requests: the idle bound.
		idle := hs.IdleTimeout
		if idle <= 0 {
			idle = hs.ReadTimeout
		}
		if idle > 0 {
			if want := now.Add(idle); fc.rd.Before(want.Add(-deadlineSlack)) || fc.rd.After(want) {
				fc.setReadDeadline(want)
			}
		}
	}
	if fc.end == 0 {
		fc.state.Store(connIdle)
		if fc.f.closing.Load() {
			return net.ErrClosed
		}
	}
	n, err := fc.c.Read(fc.buf[fc.end:])
	if fc.end == 0 && !fc.state.CompareAndSwap(connIdle, connActive) {
		return net.ErrClosed // Shutdown closed it meanwhile
	}
	fc.end += n
	if n > 0 {
		return nil
	}
	return err
}

// headTimeout is the bound on reading one head.
func headTimeout(hs *http.Server) time.Duration {
	if hs.ReadHeaderTimeout > 0 {
		return hs.ReadHeaderTimeout
	}
	return hs.ReadTimeout
}

func (fc *frontConn) setReadDeadline(t time.Time) {
	fc.rd = t
	fc.c.SetReadDeadline(t)
}

// answer runs the handler for fc.head and writes its answer. closing
// says the connection is to close after it: the client asked, or
// Shutdown began meanwhile.
//
// The request, its URL and header map are the connection's, remade for
// each head (requestHead), and so is the ResponseWriter: none may be
// kept by a handler past its return, net/http's rule for the
// ResponseWriter and, for the request, what newsweb's handlers keep to
// (TestFrontReuseNewsweb runs every route on one connection, under the
// race detector with -race; TestFrontReuseLeaksNothing shows that what a
// handler changes of its request does not reach the next). A view of a
// cached page then allocates little more than the head's string
// (BenchmarkCachedPagesHTTP).
func (fc *frontConn) answer() (closing bool, err error) {
	head := &fc.head
	fc.req = http.Request{Method: head.method, URL: &head.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: head.header, Body: http.NoBody, Host: head.host, RemoteAddr: fc.remote,
		RequestURI: head.target, Close: head.close}
	fc.w.reset()
	fc.f.hs.Handler.ServeHTTP(&fc.w, &fc.req)
	fc.f.served.Add(1)
	closing = head.close || fc.f.closing.Load()
	now := time.Now()
	if sec := now.Unix(); sec != fc.dateSec || fc.date == nil {
		fc.date, fc.dateSec = appendHTTPDate(fc.date[:0], now), sec
	}
	fc.out = fc.w.appendResponse(fc.out[:0], fc.date, head.method == http.MethodHead, closing)
	if wt := fc.f.hs.WriteTimeout; wt > 0 {
		if want := now.Add(wt); fc.wd.Before(want.Add(-deadlineSlack)) {
			fc.wd = want
			fc.c.SetWriteDeadline(want)
		}
	}
	_, err = fc.c.Write(fc.out)
	if cap(fc.out) > frontKeepOut {
		fc.out = nil
	}
	return closing, err
}

// handOff gives the connection, with the bytes read and not answered, to
// the http.Server.
func (fc *frontConn) handOff() {
	fc.c.SetDeadline(time.Time{}) // net/http sets its own
	var c net.Conn = fc.c
	if fc.end > fc.start {
		c = &replayConn{Conn: fc.c, pending: append([]byte(nil), fc.buf[fc.start:fc.end]...)}
	}
	fc.f.handOff(c)
}

// replayConn is a connection whose first bytes were already read: Read
// returns them before reading on.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
