package ingest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/transcript"
)

// Each testdata/*.txt transcript is a session as the peer and the relay
// saw it ("C:" the upstream feeder, "S:" this machine), and says in header
// comments how to set the test up:
//
//	# owner: want all, store ok     the owner's policy (see parseOwner)
//	# config: pathhost=relay.example maxsize=2000 pending=8 idle=10m transfer=2m
//	# not accepting: Disk full      SetAccepting(false, reason) before the session
//	# unavailable: Disk full        Config.Unavailable (the greeting is 400)
//	# stored: 3                     how many articles the owner must have stored
//	# events depend on splits: why  the owner's events may differ between splits
//
// The test replays each against a fresh machine in the server role, with
// input given one line per Receive, whole runs, byte by byte, and runs cut
// in two, and checks the stored count.

type scripted struct {
	cfg          Config
	policy       string
	notAccepting *string
	stored       int
	haveStored   bool
	splitEvents  bool // events may differ between splits
}

func readHeader(tr transcript.Transcript) (scripted, error) {
	s := scripted{cfg: Config{}}
	haveOwner := false
	for key, val := range tr.Fields() {
		switch key {
		case "owner":
			s.policy, haveOwner = val, true
		case "not accepting":
			s.notAccepting = &val
		case "unavailable":
			s.cfg.Unavailable = val
		case "events depend on splits":
			s.splitEvents = true
		case "stored":
			n, err := strconv.Atoi(val)
			if err != nil {
				return s, fmt.Errorf("stored: %w", err)
			}
			s.stored, s.haveStored = n, true
		case "config":
			for _, w := range strings.Fields(val) {
				k, v, _ := strings.Cut(w, "=")
				var err error
				switch k {
				case "pathhost":
					s.cfg.PathHost = v
				case "maxsize":
					s.cfg.MaxArticleSize, err = strconv.ParseInt(v, 10, 64)
				case "pending":
					s.cfg.MaxPending, err = strconv.Atoi(v)
				case "idle":
					s.cfg.IdleTimeout, err = time.ParseDuration(v)
				case "transfer":
					s.cfg.TransferTimeout, err = time.ParseDuration(v)
				case "auth":
					s.cfg.AuthRequired = v == "required"
				case "tls":
					// starttls, required (STARTTLS offered, AUTHINFO only
					// inside it), implicit (encrypted from the first byte)
					switch v {
					case "starttls":
						s.cfg.StartTLS = true
					case "required":
						s.cfg.StartTLS, s.cfg.TLSRequired = true, true
					case "implicit":
						s.cfg.Secure, s.cfg.TLSRequired = true, true
					default:
						err = errors.New("unknown tls mode")
					}
				case "maxage":
					s.cfg.MaxAge, err = time.ParseDuration(v)
				default:
					err = errors.New("unknown key")
				}
				if err != nil {
					return s, fmt.Errorf("config %q: %v", w, err)
				}
			}
		}
	}
	if !haveOwner {
		return s, errors.New(`transcript lacks an "# owner:" comment`)
	}
	return s, nil
}

// replay runs tr against a fresh machine set up by its header and returns
// the owner.
func replay(tr transcript.Transcript, split func([]byte) [][]byte) (*owner, error) {
	s, err := readHeader(tr)
	if err != nil {
		return nil, err
	}
	o, err := parseOwner(s.policy)
	if err != nil {
		return nil, err
	}
	c := &ownedConn{Ingest: New(transcript.Epoch, s.cfg), o: o}
	if s.notAccepting != nil {
		c.SetAccepting(transcript.Epoch, false, *s.notAccepting)
	}
	o.serve(transcript.Epoch, c.Ingest)
	err = transcript.Replay(c, tr, transcript.Options{Local: transcript.Server, Split: split})
	if err == nil && s.haveStored && len(o.stored) != s.stored {
		err = fmt.Errorf("the owner stored %d articles, the transcript says %d", len(o.stored), s.stored)
	}
	return o, err
}

func TestTranscripts(t *testing.T) {
	transcript.Run(t, os.DirFS("."), "testdata/*.txt", transcript.Client, func(f transcript.File) (transcript.Case, error) {
		hdr, err := readHeader(f.Transcript)
		return transcript.Case{
			// The owner's log of events, the same under every split
			// unless the header says otherwise.
			Replay: func(split func([]byte) [][]byte) (string, error) {
				o, err := replay(f.Transcript, split)
				if err != nil {
					return "", err
				}
				return strings.Join(o.log, "\n"), nil
			},
			Varies: hdr.splitEvents,
			Limit:  128,
			Extra:  []transcript.Split{{Name: "chunks7", Fn: transcript.Chunks(7)}},
		}, err
	})
}

// TestTranscriptsCatchDivergence: a replay that should fail does, so the
// transcripts above are a real check.
func TestTranscriptsCatchDivergence(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"wrong code", "# owner: refuse all\nS: 200 relay.example newsflow ready (transit mode)\nC: CHECK <a@b>\nS: 238 <a@b> Send it\n",
			"machine wrote something else"},
		{"missing response", "# owner: want all\nS: 200 relay.example newsflow ready (transit mode)\nC: CHECK <a@b>\nC: DATE\n",
			"machine wrote more than the transcript holds"},
		{"stored count", "# owner: want all, store ok\n# stored: 1\n# config: pathhost=relay.example\nS: 200 relay.example newsflow ready (transit mode)\n",
			"the owner stored 0 articles, the transcript says 1"},
	}
	for _, tc := range cases {
		tr, err := transcript.Parse([]byte(tc.text))
		if err != nil {
			t.Fatal(err)
		}
		// The greeting names PathHost; give the first two a config too.
		if !strings.Contains(tc.text, "# config") {
			tr = append(transcript.Transcript{{Kind: transcript.Comment, Text: "config: pathhost=relay.example"}}, tr...)
		}
		_, err = replay(tr, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
