package reader

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/machine/handshake"
	"github.com/newsflow/newsflow/machine/transcript"
	"github.com/newsflow/newsflow/proto"
)

var (
	_ machine.Conn        = (*Client)(nil)
	_ machine.EOFReceiver = (*Client)(nil)
)

// harness drives a Client by hand: wantSend checks what it wrote, recv
// feeds server lines, wantEvents checks what it reported.
type harness struct {
	t   *testing.T
	c   *Client
	now time.Time
}

func newHarness(t *testing.T, cfg Config) *harness {
	return &harness{t: t, c: New(t0, cfg), now: t0}
}

func (h *harness) wantSend(why string, lines ...string) {
	h.t.Helper()
	want := ""
	for _, l := range lines {
		want += l + "\r\n"
	}
	if d := cmp.Diff(want, string(h.c.AppendOutgoing(nil))); d != "" {
		h.t.Fatalf("%s: sent (-want +got):\n%s", why, d)
	}
}

func (h *harness) recv(lines ...string) error {
	var b []byte
	for _, l := range lines {
		b = append(b, l+"\r\n"...)
	}
	return h.c.Receive(h.now, b)
}

func (h *harness) wantEvents(why string, want ...string) {
	h.t.Helper()
	if want == nil {
		want = []string{}
	}
	got := describe(drainEvents(h.c))
	if got == nil {
		got = []string{}
	}
	if d := cmp.Diff(want, got); d != "" {
		h.t.Fatalf("%s: events (-want +got):\n%s", why, d)
	}
}

func TestClientDoWhileBusyOrClosed(t *testing.T) {
	h := newHarness(t, Config{Capabilities: innReader})
	if h.c.Busy() {
		t.Fatal("busy before any request")
	}
	if _, ok := h.c.Deadline(); ok {
		t.Error("a deadline while idle")
	}
	if err := h.c.Do(h.now, 1, GetArticle{MessageID: "<a@b>"}); err != nil {
		t.Fatal(err)
	}
	h.wantSend("ARTICLE", "ARTICLE <a@b>")
	if d, ok := h.c.Deadline(); !ok || !d.Equal(t0.Add(DefaultTimeout)) {
		t.Errorf("Deadline = %v %v, want t0+%v", d, ok, DefaultTimeout)
	}
	if err := h.c.Do(h.now, 2, GetGroups{}); err == nil || !strings.Contains(err.Error(), "in hand") {
		t.Errorf("Do while busy: %v", err)
	}
	h.c.Timeout(t0.Add(time.Second)) // early: nothing
	h.wantEvents("early Timeout")
	h.c.ReceiveEOF(h.now)
	h.wantEvents("EOF", "failed article:<a@b>: reader: the server closed the connection (retry)",
		"closed: reader: the server closed the connection")
	if err := h.c.Do(h.now, 3, GetGroups{}); err == nil {
		t.Error("Do on a closed client succeeded")
	}
	if err := h.c.Receive(h.now, []byte("200 hi\r\n")); err == nil {
		t.Error("Receive on a closed client succeeded")
	}
	h.c.Close(h.now) // a no-op now
	h.wantSend("after close")
	h.wantEvents("after close")
}

func TestClientBadRequests(t *testing.T) {
	h := newHarness(t, Config{Capabilities: innReader})
	reqs := []Request{
		GetGroupStats{}, GetThreads{}, GetNewArticles{Since: 3}, GetThread{Group: "g", MessageID: "x"},
		GetThread{MessageID: "<a@b>"}, GetArticle{MessageID: "<a b@c>"},
		GetThreads{Group: "two words"},
	}
	for i, r := range reqs {
		if err := h.c.Do(h.now, uint64(i), r); err != nil {
			t.Fatal(err)
		}
		if i == len(reqs)-1 {
			break
		}
		evs := drainEvents(h.c)
		if len(evs) != 1 {
			t.Fatalf("%s: %d events", r.Key(), len(evs))
		}
		f, ok := evs[0].(Failed)
		if !ok || !errors.Is(f.Err, ErrBadRequest) || f.Retry {
			t.Errorf("%s: %v, want Failed with ErrBadRequest", r.Key(), evs[0])
		}
		h.wantSend(r.Key())
	}
	// A group name with a space fails when its command is built.
	h.wantSend("two words")
	evs := drainEvents(h.c)
	if len(evs) != 1 || !errors.Is(evs[0].(Failed).Err, ErrBadRequest) {
		t.Errorf("group with a space: %v", describe(evs))
	}
	if h.c.Busy() {
		t.Error("busy after bad requests")
	}
	type other struct{ GetGroups }
	if err := h.c.Do(h.now, 99, other{}); err == nil {
		t.Error("Do with an unknown request type succeeded")
	}
}

// TestClientGroupReuse: GROUP is sent when the group changes or the
// selection is older than GroupMaxAge, not otherwise.
func TestClientGroupReuse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		age   time.Duration
		after time.Duration
		group string
		want  []string
	}{
		{"same group, fresh", 0, 500 * time.Millisecond, "g", []string{"OVER 1-2"}},
		{"same group, stale", 0, time.Second, "g", []string{"GROUP g"}},
		{"other group", 0, 0, "h", []string{"GROUP h"}},
		{"never stale", -1, time.Hour, "g", []string{"OVER 1-2"}},
		{"long max age", time.Minute, 59 * time.Second, "g", []string{"OVER 1-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Capabilities: caps("VERSION 2", "READER", "OVER"), GroupMaxAge: tc.age})
			h.c.Do(h.now, 1, GetThreads{Group: "g"})
			h.wantSend("first", "GROUP g")
			h.recv("211 2 1 2 g")
			h.wantSend("range", "OVER 1-2")
			h.recv("224 follows", "1\ts\tf\td\t<a@x>\t\t1\t1", ".")
			h.wantEvents("first", "threads g since=0 range=1-2 high=2 via OVER", `  1 <a@x> "s" "f" -`)
			if h.c.Group() != "g" {
				t.Errorf("Group() = %q", h.c.Group())
			}
			h.now = h.now.Add(tc.after)
			h.c.Do(h.now, 2, GetThreads{Group: tc.group})
			h.wantSend("second", tc.want...)
		})
	}
}

// TestClientMaxResponse: an answer larger than MaxResponse closes the
// connection instead of growing without bound.
func TestClientMaxResponse(t *testing.T) {
	h := newHarness(t, Config{Capabilities: innReader, MaxResponse: 100})
	h.c.Do(h.now, 1, GetArticle{MessageID: "<a@b>"})
	h.wantSend("ARTICLE", "ARTICLE <a@b>")
	err := h.recv("220 0 <a@b>", strings.Repeat("x", 60), strings.Repeat("y", 60))
	if !errors.Is(err, ErrProtocol) || !errors.Is(err, proto.ErrLineTooLong) {
		t.Fatalf("Receive: %v", err)
	}
	if !h.c.Closed() {
		t.Error("not closed")
	}
	h.wantEvents("too big",
		"failed article:<a@b>: reader: protocol error: answer to ARTICLE exceeds 100 bytes: nntp: line too long (retry)",
		"closed: reader: protocol error: answer to ARTICLE exceeds 100 bytes: nntp: line too long")
}

// TestClientMaxArticle: an article page needs one
// article, so the answer to ARTICLE is held to MaxArticle (4 MiB by
// default), below MaxResponse, which other answers (a group list) keep;
// and a connection closed on an oversize answer holds none of it.
func TestClientMaxArticle(t *testing.T) {
	big := strings.Repeat("x", 150) // 152 bytes with CRLF: over MaxArticle, under MaxResponse
	t.Run("article over MaxArticle", func(t *testing.T) {
		h := newHarness(t, Config{Capabilities: innReader, MaxResponse: 1000, MaxArticle: 100})
		h.c.Do(h.now, 1, GetArticle{MessageID: "<a@b>"})
		h.wantSend("ARTICLE", "ARTICLE <a@b>")
		if err := h.recv("220 0 <a@b>", big); !errors.Is(err, ErrProtocol) || !errors.Is(err, proto.ErrLineTooLong) {
			t.Fatalf("Receive: %v", err)
		}
		h.wantEvents("too big for an article",
			"failed article:<a@b>: reader: protocol error: answer to ARTICLE exceeds 100 bytes: nntp: line too long (retry)",
			"closed: reader: protocol error: answer to ARTICLE exceeds 100 bytes: nntp: line too long")
		if h.c.blk != nil || h.c.reading {
			t.Errorf("the closed client still holds %d bytes of the answer (reading %v)", cap(h.c.blk), h.c.reading)
		}
	})
	t.Run("group list over MaxArticle", func(t *testing.T) {
		h := newHarness(t, Config{Capabilities: innReader, MaxResponse: 1000, MaxArticle: 100})
		h.c.Do(h.now, 1, GetGroups{})
		h.AppendAll()
		if err := h.recv("215 a", "g."+big+" 2 1 y", ".", "215 b", "."); err != nil {
			t.Fatalf("Receive: %v", err)
		}
		h.wantEvents("a list larger than MaxArticle", "groups 1 skipped=0", "  g."+big+` 2 1 y ""`)
	})
	t.Run("MaxArticle above MaxResponse", func(t *testing.T) {
		h := newHarness(t, Config{Capabilities: innReader, MaxResponse: 100, MaxArticle: 1000})
		h.c.Do(h.now, 1, GetArticle{MessageID: "<a@b>"})
		h.AppendAll()
		if err := h.recv("220 0 <a@b>", big); !errors.Is(err, proto.ErrLineTooLong) {
			t.Fatalf("Receive: %v", err)
		}
	})
}

// TestClientStatusLineTooLong: a status line beyond 2048 octets is refused
// even before its LF arrives.
func TestClientStatusLineTooLong(t *testing.T) {
	h := newHarness(t, Config{Capabilities: innReader})
	h.c.Do(h.now, 1, GetGroupStats{Group: "g"})
	h.wantSend("GROUP", "GROUP g")
	if err := h.c.Receive(h.now, []byte("211 "+strings.Repeat("1", 3000))); !errors.Is(err, proto.ErrLineTooLong) {
		t.Fatalf("Receive: %v", err)
	}
}

// TestClientFromHandshake hands a connection over from a replayed
// handshake with bytes it read beyond Ready: they belong to the Client, and
// here they are unsolicited.
func TestClientFromHandshake(t *testing.T) {
	tr, err := transcript.Parse([]byte("S: 200 hi\r\nC: CAPABILITIES\r\nS: 101 caps\r\nS: VERSION 2\r\nS: READER\r\nS: OVER\r\nS: .\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	hs := handshake.New(transcript.Epoch, handshake.Config{Reader: true})
	if err := transcript.Replay(hs, tr, transcript.Options{}); err != nil {
		t.Fatal(err)
	}
	e, _ := hs.NextEvent()
	ready := e.(handshake.Ready)
	c, err := FromHandshake(transcript.Epoch, Config{}, ready, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Strategy(); got != StrategyOVER {
		t.Errorf("Strategy = %v, want OVER from the handshake's capabilities", got)
	}
	if _, err := FromHandshake(transcript.Epoch, Config{}, ready, []byte("211 1 1 1 g\r\n")); !errors.Is(err, ErrProtocol) {
		t.Errorf("leftover without a request: %v", err)
	}
	ready.Authenticated = true
	c, _ = FromHandshake(transcript.Epoch, Config{User: "u", Pass: "p"}, ready, nil)
	c.Do(transcript.Epoch, 1, GetArticle{MessageID: "<a@b>"})
	c.AppendOutgoing(nil)
	c.Receive(transcript.Epoch, []byte("480 again\r\n"))
	if d := cmp.Diff("QUIT\r\n", string(c.AppendOutgoing(nil))); d != "" {
		t.Errorf("480 after the handshake authenticated: (-want +got)\n%s", d)
	}
}

// TestClientForcedStrategy: Config.Strategy overrides the choice until the
// server refuses it.
func TestClientForcedStrategy(t *testing.T) {
	h := newHarness(t, Config{Capabilities: innReader, Strategy: StrategyOVER})
	if got := h.c.Strategy(); got != StrategyOVER {
		t.Fatalf("Strategy = %v", got)
	}
	h.c.Do(h.now, 1, GetThreads{Group: "g"})
	h.wantSend("GROUP", "GROUP g")
	h.recv("211 1 1 1 g")
	// The hint of the forced strategy is asked, not that of the choice.
	h.wantSend("forced OVER's hint", "LIST OVERVIEW.FMT")
	h.recv("215 fmt", "Subject:", "From:", "Date:", "Message-ID:", "References:", "Bytes:", "Lines:", "Xref:full", ".")
	h.wantSend("forced OVER", "OVER 1")
	h.recv("503 overview not available")
	h.wantSend("demoted to the choice", "LIST HEADERS")
	h.recv("215 hdrs", ":", ".")
	h.wantSend("HDR", "HDR Message-ID 1", "HDR References 1", "HDR Subject 1", "HDR From 1", "HDR Date 1")
	if got := h.c.Hints(); !cmp.Equal(got.Refused, []Strategy{StrategyOVER}) || !cmp.Equal(got.Headers, []string{":"}) {
		t.Errorf("Hints = %+v", got)
	}
}

// TestClientSent counts commands by name.
func TestClientSent(t *testing.T) {
	h := newHarness(t, Config{Capabilities: innReader})
	h.c.Do(h.now, 1, GetGroups{})
	h.AppendAll()
	h.recv("215 a", ".", "215 b", ".")
	h.wantEvents("groups", "groups 0 skipped=0")
	h.c.Close(h.now)
	want := map[string]int{"LIST ACTIVE": 1, "LIST NEWSGROUPS": 1, "QUIT": 1}
	if d := cmp.Diff(want, h.c.Sent()); d != "" {
		t.Errorf("Sent (-want +got):\n%s", d)
	}
}

func (h *harness) AppendAll() { h.c.AppendOutgoing(nil) }

// TestClientThreadsUntil: GetThreads with Until fetches the newest Limit
// articles at or below Until (an older page of a group), and nothing when
// Until is below the group's low mark.
func TestClientThreadsUntil(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   Request
		group string // the 211 line
		want  []string
	}{
		{"below the high mark", GetThreads{Group: "g", Until: 5, Limit: 2}, "211 10 1 10 g", []string{"OVER 4-5"}},
		{"limit reaches the low mark", GetThreads{Group: "g", Until: 5, Limit: 10}, "211 8 3 10 g", []string{"OVER 3-5"}},
		{"above the high mark", GetThreads{Group: "g", Until: 50, Limit: 3}, "211 10 1 10 g", []string{"OVER 8-10"}},
		{"no until", GetThreads{Group: "g", Limit: 3}, "211 10 1 10 g", []string{"OVER 8-10"}},
		{"new articles in a range", GetNewArticles{Group: "g", Since: 2, Until: 6, Limit: 100}, "211 10 1 10 g", []string{"OVER 3-6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Capabilities: caps("VERSION 2", "READER", "OVER")})
			h.c.Do(h.now, 1, tc.req)
			h.wantSend("GROUP", "GROUP g")
			h.recv(tc.group)
			h.wantSend("range", tc.want...)
		})
	}
	h := newHarness(t, Config{Capabilities: caps("VERSION 2", "READER", "OVER")})
	h.c.Do(h.now, 1, GetThreads{Group: "g", Until: 4, Limit: 10})
	h.wantSend("GROUP", "GROUP g")
	h.recv("211 5 6 10 g")
	h.wantSend("nothing at or below 4")
	h.wantEvents("empty", "threads g since=0 range=6-4 high=4 via none")
	if k := (GetThreads{Group: "g", Until: 4}).Key(); k != "threads:g:0:0:until=4" {
		t.Errorf("Key = %q", k)
	}
}
