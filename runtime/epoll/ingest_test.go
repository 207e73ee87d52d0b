//go:build linux

package epoll

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/newsflow/newsflow/machine/ingest"
	"github.com/newsflow/newsflow/machine/transcript"
)

// owner is a scripted relay for the ingest machine: verdicts and store
// outcomes by message-id, answered in step (sync) or from another
// goroutine through Do, in batches and in reverse order (async).
type owner struct {
	verdict  ingest.Verdict
	newOnly  bool // refuse ids seen before
	result   ingest.Outcome
	perID    map[string]ingest.Verdict
	perStore map[string]ingest.Outcome
	async    bool
	// shutdownAt, when positive, makes the owner call Shutdown once it
	// has seen that many Article events.
	shutdownAt int
	// notAccepting, when set, is given to SetAccepting(false) at the start.
	notAccepting string

	// reason goes with StoreRejected and StoreLater; "" lets the machine
	// say its default.
	reason string

	seen     map[string]bool
	articles int

	// AUTHINFO: users and passwords, and after how many failures the
	// owner blocks (0: never), as machine/ingest's transcripts say.
	users    map[string]string
	block    int
	failures int
}

func newOwner() *owner {
	return &owner{verdict: ingest.Want, result: ingest.StoreAccepted,
		perID: map[string]ingest.Verdict{}, perStore: map[string]ingest.Outcome{}, seen: map[string]bool{},
		users: map[string]string{}}
}

// auth is the owner's verdict on AUTHINFO PASS (in step: the password
// check is the owner's, the machine waits for it).
func (o *owner) auth(e ingest.Auth) ingest.AuthVerdict {
	if pw, ok := o.users[e.User]; ok && pw == e.Password {
		return ingest.AuthAccepted
	}
	if o.failures++; o.block > 0 && o.failures >= o.block {
		return ingest.AuthBlocked
	}
	return ingest.AuthRejected
}

// parseOwner reads machine/ingest's transcript policies ("want all",
// "want new", "store ok", "refuse <id>", "reject <id>", "later <id>",
// "duplicate <id>").
func parseOwner(s string) (*owner, error) {
	o := newOwner()
	for _, ph := range strings.Split(s, ",") {
		f := strings.Fields(ph)
		switch {
		case len(f) == 3 && f[0] == "user":
			o.users[f[1]] = f[2]
			continue
		case len(f) == 3 && f[0] == "block" && f[1] == "after":
			n, err := strconv.Atoi(f[2])
			if err != nil {
				return nil, fmt.Errorf("owner policy phrase %q: %v", ph, err)
			}
			o.block = n
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("owner policy phrase %q", ph)
		}
		switch f[0] + " " + f[1] {
		case "want all":
		case "want new":
			o.newOnly = true
		case "store ok":
		case "refuse all":
			o.verdict = ingest.Refuse
		case "defer all":
			o.verdict = ingest.Defer
		default:
			switch f[0] {
			case "refuse":
				o.perID[f[1]] = ingest.Refuse
			case "defer":
				o.perID[f[1]] = ingest.Defer
			case "reject":
				o.perStore[f[1]] = ingest.StoreRejected
			case "later":
				o.perStore[f[1]] = ingest.StoreLater
			case "duplicate":
				o.perStore[f[1]] = ingest.StoreDuplicate
			default:
				return nil, fmt.Errorf("owner policy phrase %q", ph)
			}
		}
	}
	return o, nil
}

func (o *owner) decide(id string) ingest.Verdict {
	if v, ok := o.perID[id]; ok {
		return v
	}
	if o.newOnly && o.seen[id] {
		return ingest.Refuse
	}
	o.seen[id] = true
	return o.verdict
}

func (o *owner) store(id string) ingest.Result {
	out := o.result
	if r, ok := o.perStore[id]; ok {
		out = r
	}
	o.seen[id] = true
	return ingest.Result{Outcome: out, Reason: o.reason}
}

// ingestEvent formats an event; an Article shows its size and digest
// rather than its bytes.
func ingestEvent(e ingest.Event) string {
	if a, ok := e.(ingest.Article); ok {
		return fmt.Sprintf("Article{Seq:%d Cmd:%v ID:%s Data:%d bytes %x Body:%d}",
			a.Seq, a.Cmd, a.MessageID, len(a.Data), sha256.Sum256(a.Data), a.Body)
	}
	return fmt.Sprintf("%#v", e)
}

// serveIngest runs one Ingest per accepted connection on c with owner o,
// and returns its events and Run's result.
func serveIngest(c conn, cfg ingest.Config, o *owner) ([]string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := ingest.New(time.Now(), cfg)
	if o.notAccepting != "" {
		g.SetAccepting(time.Now(), false, o.notAccepting)
	}
	var evs []string
	// The async owner's questions, answered by a goroutine through Do.
	type question struct {
		seq     uint64
		article bool
		id      string
	}
	var mu sync.Mutex
	var questions []question
	kick := make(chan struct{}, 1)
	var wg sync.WaitGroup
	if o.async {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-kick:
				case <-ctx.Done():
					return
				}
				mu.Lock()
				qs := questions
				questions = nil
				mu.Unlock()
				// Answer in reverse: the machine must still respond in
				// command order.
				c.Do(ctx, func(now time.Time) {
					for i := len(qs) - 1; i >= 0; i-- {
						q := qs[i]
						if q.article {
							g.Stored(now, q.seq, o.store(q.id))
						} else {
							g.Decide(now, q.seq, o.decide(q.id))
						}
					}
				})
			}
		}()
	}
	err := c.Run(ctx, g, func(now time.Time) error {
		for {
			e, ok := g.NextEvent()
			if !ok {
				return nil
			}
			evs = append(evs, ingestEvent(e))
			switch e := e.(type) {
			case ingest.Auth:
				if err := g.AuthDone(now, e.Seq, o.auth(e)); err != nil {
					return err
				}
			case ingest.Check:
				if o.async {
					mu.Lock()
					questions = append(questions, question{seq: e.Seq, id: e.MessageID})
					mu.Unlock()
				} else {
					g.Decide(now, e.Seq, o.decide(e.MessageID))
				}
			case ingest.Article:
				o.articles++
				if o.async {
					mu.Lock()
					questions = append(questions, question{seq: e.Seq, article: true, id: e.MessageID})
					mu.Unlock()
				} else {
					g.Stored(now, e.Seq, o.store(e.MessageID))
				}
				if o.articles == o.shutdownAt {
					g.Shutdown(now, "Shutting down")
				}
			}
			if o.async {
				select {
				case kick <- struct{}{}:
				default:
				}
			}
		}
	})
	cancel()
	wg.Wait()
	return append(evs, "counters: "+g.Counters().String()), errKind(err)
}

// client is a scripted upstream feeder: it sends its parts in order,
// waiting before each part until the server has sent await bytes in all,
// then reads until the server closes.
type client struct {
	parts []part
	// chunk, when positive, writes every part in pieces of chunk bytes.
	chunk int
	// closeWrite half-closes after the last part (the feeder's EOF).
	closeWrite bool
}

type part struct {
	await int // total server bytes to have before sending
	send  []byte
	// pause, when positive, waits this long before sending (a silent
	// feeder: timeouts).
	pause time.Duration
	// closeWrite half-closes after sending (the feeder's EOF).
	closeWrite bool
}

// run plays the client against addr and returns the bytes it received.
func (cl client) run(t *testing.T, addr string) []byte {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute)) // a hang fails instead of blocking
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var got []byte
	var eof bool
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := nc.Read(buf)
			mu.Lock()
			got = append(got, buf[:n]...)
			if err != nil {
				eof = true
			}
			cond.Broadcast()
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	for _, p := range cl.parts {
		mu.Lock()
		for len(got) < p.await && !eof {
			cond.Wait()
		}
		stop := len(got) < p.await
		mu.Unlock()
		if stop {
			break // the server closed before the client's turn
		}
		if p.pause > 0 {
			time.Sleep(p.pause)
		}
		b := p.send
		for len(b) > 0 {
			n := len(b)
			if cl.chunk > 0 {
				n = min(n, cl.chunk)
			}
			if _, err := nc.Write(b[:n]); err != nil {
				break
			}
			b = b[n:]
		}
		if p.closeWrite {
			nc.(*net.TCPConn).CloseWrite()
		}
	}
	if cl.closeWrite {
		nc.(*net.TCPConn).CloseWrite()
	}
	mu.Lock()
	for !eof {
		cond.Wait()
	}
	defer mu.Unlock()
	return got
}

// runIngest serves one client through r and a tap.
func runIngest(t *testing.T, r rt, cfg ingest.Config, o func() *owner, cl client) outcome {
	type result struct {
		evs []string
		err string
	}
	res := make(chan result, 1)
	addr := r.serve(t, func(c conn) {
		evs, err := serveIngest(c, cfg, o())
		res <- result{evs, err}
	})
	tp := startTap(t, addr)
	cl.run(t, tp.addr())
	w := tp.wait(t, 20*time.Second)
	w.Server = normaliseDate(w.Server)
	got := <-res
	return outcome{Events: got.evs, Err: got.err, Wire: w}
}

// dateReply is DATE's answer (RFC 3977 §7.1), the server's wall clock.
var dateReply = regexp.MustCompile(`(?m)^111 [0-9]{14}\r$`)

// normaliseDate replaces DATE's answers, the one thing in the server's
// bytes that depends on the wall clock, by a fixed one.
func normaliseDate(b []byte) []byte {
	return dateReply.ReplaceAll(b, []byte("111 20000101000000\r"))
}

// sessionFromTranscript turns a machine/ingest transcript into a client:
// the client's lines, sent when the server's lines before them arrived.
func sessionFromTranscript(tr transcript.Transcript) (client, []byte) {
	var cl client
	var want []byte
	var cur []byte
	await := 0
	for _, e := range tr {
		if e.Kind == transcript.EOF && e.Side == transcript.Client {
			// The feeder closes once it has what the server sent before.
			cl.parts = append(cl.parts, part{await: await, send: cur, closeWrite: true})
			cur = nil
			continue
		}
		if e.Kind != transcript.Data {
			continue
		}
		if e.Side == transcript.Client {
			cur = append(cur, e.Data...)
			continue
		}
		if len(cur) > 0 {
			cl.parts = append(cl.parts, part{await: await, send: cur})
			cur = nil
		}
		want = append(want, e.Data...)
		await = len(want)
	}
	if len(cur) > 0 {
		cl.parts = append(cl.parts, part{await: await, send: cur})
	}
	return cl, want
}

// TestIngestTranscripts plays the client side of machine/ingest's
// recorded and written transcripts (those that do not let time pass) to
// an Ingest served by each runtime, with the owner answering in step and
// asynchronously through Do, and byte by byte. The server's bytes must be
// the transcript's, and the same on both runtimes.
func TestIngestTranscripts(t *testing.T) {
	paths, err := filepath.Glob("../../machine/ingest/testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no ingest transcripts: %v", err)
	}
	ran := 0
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := transcript.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		var policy string
		var cfg ingest.Config
		var notAccepting string
		timed := false
		tlsSession := false
		clockSession := false
		splitDependent := false // the machine documents that its events depend on splits
		for _, e := range tr {
			if e.Kind == transcript.Advance {
				timed = true
			}
			if e.Kind != transcript.Comment {
				continue
			}
			key, val, _ := strings.Cut(e.Text, ":")
			val = strings.TrimSpace(val)
			switch key {
			case "owner":
				policy = val
			case "not accepting":
				notAccepting = val
			case "events depend on splits":
				splitDependent = true
			case "unavailable":
				cfg.Unavailable = val
			case "config":
				for _, w := range strings.Fields(val) {
					k, v, _ := strings.Cut(w, "=")
					switch k {
					case "pathhost":
						cfg.PathHost = v
					case "maxsize":
						n, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							t.Fatal(err)
						}
						cfg.MaxArticleSize = n
					case "maxage":
						// Dates are judged against the replay's clock
						// (transcript.Epoch); the runtimes here run on the
						// wall clock, so machine/ingest replays these.
						clockSession = true
					case "auth":
						cfg.AuthRequired = v == "required"
					case "tls":
						// STARTTLS and implicit TLS need crypto/tls's
						// net.Conn: such sessions run on the goroutine
						// runtime only (the relay says so), and machine/ingest
						// replays them.
						tlsSession = true
					case "idle", "transfer":
					default:
						t.Fatalf("%s: config %q", path, w)
					}
				}
			}
		}
		if timed || tlsSession || clockSession {
			continue
		}
		ran++
		cl, want := sessionFromTranscript(tr)
		for _, mode := range []string{"sync", "async", "bytewise"} {
			name := strings.TrimSuffix(filepath.Base(path), ".txt") + "/" + mode
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				cl := cl
				if mode == "bytewise" {
					cl.chunk = 1
				}
				g := compare(t, func(t *testing.T, r rt) outcome {
					o := runIngest(t, r, cfg, func() *owner {
						o, err := parseOwner(policy)
						if err != nil {
							t.Fatal(err)
						}
						o.async = mode == "async"
						o.notAccepting = notAccepting
						return o
					}, cl)
					if splitDependent {
						o.Events = nil // the wire is still compared
					}
					return o
				})
				if want := normaliseDate(want); !bytes.Equal(g.Wire.Server, want) {
					t.Errorf("server bytes differ from the transcript:\n%s", (wire{Server: want}).diff(wire{Server: g.Wire.Server}))
				}
			})
		}
	}
	if ran < 8 {
		t.Errorf("only %d transcripts ran", ran)
	}
}

// article is a wire-form article (dot-stuffed, terminated) for TAKETHIS.
func article(id string, extraHeader string, bodyLines int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Path: upstream.example!not-for-mail\r\nFrom: Poster <poster@example.com>\r\n"+
		"Newsgroups: misc.test\r\nSubject: test %s\r\nDate: Mon, 01 Jan 2024 00:00:00 +0000\r\n"+
		"Message-ID: %s\r\n%s\r\n", id, id, extraHeader)
	for i := 0; i < bodyLines; i++ {
		fmt.Fprintf(&b, "line %d of %s, with some text to make it longer\r\n", i, id)
		if i%7 == 3 {
			b.WriteString("..a dot-stuffed line\r\n")
		}
	}
	b.WriteString(".\r\n")
	return b.String()
}

// TestIngestScenarios: pipelined CHECK/TAKETHIS, bad articles, faults and
// timeouts, through both runtimes.
func TestIngestScenarios(t *testing.T) {
	cfg := ingest.Config{PathHost: "relay.example", MaxArticleSize: 4000}
	greeting := len("200 relay.example newsflow ready (transit mode)\r\n")
	var pipelined strings.Builder
	pipelined.WriteString("MODE STREAM\r\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&pipelined, "CHECK <p%d@upstream.example>\r\n", i)
	}
	for i := 0; i < 40; i++ {
		id := fmt.Sprintf("<p%d@upstream.example>", i)
		pipelined.WriteString("TAKETHIS " + id + "\r\n" + article(id, "", i%9))
	}
	pipelined.WriteString("QUIT\r\n")

	bad := "MODE STREAM\r\n" +
		"TAKETHIS <bad\r\n" + article("<bad", "", 1) +
		"TAKETHIS <nomsgid@upstream.example>\r\nPath: x!y\r\nFrom: a@b.c\r\nNewsgroups: misc.test\r\nSubject: s\r\n\r\nbody\r\n.\r\n" +
		"TAKETHIS <mismatch@upstream.example>\r\n" + article("<other@upstream.example>", "", 1) +
		"TAKETHIS <big@upstream.example>\r\n" + article("<big@upstream.example>", "", 200) +
		"TAKETHIS <loop@upstream.example>\r\n" + strings.Replace(article("<loop@upstream.example>", "", 1), "Path: upstream.example", "Path: relay.example!upstream.example", 1) +
		"TAKETHIS <garbled@upstream.example>\r\nthis is not a header\r\n\r\nbody\r\n.\r\n" +
		"CHECK <fine@upstream.example>\r\nTAKETHIS <fine@upstream.example>\r\n" + article("<fine@upstream.example>", "", 2) +
		"TAKETHIS <reject-me@upstream.example>\r\n" + article("<reject-me@upstream.example>", "", 2) +
		"CHECK <old@upstream.example>\r\nCHECK <later@upstream.example>\r\n" +
		"QUIT\r\n"
	policy := func(async bool) func() *owner {
		return func() *owner {
			o := newOwner()
			o.perID["<old@upstream.example>"] = ingest.Refuse
			o.perID["<later@upstream.example>"] = ingest.Defer
			o.perStore["<reject-me@upstream.example>"] = ingest.StoreRejected
			o.async = async
			return o
		}
	}
	art := article("<i1@upstream.example>", "", 3)
	tests := []struct {
		name  string
		cfg   ingest.Config
		owner func() *owner
		cl    client
	}{
		{name: "pipelined CHECK and TAKETHIS", owner: policy(false),
			cl: client{parts: []part{{send: []byte(pipelined.String())}}}},
		{name: "pipelined, async owner", owner: policy(true),
			cl: client{parts: []part{{send: []byte(pipelined.String())}}}},
		{name: "pipelined, back-pressure", cfg: ingest.Config{PathHost: "relay.example", MaxPending: 3}, owner: policy(true),
			cl: client{parts: []part{{send: []byte(pipelined.String())}}}},
		{name: "pipelined, byte by byte", owner: policy(false),
			cl: client{chunk: 1, parts: []part{{send: []byte(pipelined.String())}}}},
		{name: "bad articles", owner: policy(false), cl: client{parts: []part{{send: []byte(bad)}}}},
		{name: "bad articles, 7-byte writes", owner: policy(true), cl: client{chunk: 7, parts: []part{{send: []byte(bad)}}}},
		{name: "IHAVE", owner: policy(false), cl: client{parts: []part{
			{send: []byte("IHAVE <i1@upstream.example>\r\n")},
			{await: greeting + len("335 Send it\r\n"), send: []byte(art)},
			{await: greeting + len("335 Send it\r\n235 Article transferred OK\r\n"), send: []byte("QUIT\r\n")},
		}}},
		{name: "feeder closes mid-article", owner: policy(false), cl: client{closeWrite: true, parts: []part{
			{send: []byte("MODE STREAM\r\nCHECK <a@upstream.example>\r\nTAKETHIS <a@upstream.example>\r\n" + art[:60])},
		}}},
		{name: "feeder closes, answers in step", owner: policy(false), cl: client{closeWrite: true, parts: []part{
			{send: []byte(pipelined.String()[:len(pipelined.String())-len("QUIT\r\n")])},
		}}},
		{name: "owner shuts down", owner: func() *owner { o := policy(false)(); o.shutdownAt = 5; return o },
			cl: client{parts: []part{{send: []byte(pipelined.String())}}}},
		{name: "unknown commands", owner: policy(false),
			cl: client{parts: []part{{send: []byte(strings.Repeat("XYZZY\r\n", 12))}}}},
		{name: "idle timeout", cfg: ingest.Config{PathHost: "relay.example", IdleTimeout: 200 * time.Millisecond}, owner: policy(false),
			cl: client{parts: []part{{send: []byte("MODE STREAM\r\n")}}}},
		{name: "transfer timeout", cfg: ingest.Config{PathHost: "relay.example", TransferTimeout: 200 * time.Millisecond}, owner: policy(false),
			cl: client{parts: []part{{send: []byte("MODE STREAM\r\nTAKETHIS <a@upstream.example>\r\n" + art[:60])}}}},
		{name: "unavailable", cfg: ingest.Config{PathHost: "relay.example", Unavailable: "Disk full"}, owner: policy(false),
			cl: client{parts: []part{{send: []byte("MODE STREAM\r\n")}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := cfg
			if tc.cfg.PathHost != "" {
				c = tc.cfg
			}
			compare(t, func(t *testing.T, r rt) outcome {
				return runIngest(t, r, c, tc.owner, tc.cl)
			})
		})
	}
}

// TestIngestEOFWithAnswersOwed: the feeder sends its commands and closes
// at once, and the owner answers from another goroutine, so the EOF comes
// while answers are owed. machine/ingest then still sends every answer
// (machine.EOFReceiver: "afterwards they drain output and honour Closed").
// Both runtimes keep the machine's other inputs after the EOF
// (drive.Settle) and so deliver them: the outcomes are equal, the run ends
// well, and every article is acknowledged. (runtime/goroutine once ended
// the run at the EOF, so its outcome depended on whether the answers beat
// the EOF.)
func TestIngestEOFWithAnswersOwed(t *testing.T) {
	cfg := ingest.Config{PathHost: "relay.example"}
	var in strings.Builder
	in.WriteString("MODE STREAM\r\n")
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("<e%d@upstream.example>", i)
		in.WriteString("CHECK " + id + "\r\nTAKETHIS " + id + "\r\n" + article(id, "", i%5))
	}
	cl := client{closeWrite: true, parts: []part{{send: []byte(in.String())}}}
	async := func() *owner { o := newOwner(); o.async = true; return o }
	g := compare(t, func(t *testing.T, r rt) outcome { return runIngest(t, r, cfg, async, cl) })
	if g.Err != "" {
		t.Errorf("runs ended with %q, want nil (the machine closed)", g.Err)
	}
	if n := bytes.Count(g.Wire.Server, []byte("\r\n239 ")); n != 30 {
		t.Errorf("%d articles acknowledged, want 30", n)
	}
}
