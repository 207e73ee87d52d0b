package download

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/transcript"
)

// Each testdata/*.txt transcript describes its own test in comments:
//
//	# config: pipeline=2 user=U pass=P timeout=60s
//	# request: 1/1 <a@t> [group]    (a request made before the first line)
//	# do: request 1/3 <c@t> [group] | close | abort   (an owner's action here)
//	# want: <one event, as summarize writes it>      (one line per event)
//	# bytes: 1/1 <the segment's decoded bytes>       (optional)
//	# split: whole                   (only whole runs and finer splits)
//
// The test replays each against a fresh Fetch with the input split one line
// per Receive, whole runs, byte by byte and cut in two at every offset of
// every run, and requires the same events and bytes every time.

type fetchScript struct {
	cfg       FetchConfig
	requests  []Request
	want      []string
	bytes     map[Key]string
	wholeOnly bool
}

// parseRequest reads "1/1 <a@t> [group]".
func parseRequest(w []string) (Request, error) {
	if len(w) < 2 || len(w) > 3 {
		return Request{}, fmt.Errorf("request %q: want KEY MESSAGE-ID [GROUP]", strings.Join(w, " "))
	}
	k, err := parseKey(w[0])
	if err != nil {
		return Request{}, err
	}
	r := Request{Segment: k, MessageID: w[1]}
	if len(w) == 3 {
		r.Group = w[2]
	}
	return r, nil
}

func readFetchHeader(tr transcript.Transcript) (fetchScript, error) {
	s := fetchScript{bytes: map[Key]string{}}
	haveCfg := false
	for key, val := range tr.Fields() {
		switch key {
		case "config":
			haveCfg = true
			for _, w := range strings.Fields(val) {
				k, v, _ := strings.Cut(w, "=")
				switch k {
				case "pipeline":
					n, err := strconv.Atoi(v)
					if err != nil {
						return s, fmt.Errorf("config: %w", err)
					}
					s.cfg.Pipeline = n
				case "user":
					s.cfg.User = v
				case "pass":
					s.cfg.Pass = v
				case "timeout":
					d, err := time.ParseDuration(v)
					if err != nil {
						return s, fmt.Errorf("config: %w", err)
					}
					s.cfg.Timeout = d
				default:
					return s, fmt.Errorf("config: unknown word %q", w)
				}
			}
		case "request":
			r, err := parseRequest(strings.Fields(val))
			if err != nil {
				return s, err
			}
			s.requests = append(s.requests, r)
		case "want":
			s.want = append(s.want, val)
		case "bytes":
			k, b, _ := strings.Cut(val, " ")
			key, err := parseKey(k)
			if err != nil {
				return s, err
			}
			s.bytes[key] = b
		case "split":
			s.wholeOnly = val == "whole"
		}
	}
	if !haveCfg || len(s.want) == 0 {
		return s, fmt.Errorf("the transcript needs # config: and # want: lines")
	}
	return s, nil
}

// logged is a Fetch whose events are drained after every input, as an
// owner drains them, into a log; Data bytes are collected per segment.
type logged struct {
	*Fetch
	evs   []FetchEvent
	bytes map[Key][]byte
}

func newLogged(f *Fetch) *logged { return &logged{Fetch: f, bytes: map[Key][]byte{}} }

func (l *logged) drain() {
	for {
		e, ok := l.Fetch.NextEvent()
		if !ok {
			return
		}
		if d, ok := e.(Data); ok {
			l.bytes[d.Segment] = append(l.bytes[d.Segment], d.Bytes...)
			d.Bytes = bytes.Clone(d.Bytes) // the slice is only valid until the next input
			e = d
		}
		l.evs = append(l.evs, e)
	}
}

func (l *logged) Receive(now time.Time, p []byte) error {
	err := l.Fetch.Receive(now, p)
	l.drain()
	return err
}

func (l *logged) Timeout(now time.Time) { l.Fetch.Timeout(now); l.drain() }

func (l *logged) ReceiveEOF(now time.Time) { l.Fetch.ReceiveEOF(now); l.drain() }

// summarize writes events one per line; consecutive Data events of one
// segment that continue each other are one "data K off+len" line, so the
// summary does not depend on how the input was split.
func summarize(evs []FetchEvent) []string {
	var out []string
	var cur *Data
	var n int
	flush := func() {
		if cur != nil {
			out = append(out, fmt.Sprintf("data %s %d+%d", cur.Segment, cur.Offset, n))
			cur = nil
		}
	}
	for _, e := range evs {
		if d, ok := e.(Data); ok {
			if cur != nil && cur.Segment == d.Segment && cur.Offset+int64(n) == d.Offset {
				n += len(d.Bytes)
				continue
			}
			flush()
			c := d
			cur, n = &c, len(d.Bytes)
			continue
		}
		flush()
		out = append(out, e.(fmt.Stringer).String())
	}
	flush()
	return out
}

// replayFetch replays a transcript against a fresh Fetch.
func replayFetch(tr transcript.Transcript, s fetchScript, split func([]byte) [][]byte) (*logged, error) {
	l := newLogged(NewFetch(transcript.Epoch, s.cfg))
	for _, r := range s.requests {
		if err := l.Request(transcript.Epoch, r); err != nil {
			return nil, err
		}
	}
	for _, p := range transcript.SplitActions(tr, transcript.Epoch) {
		if err := transcript.Replay(l, p.Transcript, transcript.Options{Start: p.Start, Split: split}); err != nil {
			return nil, err
		}
		now := p.End
		switch w := strings.Fields(p.Then); {
		case len(w) == 0:
		case w[0] == "close":
			l.Close(now)
		case w[0] == "abort":
			l.Abort(now, "owner")
		case w[0] == "request":
			r, err := parseRequest(w[1:])
			if err != nil {
				return nil, err
			}
			if err := l.Request(now, r); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unknown action %q", p.Then)
		}
		l.drain()
	}
	return l, nil
}

func TestFetchTranscripts(t *testing.T) {
	transcript.Run(t, os.DirFS("."), "testdata/*.txt", transcript.Server, func(f transcript.File) (transcript.Case, error) {
		s, err := readFetchHeader(f.Transcript)
		c := transcript.Case{
			// The events, one a line, after the segments' bytes are checked.
			Replay: func(split func([]byte) [][]byte) (string, error) {
				l, err := replayFetch(f.Transcript, s, split)
				if err != nil {
					return "", err
				}
				for k, want := range s.bytes {
					if got := string(l.bytes[k]); got != want {
						return "", fmt.Errorf("segment %s bytes %q, want %q", k, got, want)
					}
				}
				return strings.Join(summarize(l.evs), "\n"), nil
			},
			Want:      strings.Join(s.want, "\n"),
			WholeOnly: s.wholeOnly,
		}
		if s.wholeOnly {
			c.Limit = 200
		}
		return c, err
	})
}
