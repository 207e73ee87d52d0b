package feed

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/transcript"
)

// Each testdata/*.txt transcript describes its own test in comments:
//
//	# config: stream window=2 user=U pass=P timeout=30s idle=1m nocheck=HIGH,LOW,FILTER nocheck=off
//	# offer: <a@x> <b@x>      (offered before the first line)
//	# articles: inn 200       (offer innArticles(200) instead)
//	# handshake: stream       (the transcript starts with a handshake with this config;
//	                           the Feed takes over after Ready, Streaming from it)
//	# split: whole            (only whole runs and finer splits: a recorded session,
//	                           where one read may hold several replies)
//	# do: close | offer <id> | abort   (an owner's action at this point)
//	# want: <summarize of the events>
//	# tally: <the events counted, as tally.String writes them> (instead of want)
//
// The test replays each against a fresh Feed with the input split one line
// per Receive (unless split: whole), whole runs, byte by byte and cut at
// every offset of every run, and compares the events with want.

type scripted struct {
	cfg       Config
	offer     []Article
	bodies    bodyMap
	handshake *handshake.Config
	wholeOnly bool
	want      string
	tally     string
}

func readHeader(tr transcript.Transcript) (scripted, error) {
	s := scripted{bodies: bodyMap{}}
	var haveCfg, haveWant bool
	for key, val := range tr.Fields() {
		switch key {
		case "config":
			haveCfg = true
			for _, w := range strings.Fields(val) {
				k, v, _ := strings.Cut(w, "=")
				switch k {
				case "stream":
					s.cfg.Streaming = true
				case "user":
					s.cfg.User = v
				case "pass":
					s.cfg.Pass = v
				case "window":
					n, err := strconv.Atoi(v)
					if err != nil {
						return s, fmt.Errorf("config: %w", err)
					}
					s.cfg.Window = n
				case "timeout", "idle":
					d, err := time.ParseDuration(v)
					if err != nil {
						return s, fmt.Errorf("config: %w", err)
					}
					if k == "timeout" {
						s.cfg.ResponseTimeout = d
					} else {
						s.cfg.IdleTimeout = d
					}
				case "nocheck":
					if v == "off" {
						s.cfg.NoCheckOff = true
						continue
					}
					var hi, lo, fl float64
					if _, err := fmt.Sscanf(v, "%g,%g,%g", &hi, &lo, &fl); err != nil {
						return s, fmt.Errorf("config: nocheck=%q: %w", v, err)
					}
					s.cfg.NoCheckHigh, s.cfg.NoCheckLow, s.cfg.NoCheckFilter = hi, lo, fl
				default:
					return s, fmt.Errorf("config: unknown word %q", w)
				}
			}
		case "offer":
			for _, id := range strings.Fields(val) {
				s.offer = append(s.offer, art(id))
			}
		case "articles":
			var n int
			if _, err := fmt.Sscanf(val, "inn %d", &n); err != nil {
				return s, fmt.Errorf("articles: %q: %w", val, err)
			}
			for _, ia := range innArticles(n) {
				s.offer = append(s.offer, ia.Article)
				s.bodies[ia.Token] = ia.wire
			}
		case "handshake":
			hc := handshake.Config{Stream: strings.Contains(val, "stream")}
			s.handshake = &hc
		case "split":
			s.wholeOnly = val == "whole"
		case "want":
			haveWant = true
			s.want = val
		case "tally":
			haveWant = true
			s.tally = val
		}
	}
	if !haveCfg || !haveWant {
		return s, fmt.Errorf("the transcript needs # config: and # want: (or # tally:) lines")
	}
	return s, nil
}

// replayFeed replays tr (with its header s) against a fresh Feed and
// returns the events' summary, or their tally when s has one.
func replayFeed(tr transcript.Transcript, s scripted, split func([]byte) [][]byte) (string, error) {
	cfg := s.cfg
	cfg.Bodies = s.bodies
	if s.handshake != nil {
		// The handshake part ends where the first feed command is.
		i := firstFeedCommand(tr)
		h := handshake.New(transcript.Epoch, *s.handshake)
		if err := transcript.Replay(h, tr[:i], transcript.Options{Split: split}); err != nil {
			return "", fmt.Errorf("handshake part: %w", err)
		}
		e, ok := h.NextEvent()
		ready, isReady := e.(handshake.Ready)
		if !ok || !isReady {
			return "", fmt.Errorf("handshake part: event %v, want Ready", e)
		}
		cfg.Streaming = ready.Streaming
		tr = tr[i:]
	}
	f := New(transcript.Epoch, cfg)
	for _, a := range s.offer {
		f.Offer(transcript.Epoch, a)
	}
	for _, p := range transcript.SplitActions(tr, transcript.Epoch) {
		if err := transcript.Replay(f, p.Transcript, transcript.Options{Start: p.Start, Split: split}); err != nil {
			return "", err
		}
		now := p.End
		switch w := strings.Fields(p.Then); {
		case len(w) == 0:
		case w[0] == "close":
			f.Close(now)
		case w[0] == "abort":
			f.Abort(now, "owner")
		case w[0] == "offer" && len(w) == 2:
			f.Offer(now, art(w[1]))
		default:
			return "", fmt.Errorf("unknown action %q", p.Then)
		}
	}
	var evs []Event
	for {
		e, ok := f.NextEvent()
		if !ok {
			break
		}
		evs = append(evs, e)
	}
	if s.tally != "" {
		return count(evs).String(), nil
	}
	return summarize(evs), nil
}

// firstFeedCommand is the index of the first CHECK, TAKETHIS or IHAVE the
// client sent, or len(tr).
func firstFeedCommand(tr transcript.Transcript) int {
	for i, e := range tr {
		if e.Kind != transcript.Data || e.Side != transcript.Client {
			continue
		}
		for _, v := range []string{"CHECK ", "TAKETHIS ", "IHAVE "} {
			if strings.HasPrefix(string(e.Data), v) {
				return i
			}
		}
	}
	return len(tr)
}

func TestTranscripts(t *testing.T) {
	transcript.Run(t, os.DirFS("."), "testdata/*.txt", transcript.Server, func(f transcript.File) (transcript.Case, error) {
		s, err := readHeader(f.Transcript)
		c := transcript.Case{
			Replay:    func(split func([]byte) [][]byte) (string, error) { return replayFeed(f.Transcript, s, split) },
			Want:      s.want + s.tally,
			WholeOnly: s.wholeOnly,
		}
		if s.wholeOnly {
			c.Limit = 64 // a recorded run can be long; its start is what varies
		}
		return c, err
	})
}
