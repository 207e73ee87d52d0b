package nntptest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/transcript"
)

// ScriptOptions tune ServeScript.
type ScriptOptions struct {
	// Timeout bounds each wait for the client's bytes; 0 means 10 seconds.
	Timeout time.Duration
	// RealTime makes "@ +d" lines sleep for d before the next line; by
	// default they are skipped.
	RealTime bool
}

// A Script is a one-connection server that plays the server side of a
// transcript (machine/transcript's format) to the first client that
// connects: it sends the "S" lines, and checks that the client sends exactly
// the "C" lines in between. Later connections are closed at once.
type Script struct {
	t    transcript.Transcript
	opts ScriptOptions
	ln   net.Listener
	cert *certificate

	done chan struct{} // closed when the play ends
	mu   sync.Mutex
	err  error // the first divergence, or nil
	line int   // transcript line reached
	nc   net.Conn
	wg   sync.WaitGroup
	once sync.Once
}

// ServeScript starts playing t on a loopback port. If t has "! tls" lines,
// a certificate is generated; trust it with ClientTLSConfig.
func ServeScript(t transcript.Transcript, opts ScriptOptions) (*Script, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	s := &Script{t: t, opts: opts, done: make(chan struct{})}
	for _, e := range t {
		if e.Kind == transcript.TLS || e.Kind == transcript.TLSFail {
			c, err := newCertificate()
			if err != nil {
				return nil, fmt.Errorf("nntptest: script: %w", err)
			}
			s.cert = c
			break
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("nntptest: script: listen: %w", err)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// StartScript parses text and plays it like ServeScript; when the test
// ends it closes the server and fails tb if the client diverged from the
// script or did not play it to the end.
func StartScript(tb testing.TB, text string, opts ScriptOptions) *Script {
	tb.Helper()
	t, err := transcript.Parse([]byte(text))
	if err != nil {
		tb.Fatal(err)
	}
	s, err := ServeScript(t, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		select {
		case <-s.done:
		default:
			s.fail(len(s.t), "the client stopped before the end of the script")
		}
		s.Close()
		if err := s.Err(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// HostPort returns the listening address as "127.0.0.1:port".
func (s *Script) HostPort() string { return s.ln.Addr().String() }

// ClientTLSConfig returns a client configuration trusting the script's
// certificate, or nil when the script has no TLS.
func (s *Script) ClientTLSConfig() *tls.Config {
	if s.cert == nil {
		return nil
	}
	p := newPool(s.cert)
	return &tls.Config{RootCAs: p, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// Wait blocks until the script has been played to its end or diverged, or
// ctx ends, and returns Err (or ctx's error).
func (s *Script) Wait(ctx context.Context) error {
	select {
	case <-s.done:
		return s.Err()
	case <-ctx.Done():
		return fmt.Errorf("nntptest: script stopped at line %d: %w", s.Line(), ctx.Err())
	}
}

// Err returns the first divergence as a *transcript.Divergence, or nil.
func (s *Script) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Line returns the transcript line the play has reached.
func (s *Script) Line() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.line
}

// Close stops the server and its connection.
func (s *Script) Close() error {
	var err error
	s.once.Do(func() {
		err = s.ln.Close()
		s.mu.Lock()
		if s.nc != nil {
			s.nc.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
	})
	return err
}

func (s *Script) fail(i int, format string, args ...any) {
	s.failDiff(i, "", format, args...)
}

func (s *Script) failDiff(i int, diff, format string, args ...any) {
	line := i + 1
	if i < len(s.t) && s.t[i].Line > 0 {
		line = s.t[i].Line
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = &transcript.Divergence{Line: line, Reason: fmt.Sprintf(format, args...), Diff: diff}
	}
}

func (s *Script) serve() {
	defer s.wg.Done()
	nc, err := s.ln.Accept()
	if err != nil {
		s.fail(0, "no client connected: %v", err)
		close(s.done)
		return
	}
	s.mu.Lock()
	s.nc = nc
	s.mu.Unlock()
	// Refuse further connections while the script plays.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	s.play(nc)
	nc.Close()
	close(s.done)
}

// play runs the entries against one connection.
func (s *Script) play(nc net.Conn) {
	r := bufio.NewReader(nc)
	w := bufio.NewWriter(nc)
	for i, e := range s.t {
		s.mu.Lock()
		s.line = i + 1
		s.mu.Unlock()
		switch e.Kind {
		case transcript.Data:
			if e.Side == transcript.Server {
				if _, err := w.Write(e.Data); err != nil {
					s.fail(i, "write: %v", err)
					return
				}
				continue
			}
			if w.Flush() != nil {
				s.fail(i, "write failed before the client's line")
				return
			}
			nc.SetReadDeadline(time.Now().Add(s.opts.Timeout))
			got, err := readLike(r, e.Data)
			if !bytes.Equal(got, e.Data) {
				why := "the client sent something else"
				if err != nil {
					why = fmt.Sprintf("reading the client's line: %v", err)
				}
				s.failDiff(i, cmp.Diff(string(e.Data), string(got)), "%s", why)
				return
			}
		case transcript.EOF:
			if w.Flush() != nil {
				s.fail(i, "write failed before EOF")
				return
			}
			if e.Side == transcript.Server {
				return // the server closes
			}
			nc.SetReadDeadline(time.Now().Add(s.opts.Timeout))
			if b, err := r.ReadByte(); err == nil {
				s.fail(i, "the client sent %q where it should have closed", b)
				return
			} else if err != io.EOF {
				s.fail(i, "waiting for the client to close: %v", err)
				return
			}
		case transcript.Advance:
			if s.opts.RealTime {
				if w.Flush() != nil {
					s.fail(i, "write failed")
					return
				}
				time.Sleep(e.D)
			}
		case transcript.TLS, transcript.TLSFail:
			if w.Flush() != nil {
				s.fail(i, "write failed before TLS")
				return
			}
			tc := tls.Server(nc, &tls.Config{Certificates: []tls.Certificate{s.cert.tls}, MinVersion: tls.VersionTLS12})
			tc.SetDeadline(time.Now().Add(s.opts.Timeout))
			err := tc.Handshake()
			tc.SetDeadline(time.Time{})
			if e.Kind == transcript.TLSFail {
				if err == nil {
					s.fail(i, "the TLS handshake succeeded; the script says it fails")
				}
				return
			}
			if err != nil {
				s.fail(i, "TLS handshake: %v", err)
				return
			}
			nc = tc
			r, w = bufio.NewReader(tc), bufio.NewWriter(tc)
		}
	}
	if w.Flush() != nil {
		s.fail(len(s.t), "write failed at the end")
		return
	}
	// At the end the client may close; anything it sends is a divergence.
	nc.SetReadDeadline(time.Now().Add(s.opts.Timeout))
	if b, err := r.ReadByte(); err == nil {
		rest, _ := r.Peek(r.Buffered())
		s.fail(len(s.t), "the client sent %q after the end of the script", append([]byte{b}, rest...))
	}
}

// readLike reads what should be want: up to and including the next LF, or
// exactly len(want) octets when want holds no LF.
func readLike(r *bufio.Reader, want []byte) ([]byte, error) {
	if bytes.IndexByte(want, '\n') == len(want)-1 {
		return r.ReadBytes('\n')
	}
	got := make([]byte, len(want))
	n, err := io.ReadFull(r, got)
	return got[:n], err
}
