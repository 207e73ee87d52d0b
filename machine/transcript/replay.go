package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine"
)

// Options tune Replay.
type Options struct {
	// Local is the side the machine plays: Client (the default) for the
	// handshake, feed, download and reader machines, whose input is the
	// "S" lines; Server for the ingest machine, whose input is the "C" lines.
	Local Side

	// Start is the clock at the first line; Epoch when zero.
	Start time.Time

	// Split cuts each run of consecutive input lines, joined, into the
	// pieces given to Receive, one call per piece (see Whole, Chunks and
	// CutAt). nil gives Receive one transcript line per call. When Receive
	// fails, the divergence names the first line the failing piece
	// completed (or the line it ended in).
	Split func(run []byte) [][]byte
}

// A Divergence is the first point where a machine did not do what the
// transcript says.
type Divergence struct {
	Line   int    // transcript line (the entry's 1-based index when it has no line)
	Reason string // what went wrong
	Diff   string // cmp.Diff(want, got) of the bytes concerned, when there are any
}

// Error names the line and the reason, followed by the diff if any.
func (d *Divergence) Error() string {
	s := fmt.Sprintf("transcript line %d: %s", d.Line, d.Reason)
	if d.Diff != "" {
		s += " (-want +got):\n" + d.Diff
	}
	return s
}

// Replay drives m through the transcript t and returns the first divergence
// as a *Divergence, or nil when m did exactly what t says:
//
//   - input lines (the peer's Data) are given to Receive, one per call or
//     as opts.Split cuts runs of them; output is drained with AppendOutgoing after every input;
//   - output lines (the local side's Data) must match what m wrote, in order;
//     output must be empty whenever input is due and at the end;
//   - "@ +d" advances the clock, and calls Timeout when m's deadline is due;
//   - "! tls" and "! tls-fail" call TLSDone on a machine that asked by WantTLS;
//   - "! error" must follow input that made Receive fail (an error nobody
//     expected is a divergence);
//   - the peer's EOF calls ReceiveEOF on an EOFReceiver; the local side's EOF
//     requires m.Closed() with nothing left to write.
//
// Input that arrives after m closed, within one run, is dropped as a runtime
// would; a new run of input after m closed is a divergence.
func Replay(m machine.Conn, t Transcript, opts Options) error {
	r := replayer{m: m, t: t, opts: opts, now: opts.Start}
	if r.opts.Local == 0 {
		r.opts.Local = Client
	}
	if r.now.IsZero() {
		r.now = Epoch
	}
	return r.run()
}

type replayer struct {
	m    machine.Conn
	t    Transcript
	opts Options
	now  time.Time
	out  []byte // written by m, not yet matched

	errLine int   // line of the input that made Receive fail
	err     error // that failure, until an Error entry matches it
}

func (r *replayer) line(i int) int {
	if i >= len(r.t) {
		if len(r.t) == 0 {
			return 1
		}
		return r.line(len(r.t)-1) + 1
	}
	if r.t[i].Line > 0 {
		return r.t[i].Line
	}
	return i + 1
}

func (r *replayer) diverge(i int, diff string, format string, args ...any) error {
	return &Divergence{Line: r.line(i), Reason: fmt.Sprintf(format, args...), Diff: diff}
}

func (r *replayer) drain() {
	for {
		n := len(r.out)
		r.out = r.m.AppendOutgoing(r.out)
		if len(r.out) == n {
			return
		}
	}
}

// firstLine is the start of b up to and including its first LF.
func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i+1]
	}
	return b
}

func (r *replayer) wantTLS() bool {
	ts, ok := r.m.(machine.TLSStarter)
	return ok && ts.WantTLS()
}

func (r *replayer) run() error {
	local, peer := r.opts.Local, r.opts.Local.Peer()
	r.drain() // a server machine greets before any input
	for i := 0; i < len(r.t); i++ {
		e := r.t[i]
		if e.Kind == Blank || e.Kind == Comment {
			continue
		}
		if r.err != nil && e.Kind != Error {
			return &Divergence{Line: r.errLine, Reason: fmt.Sprintf("Receive failed: %v (the transcript has no \"! error\" line after this input)", r.err)}
		}
		switch e.Kind {
		case Data:
			if len(e.Data) == 0 {
				return r.diverge(i, "", "data entry with no bytes")
			}
			// A server's 382 is its own output, matched before the
			// handshake; only the peer's data must wait for it.
			if e.Side == peer && r.wantTLS() {
				return r.diverge(i, "", "machine waits for the STARTTLS handshake, but the transcript goes on with %s data", e.Side)
			}
			if e.Side == peer {
				var err error
				if i, err = r.feed(i); err != nil {
					return err
				}
				continue
			}
			if e.Side != local {
				return r.diverge(i, "", "data entry without a side")
			}
			if !bytes.HasPrefix(r.out, e.Data) {
				got := r.out
				if len(got) > len(e.Data) {
					got = firstLine(got)
				}
				what := "machine wrote something else"
				if len(got) == 0 {
					what = "machine wrote nothing"
				}
				return r.diverge(i, cmp.Diff(string(e.Data), string(got)), "%s, want %s line %q", what, local, e.Data)
			}
			r.out = r.out[len(e.Data):]
		case EOF:
			if e.Side == peer {
				if er, ok := r.m.(machine.EOFReceiver); ok {
					er.ReceiveEOF(r.now)
					r.drain()
				}
				continue
			}
			if len(r.out) > 0 {
				return r.diverge(i, cmp.Diff("", string(firstLine(r.out))), "%s closes here, but the machine still has output", local)
			}
			if !r.m.Closed() {
				return r.diverge(i, "", "%s closes here, but the machine is not Closed", local)
			}
		case Advance:
			r.now = r.now.Add(e.D)
			r.fireTimers()
		case TLS, TLSFail:
			ts, ok := r.m.(machine.TLSStarter)
			if !ok {
				return r.diverge(i, "", "STARTTLS handshake in the transcript, but the machine (%T) is not a machine.TLSStarter", r.m)
			}
			if len(r.out) > 0 {
				return r.diverge(i, cmp.Diff("", string(firstLine(r.out))), "TLS handshake here, but the machine still has output")
			}
			if !ts.WantTLS() {
				return r.diverge(i, "", "TLS handshake here, but the machine did not ask for one")
			}
			var herr error
			if e.Kind == TLSFail {
				herr = errors.New(e.Text)
			}
			if err := ts.TLSDone(r.now, herr); err != nil {
				return r.diverge(i, "", "TLSDone: %v", err)
			}
			r.drain()
		case Error:
			if r.err == nil {
				return r.diverge(i, "", "the transcript expects Receive to fail here, but it did not")
			}
			if !strings.Contains(r.err.Error(), e.Text) {
				return r.diverge(i, cmp.Diff(e.Text, r.err.Error()), "Receive failed with another error")
			}
			r.err = nil
		default:
			return r.diverge(i, "", "unknown entry kind %v", e.Kind)
		}
	}
	if r.err != nil {
		return &Divergence{Line: r.errLine, Reason: fmt.Sprintf("Receive failed: %v (the transcript has no \"! error\" line after this input)", r.err)}
	}
	if len(r.out) > 0 {
		return r.diverge(len(r.t), cmp.Diff("", string(firstLine(r.out))), "machine wrote more than the transcript holds")
	}
	return nil
}

// feed gives the run of input entries starting at i to Receive and returns
// the index of the run's last entry.
func (r *replayer) feed(i int) (int, error) {
	peer := r.opts.Local.Peer()
	if len(r.out) > 0 {
		return i, r.diverge(i, cmp.Diff("", string(firstLine(r.out))), "machine wrote a line where the transcript has %s input", peer)
	}
	if r.m.Closed() {
		return i, r.diverge(i, "", "machine closed the connection, but the transcript has more %s input", peer)
	}
	// Gather the run, skipping layout lines, and remember where each
	// entry's bytes end so errors can name the right line.
	var run []byte
	var ends []int // ends[k]: offset in run after entry idx[k]
	var idx []int
	last := i
	for j := i; j < len(r.t); j++ {
		e := r.t[j]
		if e.Kind == Blank || e.Kind == Comment {
			continue
		}
		if e.Kind != Data || e.Side != peer {
			break
		}
		run = append(run, e.Data...)
		ends = append(ends, len(run))
		idx = append(idx, j)
		last = j
	}
	var pieces [][]byte
	if r.opts.Split != nil {
		pieces = r.opts.Split(run)
	} else {
		for k := range idx {
			pieces = append(pieces, r.t[idx[k]].Data)
		}
	}
	off := 0
	for _, p := range pieces {
		if r.m.Closed() {
			break
		}
		start := off
		off += len(p)
		if len(p) == 0 {
			continue
		}
		if err := r.m.Receive(r.now, p); err != nil {
			r.err, r.errLine = err, r.line(idx[blame(ends, start, off)])
			r.drain()
			return last, nil
		}
		r.drain()
	}
	if off != len(run) && !r.m.Closed() {
		return last, r.diverge(i, "", "Split returned %d of %d bytes", off, len(run))
	}
	return last, nil
}

// blame picks the entry a failing piece run[start:end] is blamed for: the
// first entry that the piece completes, or else the one it ends in.
func blame(ends []int, start, end int) int {
	for k, e := range ends {
		if e > start && e <= end {
			return k
		}
	}
	for k, e := range ends {
		if e >= end {
			return k
		}
	}
	return len(ends) - 1
}

// fireTimers calls Timeout while the machine's deadline is due, at most a
// bounded number of times (a machine that keeps an old deadline after
// Timeout would otherwise loop).
func (r *replayer) fireTimers() {
	for n := 0; n < 100; n++ {
		d, ok := r.m.Deadline()
		if !ok || r.now.Before(d) {
			return
		}
		r.m.Timeout(r.now)
		r.drain()
		if d2, ok := r.m.Deadline(); ok && d2.Equal(d) {
			return
		}
	}
}

// Whole is a Split function that gives each run of input lines to Receive in
// one call, as a runtime does when the lines arrive in one read.
func Whole(run []byte) [][]byte { return [][]byte{run} }

// Chunks returns a Split function that cuts runs into pieces of n bytes
// (the last may be shorter).
func Chunks(n int) func([]byte) [][]byte {
	return func(run []byte) [][]byte {
		var out [][]byte
		for len(run) > n && n > 0 {
			out = append(out, run[:n])
			run = run[n:]
		}
		return append(out, run)
	}
}

// CutAt returns a Split function that cuts every run in two at offset k
// (runs not longer than k stay whole).
func CutAt(k int) func([]byte) [][]byte {
	return func(run []byte) [][]byte {
		if k <= 0 || k >= len(run) {
			return [][]byte{run}
		}
		return [][]byte{run[:k], run[k:]}
	}
}
