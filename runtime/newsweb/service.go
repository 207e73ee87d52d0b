package newsweb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// Errors of the service layer. Errors returned by Service and Federated wrap
// them (errors.Is).
var (
	// ErrNotFound: no server has the article or group.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: no server could answer (down, refusing, or too busy).
	ErrUnavailable = errors.New("no news server could answer")
	// ErrClosed: the service was closed.
	ErrClosed = errors.New("service closed")
)

// Backoff after a failed connection: while a server is down, requests fail
// at once (so the federated service moves to the next server without
// waiting for a dial timeout) for minBackoff, doubling per failure up to
// maxBackoff; a successful connection ends it.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

// Defaults for ServiceOptions fields left zero.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultDialTimeout    = 10 * time.Second
)

// ServiceOptions tune a Service.
type ServiceOptions struct {
	// RequestTimeout bounds how long Do waits for a result, and is the age
	// after which a pending request no longer coalesces new asks.
	// DefaultRequestTimeout when 0.
	RequestTimeout time.Duration
	// DialTimeout bounds connecting and each handshake step.
	// DefaultDialTimeout when 0.
	DialTimeout time.Duration
	// Scheduler sizes the three queues and sets priority_aging
	// (machine/reader defaults: 1024 each, 10 s).
	Scheduler mreader.SchedulerConfig
	// Client configures the reader Client of each connection (thread limit,
	// per-answer timeout, ...).
	Client mreader.Config
	// Now is the clock (time.Now when nil); tests pass a fake one.
	Now func() time.Time
	// Logger receives connection and request logs; slog.Default() when nil.
	Logger *slog.Logger
	// Metrics, when not nil, counts queue depth, commands and requests.
	Metrics *Metrics
}

func (o ServiceOptions) withDefaults() ServiceOptions {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// call is one request in flight at a Service, shared by every coalesced
// asker.
type call struct {
	key  string
	req  mreader.Request
	done chan struct{} // closed when ev or err is set
	ev   mreader.Event
	err  error
}

// Service talks to one NNTP server: Do queues a
// request by priority, coalescing identical requests in flight, and a pool
// of workers with one persistent connection each runs them.
type Service struct {
	cfg     ServerConfig
	opts    ServiceOptions
	log     *slog.Logger
	metrics *Metrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{} // one token per push, so no idle worker misses work

	mu        sync.Mutex
	downUntil time.Time     // after a failed connection: fail fast until then
	backoff   time.Duration // the current wait after a failed connection
	sched     *mreader.Scheduler[*call]
	coal      *mreader.Coalescer[string]
	calls     map[string]*call
	closed    bool

	ids atomic.Uint64 // request ids for the Client's events
	// heard is when a connection last received bytes or a new one came
	// up (Unix nanoseconds, real time): a server that is busy but
	// answering is not silent.
	heard atomic.Int64
}

// heardAt is when the server last sent anything.
func (s *Service) heardAt() time.Time { return time.Unix(0, s.heard.Load()) }

// silent reports whether the server has requests pending and sent
// nothing for limit: it accepts and does not answer.
func (s *Service) silent(now time.Time, limit time.Duration) bool {
	if now.Sub(s.heardAt()) < limit {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls) > 0
}

// NewService starts cfg.Connections workers for the server. Connections are
// opened on first use and kept; Close stops everything.
func NewService(cfg ServerConfig, opts ServiceOptions) *Service {
	cfg = cfg.withDefaults()
	opts = opts.withDefaults()
	s := &Service{
		cfg:     cfg,
		opts:    opts,
		log:     opts.Logger.With("server", cfg.Name),
		metrics: opts.Metrics,
		wake:    make(chan struct{}, cfg.Connections),
		sched:   mreader.NewScheduler[*call](opts.Now(), opts.Scheduler),
		coal:    mreader.NewCoalescer[string](opts.RequestTimeout),
		calls:   make(map[string]*call),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.heard.Store(time.Now().UnixNano())
	for i := range cfg.Connections {
		w := &worker{s: s, id: i + 1, lastLow: opts.Now()}
		s.wg.Add(1)
		go w.loop()
	}
	return s
}

// Name is the server's label.
func (s *Service) Name() string { return s.cfg.Name }

// Config returns the server's configuration (with defaults filled in).
func (s *Service) Config() ServerConfig { return s.cfg }

func (s *Service) now() time.Time { return s.opts.Now() }

// Close stops the workers and closes their connections. Requests still
// queued fail with ErrClosed.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	var left []*call
	for {
		c, _, ok := s.sched.PickAged(s.now(), s.now())
		if !ok {
			break
		}
		left = append(left, c)
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	for _, c := range left {
		s.finish(c, nil, fmt.Errorf("reader: %s: %w", s.cfg.Name, ErrClosed))
	}
}

// QueueLen is the number of requests waiting at priority p.
func (s *Service) QueueLen(p mreader.Priority) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sched.Len(p)
}

// Do runs req on the server and returns its result event (GroupsResult,
// StatsResult, ThreadsResult, ThreadResult, ArticleResult or NotFound). An
// identical request already in flight and younger than the request timeout
// is joined instead of sent again. Errors: a full queue, the request timeout,
// ctx's end, a connection that cannot be made, or the server's refusal.
func (s *Service) Do(ctx context.Context, req mreader.Request) (mreader.Event, error) {
	key := req.Key()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("reader: %s: %w", s.cfg.Name, ErrClosed)
	}
	if now := s.now(); now.Before(s.downUntil) {
		until := s.downUntil.Sub(now)
		s.mu.Unlock()
		return nil, fmt.Errorf("reader: %s: %w: connecting failed, next try in %v", s.cfg.Name, ErrUnavailable, until.Round(time.Millisecond))
	}
	c := s.calls[key]
	if s.coal.Join(key, s.now()) || c == nil {
		c = &call{key: key, req: req, done: make(chan struct{})}
		if err := s.sched.Push(req.Priority(), c); err != nil {
			s.coal.Finish(key)
			s.mu.Unlock()
			return nil, fmt.Errorf("reader: %s: %w", s.cfg.Name, err)
		}
		s.calls[key] = c
		s.metrics.queueDepth(s.cfg.Name, req.Priority(), s.sched.Len(req.Priority()))
		select {
		case s.wake <- struct{}{}:
		default: // every worker already has a token to wake with
		}
	} else {
		s.metrics.coalesced("server")
	}
	s.mu.Unlock()

	t := time.NewTimer(s.opts.RequestTimeout)
	defer t.Stop()
	select {
	case <-c.done:
		return c.ev, c.err
	case <-ctx.Done():
		return nil, fmt.Errorf("reader: %s: %s: %w", s.cfg.Name, key, ctx.Err())
	case <-t.C:
		return nil, fmt.Errorf("reader: %s: %s: %w after %v", s.cfg.Name, key, mreader.ErrTimeout, s.opts.RequestTimeout)
	}
}

// finish hands a call's result to its askers and removes it from the
// pending table, unless a newer call for the key replaced it there.
func (s *Service) finish(c *call, ev mreader.Event, err error) {
	s.mu.Lock()
	if s.calls[c.key] == c {
		delete(s.calls, c.key)
		s.coal.Finish(c.key)
	}
	s.mu.Unlock()
	c.ev, c.err = ev, err
	close(c.done)
}

// next waits for the worker's next call: the scheduler's pick with the
// worker's own aging clock (each worker tracks when it last processed a
// low-priority request). nil when the service is closing.
func (s *Service) next(w *worker) *call {
	for {
		s.mu.Lock()
		now := s.now()
		c, p, ok := s.sched.PickAged(now, w.lastLow)
		if ok {
			if p == mreader.Low {
				w.lastLow = now
			}
			s.metrics.queueDepth(s.cfg.Name, p, s.sched.Len(p))
			s.mu.Unlock()
			return c
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			return nil
		}
	}
}

// down returns an error while the server is in its backoff.
func (s *Service) down() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); now.Before(s.downUntil) {
		return fmt.Errorf("reader: %s: %w: connecting failed, next try in %v", s.cfg.Name, ErrUnavailable, s.downUntil.Sub(now).Round(time.Millisecond))
	}
	return nil
}

// connected records the outcome of a connection attempt: a failure starts
// or lengthens the backoff, a success ends it.
func (s *Service) connected(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		if s.backoff > 0 {
			s.log.Info("server reachable again")
		}
		s.backoff, s.downUntil = 0, time.Time{}
		return
	}
	s.backoff = min(max(minBackoff, 2*s.backoff), maxBackoff)
	s.downUntil = s.now().Add(s.backoff)
	s.log.Warn("cannot connect; failing requests fast meanwhile", "backoff", s.backoff, "err", err)
}

// worker is one persistent connection's loop.
type worker struct {
	s       *Service
	id      int
	lastLow time.Time
	conn    *serverConn
}

func (w *worker) loop() {
	defer w.s.wg.Done()
	defer func() {
		if w.conn != nil {
			w.conn.close()
		}
	}()
	for {
		c := w.s.next(w)
		if c == nil {
			return
		}
		ev, err := w.run(c.req)
		outcome := "ok"
		switch {
		case err != nil:
			outcome = "error"
			w.s.log.Debug("request failed", "worker", w.id, "request", c.key, "err", err)
		case isNotFound(ev):
			outcome = "not_found"
		}
		w.s.metrics.request(w.s.cfg.Name, c.req.Priority(), outcome)
		w.s.finish(c, ev, err)
	}
}

// isNotFound reports a NotFound event.
func isNotFound(ev mreader.Event) bool {
	_, ok := ev.(mreader.NotFound)
	return ok
}

// run sends req on the worker's connection, opening one if needed. A
// request whose connection failed under it (Failed with Retry, or the
// connection gone) is tried once more on a new connection.
func (w *worker) run(req mreader.Request) (mreader.Event, error) {
	s := w.s
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		if w.conn != nil && !w.conn.alive() {
			w.conn.close()
			w.conn = nil
		}
		if w.conn == nil {
			if err := s.down(); err != nil {
				return nil, err
			}
			sc, err := s.connect(s.ctx, w.id)
			s.connected(err)
			if err != nil {
				return nil, err
			}
			w.conn = sc
		}
		sc := w.conn
		id := s.ids.Add(1)
		var doErr error
		if err := sc.gc.Do(sc.ctx, func(now time.Time) { doErr = sc.client.Do(now, id, req) }); err != nil {
			lastErr = fmt.Errorf("reader: %s: connection lost: %w", s.cfg.Name, err)
			sc.close()
			w.conn = nil
			continue
		}
		if doErr != nil {
			// The Client refused the request (closed under it, or busy):
			// start over on a new connection.
			lastErr = fmt.Errorf("reader: %s: %w", s.cfg.Name, doErr)
			sc.close()
			w.conn = nil
			continue
		}
		ev, retry, err := w.await(sc, id)
		if err == nil {
			return ev, nil
		}
		lastErr = err
		if !retry {
			return nil, err
		}
		sc.close()
		w.conn = nil
	}
	return nil, lastErr
}

// await waits for the result of request id. retry reports an error that a
// new connection may cure.
func (w *worker) await(sc *serverConn, id uint64) (ev mreader.Event, retry bool, err error) {
	s := w.s
	for {
		select {
		case ce := <-sc.events:
			s.metrics.commands(s.cfg.Name, ce.sent)
			switch e := ce.ev.(type) {
			case mreader.Closed:
				continue // the loop is ending; sc.done follows
			case mreader.Failed:
				if e.ID != id {
					continue
				}
				return nil, e.Retry, fmt.Errorf("reader: %s: %w", s.cfg.Name, e.Err)
			default:
				if eventID(e) != id {
					continue
				}
				return e, false, nil
			}
		case <-sc.done:
			// Drain what the loop said last (the Failed of our request).
			for {
				select {
				case ce := <-sc.events:
					if f, ok := ce.ev.(mreader.Failed); ok && f.ID == id {
						return nil, f.Retry, fmt.Errorf("reader: %s: %w", s.cfg.Name, f.Err)
					}
					if _, ok := ce.ev.(mreader.Closed); !ok && eventID(ce.ev) == id {
						return ce.ev, false, nil
					}
					continue
				default:
				}
				break
			}
			return nil, true, fmt.Errorf("reader: %s: connection closed under request", s.cfg.Name)
		}
	}
}

// eventID is the request id a result event answers.
func eventID(ev mreader.Event) uint64 {
	switch e := ev.(type) {
	case mreader.GroupsResult:
		return e.ID
	case mreader.StatsResult:
		return e.ID
	case mreader.ThreadsResult:
		return e.ID
	case mreader.ThreadResult:
		return e.ID
	case mreader.ArticleResult:
		return e.ID
	case mreader.PostResult:
		return e.ID
	case mreader.NotFound:
		return e.ID
	case mreader.Failed:
		return e.ID
	}
	return 0
}
