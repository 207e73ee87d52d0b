package download

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
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

// updateINN rewrites testdata/inn_nnrpd.txt from a live INN:
//
//	go test ./machine/download/ -run INN -update-inn
var updateINN = flag.Bool("update-inn", false, "rewrite testdata/inn_nnrpd.txt from a live INN")

const innGolden = "testdata/inn_nnrpd.txt"

// innGroup is the group the test posts to.
const innGroup = "alt.binaries.newsflow"

// innPart is one posted yEnc part and the data it carries.
type innPart struct {
	key  Key
	id   string
	data []byte
	wire []byte // the whole article in wire form, ready for IHAVE
}

// innParts makes a file of five 3000-byte parts; the third is never
// posted, so it must come back 430. Part 2 keeps leading dots unescaped
// (many encoders do), so INN's dot-stuffing is exercised.
func innParts() (posted []innPart, all []innPart) {
	rng := rand.New(rand.NewPCG(3, 3))
	const n, size = 5, 3000
	for i := 1; i <= n; i++ {
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		if i == 2 {
			for j := 0; j < size; j += 97 {
				data[j] = 4 // "." when encoded
			}
		}
		id := fmt.Sprintf("<part%d.newsflow@test.invalid>", i)
		var b bytes.Buffer
		fmt.Fprintf(&b, "Path: poster.invalid!not-for-mail\r\n"+
			"From: Poster <poster@test.invalid>\r\n"+
			"Newsgroups: %s\r\n"+
			"Subject: newsflow test \"file.bin\" yEnc (%d/%d)\r\n"+
			"Date: Mon, 01 Jan 2024 00:00:00 +0000\r\n"+
			"Message-ID: %s\r\n\r\n", innGroup, i, n, id)
		b.Write(proto.YencEncode(nil, data, proto.YencOptions{Name: "file.bin", Part: i, Total: n,
			Begin: int64(i-1)*size + 1, Size: n * size, Wire: true, KeepLeadingDot: i == 2}))
		p := innPart{key: Key{1, i}, id: id, data: data, wire: b.Bytes()}
		all = append(all, p)
		if i != 3 {
			posted = append(posted, p)
		}
	}
	return posted, all
}

// ihave posts articles to innd with IHAVE (RFC 3977 §6.3.2).
func ihave(t *testing.T, addr string, parts []innPart) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(nc)
	expect := func(code string) {
		t.Helper()
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, code) {
			t.Fatalf("innd said %q (%v), want %s", line, err, code)
		}
	}
	expect("200")
	for _, p := range parts {
		fmt.Fprintf(nc, "IHAVE %s\r\n", p.id)
		expect("335")
		nc.Write(p.wire)
		expect("235")
	}
	fmt.Fprintf(nc, "QUIT\r\n")
}

// TestINNFetch posts yEnc parts to a private INN, fetches them from nnrpd
// with the handshake (MODE READER) and a pipelined Fetch (GROUP first, as
// join_group does) on runtime/goroutine, checks every byte and the 430 for
// the part never posted, then replays the recorded session against a fresh
// Fetch and compares it with testdata/inn_nnrpd.txt (which
// TestFetchTranscripts replays without INN).
func TestINNFetch(t *testing.T) {
	inntest.MustRecord(t, *updateINN, "-update-inn")
	srv := inntest.Start(t, inntest.Options{Reader: true, Groups: []inntest.Group{{Name: innGroup}}}) // skips without INN
	posted, all := innParts()
	ihave(t, srv.Addr(), posted)

	nc, err := net.Dial("tcp", srv.ReaderAddr())
	if err != nil {
		t.Fatal(err)
	}
	rec := recorder.NewRecorder(nc, transcript.Client)
	gc := goroutine.New(rec, goroutine.Options{})
	defer gc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	h := handshake.New(time.Now(), handshake.Config{Reader: true})
	var hev handshake.Event
	err = gc.Run(ctx, h, func(time.Time) error {
		if e, ok := h.NextEvent(); ok {
			hev = e
			if _, ok := e.(handshake.Ready); ok {
				return goroutine.ErrStop
			}
		}
		return nil
	})
	if _, ok := hev.(handshake.Ready); err != nil || !ok {
		t.Fatalf("handshake: %v, %v", err, hev)
	}

	cfg := FetchConfig{Pipeline: 2}
	l := newLogged(NewFetch(time.Now(), cfg))
	if lo := h.Leftover(); len(lo) > 0 {
		if err := l.Receive(time.Now(), lo); err != nil {
			t.Fatal(err)
		}
	}
	var reqs []Request
	for _, p := range all {
		reqs = append(reqs, Request{Segment: p.key, MessageID: p.id, Group: innGroup})
	}
	next, done := 0, 0
	err = gc.Run(ctx, l, func(now time.Time) error {
		l.drain()
		done = 0
		for _, e := range l.evs {
			if _, ok := e.(Result); ok {
				done++
			}
		}
		for next < len(reqs) && l.Free() > 0 {
			if err := l.Request(now, reqs[next]); err != nil {
				return err
			}
			next++
		}
		if done == len(reqs) {
			l.Close(now)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	got := summarize(l.evs)
	for _, p := range all {
		if p.key.Number == 3 {
			if !strings.Contains(strings.Join(got, "\n"), "notfound 1/3 430") {
				t.Errorf("the unposted part did not come back 430: %q", got)
			}
			continue
		}
		if !bytes.Equal(l.bytes[p.key], p.data) {
			t.Errorf("part %s: decoded bytes differ from the posted ones", p.key)
		}
	}

	// The recorded session, from the first GROUP on, as a Fetch transcript.
	text := innTranscript(t, rec.Transcript(), reqs[:2], reqs[2:], got)
	parsed, err := transcript.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	s, err := readFetchHeader(parsed)
	if err != nil {
		t.Fatal(err)
	}
	for name, split := range map[string]func([]byte) [][]byte{"whole": transcript.Whole, "bytes": transcript.Chunks(1)} {
		rl, err := replayFetch(parsed, s, split)
		if err != nil {
			t.Fatalf("replaying the live session (%s): %v", name, err)
		}
		if diff := cmp.Diff(s.want, summarize(rl.evs)); diff != "" {
			t.Fatalf("replaying the live session (%s) (-live +replay):\n%s", name, diff)
		}
	}
	inntest.Golden{Path: innGolden, Update: *updateINN, Flag: "-update-inn", Skeleton: inntest.BySide(dataLines)}.Check(t, text)
}

// dataLines lists a transcript's data lines, exactly, each after its side
// ("C " or "S "); the golden comparison takes them side by side, ignoring
// how the directions interleave (that depends on how reads were split).
func dataLines(tr transcript.Transcript) []string {
	var lines []string
	for _, e := range tr {
		if e.Kind == transcript.Data {
			lines = append(lines, e.Side.String()+" "+string(e.Data))
		}
	}
	return lines
}

// innTranscript turns the recorded session into a Fetch transcript: the
// handshake is dropped (the Fetch starts after it), the owner's later
// requests and its Close become "# do:" lines before the commands they
// caused, and the header gives the config, the first requests and the
// events of the live run.
func innTranscript(t *testing.T, live transcript.Transcript, first, later []Request, want []string) []byte {
	t.Helper()
	start := -1
	for i, e := range live {
		if e.Kind == transcript.Data && e.Side == transcript.Client && strings.HasPrefix(string(e.Data), "GROUP ") {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatal("no GROUP in the recorded session")
	}
	c := func(s string) transcript.Entry { return transcript.Entry{Kind: transcript.Comment, Text: s} }
	out := transcript.Transcript{
		c("INN 2.7.1 nnrpd after the handshake (MODE READER): GROUP, then BODY requests two at a time for"),
		c("five yEnc parts of one file; part 3 was never posted (430), part 2 has dot-stuffed lines."),
		c("Recorded from a live INN by TestINNFetch -update-inn."),
		c("config: pipeline=2"),
		c("split: whole"),
	}
	for _, r := range first {
		out = append(out, c(fmt.Sprintf("request: %s %s %s", r.Segment, r.MessageID, r.Group)))
	}
	for _, w := range want {
		out = append(out, c("want: "+w))
	}
	bodies := 0
	for i := start; i < len(live); i++ {
		e := live[i]
		if e.Kind == transcript.Data && e.Side == transcript.Client {
			line := string(e.Data)
			switch {
			case strings.HasPrefix(line, "BODY "):
				if bodies >= len(first) {
					r := later[bodies-len(first)]
					out = append(out, c(fmt.Sprintf("do: request %s %s %s", r.Segment, r.MessageID, r.Group)))
				}
				bodies++
			case line == "QUIT\r\n":
				out = append(out, c("do: close"))
			}
		}
		out = append(out, e)
	}
	text, err := transcript.Format(out)
	if err != nil {
		t.Fatal(err)
	}
	return text
}
