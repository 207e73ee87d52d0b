package nntptest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// TLSMode says how a Server offers TLS.
type TLSMode int

const (
	// NoTLS serves plain text only; STARTTLS draws 500.
	NoTLS TLSMode = iota
	// StartTLS serves plain text and upgrades on STARTTLS (RFC 4642).
	StartTLS
	// ImplicitTLS speaks TLS from the first byte, like port 563.
	ImplicitTLS
)

// Auth configures AUTHINFO USER/PASS (RFC 4643).
type Auth struct {
	User, Pass string
	// Required makes every command except AUTHINFO, CAPABILITIES, MODE READER,
	// STARTTLS, HELP and QUIT draw 480 until the client has authenticated.
	Required bool
}

// Options configure a Server. The zero value is a posting-allowed reader and
// streaming peer with no TLS, no authentication and no articles.
type Options struct {
	// Hostname names the server in the greeting, the Path and Xref fields it
	// generates; "" means "nntptest".
	Hostname string
	// NoPosting makes the greeting 201 and POST answer 440.
	NoPosting bool
	// Capabilities, if non-nil, is sent verbatim as the CAPABILITIES list
	// instead of the list computed from the options and the session state.
	Capabilities []string
	// NoCapabilities makes CAPABILITIES answer 500, like a pre-RFC 3977 server.
	NoCapabilities bool
	// Transit acts like INN's innd on its feed port: reader commands answer
	// "401 MODE-READER" until MODE READER is sent, and after MODE READER the
	// streaming commands answer 500 (the connection now belongs to nnrpd).
	Transit bool
	// NoStreaming makes MODE STREAM, CHECK and TAKETHIS answer 500, so a
	// feeder must fall back to IHAVE. TAKETHIS's article is then not read:
	// its lines arrive as commands, as with a real server that lacks TAKETHIS.
	NoStreaming bool
	// Auth, if non-nil, enables AUTHINFO USER/PASS.
	Auth *Auth
	// TLS selects STARTTLS or implicit TLS with a certificate generated at start.
	TLS TLSMode
	// KeepReceived adds articles accepted through TAKETHIS or IHAVE to the
	// store (numbered in the existing groups their Newsgroups field names), so
	// a reader can fetch them back. POSTed articles are always stored.
	KeepReceived bool
	// Rule decides what the streaming peer does with each offered message-id;
	// nil means DefaultRule. See SetRule to change it while running.
	Rule Rule
	// Now is the server's clock for DATE and for the arrival time of articles
	// added without one; nil means time.Now.
	Now func() time.Time
	// Logf, if non-nil, receives a line per command and per response.
	Logf func(format string, args ...any)
	// Unrecorded keeps no record of the commands received (Commands and
	// Count see none), so a test of a client's memory with very many
	// commands does not count the server's.
	Unrecorded bool
}

// A Server is a loopback NNTP server for tests: a reader (RFC 3977), a
// streaming peer (RFC 4644) and a fault injector in one. All methods are safe
// for concurrent use while it runs.
type Server struct {
	opts     Options
	hostname string
	ln       net.Listener
	tlsCfg   *tls.Config // nil when TLS is NoTLS
	cert     *certificate

	done   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once

	mu       sync.Mutex
	conns    map[int]net.Conn // open client connections by number
	nconns   int              // connections accepted so far
	store    store
	rule     Rule
	faults   []*faultState
	nextID   FaultID
	handlers map[string]Handler
	cmds     []Received
	xfers    []Transfer
	accepted map[string]bool // message-ids accepted by TAKETHIS/IHAVE/POST
	changed  chan struct{}   // closed and replaced on every recorded event
}

// New starts a server on 127.0.0.1 with a kernel-chosen port. Call Close when
// done.
func New(opts Options) (*Server, error) {
	s := &Server{
		opts:     opts,
		hostname: opts.Hostname,
		done:     make(chan struct{}),
		conns:    make(map[int]net.Conn),
		rule:     opts.Rule,
		handlers: make(map[string]Handler),
		accepted: make(map[string]bool),
		changed:  make(chan struct{}),
	}
	if s.hostname == "" {
		s.hostname = "nntptest"
	}
	s.store.init()
	if opts.TLS != NoTLS {
		c, err := newCertificate()
		if err != nil {
			return nil, fmt.Errorf("nntptest: %w", err)
		}
		s.cert = c
		s.tlsCfg = &tls.Config{Certificates: []tls.Certificate{c.tls}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("nntptest: listen: %w", err)
	}
	if opts.TLS == ImplicitTLS {
		ln = tls.NewListener(ln, s.tlsCfg)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Start is New for tests: it fails tb if the server cannot start and closes
// the server when the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Close stops accepting, closes every connection, and waits for the
// server's goroutines to end. It is safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.closed.Do(func() {
		close(s.done)
		err = s.ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
	})
	return err
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// HostPort returns the listening address as "127.0.0.1:port", for net.Dial.
func (s *Server) HostPort() string { return s.ln.Addr().String() }

// Port returns the listening port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.HostPort())
	n, _ := strconv.Atoi(p)
	return n
}

// CertPool returns a pool holding the server's self-signed certificate, for
// a client's tls.Config RootCAs; nil when the server has no TLS.
func (s *Server) CertPool() *x509.CertPool {
	if s.cert == nil {
		return nil
	}
	return newPool(s.cert)
}

// CertPEM returns the server's certificate in PEM form, for programs that
// read a CA file; nil when the server has no TLS.
func (s *Server) CertPEM() []byte {
	if s.cert == nil {
		return nil
	}
	return append([]byte(nil), s.cert.pem...)
}

// ClientTLSConfig returns a client configuration that trusts the server's
// certificate (valid for 127.0.0.1 and localhost); nil when the server has no TLS.
func (s *Server) ClientTLSConfig() *tls.Config {
	if s.cert == nil {
		return nil
	}
	return &tls.Config{RootCAs: s.CertPool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// DropConns closes every open client connection; the server keeps listening.
// It returns how many were closed.
func (s *Server) DropConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.conns {
		c.Close()
		n++
	}
	return n
}

// A Handler answers one command in place of the built-in behaviour. It
// returns the complete response bytes: a status line with CRLF, followed by a
// dot-stuffed terminated block when the response has one (proto.AppendResponse,
// proto.AppendBlock). conn is the connection number.
type Handler func(conn int, cmd proto.Command) []byte

// SetHandler makes h answer the commands named name (a verb such as "XFEATURE"
// or a full name such as "LIST ACTIVE.TIMES"; matched as Count matches); a nil h
// removes it. Faults still apply to the handler's response.
func (s *Server) SetHandler(name string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		delete(s.handlers, name)
		return
	}
	s.handlers[name] = h
}

func (s *Server) handler(cmd proto.Command) Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.handlers) == 0 {
		return nil
	}
	if h := s.handlers[cmd.Name()]; h != nil {
		return h
	}
	return s.handlers[cmd.Verb]
}

func (s *Server) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.mu.Lock()
		select {
		case <-s.done:
			s.mu.Unlock()
			nc.Close()
			return
		default:
		}
		s.nconns++
		id := s.nconns
		s.conns[id] = nc
		s.notifyLocked()
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c := newConn(s, id, nc)
			c.serve()
			nc.Close()
			s.mu.Lock()
			delete(s.conns, id)
			s.notifyLocked()
			s.mu.Unlock()
		}()
	}
}

// sleep waits for d or until the server closes; it reports whether the full
// time passed.
func (s *Server) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return false
	}
}

// notifyLocked wakes Await callers; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Await blocks until cond returns true or ctx ends. cond is evaluated now and
// after every command, transfer and connection event, without the server's
// lock held, so it may call the server's methods. Use it to wait for what a
// client sent asynchronously (a pipelined TAKETHIS, a reconnection) instead of
// sleeping.
func (s *Server) Await(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("nntptest: await: %w", ctx.Err())
		case <-s.done:
			if cond() {
				return nil
			}
			return errors.New("nntptest: await: server closed")
		}
	}
}
