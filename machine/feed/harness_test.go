package feed

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine"
)

// t0 is the clock at the start of every harness.
var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// wireArticle is the stored (wire) form of a small test article for id:
// CRLF, one dot-stuffed line, terminated.
func wireArticle(id string) []byte {
	return []byte("Message-ID: " + id + "\r\n\r\nBody of " + id + ".\r\n..dot\r\n.\r\n")
}

// art is the Article for id, with a token derived from it.
func art(id string) Article {
	return Article{Token: "@" + strings.Trim(id, "<>") + "@", MessageID: id, Size: int64(len(wireArticle(id)))}
}

// body is what a TAKETHIS/IHAVE body of id looks like on the wire.
func body(id string) string { return string(wireArticle(id)) }

// takethis is the bytes of TAKETHIS for id with its article.
func takethis(id string) string { return "TAKETHIS " + id + "\r\n" + body(id) }

// bodyMap is a machine.BodySource over a map from token to stored bytes;
// tokens it does not hold are generated from art (so any article works).
type bodyMap map[string][]byte

func (b bodyMap) Body(token string) ([]byte, error) {
	if body, ok := b[token]; ok {
		return body, nil
	}
	if strings.HasPrefix(token, "@") && strings.HasSuffix(token, "@") && len(token) > 2 {
		return wireArticle("<" + token[1:len(token)-1] + ">"), nil
	}
	return nil, fmt.Errorf("no stored article %s", token)
}

// harness drives one Feed with an injected clock.
type harness struct {
	t   testing.TB
	f   *Feed
	now time.Time
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	if cfg.Bodies == nil {
		cfg.Bodies = bodyMap{}
	}
	return &harness{t: t, f: New(t0, cfg), now: t0}
}

func (h *harness) offer(ids ...string) {
	for _, id := range ids {
		h.f.Offer(h.now, art(id))
	}
}

// recv gives the lines (CRLF added to each) to Receive in one call.
func (h *harness) recv(lines ...string) error {
	var b []byte
	for _, l := range lines {
		b = append(b, l...)
		b = append(b, '\r', '\n')
	}
	return h.f.Receive(h.now, b)
}

// mustRecv is recv that fails the test on an error.
func (h *harness) mustRecv(lines ...string) {
	h.t.Helper()
	if err := h.recv(lines...); err != nil {
		h.t.Fatalf("Receive(%q): %v", lines, err)
	}
}

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.f.Timeout(h.now)
}

// out drains the output as bytes.
func (h *harness) out() string {
	var b []byte
	for {
		n := len(b)
		b = h.f.AppendOutgoing(b)
		if len(b) == n {
			return string(b)
		}
	}
}

// events drains the events.
func (h *harness) events() []Event {
	var evs []Event
	for {
		e, ok := h.f.NextEvent()
		if !ok {
			return evs
		}
		evs = append(evs, e)
	}
}

// wantSend checks the output since the last check.
func (h *harness) wantSend(why, want string) {
	h.t.Helper()
	if d := cmp.Diff(want, h.out()); d != "" {
		h.t.Fatalf("%s: output (-want +got):\n%s", why, d)
	}
}

// wantIdle checks that nothing was written.
func (h *harness) wantIdle(why string) { h.t.Helper(); h.wantSend(why, "") }

// wantEvents checks the events since the last check.
func (h *harness) wantEvents(why string, want ...Event) {
	h.t.Helper()
	if d := cmp.Diff(want, h.events()); d != "" {
		h.t.Fatalf("%s: events (-want +got):\n%s", why, d)
	}
}

// arts returns the Articles for ids.
func arts(ids ...string) []Article {
	var a []Article
	for _, id := range ids {
		a = append(a, art(id))
	}
	return a
}

// summarize writes events the way transcripts' "# want:" lines do:
// outcomes, mode changes, warnings and the close, without WantMore.
func summarize(evs []Event) string {
	var parts []string
	for _, e := range evs {
		switch e := e.(type) {
		case Accepted:
			parts = append(parts, "accepted "+e.Article.MessageID)
		case Refused:
			parts = append(parts, "refused "+e.Article.MessageID)
		case Rejected:
			parts = append(parts, fmt.Sprintf("rejected %s %d", e.Article.MessageID, e.Code))
		case Deferred:
			parts = append(parts, fmt.Sprintf("deferred %s %d", e.Article.MessageID, e.Code))
		case Requeue:
			var ids []string
			for _, a := range e.Articles {
				ids = append(ids, a.MessageID)
			}
			parts = append(parts, "requeue "+strings.Join(ids, " "))
		case ModeChanged:
			parts = append(parts, fmt.Sprintf("mode %s->%s", e.From, e.To))
		case Warning:
			parts = append(parts, "warning "+e.Article.MessageID)
		case Closed:
			parts = append(parts, "closed "+e.Reason.String())
		}
	}
	return strings.Join(parts, "; ")
}

// outcomes maps every message-id that got an outcome (or was requeued) to
// how many times; a correct Feed gives each offered article exactly one.
func outcomes(evs []Event) map[string]int {
	m := make(map[string]int)
	for _, e := range evs {
		switch e := e.(type) {
		case Accepted:
			m[e.Article.MessageID]++
		case Refused:
			m[e.Article.MessageID]++
		case Rejected:
			m[e.Article.MessageID]++
		case Deferred:
			m[e.Article.MessageID]++
		case Requeue:
			for _, a := range e.Articles {
				m[a.MessageID]++
			}
		}
	}
	return m
}

// sortedKeys lists a map's keys in order, for messages.
func sortedKeys(m map[string]int) []string {
	var k []string
	for id := range m {
		k = append(k, id)
	}
	sort.Strings(k)
	return k
}

var _ machine.Conn = (*Feed)(nil)
var _ machine.SegmentSender = (*Feed)(nil)
var _ machine.EOFReceiver = (*Feed)(nil)

// acc is the Accepted event of a, as the tests expect it.
func acc(a Article) Accepted { return Accepted{Article: &a} }
