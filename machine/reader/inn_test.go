package reader

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
	"github.com/newsflow/newsflow/runtime/goroutine"
	"github.com/newsflow/newsflow/runtime/recorder"
	"github.com/newsflow/newsflow/runtime/testpeer/inntest"
)

// update rewrites the golden INN transcripts from a live INN:
//
//	go test ./machine/reader/ -run INN -update
var update = flag.Bool("update", false, "rewrite testdata/inn_*.txt from a live INN")

// innThreads is the group the INN tests read: threads with replies at
// several depths, a thread whose root is missing, a 12-deep chain whose
// articles list every ancestor, a single article, and a reply that only has
// In-Reply-To (which overview data does not carry: it is a root there).
func innThreads() []Summary {
	var out []Summary
	minute := 0
	add := func(name, subject string, refs ...string) {
		minute++
		s := Summary{MessageID: "<" + name + "@example.com>", Subject: subject,
			From:  strings.ToUpper(name[:1]) + " <" + name + "@example.com>",
			Date:  time.Date(2025, 3, 1, 12, minute, 0, 0, time.UTC),
			Lines: 1}
		for _, r := range refs {
			s.References = append(s.References, "<"+r+"@example.com>")
		}
		out = append(out, s)
	}
	add("a1", "Threads in Go")
	add("a2", "Re: Threads in Go", "a1")
	add("b1", "Overview formats")
	add("a3", "Re: Threads in Go", "a1", "a2")
	add("c2", "Re: Lost root", "c1")
	add("a4", "Re: Threads in Go", "a1")
	add("b2", "Re: Overview formats", "b1")
	add("a5", "Re: Threads in Go", "a1", "a4")
	add("c3", "Re: Lost root", "c1", "c2")
	add("d1", "A lone article")
	add("a6", "Re: Threads in Go", "a1", "a2", "a3")
	var chain []string
	for i := 1; i <= 12; i++ {
		name := fmt.Sprintf("e%d", i)
		add(name, "Deep thread", chain...)
		chain = append(chain, name)
	}
	add("f1", "Mail-style reply target")
	add("f2", "Re: Mail-style reply target") // In-Reply-To <f1@example.com>, set in the article
	return out
}

// innArticle is the wire form of s as posted with IHAVE.
func innArticle(s Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Path: poster.example!not-for-mail\r\n")
	fmt.Fprintf(&b, "From: %s\r\nNewsgroups: misc.test\r\nSubject: %s\r\n", s.From, s.Subject)
	fmt.Fprintf(&b, "Date: %s\r\nMessage-ID: %s\r\n", proto.FormatArticleDate(s.Date), s.MessageID)
	if len(s.References) > 0 {
		fmt.Fprintf(&b, "References: %s\r\n", strings.Join(s.References, " "))
	}
	if s.MessageID == "<f2@example.com>" {
		b.WriteString("In-Reply-To: <f1@example.com>\r\n")
	}
	fmt.Fprintf(&b, "\r\nThis is %s.\r\n", s.MessageID)
	return b.String()
}

// postIHAVE feeds articles to innd with IHAVE (RFC 3977 §6.3.2), which
// keeps their Date (artcutoff is 0 in inntest's configuration).
func postIHAVE(t *testing.T, addr string, arts []Summary) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(nc)
	line := func() string {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading from innd: %v", err)
		}
		return strings.TrimRight(l, "\r\n")
	}
	if l := line(); !strings.HasPrefix(l, "200") {
		t.Fatalf("innd greeting: %q", l)
	}
	for _, a := range arts {
		fmt.Fprintf(nc, "IHAVE %s\r\n", a.MessageID)
		if l := line(); !strings.HasPrefix(l, "335") {
			t.Fatalf("IHAVE %s: %q", a.MessageID, l)
		}
		nc.Write(proto.AppendBlock(nil, []byte(innArticle(a))))
		if l := line(); !strings.HasPrefix(l, "235") {
			t.Fatalf("IHAVE %s: %q", a.MessageID, l)
		}
	}
	fmt.Fprintf(nc, "QUIT\r\n")
}

type innCase struct {
	golden  string
	about   string
	reader  bool             // nnrpd's port; else innd's, which answers 401 MODE-READER
	hs      handshake.Config // the handshake before the Client
	hsLine  string           // the "# handshake:" line for it
	cfg     Config           // the Client's configuration (GroupMaxAge is set to -1)
	cfgLine string           // the "# config:" words for it
	actions []string
	check   func(t *testing.T, evs []Event, c *Client)
}

var innCases = []innCase{
	{
		golden: "inn_reader.txt",
		about: "INN 2.7.1's nnrpd, after a reader handshake: the group list, the group's stats,\n" +
			"its thread data (HDR, after LIST HEADERS), nothing new after the high-water mark,\n" +
			"one thread, an article, and a message-id INN does not have (430).",
		reader: true, hs: handshake.Config{Reader: true}, hsLine: "reader",
		actions: []string{"groups", "stats misc.test", "threads misc.test", "new misc.test since=25",
			"thread misc.test <a3@example.com>", "article <a5@example.com>", "article <nope@example.com>", "close"},
		check: checkReaderSession,
	},
	{
		golden: "inn_mode_reader.txt",
		about: "INN 2.7.1's innd on its feed port, after a handshake that asked for nothing:\n" +
			"GROUP draws 401 MODE-READER; MODE READER hands the connection to nnrpd,\n" +
			"CAPABILITIES again, then the thread data with HDR.",
		hs: handshake.Config{}, hsLine: "",
		actions: []string{"threads misc.test limit=10", "close"},
		check: func(t *testing.T, evs []Event, c *Client) {
			r, ok := evs[0].(ThreadsResult)
			if !ok || len(r.Articles) != 10 || !r.Truncated || r.Strategy != StrategyHDR || r.High != 25 {
				t.Errorf("threads after 401: %v", describe(evs[:1]))
			}
			if c.Sent()["MODE READER"] != 1 {
				t.Errorf("Sent = %v, want one MODE READER", c.Sent())
			}
		},
	},
	{
		golden: "inn_over.txt",
		about: "INN 2.7.1's nnrpd with the OVER strategy forced: LIST OVERVIEW.FMT (INN's,\n" +
			"with Bytes:, Lines: and Xref:full), then OVER over the newest five; a thread.",
		reader: true, hs: handshake.Config{Reader: true}, hsLine: "reader",
		cfg: Config{Strategy: StrategyOVER}, cfgLine: "strategy=OVER",
		actions: []string{"threads misc.test limit=5", "stats misc.test", "close"},
		check: func(t *testing.T, evs []Event, c *Client) {
			checkNewest(t, evs[0], StrategyOVER)
			if s, ok := evs[1].(StatsResult); !ok || !s.LastDate.Equal(innThreads()[24].Date) {
				t.Errorf("stats: %v", describe(evs[1:2]))
			}
		},
	},
	{
		golden: "inn_head.txt",
		about: "INN 2.7.1's nnrpd with the HEAD strategy forced: one HEAD per article, in\n" +
			"windows of 16; HEAD gives In-Reply-To, so f2 threads under f1 here.",
		reader: true, hs: handshake.Config{Reader: true}, hsLine: "reader",
		cfg: Config{Strategy: StrategyHEAD}, cfgLine: "strategy=HEAD",
		actions: []string{"threads misc.test limit=5", "thread misc.test <f2@example.com> limit=2", "close"},
		check: func(t *testing.T, evs []Event, c *Client) {
			checkNewest(t, evs[0], StrategyHEAD)
			r, ok := evs[1].(ThreadResult)
			if !ok || r.Root.ID != "<f1@example.com>" || Count(r.Root) != 2 {
				t.Errorf("thread by In-Reply-To: %v", describe(evs[1:2]))
			}
		},
	},
}

// checkNewest checks a ThreadsResult of the five newest articles.
func checkNewest(t *testing.T, e Event, s Strategy) {
	t.Helper()
	r, ok := e.(ThreadsResult)
	posted := innThreads()[20:]
	if !ok || r.Strategy != s || len(r.Articles) != 5 || r.Low != 21 || r.High != 25 || !r.Truncated {
		t.Fatalf("threads: %v", describe([]Event{e}))
	}
	for i, a := range r.Articles {
		p := posted[i]
		if a.MessageID != p.MessageID || a.Subject != p.Subject || !a.Date.Equal(p.Date) || !cmp.Equal(a.References, p.References) {
			t.Errorf("article %d: %+v, posted %+v", a.Number, a, p)
		}
	}
}

// checkReaderSession checks what nnrpd answered against what was posted.
func checkReaderSession(t *testing.T, evs []Event, c *Client) {
	posted := innThreads()
	if len(evs) != 8 {
		t.Fatalf("%d events, want 8:\n%s", len(evs), strings.Join(describe(evs), "\n"))
	}
	g, _ := evs[0].(GroupsResult)
	found := false
	for _, l := range g.Groups {
		if l.Name == "misc.test" && l.High == 25 && l.Description == "Testing." {
			found = true
		}
	}
	if !found {
		t.Errorf("groups: %v", describe(evs[:1]))
	}
	want := StatsResult{ID: 2, Group: "misc.test", Count: 25, Low: 1, High: 25, LastDate: posted[24].Date}
	if d := cmp.Diff(want, evs[1]); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}
	th, _ := evs[2].(ThreadsResult)
	if th.Strategy != StrategyHDR || len(th.Articles) != len(posted) {
		t.Fatalf("threads: %v", describe(evs[2:3]))
	}
	// INN's overview has no In-Reply-To: f2 is a root there.
	noIRT := posted
	if d := cmp.Diff(render(Thread(noIRT), false), render(Thread(th.Articles), false)); d != "" {
		t.Errorf("threads from INN differ from those posted (-posted +inn):\n%s", d)
	}
	for i, a := range th.Articles {
		p := posted[i]
		if a.Number != int64(i+1) || a.MessageID != p.MessageID || a.Subject != p.Subject || a.From != p.From || !a.Date.Equal(p.Date) {
			t.Errorf("article %d: %+v, posted %+v", i+1, a, p)
		}
	}
	if d := cmp.Diff("threads misc.test since=25 range=26-25 high=25 via none", describe(evs[3:4])[0]); d != "" {
		t.Errorf("new (-want +got):\n%s", d)
	}
	tr, _ := evs[4].(ThreadResult)
	if tr.Root == nil || tr.Root.ID != "<a1@example.com>" || Count(tr.Root) != 6 {
		t.Errorf("thread: %v", describe(evs[4:5]))
	}
	art, _ := evs[5].(ArticleResult)
	if !strings.Contains(string(art.Raw), "Message-ID: <a5@example.com>\r\n") || !strings.HasSuffix(string(art.Raw), "\r\nThis is <a5@example.com>.\r\n") || art.Number != 0 {
		t.Errorf("article: %q", art.Raw)
	}
	if nf, ok := evs[6].(NotFound); !ok || nf.Response.Code != proto.CodeNoSuchID {
		t.Errorf("missing article: %v", describe(evs[6:7]))
	}
	if _, ok := evs[7].(Closed); !ok {
		t.Errorf("last event %v", describe(evs[7:]))
	}
}

// TestINN reads a private INN through the handshake and the Client on
// runtime/goroutine, checks the answers against the articles posted,
// replays the recorded sessions, and compares them with the golden
// testdata/inn_*.txt (which TestTranscripts replays without INN).
func TestINN(t *testing.T) {
	inntest.MustRecord(t, *update, "-update")
	srv := inntest.Start(t, inntest.Options{Reader: true,
		Groups: []inntest.Group{{Name: "misc.test", Description: "Testing."}}}) // skips when INN is missing
	postIHAVE(t, srv.Addr(), innThreads())
	host, _ := os.Hostname()
	for _, tc := range innCases {
		t.Run(tc.golden, func(t *testing.T) {
			addr := srv.Addr()
			if tc.reader {
				addr = srv.ReaderAddr()
			}
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			rec := recorder.NewRecorder(nc, transcript.Client)
			conn := goroutine.New(rec, goroutine.Options{})
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			h := handshake.New(time.Now(), tc.hs)
			var ready handshake.Ready
			err = conn.Run(ctx, h, func(time.Time) error {
				for {
					e, ok := h.NextEvent()
					if !ok {
						return nil
					}
					if r, ok := e.(handshake.Ready); ok {
						ready = r
						return goroutine.ErrStop
					}
					return fmt.Errorf("handshake: %v", e)
				}
			})
			if err != nil {
				t.Fatalf("handshake with INN: %v", err)
			}
			// Selections never go stale here, so that the replay (whose
			// clock stands still) sends the same commands.
			cfg := tc.cfg
			cfg.GroupMaxAge = -1
			c, err := FromHandshake(time.Now(), cfg, ready, h.Leftover())
			if err != nil {
				t.Fatal(err)
			}
			var evs []Event
			next := 0
			err = conn.Run(ctx, c, func(now time.Time) error {
				evs = append(evs, drainEvents(c)...)
				// A request may be answered at once (nothing to fetch):
				// then the next one starts here too.
				for !c.Closed() && !c.Busy() && next < len(tc.actions) {
					rec.Comment("do: " + tc.actions[next])
					next++
					if err := doAction(c, now, uint64(next), tc.actions[next-1]); err != nil {
						return err
					}
					evs = append(evs, drainEvents(c)...)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Client with INN: %v\nevents:\n%s\nsession:\n%s", err, strings.Join(describe(evs), "\n"), rec.Transcript())
			}
			tc.check(t, evs, c)

			live := normalizeINN(rec.Transcript(), srv.PathHost(), host)
			s := script{cfg: cfg, handshake: &tc.hs}
			body, err := annotate(live, s)
			if err != nil {
				t.Fatalf("replaying the live session: %v\n%s", err, live)
			}
			var head transcript.Transcript
			for _, l := range strings.Split(tc.about, "\n") {
				head = append(head, transcript.Entry{Kind: transcript.Comment, Text: l})
			}
			head = append(head,
				transcript.Entry{Kind: transcript.Comment, Text: "Recorded from a live INN by machine/reader's TestINN -update; host names normalised."},
				transcript.Entry{Kind: transcript.Comment, Text: strings.TrimSpace("handshake: " + tc.hsLine)},
				transcript.Entry{Kind: transcript.Comment, Text: strings.TrimSpace("config: groupage=-1s " + tc.cfgLine)},
			)
			text, err := transcript.Format(append(head, body...))
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := transcript.Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			ps, err := readScript(parsed)
			if err != nil {
				t.Fatal(err)
			}
			for name, split := range map[string]func([]byte) [][]byte{"lines": nil, "whole": transcript.Whole, "bytes": transcript.Chunks(1)} {
				if err := replayScript(parsed, ps, split); err != nil {
					t.Fatalf("replaying the annotated session (%s): %v", name, err)
				}
			}
			inntest.Golden{Path: filepath.Join("testdata", tc.golden), Update: *update, Flag: "-update", Skeleton: innSkeleton}.Check(t, text)
		})
	}
}

// normalizeINN replaces the instance's names in the recorded bytes.
func normalizeINN(tr transcript.Transcript, names ...string) transcript.Transcript {
	out := make(transcript.Transcript, 0, len(tr))
	for _, e := range tr {
		if e.Kind == transcript.Data {
			d := string(e.Data)
			for _, n := range names {
				if n != "" {
					d = strings.ReplaceAll(d, n, "inn.example")
				}
			}
			e.Data = []byte(d)
		}
		e.Line = 0
		out = append(out, e)
	}
	return out
}

// innSkeleton is what must not change between recordings: the Client's
// lines, the server's status codes (without texts), and the comments.
func innSkeleton(tr transcript.Transcript) []string {
	var out []string
	block := false
	for _, e := range tr {
		switch {
		case e.Kind == transcript.Comment:
			out = append(out, "# "+e.Text)
		case e.Kind == transcript.Data && e.Side == transcript.Client:
			out = append(out, "C: "+strings.TrimRight(string(e.Data), "\r\n"))
		case e.Kind == transcript.Data:
			l := strings.TrimRight(string(e.Data), "\r\n")
			if block {
				block = l != "."
				continue
			}
			if r, err := proto.ParseResponse(e.Data); err == nil {
				out = append(out, fmt.Sprintf("S: %d", r.Code))
				block = r.Code/100 == 1 || (r.Code >= 215 && r.Code <= 231 && r.Code != proto.CodeGroupSelected)
			}
		}
	}
	return out
}

// annotate replays a recorded session (with its "# do:" comments) against
// a fresh Client and writes the events it reports as "# want:" lines before
// each action and at the end.
func annotate(tr transcript.Transcript, s script) (transcript.Transcript, error) {
	now := transcript.Epoch
	i := transcript.FirstAction(tr)
	h := handshake.New(now, *s.handshake)
	if err := transcript.Replay(h, tr[:i], transcript.Options{}); err != nil {
		return nil, fmt.Errorf("handshake part: %w", err)
	}
	e, _ := h.NextEvent()
	ready, ok := e.(handshake.Ready)
	if !ok {
		return nil, fmt.Errorf("handshake part: %v", e)
	}
	c, err := FromHandshake(now, s.cfg, ready, h.Leftover())
	if err != nil {
		return nil, err
	}
	out := append(transcript.Transcript{}, tr[:i]...)
	var seg transcript.Transcript
	var id uint64
	flush := func() error {
		err := transcript.Replay(c, seg, transcript.Options{})
		seg = nil
		for _, l := range describe(drainEvents(c)) {
			out = append(out, transcript.Entry{Kind: transcript.Comment, Text: "want: " + l})
		}
		return err
	}
	for _, e := range tr[i:] {
		if e.Kind == transcript.Comment {
			if a, ok := transcript.Action(e); ok {
				if err := flush(); err != nil {
					return nil, err
				}
				out = append(out, e)
				id++
				if err := doAction(c, now, id, a); err != nil {
					return nil, err
				}
				continue
			}
		}
		seg = append(seg, e)
		out = append(out, e)
	}
	// The events of the last segment go before its trailing client EOF.
	tail := out[len(out)-len(seg):]
	tail = append(transcript.Transcript{}, tail...)
	out = out[:len(out)-len(seg)]
	if err := transcript.Replay(c, seg, transcript.Options{}); err != nil {
		return nil, err
	}
	cut := len(tail)
	if cut > 0 && tail[cut-1].Kind == transcript.EOF {
		cut--
	}
	out = append(out, tail[:cut]...)
	for _, l := range describe(drainEvents(c)) {
		out = append(out, transcript.Entry{Kind: transcript.Comment, Text: "want: " + l})
	}
	return append(out, tail[cut:]...), nil
}
