package reader

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
)

// Each testdata/*.txt transcript describes its own test in comments:
//
//	# config: user=U pass=P legacy strategy=HDR|OVER|XOVER|HEAD limit=N window=N timeout=30s groupage=1s
//	# caps: VERSION 2 | READER | HDR | LIST ACTIVE NEWSGROUPS   (the handshake's capabilities, lines split at " | ")
//	# handshake: reader user=U pass=P   (instead of caps: the transcript starts with a handshake
//	                                     with this handshake.Config; the Client takes over after Ready)
//	# do: groups | stats G | threads G [since=N] [limit=N] | new G since=N | thread G <id> | article <id> | post <id> [bare] | close
//	# want: <one line of the events since the last want, as describe writes them>
//	# sent: GROUP=1 HDR=5 ...   (at the end: the Client's command counts, every name listed)
//
// "# do:" runs an owner's action at that point of the session; consecutive
// "# want:" lines are the events that happened since the previous ones.
// The test replays each transcript with the input split one line per
// Receive, whole runs, byte by byte and cut at every offset of every run.

type script struct {
	cfg       Config
	handshake *handshake.Config
	sent      map[string]int
}

func readScript(tr transcript.Transcript) (script, error) {
	var s script
	var haveCaps bool
	for key, val := range tr.Fields() {
		switch key {
		case "config":
			for _, w := range strings.Fields(val) {
				k, v, _ := strings.Cut(w, "=")
				var err error
				switch k {
				case "user":
					s.cfg.User = v
				case "pass":
					s.cfg.Pass = v
				case "legacy":
					s.cfg.Legacy = true
				case "strategy":
					s.cfg.Strategy = map[string]Strategy{"HDR": StrategyHDR, "OVER": StrategyOVER, "XOVER": StrategyXOVER, "HEAD": StrategyHEAD}[v]
					if s.cfg.Strategy == 0 {
						err = fmt.Errorf("unknown strategy %q", v)
					}
				case "limit":
					s.cfg.ThreadLimit, err = strconv.Atoi(v)
				case "window":
					s.cfg.HeadWindow, err = strconv.Atoi(v)
				case "maxline":
					s.cfg.MaxLine, err = strconv.Atoi(v)
				case "overline":
					s.cfg.MaxOverviewLine, err = strconv.Atoi(v)
				case "maxresponse":
					s.cfg.MaxResponse, err = strconv.Atoi(v)
				case "timeout":
					s.cfg.Timeout, err = time.ParseDuration(v)
				case "groupage":
					s.cfg.GroupMaxAge, err = time.ParseDuration(v)
				default:
					err = fmt.Errorf("unknown word %q", w)
				}
				if err != nil {
					return s, fmt.Errorf("config: %w", err)
				}
			}
		case "caps":
			haveCaps = true
			if val != "" {
				set, err := proto.ParseCapabilities(strings.Split(val, " | "))
				if err != nil {
					return s, fmt.Errorf("caps: %w", err)
				}
				s.cfg.Capabilities = set
			}
		case "handshake":
			haveCaps = true
			hc := handshake.Config{}
			for _, w := range strings.Fields(val) {
				k, v, _ := strings.Cut(w, "=")
				switch k {
				case "reader":
					hc.Reader = true
				case "user":
					hc.User = v
				case "pass":
					hc.Pass = v
				default:
					return s, fmt.Errorf("handshake: unknown word %q", w)
				}
			}
			s.handshake = &hc
		case "sent":
			s.sent = map[string]int{}
			for _, w := range strings.Fields(val) {
				k, v, ok := strings.Cut(w, "=")
				n, err := strconv.Atoi(v)
				if !ok || err != nil {
					return s, fmt.Errorf("sent: bad word %q", w)
				}
				s.sent[strings.ReplaceAll(k, "_", " ")] = n
			}
		}
	}
	if !haveCaps {
		return s, fmt.Errorf(`the transcript needs a "# caps:" or "# handshake:" line`)
	}
	return s, nil
}

// doAction runs one "# do:" action.
func doAction(c *Client, now time.Time, id uint64, action string) error {
	w := strings.Fields(action)
	if len(w) == 0 {
		return fmt.Errorf("empty action")
	}
	opt := func(name string) int64 {
		for _, x := range w {
			if v, ok := strings.CutPrefix(x, name+"="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return 0
	}
	arg := func(i int) string {
		if i < len(w) {
			return w[i]
		}
		return ""
	}
	var req Request
	switch w[0] {
	case "groups":
		req = GetGroups{}
	case "stats":
		req = GetGroupStats{Group: arg(1)}
	case "threads":
		req = GetThreads{Group: arg(1), Since: opt("since"), Limit: int(opt("limit"))}
	case "new":
		req = GetNewArticles{Group: arg(1), Since: opt("since"), Limit: int(opt("limit"))}
	case "thread":
		req = GetThread{Group: arg(1), MessageID: arg(2), Limit: int(opt("limit"))}
	case "article":
		req = GetArticle{MessageID: arg(1)}
	case "post":
		// A small article with a line that needs dot-stuffing; "bare"
		// makes it LF-only (refused without a command).
		raw := "Newsgroups: misc.test\r\nSubject: Hi\r\nMessage-ID: " + arg(1) + "\r\n\r\n.dot line\r\nbody\r\n"
		if arg(2) == "bare" {
			raw = strings.ReplaceAll(raw, "\r\n", "\n")
		}
		req = PostArticle{MessageID: arg(1), Raw: []byte(raw)}
	case "close":
		c.Close(now)
		return nil
	default:
		return fmt.Errorf("unknown action %q", action)
	}
	return c.Do(now, id, req)
}

// describe writes events one per line (several for results with parts),
// as "# want:" lines hold them.
func describe(evs []Event) []string {
	var out []string
	date := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02T15:04:05Z")
	}
	for _, ev := range evs {
		switch e := ev.(type) {
		case GroupsResult:
			out = append(out, fmt.Sprintf("groups %d skipped=%d", len(e.Groups), e.Skipped))
			for _, g := range e.Groups {
				out = append(out, fmt.Sprintf("  %s %d %d %s %q", g.Name, g.High, g.Low, g.Status, g.Description))
			}
		case StatsResult:
			out = append(out, fmt.Sprintf("stats %s count=%d low=%d high=%d last=%s", e.Group, e.Count, e.Low, e.High, date(e.LastDate)))
		case ThreadsResult:
			s := fmt.Sprintf("threads %s since=%d range=%d-%d high=%d via %v", e.Group, e.Since, e.Low, e.High, e.High, e.Strategy)
			if e.Truncated {
				s += " truncated"
			}
			if e.Skipped > 0 {
				s += fmt.Sprintf(" skipped=%d", e.Skipped)
			}
			out = append(out, s)
			for _, a := range e.Articles {
				l := fmt.Sprintf("  %d %s %q %q %s", a.Number, a.MessageID, a.Subject, a.From, date(a.Date))
				if len(a.References) > 0 {
					l += " re " + strings.Join(a.References, " ")
				}
				if a.InReplyTo != "" {
					l += " irt " + a.InReplyTo
				}
				out = append(out, l)
			}
		case ThreadResult:
			out = append(out, fmt.Sprintf("thread %s root=%s high=%d via %v", e.Group, e.Root.ID, e.High, e.Strategy))
			Walk([]*Node{e.Root}, func(n *Node, d int) bool {
				id := n.ID
				if n.Placeholder() {
					id = "[" + id + "]"
				}
				out = append(out, "  "+strings.Repeat("  ", d)+id)
				return true
			})
		case ArticleResult:
			h, body, err := proto.ParseHeaders(e.Raw)
			subj := "?"
			if err == nil {
				subj = h.Subject()
			}
			out = append(out, fmt.Sprintf("article %s n=%d %d bytes, body at %d, subject %q", e.MessageID, e.Number, len(e.Raw), body, subj))
		case PostResult:
			out = append(out, fmt.Sprintf("posted %s %d %q", e.MessageID, e.Response.Code, e.Response.Text))
		case NotFound:
			out = append(out, fmt.Sprintf("notfound %s %d", e.Req.Key(), e.Response.Code))
		case Failed:
			s := fmt.Sprintf("failed %s: %v", e.Req.Key(), e.Err)
			if e.Retry {
				s += " (retry)"
			}
			out = append(out, s)
		case Closed:
			out = append(out, fmt.Sprintf("closed: %v", e.Err))
		default:
			out = append(out, fmt.Sprintf("%T", ev))
		}
	}
	return out
}

func drainEvents(c *Client) []Event {
	var evs []Event
	for {
		e, ok := c.NextEvent()
		if !ok {
			return evs
		}
		evs = append(evs, e)
	}
}

// replayScript replays a transcript against a fresh Client (after a replayed
// handshake when the script has one) and checks its events and counts.
func replayScript(tr transcript.Transcript, s script, split func([]byte) [][]byte) error {
	now := transcript.Epoch
	cfg := s.cfg
	var c *Client
	if s.handshake != nil {
		i := transcript.FirstAction(tr)
		h := handshake.New(now, *s.handshake)
		if err := transcript.Replay(h, tr[:i], transcript.Options{Split: split}); err != nil {
			return fmt.Errorf("handshake part: %w", err)
		}
		e, _ := h.NextEvent()
		ready, ok := e.(handshake.Ready)
		if !ok {
			return fmt.Errorf("handshake part: event %v, want Ready", e)
		}
		var err error
		if c, err = FromHandshake(now, cfg, ready, h.Leftover()); err != nil {
			return err
		}
		tr = tr[i:]
	} else {
		c = New(now, cfg)
	}
	var seg transcript.Transcript
	var evs []Event
	var want []string
	id := uint64(0)
	segStart := now
	flush := func() error {
		if len(seg) == 0 {
			return nil
		}
		err := transcript.Replay(c, seg, transcript.Options{Start: segStart, Split: split})
		for _, e := range seg {
			if e.Kind == transcript.Advance {
				now = now.Add(e.D)
			}
		}
		seg, segStart = nil, now
		evs = append(evs, drainEvents(c)...)
		return err
	}
	checkWant := func(line int) error {
		if want == nil {
			return nil
		}
		if d := cmp.Diff(want, describe(evs)); d != "" {
			return fmt.Errorf("events before line %d (-want +got):\n%s", line, d)
		}
		want, evs = nil, nil
		return nil
	}
	for _, e := range tr {
		if e.Kind == transcript.Comment {
			if v, ok := strings.CutPrefix(e.Text, "want:"); ok {
				if err := flush(); err != nil {
					return err
				}
				want = append(want, strings.TrimPrefix(v, " "))
				continue
			}
			if a, ok := transcript.Action(e); ok {
				if err := flush(); err != nil {
					return err
				}
				if err := checkWant(e.Line); err != nil {
					return err
				}
				id++
				if err := doAction(c, now, id, a); err != nil {
					return fmt.Errorf("line %d: %w", e.Line, err)
				}
				evs = append(evs, drainEvents(c)...)
				continue
			}
		}
		if want != nil && e.Kind != transcript.Comment && e.Kind != transcript.Blank {
			if err := checkWant(e.Line); err != nil {
				return err
			}
		}
		seg = append(seg, e)
	}
	if err := flush(); err != nil {
		return err
	}
	if err := checkWant(len(tr) + 1); err != nil {
		return err
	}
	if len(evs) > 0 {
		return fmt.Errorf("events without a \"# want:\" line at the end:\n%s", strings.Join(describe(evs), "\n"))
	}
	if s.sent != nil {
		if d := cmp.Diff(s.sent, c.Sent()); d != "" {
			return fmt.Errorf("commands sent (-want +got):\n%s", d)
		}
	}
	return nil
}

// TestTranscripts replays every testdata/*.txt.
func TestTranscripts(t *testing.T) {
	// Lines, whole runs, bytes, every run cut at every offset (up to the
	// longest run), and chunks of 7; replayScript checks the events itself.
	transcript.Run(t, os.DirFS("."), "testdata/*.txt", transcript.Server, func(f transcript.File) (transcript.Case, error) {
		s, err := readScript(f.Transcript)
		return transcript.Case{
			Replay: func(split func([]byte) [][]byte) (string, error) { return "", replayScript(f.Transcript, s, split) },
			Limit:  4096,
			Extra:  []transcript.Split{{Name: "chunks7", Fn: transcript.Chunks(7)}},
		}, err
	})
}
