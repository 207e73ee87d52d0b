package newsget

// The connection pool. The Scheduler owns the pool's bookkeeping (how many
// connections each server has, which are up, which requests each carries);
// this file carries out its decisions. A connection's life:
//
//	dialing  Dial event: TCP connect (ip_version), TLS for encryption =
//	         "tls", then machine/handshake on runtime/goroutine: greeting,
//	         CAPABILITIES, MODE READER when READER is not advertised (INN's
//	         innd answers "401 MODE-READER" until then), STARTTLS for
//	         encryption = "starttls", AUTHINFO. Failure: DialFailed (the
//	         Scheduler blocks the server, with backoff); failures that cannot
//	         mend by waiting (certificate refused, credentials rejected,
//	         reading not permitted) give the server up at once.
//	in use   Connected: a Fetch runs on it with requests from its mailbox
//	         (connRun.mailbox, under Engine.mu; a driver.Mailbox wakes its
//	         step when requests arrive).
//	idle     no request for idle_timeout: QUIT, and the Scheduler forgets
//	         it (Closed); it dials again when work needs a connection.
//	closed   the server closed it, a timeout, garbage: the Fetch reports
//	         ConnClosed, the Scheduler gets Closed with the pending
//	         requests' outcome (connection error or auth error).
//
// Bytes read pass through meteredConn, below TLS: they are counted (for
// the quota and the display) and the token bucket (Limiter, rate over
// all connections) delays the next read when the rate is exceeded, so the
// limit holds without the connection's loop ever sleeping.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/newsflow/newsflow/machine/download"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/goroutine"
)

// connRun is one connection of the pool.
type connRun struct {
	id  download.ConnID
	srv *serverRun
	mb  driver.Mailbox // wakes the Fetch's step: requests in the mailbox

	// Under Engine.mu:
	mailbox  []download.Request
	woken    bool
	up       bool
	reported bool // the Scheduler was told it ended
}

// tlsSetup holds a server's TLS settings.
type tlsSetup struct {
	verify bool
	roots  *x509.CertPool // nil: the system's
}

// newTLSSetup loads a server's ca_file.
func newTLSSetup(sc ServerConfig) (*tlsSetup, error) {
	t := &tlsSetup{verify: sc.Verify()}
	if sc.CAFile != "" {
		pem, err := os.ReadFile(sc.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s: no PEM certificate in it", sc.CAFile)
		}
		t.roots = pool
	}
	return t, nil
}

// config returns the client configuration for host. Verification is on
// unless cert_verification = false.
func (t *tlsSetup) config(host string) *tls.Config {
	return &tls.Config{ServerName: host, InsecureSkipVerify: !t.verify, RootCAs: t.roots, MinVersion: tls.VersionTLS12}
}

// meteredConn counts the bytes read and applies the speed limit.
type meteredConn struct {
	net.Conn
	e    *Engine
	once sync.Once
	done chan struct{}
}

// Read reads, counts the bytes and waits as the speed limit says. Under a
// limit a read takes at most readCap bytes: every connection may read
// once before it is told to wait, and those reads together stay within a
// tenth of a second's worth.
func (m *meteredConn) Read(p []byte) (int, error) {
	if c := m.e.readCap.Load(); c > 0 && int64(len(p)) > c {
		p = p[:c]
	}
	n, err := m.Conn.Read(p)
	if n > 0 {
		m.e.received.Add(int64(n))
		if wait := m.e.take(int64(n)); wait > 0 {
			m.e.throttled.Add(int64(wait))
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-m.done:
				t.Stop()
			}
		}
	}
	return n, err
}

// Close ends any wait and closes the connection.
func (m *meteredConn) Close() error {
	m.once.Do(func() { close(m.done) })
	return m.Conn.Close()
}

// minReadCap is the least a read takes under a speed limit.
const minReadCap = 1 << 10

// readCap is the most one read takes at rate bytes per second over conns
// connections: together the reads are a tenth of a second's worth (the
// limiter's burst is another), so that the rate holds within 5 % over
// any 5 s. 0: no cap (no rate).
func readCap(rate int64, conns int) int64 {
	if rate <= 0 {
		return 0
	}
	return max(rate/10/int64(max(conns, 1)), minReadCap)
}

// SetRate changes the speed limit (bytes per second over all
// connections; 0 = none) from now on.
func (e *Engine) SetRate(rate int64) {
	conns := 0
	for _, s := range e.cfg.Servers {
		conns += max(s.Connections, 1)
	}
	e.limiterMu.Lock()
	e.limiter.SetRate(e.opts.Now(), rate)
	e.rate.Store(rate)
	e.limiterMu.Unlock()
	e.readCap.Store(readCap(rate, conns))
}

// take charges n bytes to the token bucket and returns the wait.
func (e *Engine) take(n int64) time.Duration {
	if e.rate.Load() <= 0 {
		return 0
	}
	e.limiterMu.Lock()
	defer e.limiterMu.Unlock()
	return e.limiter.Take(e.opts.Now(), n)
}

// pooled is a Fetch with the pool's idle timeout: a Fetch with nothing
// outstanding has no deadline of its own.
type pooled struct {
	*download.Fetch
	idle        time.Duration
	idleSince   time.Time
	idleExpired bool
}

// Deadline is the Fetch's, or the end of the idle time.
func (p *pooled) Deadline() (time.Time, bool) {
	if d, ok := p.Fetch.Deadline(); ok {
		return d, ok
	}
	if p.idle > 0 && p.Fetch.Pending() == 0 && !p.Fetch.Closed() && !p.idleExpired {
		return p.idleSince.Add(p.idle), true
	}
	return time.Time{}, false
}

// Timeout passes the time to the Fetch and notes an expired idle time
// (the step closes the connection).
func (p *pooled) Timeout(now time.Time) {
	p.Fetch.Timeout(now)
	if p.idle > 0 && p.Fetch.Pending() == 0 && !now.Before(p.idleSince.Add(p.idle)) {
		p.idleExpired = true
	}
}

func (e *Engine) articleTimeout() time.Duration {
	if e.cfg.ArticleTimeout > 0 {
		return time.Duration(e.cfg.ArticleTimeout)
	}
	return DefaultArticleTimeout
}

func (e *Engine) connectTimeout() time.Duration {
	if e.cfg.ConnectTimeout > 0 {
		return time.Duration(e.cfg.ConnectTimeout)
	}
	return DefaultConnectTimeout
}

func (e *Engine) idleTimeout() time.Duration {
	if e.cfg.IdleTimeout > 0 {
		return time.Duration(e.cfg.IdleTimeout)
	}
	return DefaultIdleTimeout
}

// dial opens connection c (a Dial event), then runs its Fetch until it
// ends.
func (e *Engine) dial(c *connRun) {
	defer e.wg.Done()
	sc := c.srv.cfg
	ctx := e.ctx
	d := net.Dialer{Timeout: e.connectTimeout()}
	raw, err := d.DialContext(ctx, sc.IPVersion.Network(), sc.Addr())
	if err != nil {
		e.dialFailed(c, download.DialConnect, fmt.Sprintf("connect %s: %v", sc.Addr(), err), false)
		return
	}
	mc := &meteredConn{Conn: raw, e: e, done: make(chan struct{})}
	var nc net.Conn = mc
	tcfg := c.srv.tls.config(sc.Host)
	if sc.Encryption == EncryptTLS {
		tc := tls.Client(mc, tcfg)
		hctx, cancel := context.WithTimeout(ctx, e.connectTimeout())
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			mc.Close()
			msg, permanent := tlsMessage(err.Error(), c.srv.tls.verify)
			e.dialFailed(c, download.DialTLS, msg, permanent)
			return
		}
		nc = tc
	}
	gc := goroutine.New(nc, goroutine.Options{TLSConfig: tcfg, Now: e.opts.Now, ReadBuffer: e.opts.ReadBuffer})
	hcfg := handshake.Config{Reader: true, User: sc.Username, Pass: sc.Password, StepTimeout: e.connectTimeout()}
	if sc.Encryption == EncryptStartTLS {
		hcfg.TLS = handshake.TLSRequired
	}
	_, lo, err := driver.Handshake(ctx, gc, e.opts.Now(), hcfg)
	if err != nil {
		cause, msg, permanent := download.DialConnect, err.Error(), false
		var failed handshake.Failed
		if errors.As(err, &failed) {
			cause, msg, permanent = classifyHandshake(failed, c.srv.tls.verify)
		}
		e.dialFailed(c, cause, msg, permanent)
		return
	}
	now := e.opts.Now()
	pipeline := sc.Pipeline
	if pipeline <= 0 {
		pipeline = download.DefaultPipeline
	}
	m := &pooled{Fetch: download.NewFetch(now, download.FetchConfig{Pipeline: pipeline, Timeout: e.articleTimeout(),
		User: sc.Username, Pass: sc.Password}), idle: e.idleTimeout(), idleSince: now}
	if len(lo) > 0 {
		m.Receive(now, lo) // a failure shows as ConnClosed in the first step
	}
	e.mu.Lock()
	c.up = true
	c.srv.wasUp = true
	c.srv.lastErr = ""
	if err := e.sched.Connected(now, c.id); err != nil {
		e.log.Error("scheduler", "err", err)
	}
	wake := e.dispatch(now, c)
	e.mu.Unlock()
	e.wakeAll(wake)

	c.mb.Attach(gc)
	err = gc.Run(ctx, m, func(now time.Time) error { return e.step(c, m, now) })
	c.mb.Detach()
	gc.Close()
	now = e.opts.Now()
	e.mu.Lock()
	if !c.reported {
		// The run ended without a ConnClosed (the context ended, a write
		// failed): the requests on it get a connection error.
		c.reported, c.up = true, false
		if err != nil && c.srv.lastErr == "" {
			c.srv.lastErr = err.Error()
		}
		e.sched.Closed(now, c.id, download.ConnError)
	}
	delete(e.conns, c.id)
	wake = e.dispatch(now, nil)
	e.mu.Unlock()
	e.wakeAll(wake)
}

// dialFailed reports a connection that did not come up.
func (e *Engine) dialFailed(c *connRun, cause download.DialCause, msg string, permanent bool) {
	now := e.opts.Now()
	e.mu.Lock()
	if !c.srv.gaveUp { // a given-up server keeps the reason it was given up for
		c.srv.lastErr = msg
	}
	delete(e.conns, c.id)
	// A dial the stop cancelled is no failure of the server.
	closing := e.closing || e.ctx.Err() != nil
	if err := e.sched.DialFailed(now, c.id, cause); err != nil {
		e.log.Error("scheduler", "err", err)
	}
	if !closing {
		e.log.Warn("connection failed", "server", c.srv.cfg.Label(), "cause", cause.String(), "err", msg)
		if permanent {
			e.giveUp(now, c.srv, msg)
		}
	}
	wake := e.dispatch(now, nil)
	e.mu.Unlock()
	e.wakeAll(wake)
}

// tlsMessage explains a TLS failure; a refused certificate is permanent.
func tlsMessage(err string, verify bool) (string, bool) {
	if verify && (strings.Contains(err, "x509:") || strings.Contains(err, "certificate")) {
		return "TLS certificate verification failed: " + err +
			" (set cert_verification = false, or verify=0 in the URL, to accept it; or ca_file to trust its issuer)", true
	}
	return "TLS handshake failed: " + err, false
}

// classifyHandshake maps a failed handshake to the Scheduler's dial cause,
// a message, and whether waiting can mend it.
func classifyHandshake(f handshake.Failed, verify bool) (download.DialCause, string, bool) {
	msg := f.Error()
	switch f.Reason {
	case handshake.ReasonTLSFailed:
		m, permanent := tlsMessage(f.Detail, verify)
		return download.DialTLS, m, permanent
	case handshake.ReasonTLSUnavailable, handshake.ReasonEncryptionRequired:
		return download.DialTLS, msg, true
	case handshake.ReasonAuthRejected:
		return download.DialAuth, "authentication rejected (check username and password): " + msg, true
	case handshake.ReasonAuthRequired:
		return download.DialAuth, "the server requires authentication (set username and password): " + msg, true
	case handshake.ReasonAuthSequence, handshake.ReasonAuthRefused, handshake.ReasonAuthUnsupported, handshake.ReasonConfig:
		return download.DialAuth, msg, false
	case handshake.ReasonNoReader:
		return download.DialUnavailable, msg, true
	case handshake.ReasonUnavailable:
		return download.DialUnavailable, msg, false
	case handshake.ReasonProtocol, handshake.ReasonUnexpected:
		return download.DialProtocol, msg, false
	}
	return download.DialConnect, msg, false
}

// step runs on the connection's goroutine after every input: it writes
// decoded data, reports results to the Scheduler, dispatches its events,
// and hands the connection its new requests.
func (e *Engine) step(c *connRun, m *pooled, now time.Time) error {
	var results []download.Result
	var closed *download.ConnClosed
	var werr error
	for {
		ev, ok := m.NextEvent()
		if !ok {
			break
		}
		switch ev := ev.(type) {
		case download.Data:
			o := e.files[ev.Segment.File]
			if werr != nil {
				o.markUnwritten(ev.Segment.Number, "not written after "+werr.Error())
				continue
			}
			if err := o.write(ev.Segment.Number, ev.Offset, ev.Bytes); err != nil {
				werr = err
				continue
			}
			e.decoded.Add(int64(len(ev.Bytes)))
		case download.Result:
			results = append(results, ev)
		case download.ConnClosed:
			closed = &ev
		}
	}
	e.mu.Lock()
	var wake []*connRun
	defer func() {
		c.woken = false
		wake = append(wake, e.dispatch(now, c)...)
		e.mu.Unlock()
		e.wakeAll(wake)
	}()
	e.accountQuota(now)
	if werr != nil && e.fatal == nil {
		// A write to the output failed (disk full?): nothing more can be
		// stored, so the run ends; progress so far stays resumable.
		e.fatal = werr
		e.closing = true
		e.sched.Pause(now, true)
	}
	sr := c.srv
	for _, r := range results {
		o := e.files[r.Key().File]
		outcome := r.Outcome()
		switch r := r.(type) {
		case download.SegmentOK:
			var why string
			if outcome, why = o.check(r); why != "" {
				e.log.Warn("segment refused", "file", o.nzbName, "segment", r.Segment.Number, "server", sr.cfg.Label(), "why", why)
			}
		case download.SegmentBad:
			o.clearBad(r.Segment.Number)
			e.log.Warn("segment corrupt", "file", o.nzbName, "segment", r.Segment.Number, "server", sr.cfg.Label(), "err", r.Err)
		case download.RequestFailed:
			o.clearBad(r.Segment.Number)
			sr.lastErr = fmt.Sprintf("BODY answered %q", r.Response.String())
		case download.NotFound:
			o.clearBad(r.Segment.Number)
		}
		if err := e.sched.Report(now, c.id, r.Key(), outcome); err != nil {
			e.log.Error("scheduler", "err", err)
		}
	}
	if c.reported {
		return nil
	}
	if closed != nil {
		c.reported, c.up = true, false
		if closed.Reason != download.ReasonQuit {
			sr.lastErr = "connection closed: " + closed.String()
			if closed.Detail != "" {
				sr.lastErr += ": " + closed.Detail
			}
			if !e.closing {
				e.log.Warn("connection closed", "server", sr.cfg.Label(), "reason", closed.String(), "detail", closed.Detail)
			}
		}
		for _, k := range closed.Pending {
			e.files[k.File].clearBad(k.Number)
		}
		if err := e.sched.Closed(now, c.id, closed.Outcome()); err != nil {
			e.log.Error("scheduler", "err", err)
		}
		if closed.Reason == download.ReasonAuth && sr.cfg.Username == "" {
			// 480 with no credentials to offer: waiting cannot mend it.
			e.giveUp(now, sr, "the server requires authentication (480) and no username/password is configured for it")
		}
		return nil
	}
	if werr != nil {
		m.Abort(now, werr.Error())
		return nil
	}
	// Hand over requests (the results reported above may have brought
	// some); reporting a refused one may bring more.
	wake = append(wake, e.dispatch(now, c)...)
	for len(c.mailbox) > 0 {
		reqs := c.mailbox
		c.mailbox = nil
		for _, r := range reqs {
			if err := m.Request(now, r); err != nil {
				e.log.Error("request refused", "err", err)
				e.sched.Report(now, c.id, r.Segment, download.ConnError)
			}
		}
		wake = append(wake, e.dispatch(now, c)...)
	}
	if m.Pending() > 0 {
		m.idleSince = now
		m.idleExpired = false
		return nil
	}
	if e.closing || m.idleExpired {
		// Idle: leave the pool. The Scheduler dials again if work comes.
		c.reported, c.up = true, false
		m.Close(now)
		e.sched.Closed(now, c.id, download.ConnError)
	}
	return nil
}
