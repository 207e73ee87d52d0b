// Package recorder records live NNTP sessions as transcripts: a Recorder
// wraps a net.Conn and writes what passes both ways in machine/transcript's
// format, so a session with real INN can be kept in testdata and replayed
// against a machine.
package recorder

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/newsflow/newsflow/machine/transcript"
)

// A Recorder is a net.Conn that passes everything through to the connection
// it wraps and records both directions as a Transcript, one entry per wire
// line. It is safe for concurrent use (a reader goroutine and a writer, as
// the goroutine runtime has).
//
// Reads are recorded as the peer's data and writes as the local side's. A
// line is recorded when its LF arrives, however the bytes were split across
// reads or writes; an unfinished line is recorded at Close (and shown by
// Transcript). A read that returns io.EOF is recorded as the peer's EOF, and
// Close as the local side's.
type Recorder struct {
	mu      sync.Mutex
	conn    net.Conn // the wrapped connection; a *tls.Conn after StartTLS
	local   transcript.Side
	t       transcript.Transcript
	partial [3][]byte // unfinished line per side
	clock   func() time.Time
	res     time.Duration // time marker resolution; 0 records no time
	start   time.Time
	marked  time.Duration // the time already covered by markers
	eof     [3]bool
}

// RecorderOption changes how a Recorder records.
type RecorderOption func(*Recorder)

// WithTimes makes the Recorder write "@ +d" lines before entries, so that a
// replay sees time pass as the recording did. Each entry's time since the
// recorder was made is rounded up to a multiple of res (1ms when res <= 0)
// and markers hold the differences, so a replay's clock at every entry is
// the rounded real one. clock is the time source (time.Now when nil).
func WithTimes(res time.Duration, clock func() time.Time) RecorderOption {
	return func(r *Recorder) {
		if res <= 0 {
			res = time.Millisecond
		}
		if clock == nil {
			clock = time.Now
		}
		r.res, r.clock = res, clock
	}
}

// NewRecorder wraps conn. local is the side this end plays: Client when
// conn was dialled, Server when it was accepted.
func NewRecorder(conn net.Conn, local transcript.Side, opts ...RecorderOption) *Recorder {
	r := &Recorder{conn: conn, local: local}
	for _, o := range opts {
		o(r)
	}
	if r.clock != nil {
		r.start = r.clock()
	}
	return r
}

func (r *Recorder) current() net.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conn
}

// Read reads from the wrapped connection and records what it got.
func (r *Recorder) Read(p []byte) (int, error) {
	n, err := r.current().Read(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record(r.local.Peer(), p[:n])
	if errors.Is(err, io.EOF) {
		r.recordEOF(r.local.Peer())
	}
	return n, err
}

// Write writes to the wrapped connection and records what was written.
func (r *Recorder) Write(p []byte) (int, error) {
	n, err := r.current().Write(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record(r.local, p[:n])
	return n, err
}

// Close closes the wrapped connection and records the local side's EOF.
func (r *Recorder) Close() error {
	err := r.current().Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recordEOF(r.local)
	return err
}

// StartTLS performs the TLS handshake of STARTTLS (RFC 4642 §2.2.2) over the
// wrapped connection, as a client or server according to the local side, and
// records "! tls" or "! tls-fail". Afterwards the Recorder records the
// plaintext inside TLS. No Read may be in progress during the call.
func (r *Recorder) StartTLS(ctx context.Context, cfg *tls.Config) error {
	var tc *tls.Conn
	if r.local == transcript.Server {
		tc = tls.Server(r.current(), cfg)
	} else {
		tc = tls.Client(r.current(), cfg)
	}
	err := tc.HandshakeContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mark()
	if err != nil {
		r.t = append(r.t, transcript.Entry{Kind: transcript.TLSFail, Text: oneLine(err.Error())})
		return err
	}
	r.t = append(r.t, transcript.Entry{Kind: transcript.TLS})
	r.conn = tc
	return nil
}

// RecordError adds "! error <text>": the local machine refused what it
// received (its Receive failed with err). Runtimes call it, when the
// connection they drive is a Recorder, before they close the connection.
func (r *Recorder) RecordError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mark()
	r.t = append(r.t, transcript.Entry{Kind: transcript.Error, Text: oneLine(err.Error())})
}

// Comment adds a comment line to the transcript at this point.
func (r *Recorder) Comment(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t = append(r.t, transcript.Entry{Kind: transcript.Comment, Text: oneLine(text)})
}

// Transcript returns a copy of what has been recorded so far, with
// unfinished lines at the end.
func (r *Recorder) Transcript() transcript.Transcript {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := append(transcript.Transcript(nil), r.t...)
	for _, s := range []transcript.Side{transcript.Client, transcript.Server} {
		if len(r.partial[s]) > 0 {
			t = append(t, transcript.Entry{Kind: transcript.Data, Side: s, Data: bytes.Clone(r.partial[s])})
		}
	}
	return t
}

// LocalAddr returns the wrapped connection's local address.
func (r *Recorder) LocalAddr() net.Addr { return r.current().LocalAddr() }

// RemoteAddr returns the wrapped connection's remote address.
func (r *Recorder) RemoteAddr() net.Addr { return r.current().RemoteAddr() }

// SetDeadline sets the wrapped connection's deadlines.
func (r *Recorder) SetDeadline(t time.Time) error { return r.current().SetDeadline(t) }

// SetReadDeadline sets the wrapped connection's read deadline.
func (r *Recorder) SetReadDeadline(t time.Time) error { return r.current().SetReadDeadline(t) }

// SetWriteDeadline sets the wrapped connection's write deadline.
func (r *Recorder) SetWriteDeadline(t time.Time) error { return r.current().SetWriteDeadline(t) }

// record appends the complete lines of p sent by side. r.mu is held.
func (r *Recorder) record(side transcript.Side, p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			r.partial[side] = append(r.partial[side], p...)
			return
		}
		line := append(r.partial[side], p[:i+1]...)
		r.partial[side] = nil
		p = p[i+1:]
		r.mark()
		r.t = append(r.t, transcript.Entry{Kind: transcript.Data, Side: side, Data: line})
	}
}

// recordEOF records side's unfinished line, then its EOF, once. r.mu is held.
func (r *Recorder) recordEOF(side transcript.Side) {
	if r.eof[side] {
		return
	}
	r.eof[side] = true
	r.mark()
	if len(r.partial[side]) > 0 {
		r.t = append(r.t, transcript.Entry{Kind: transcript.Data, Side: side, Data: r.partial[side]})
		r.partial[side] = nil
	}
	r.t = append(r.t, transcript.Entry{Kind: transcript.EOF, Side: side})
}

// mark appends a time marker if the rounded time moved on. r.mu is held.
func (r *Recorder) mark() {
	if r.clock == nil {
		return
	}
	el := r.clock().Sub(r.start)
	if el < 0 {
		el = 0
	}
	// Round up: a replay then never sees a deadline pass earlier than the
	// recording did (see WithTimes).
	rounded := (el + r.res - 1) / r.res * r.res
	if rounded > r.marked {
		r.t = append(r.t, transcript.Entry{Kind: transcript.Advance, D: rounded - r.marked})
		r.marked = rounded
	}
}

func oneLine(s string) string {
	return string(bytes.Map(func(c rune) rune {
		if c == '\r' || c == '\n' {
			return ' '
		}
		return c
	}, []byte(s)))
}
