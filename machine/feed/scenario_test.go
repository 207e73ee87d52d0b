package feed

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/machine"
)

func TestWindow(t *testing.T) {
	h := newHarness(t, Config{Streaming: true, Window: 2})
	h.wantEvents("a new Feed asks for a window of articles", WantMore{2})
	h.offer(a, b, "<c@x>")
	h.wantSend("CHECK for as many as the window holds", "CHECK <a@x>\r\nCHECK <b@x>\r\n")
	h.wantEvents("no room: nothing asked")
	h.mustRecv("238 <a@x>")
	h.wantSend("TAKETHIS takes the slot of its CHECK, <c> still waits", takethis(a))
	h.wantIdle("nothing more while the window is full")
	h.mustRecv("438 <b@x>")
	h.wantSend("a reply frees a slot: CHECK <c>", "CHECK <c@x>\r\n")
	h.wantEvents("refused, and no room yet (three held in a window of two)", Refused{art(b)})
	h.mustRecv("239 <a@x>")
	h.wantEvents("accepted; room for one", acc(art(a)), WantMore{1})
	h.mustRecv("438 <c@x>")
	h.wantEvents("refused; room for one more", Refused{art("<c@x>")}, WantMore{1})
	if s := h.f.Stats(); s.InFlight != 0 || s.Checks != 3 || s.TakeThis != 1 || s.Offered != 3 {
		t.Errorf("stats %+v", s)
	}
}

// TestTakeThisFirst: wanted articles are sent before new CHECKs.
func TestTakeThisFirst(t *testing.T) {
	h := newHarness(t, Config{Streaming: true, Window: 3})
	h.offer(a, b, "<c@x>", "<d@x>")
	h.wantSend("three CHECKs", "CHECK <a@x>\r\nCHECK <b@x>\r\nCHECK <c@x>\r\n")
	h.mustRecv("238 <a@x>", "438 <b@x>", "238 <c@x>")
	h.wantSend("each reply pumps at once: TAKETHIS a, CHECK d (b's slot), TAKETHIS c",
		takethis(a)+"CHECK <d@x>\r\n"+takethis("<c@x>"))
}

func TestAuthMidSession(t *testing.T) {
	h := newHarness(t, Config{Streaming: true, User: "u", Pass: "p"})
	h.offer(a, b)
	h.wantSend("two CHECKs", "CHECK <a@x>\r\nCHECK <b@x>\r\n")
	h.events()
	h.mustRecv("480 who are you")
	h.wantIdle("480: wait for the replies still due")
	h.offer("<c@x>")
	h.wantIdle("no new command while draining")
	h.mustRecv("238 <b@x>")
	h.wantSend("drained: AUTHINFO (RFC 4643 §2.3)", "AUTHINFO USER u\r\n")
	h.mustRecv("381 pass")
	h.wantSend("password", "AUTHINFO PASS p\r\n")
	h.mustRecv("281 ok")
	h.wantSend("the wanted article first, then the CHECK that drew 480, then the new one",
		takethis(b)+"CHECK <a@x>\r\nCHECK <c@x>\r\n")
	h.mustRecv("239 <b@x>", "438 <a@x>", "480 again")
	h.wantEvents("a second 480 after authenticating is final",
		acc(art(b)), WantMore{1}, Refused{art(a)}, WantMore{1},
		Requeue{arts("<c@x>")}, Closed{ReasonAuth, "480 again to CHECK <c@x>: again after authenticating"})
}

func TestAuthFails(t *testing.T) {
	for _, tc := range []struct {
		replies []string
		out     string
		closed  Closed
	}{
		{[]string{"481 no"}, "", Closed{ReasonAuth, "AUTHINFO: authentication rejected: 481 no"}},
		{[]string{"381 pass", "481 no"}, "AUTHINFO PASS p\r\n", Closed{ReasonAuth, "AUTHINFO: authentication rejected: 481 no"}},
		{[]string{"502 never"}, "", Closed{ReasonAuth, "AUTHINFO: authentication refused: 502 never"}},
		{[]string{"400 bye"}, "", Closed{ReasonUnavailable, "AUTHINFO: service unavailable: 400 bye"}},
	} {
		t.Run(tc.replies[len(tc.replies)-1], func(t *testing.T) {
			h := newHarness(t, Config{User: "u", Pass: "p"})
			h.offer(a)
			h.mustRecv("480 auth")
			h.wantSend("IHAVE, then AUTHINFO USER", "IHAVE <a@x>\r\nAUTHINFO USER u\r\n")
			var out string
			for _, r := range tc.replies {
				h.mustRecv(r)
				out += h.out()
			}
			if out != tc.out {
				t.Fatalf("output after the replies %q, want %q", out, tc.out)
			}
			h.wantEvents("the article that drew 480 is requeued", WantMore{100}, Requeue{arts(a)}, tc.closed)
		})
	}
}

func TestFallbackToIHave(t *testing.T) {
	h := newHarness(t, Config{Streaming: true})
	h.offer(a, b, "<c@x>")
	h.wantSend("three CHECKs", "CHECK <a@x>\r\nCHECK <b@x>\r\nCHECK <c@x>\r\n")
	h.events()
	h.mustRecv("500 what", "238 <b@x>")
	h.wantIdle("draining after 500")
	h.mustRecv("501 what")
	h.wantSend("IHAVE for the first article that drew 500", "IHAVE <a@x>\r\n")
	h.wantEvents("fell back", ModeChanged{ModeCheck, ModeIHave, 0, "the peer answered CHECK with 500/501"})
	h.mustRecv("335 go", "235 ok", "335 go", "235 ok", "435 dup")
	h.wantSend("then the others, one at a time, the retries first",
		body(a)+"IHAVE <c@x>\r\n"+body("<c@x>")+"IHAVE <b@x>\r\n")
	h.wantEvents("accepted, refused", acc(art(a)), WantMore{1}, acc(art("<c@x>")), WantMore{1},
		Refused{art(b)}, WantMore{1})
	if h.f.Mode() != ModeIHave {
		t.Errorf("mode %s", h.f.Mode())
	}
}

// switchPoints is a reference for the no-CHECK filter: the number of
// wanted answers from 0% until the switch to TAKETHIS, then the number of
// unwanted answers until the switch back.
func switchPoints(high, low, filter float64) (on, off int) {
	r := 0.0
	for r <= high {
		r += (100 - r) / filter
		on++
	}
	for r >= low {
		r -= r / filter
		off++
	}
	return on, off
}

func TestNoCheckMode(t *testing.T) {
	tests := []struct {
		name              string
		cfg               Config
		wantOn, wantOff   int
		neverSwitches     bool
		explainOn, explOf string
	}{
		// innfeed's defaults: 95%, 90%, a filter of 50 articles.
		{name: "defaults", cfg: Config{}, wantOn: 149, wantOff: 3},
		{name: "fast filter", cfg: Config{NoCheckHigh: 80, NoCheckLow: 50, NoCheckFilter: 2}, wantOn: 3, wantOff: 1},
		{name: "filter 10", cfg: Config{NoCheckHigh: 90, NoCheckLow: 60, NoCheckFilter: 10}, wantOn: 22, wantOff: 4},
		{name: "off", cfg: Config{NoCheckOff: true}, neverSwitches: true},
		{name: "high 100 never", cfg: Config{NoCheckHigh: 100}, neverSwitches: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.neverSwitches {
				c := tc.cfg
				if c.NoCheckHigh == 0 {
					c.NoCheckHigh, c.NoCheckLow, c.NoCheckFilter = 95, 90, 50
				}
				on, off := switchPoints(c.NoCheckHigh, c.NoCheckLow, c.NoCheckFilter)
				if on != tc.wantOn || off != tc.wantOff {
					t.Fatalf("reference: on after %d, off after %d; the table says %d, %d", on, off, tc.wantOn, tc.wantOff)
				}
			}
			cfg := tc.cfg
			cfg.Streaming, cfg.Window = true, 1
			h := newHarness(t, cfg)
			n := 0
			// Offer one article at a time; every CHECK is wanted and every
			// TAKETHIS accepted, until the Feed stops asking.
			for ; n < 400; n++ {
				id := fmt.Sprintf("<%d@x>", n)
				h.offer(id)
				out := h.out()
				if strings.HasPrefix(out, "TAKETHIS") {
					break
				}
				h.mustRecv("238 " + id)
				h.wantSend("TAKETHIS after 238", takethis(id))
				h.mustRecv("239 " + id)
			}
			evs := h.events()
			if tc.neverSwitches {
				if n != 400 || h.f.Mode() != ModeCheck {
					t.Fatalf("switched after %d articles", n)
				}
				return
			}
			if n != tc.wantOn {
				t.Fatalf("first TAKETHIS without CHECK for article %d, want after %d wanted", n, tc.wantOn)
			}
			var changes []ModeChanged
			for _, e := range evs {
				if mc, ok := e.(ModeChanged); ok {
					changes = append(changes, mc)
				}
			}
			if len(changes) != 1 || changes[0].From != ModeCheck || changes[0].To != ModeTakeThis || changes[0].Percent <= cfg.NoCheckHigh && cfg.NoCheckHigh != 0 {
				t.Fatalf("mode changes %+v", changes)
			}
			// Now 439 "duplicate"s count against it.
			id := fmt.Sprintf("<%d@x>", n)
			k := 0
			for ; k < 100 && h.f.Mode() == ModeTakeThis; k++ {
				h.mustRecv("439 " + id)
				n++
				id = fmt.Sprintf("<%d@x>", n)
				h.offer(id)
				out := h.out()
				if strings.HasPrefix(out, "CHECK") {
					k++
					break
				}
			}
			if k != tc.wantOff {
				t.Fatalf("back to CHECK after %d rejects, want %d", k, tc.wantOff)
			}
			evs = h.events()
			last := ModeChanged{}
			for _, e := range evs {
				if mc, ok := e.(ModeChanged); ok {
					last = mc
				}
			}
			if last.From != ModeTakeThis || last.To != ModeCheck {
				t.Fatalf("no switch back: %v", summarize(evs))
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	const rt = DefaultResponseTimeout
	t.Run("silent peer", func(t *testing.T) {
		h := newHarness(t, Config{Streaming: true})
		if d, ok := h.f.Deadline(); ok {
			t.Fatalf("deadline %v with nothing outstanding", d)
		}
		h.now = t0.Add(time.Second)
		h.offer(a, b)
		h.out()
		h.events()
		if d, ok := h.f.Deadline(); !ok || !d.Equal(t0.Add(time.Second+rt)) {
			t.Fatalf("deadline %v %v, want ResponseTimeout after the first command", d, ok)
		}
		h.advance(100 * time.Second)
		h.mustRecv("238 <a@x>")
		h.out()
		if d, _ := h.f.Deadline(); !d.Equal(h.now.Add(rt)) {
			t.Fatalf("deadline %v, want ResponseTimeout after the last reply", d)
		}
		h.advance(rt - time.Nanosecond)
		h.wantEvents("early: nothing")
		h.f.Timeout(h.now.Add(-time.Hour))
		h.wantEvents("a call before the deadline is a no-op")
		h.advance(time.Nanosecond)
		h.wantEvents("silent for ResponseTimeout: everything in flight requeued",
			Requeue{arts(b, a)}, Closed{ReasonTimeout, "no response within 5m0s"})
		h.wantIdle("no QUIT to a silent peer")
		if _, ok := h.f.Deadline(); ok {
			t.Error("deadline after close")
		}
	})
	t.Run("idle", func(t *testing.T) {
		h := newHarness(t, Config{Streaming: true, IdleTimeout: time.Minute})
		if d, ok := h.f.Deadline(); !ok || !d.Equal(t0.Add(time.Minute)) {
			t.Fatalf("deadline %v %v", d, ok)
		}
		h.now = t0.Add(10 * time.Second)
		h.offer(a)
		h.now = t0.Add(20 * time.Second)
		h.mustRecv("438 <a@x>")
		if d, ok := h.f.Deadline(); !ok || !d.Equal(t0.Add(80*time.Second)) {
			t.Fatalf("deadline %v %v, want IdleTimeout after it became idle", d, ok)
		}
		h.out()
		h.events()
		h.advance(time.Minute)
		h.wantSend("idle: QUIT", "QUIT\r\n")
		h.mustRecv("205 bye")
		h.wantEvents("closed as idle", Closed{ReasonIdle, ""})
	})
	t.Run("quit unanswered", func(t *testing.T) {
		h := newHarness(t, Config{Streaming: true})
		h.f.Close(h.now)
		h.wantSend("nothing held: QUIT at once", "QUIT\r\n")
		h.advance(rt)
		h.wantEvents("closed anyway", WantMore{100}, Closed{ReasonQuit, ""})
	})
	t.Run("auth", func(t *testing.T) {
		h := newHarness(t, Config{Streaming: true, User: "u"})
		h.offer(a)
		h.mustRecv("480 auth")
		h.wantSend("CHECK, AUTHINFO", "CHECK <a@x>\r\nAUTHINFO USER u\r\n")
		h.events()
		h.advance(rt)
		h.wantEvents("AUTHINFO unanswered", Requeue{arts(a)}, Closed{ReasonTimeout, "no response within 5m0s"})
	})
}

func TestGracefulClose(t *testing.T) {
	h := newHarness(t, Config{Streaming: true, Window: 2})
	h.offer(a, b, "<c@x>")
	h.wantSend("two CHECKs", "CHECK <a@x>\r\nCHECK <b@x>\r\n")
	h.events()
	h.f.Close(h.now)
	h.wantEvents("the article not yet sent comes back at once", Requeue{arts("<c@x>")})
	h.wantIdle("no QUIT while replies are due")
	h.offer("<d@x>")
	h.wantEvents("an offer to a closing Feed comes back", Requeue{arts("<d@x>")})
	h.mustRecv("238 <a@x>")
	h.wantSend("a wanted article is still sent", takethis(a))
	h.mustRecv("438 <b@x>", "239 <a@x>")
	h.wantSend("drained: QUIT (RFC 3977 §5.4)", "QUIT\r\n")
	h.wantEvents("outcomes, no WantMore", Refused{art(b)}, acc(art(a)))
	if h.f.Closed() {
		t.Fatal("closed before 205")
	}
	h.mustRecv("205 bye")
	h.wantEvents("closed", Closed{ReasonQuit, ""})
	if !h.f.Closed() {
		t.Fatal("not closed after 205")
	}
	if err := h.recv("200 more"); err == nil {
		t.Error("Receive after close: no error")
	}
	h.f.Close(h.now)
	h.f.Abort(h.now, "late")
	h.wantEvents("nothing after the end")
}

func TestEOF(t *testing.T) {
	h := newHarness(t, Config{Streaming: true})
	h.offer(a, b)
	h.mustRecv("238 <a@x>")
	h.out()
	h.events()
	h.f.ReceiveEOF(h.now)
	h.wantEvents("everything in flight, in command order", Requeue{arts(b, a)},
		Closed{ReasonPeerClosed, "with 2 articles held"})

	h = newHarness(t, Config{Streaming: true})
	h.f.Close(h.now)
	h.out()
	h.events()
	h.f.ReceiveEOF(h.now)
	h.wantEvents("EOF after QUIT is the end", Closed{ReasonQuit, ""})
}

func TestAbort(t *testing.T) {
	h := newHarness(t, Config{Streaming: true, Window: 1})
	h.offer(a, b)
	h.mustRecv("238 <a@x>")
	h.out()
	h.events()
	h.f.Abort(h.now, "write: broken pipe")
	h.wantEvents("sent, then queued", Requeue{arts(a, b)}, Closed{ReasonAborted, "write: broken pipe"})
}

func TestOfferUnsendable(t *testing.T) {
	h := newHarness(t, Config{Streaming: true})
	h.events()
	bad := []Article{
		{Token: "@t@", MessageID: "no-brackets", Size: 3},
		{Token: "@t@", MessageID: "<a b@x>", Size: 3},
		{Token: "", MessageID: "<a@x>", Size: 3},
		{Token: "@t@", MessageID: "<a@x>", Size: 0},
	}
	for _, x := range bad {
		h.f.Offer(h.now, x)
	}
	evs := h.events()
	if len(evs) != len(bad) {
		t.Fatalf("events %v", evs)
	}
	for i, e := range evs {
		r, ok := e.(Rejected)
		if !ok || r.Article != bad[i] || r.Code != 0 || !strings.HasPrefix(r.Reason, "feed: cannot offer") {
			t.Errorf("offer %+v: %#v", bad[i], e)
		}
	}
	h.wantIdle("nothing sent")
	if s := h.f.Stats(); s.Offered != 4 || s.Rejected != 4 {
		t.Errorf("stats %+v", s)
	}
}

func TestSegments(t *testing.T) {
	h := newHarness(t, Config{Streaming: true, Bodies: bodyMap{}})
	h.offer(a, b)
	h.mustRecv("238 <a@x>", "238 <b@x>")
	segs := h.f.AppendSegments(nil)
	want := []machine.Segment{
		{Bytes: []byte("CHECK <a@x>\r\nCHECK <b@x>\r\nTAKETHIS <a@x>\r\n")},
		{Token: "@a@x@", Size: art(a).Size},
		{Bytes: []byte("TAKETHIS <b@x>\r\n")},
		{Token: "@b@x@", Size: art(b).Size},
	}
	if d := cmp.Diff(want, segs); d != "" {
		t.Fatalf("segments (-want +got):\n%s", d)
	}
	if more := h.f.AppendSegments(nil); len(more) != 0 {
		t.Fatalf("drained twice: %v", more)
	}
	if out := h.out(); out != "" {
		t.Fatalf("AppendOutgoing after AppendSegments: %q", out)
	}
	// The bytes handed out stay valid until the next input.
	first := string(segs[0].Bytes)
	h.mustRecv("239 <a@x>")
	h.offer("<c@x>")
	segs2 := h.f.AppendSegments(nil)
	if len(segs2) != 1 || string(segs2[0].Bytes) != "CHECK <c@x>\r\n" {
		t.Fatalf("segments %+v", segs2)
	}
	if first != "CHECK <a@x>\r\nCHECK <b@x>\r\nTAKETHIS <a@x>\r\n" {
		t.Fatal("copy changed")
	}
}

func TestAppendOutgoingMissingBody(t *testing.T) {
	h := newHarness(t, Config{Streaming: true, Bodies: bodyMap{"@a@x@": []byte("short\r\n.\r\n")}})
	h.offer(a)
	h.mustRecv("238 <a@x>")
	h.wantSend("the command line goes, the body cannot", "CHECK <a@x>\r\nTAKETHIS <a@x>\r\n")
	h.wantEvents("aborted", WantMore{100}, Requeue{arts(a)},
		Closed{ReasonAborted, "machine: segment @a@x@: stored article has 10 bytes, want 47"})
}

func TestStats(t *testing.T) {
	h := newHarness(t, Config{Streaming: true})
	h.offer(a, b, "<c@x>", "<d@x>", "<e@x>")
	h.mustRecv("238 <a@x>", "438 <b@x>", "431 <c@x>", "238 <d@x>", "438 <e@x>", "239 <a@x>", "439 <d@x>")
	h.offer("<f@x>")
	want := Stats{Offered: 6, Accepted: 1, Refused: 2, Rejected: 1, Deferred: 1, InFlight: 1, Checks: 6,
		TakeThis: 2, BodyBytes: art(a).Size + art("<d@x>").Size}
	if d := cmp.Diff(want, h.f.Stats()); d != "" {
		t.Fatalf("stats (-want +got):\n%s", d)
	}
	h.f.Abort(h.now, "x")
	if s := h.f.Stats(); s.Requeued != 1 || s.InFlight != 0 {
		t.Fatalf("stats after abort %+v", s)
	}
}
