package ingest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// harness drives one Ingest; its clock starts at t0 and moves only by tick.
type harness struct {
	g   *Ingest
	now time.Time
}

// action is one input to the machine.
type action func(h *harness) error

func recv(s string) action {
	return func(h *harness) error { return h.g.Receive(h.now, []byte(s)) }
}

func decide(seq uint64, v Verdict) action {
	return func(h *harness) error { return h.g.Decide(h.now, seq, v) }
}

func stored(seq uint64, o Outcome, reason string) action {
	return func(h *harness) error { return h.g.Stored(h.now, seq, Result{Outcome: o, Reason: reason}) }
}

func accepting(ok bool, reason string) action {
	return func(h *harness) error { h.g.SetAccepting(h.now, ok, reason); return nil }
}

// tick moves the clock on by d and calls Timeout.
func tick(d time.Duration) action {
	return func(h *harness) error { h.now = h.now.Add(d); h.g.Timeout(h.now); return nil }
}

func eof() action { return func(h *harness) error { h.g.ReceiveEOF(h.now); return nil } }

func shutdown(reason string) action {
	return func(h *harness) error { h.g.Shutdown(h.now, reason); return nil }
}

// step is one input and what must come of it.
type step struct {
	what    string
	do      action   // nil: only look at the output (the greeting)
	out     string   // everything written after the input
	events  []string // every event after the input
	wantErr string   // the input's error must contain this
}

type machineCase struct {
	name   string
	cfg    Config
	steps  []step
	closed bool      // Closed at the end
	counts *Counters // counters at the end, when set
}

// testCfg is the configuration of most cases.
var testCfg = Config{PathHost: "relay.example"}

const greeting = "200 relay.example newsflow ready (transit mode)\r\n"

// greet is the first step of most cases.
var greet = step{what: "greeting", out: greeting}

var (
	a1 = "<a1@example.com>"
	a2 = "<a2@example.com>"
	a3 = "<a3@example.com>"
)

func runCase(t *testing.T, tc machineCase) *harness {
	t.Helper()
	h := &harness{g: New(t0, tc.cfg), now: t0}
	for i, st := range tc.steps {
		var err error
		if st.do != nil {
			err = st.do(h)
		}
		switch {
		case st.wantErr == "" && err != nil:
			t.Fatalf("step %d (%s): unexpected error %v", i, st.what, err)
		case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
			t.Fatalf("step %d (%s): error %v, want one containing %q", i, st.what, err, st.wantErr)
		}
		if diff := cmp.Diff(st.out, string(h.g.AppendOutgoing(nil))); diff != "" {
			t.Errorf("step %d (%s): output (-want +got):\n%s", i, st.what, diff)
		}
		if diff := cmp.Diff(st.events, events(h.g)); diff != "" {
			t.Errorf("step %d (%s): events (-want +got):\n%s", i, st.what, diff)
		}
	}
	if got := h.g.Closed(); got != tc.closed {
		t.Errorf("Closed() = %v, want %v", got, tc.closed)
	}
	if tc.counts != nil {
		if diff := cmp.Diff(*tc.counts, h.g.Counters()); diff != "" {
			t.Errorf("counters (-want +got):\n%s", diff)
		}
	}
	return h
}

func TestCommands(t *testing.T) {
	caps := "101 Capability list:\r\nVERSION 2\r\nIMPLEMENTATION newsflow\r\nIHAVE\r\nSTREAMING\r\n.\r\n"
	cases := []machineCase{
		{
			name:  "greeting 200",
			cfg:   testCfg,
			steps: []step{greet},
		},
		{
			name: "greeting 400 when the relay is not accepting",
			cfg:  Config{PathHost: "relay.example", Unavailable: "Disk full"},
			steps: []step{
				{what: "greeting", out: "400 Disk full\r\n", events: []string{"closed unavailable: Disk full"}},
				{what: "input after close is dropped", do: recv("CHECK <a@b>\r\n")},
			},
			closed: true,
		},
		{
			name: "CAPABILITIES: transit, streaming, no READER (RFC 3977 §5.2)",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "CAPABILITIES", do: recv("CAPABILITIES\r\n"), out: caps},
				{what: "with a keyword argument", do: recv("capabilities AUTHINFO\r\n"), out: caps},
				{what: "two arguments", do: recv("CAPABILITIES a b\r\n"), out: "501 Syntax error; usage: CAPABILITIES [keyword]\r\n"},
			},
		},
		{
			name: "MODE variants",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "MODE STREAM (RFC 4644 §2.3)", do: recv("MODE STREAM\r\n"), out: "203 Streaming permitted\r\n"},
				{what: "lower case", do: recv("mode stream\r\n"), out: "203 Streaming permitted\r\n"},
				{what: "unknown variant", do: recv("MODE CANCEL\r\n"), out: "501 Unknown MODE variant\r\n"},
				{what: "no variant", do: recv("MODE\r\n"), out: "501 Unknown MODE variant\r\n"},
				{what: "extra argument", do: recv("MODE STREAM now\r\n"), out: "501 Syntax error; usage: MODE STREAM\r\n"},
				{what: "MODE READER: transit only (RFC 3977 §5.3)", do: recv("MODE READER\r\nCHECK <a@b>\r\n"),
					out: "502 Transit service only\r\n", events: []string{"closed MODE READER: transit service only"}},
			},
			closed: true,
		},
		{
			name: "HELP, DATE, unknown commands, QUIT",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "HELP (RFC 3977 §7.2)", do: recv("HELP\r\n"), out: "100 Help text follows\r\n" + helpText},
				{what: "DATE (RFC 3977 §7.1)", do: recv("DATE\r\n"), out: "111 20000101000000\r\n"},
				{what: "DATE with an argument", do: recv("DATE now\r\n"), out: "501 Syntax error; usage: DATE\r\n"},
				{what: "a reader command", do: recv("GROUP misc.test\r\n"), out: "500 Unknown command\r\n"},
				{what: "POST is not implemented", do: recv("POST\r\n"), out: "500 Unknown command\r\n"},
				{what: "an empty line", do: recv("\r\n"), out: "501 Syntax error\r\n"},
				{what: "a NUL in the line", do: recv("CHECK <a\x00b@c>\r\n"), out: "501 Syntax error\r\n"},
				{what: "bare LF ends a line too", do: recv("DATE\n"), out: "111 20000101000000\r\n"},
				{what: "QUIT with an argument", do: recv("QUIT now\r\n"), out: "501 Syntax error; usage: QUIT\r\n"},
				{what: "QUIT (RFC 3977 §5.4); input after it is dropped", do: recv("QUIT\r\nDATE\r\n"),
					out: "205 Bye\r\n", events: []string{"closed QUIT"}},
			},
			closed: true,
		},
		{
			name: "over-long command line: 501 at 512 octets, the rest skipped",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "511 octets: no answer yet", do: recv(strings.Repeat("x", 511))},
				{what: "the 512th octet without LF", do: recv("x"), out: "501 Command line too long\r\n"},
				{what: "more of the line is skipped", do: recv(strings.Repeat("y", 2000))},
				{what: "the line ends; the next command is served", do: recv("zz\r\nDATE\r\n"), out: "111 20000101000000\r\n"},
				{what: "a 512-octet line with CRLF is fine", do: recv("DATE" + strings.Repeat(" ", 506) + "\r\n"), out: "111 20000101000000\r\n"},
			},
		},
		{
			name: "ten consecutive bad commands close the connection",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "nine unknown commands, one good one resets the count", do: recv(strings.Repeat("FOO\r\n", 9) + "DATE\r\n"),
					out: strings.Repeat("500 Unknown command\r\n", 9) + "111 20000101000000\r\n"},
				{what: "ten more", do: recv(strings.Repeat("FOO\r\n", 10) + "DATE\r\n"),
					out:    strings.Repeat("500 Unknown command\r\n", 9) + "400 Too many unrecognized commands\r\n",
					events: []string{"closed too many unrecognized commands"}},
			},
			closed: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, tc) })
	}
}

func TestCheck(t *testing.T) {
	cases := []machineCase{
		{
			name: "want, refuse, defer (RFC 4644 §2.4)",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "CHECK asks the owner", do: recv("CHECK " + a1 + "\r\n"), events: []string{"check 1 CHECK " + a1}},
				{what: "want", do: decide(1, Want), out: "238 " + a1 + " Send it\r\n"},
				{what: "CHECK a2", do: recv("CHECK " + a2 + "\r\n"), events: []string{"check 2 CHECK " + a2}},
				{what: "refuse", do: decide(2, Refuse), out: "438 " + a2 + " Not wanted\r\n"},
				{what: "CHECK a3", do: recv("CHECK " + a3 + "\r\n"), events: []string{"check 3 CHECK " + a3}},
				{what: "defer", do: decide(3, Defer), out: "431 " + a3 + " Try again later\r\n"},
			},
			counts: &Counters{Offered: 3, Refused: 1, Deferred: 1},
		},
		{
			name: "CHECK without MODE STREAM is served (STREAMING is advertised)",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "CHECK", do: recv("check " + a1 + "\r\n"), events: []string{"check 1 CHECK " + a1}},
			},
		},
		{
			name: "malformed message-ids draw 438; a missing one 501",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "no @", do: recv("CHECK <nohost>\r\n"), out: "438 <nohost> Syntax error in message-ID\r\n",
					events: []string{`rejected CHECK <nohost> message-id: message-id "<nohost>": no "@" between id-left and id-right`}},
				{what: "no brackets", do: recv("CHECK a@b\r\n"), out: "438 a@b Syntax error in message-ID\r\n",
					events: []string{`rejected CHECK a@b message-id: message-id "a@b": does not start with "<"`}},
				{what: "a control character is echoed as ?", do: recv("CHECK <a\x01b@c>\r\n"), out: "438 <a?b@c> Syntax error in message-ID\r\n",
					events: []string{"rejected CHECK <a\x01b@c> message-id: message-id \"<a\\x01b@c>\": control octet 0x01 (only printable US-ASCII is allowed)"}},
				{what: "no argument", do: recv("CHECK\r\n"), out: "501 Syntax error; usage: CHECK message-id\r\n"},
				{what: "two arguments", do: recv("CHECK <a@b> <c@d>\r\n"), out: "501 Syntax error; usage: CHECK message-id\r\n"},
			},
			counts: &Counters{Offered: 3, Rejected: [NumRejectKinds]int64{RejectMessageID: 3}},
		},
		{
			name: "pipelined CHECKs answered out of order go out in order",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "three CHECKs and a DATE in one read", do: recv("CHECK " + a1 + "\r\nCHECK " + a2 + "\r\nCHECK " + a3 + "\r\nDATE\r\n"),
					events: []string{"check 1 CHECK " + a1, "check 2 CHECK " + a2, "check 3 CHECK " + a3}},
				{what: "the third answered first: held", do: decide(3, Refuse)},
				{what: "the first: it goes out alone", do: decide(1, Want), out: "238 " + a1 + " Send it\r\n"},
				{what: "the second releases the rest and DATE", do: decide(2, Defer),
					out: "431 " + a2 + " Try again later\r\n438 " + a3 + " Not wanted\r\n111 20000101000000\r\n"},
			},
		},
		{
			name: "not accepting: 431 without asking the owner",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "CHECK before", do: recv("CHECK " + a1 + "\r\n"), events: []string{"check 1 CHECK " + a1}},
				{what: "disk full", do: accepting(false, "Disk full")},
				{what: "CHECK while not accepting", do: recv("CHECK " + a2 + "\r\n")},
				{what: "the earlier CHECK is still the owner's", do: decide(1, Want),
					out: "238 " + a1 + " Send it\r\n431 " + a2 + " Disk full\r\n"},
				{what: "accepting again", do: accepting(true, "")},
				{what: "CHECK after", do: recv("CHECK " + a3 + "\r\n"), events: []string{"check 3 CHECK " + a3}},
			},
			counts: &Counters{Offered: 3, Deferred: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, tc) })
	}
}

func TestTakeThis(t *testing.T) {
	art1 := article(a1)
	n1 := len(art1)
	small := Config{PathHost: "relay.example", MaxArticleSize: 400}
	cases := []machineCase{
		{
			name: "accepted, duplicate, rejected by the owner (RFC 4644 §2.5)",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "MODE STREAM", do: recv("MODE STREAM\r\n"), out: "203 Streaming permitted\r\n"},
				{what: "TAKETHIS a1", do: recv(takethis(a1, art1)), events: []string{"article 2 TAKETHIS " + a1 + " " + itoa(n1)}},
				{what: "stored", do: stored(2, StoreAccepted, ""), out: "239 " + a1 + " Transferred\r\n"},
				{what: "TAKETHIS a2", do: recv(takethis(a2, article(a2))), events: []string{"article 3 TAKETHIS " + a2 + " " + itoa(n1)}},
				{what: "duplicate", do: stored(3, StoreDuplicate, ""), out: "439 " + a2 + " Duplicate\r\n"},
				{what: "TAKETHIS a3", do: recv(takethis(a3, article(a3))), events: []string{"article 4 TAKETHIS " + a3 + " " + itoa(n1)}},
				{what: "rejected by policy", do: stored(4, StoreRejected, "Unwanted newsgroup \"misc.test\"\r\nx"),
					out: "439 " + a3 + " Unwanted newsgroup \"misc.test\"??x\r\n"},
			},
			counts: &Counters{Offered: 3, Accepted: 1, Refused: 1, Rejected: [NumRejectKinds]int64{RejectOwner: 1}},
		},
		{
			name: "the article arrives dot-unstuffed in Data",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "TAKETHIS", do: recv(takethis(a1, art1)), events: []string{"article 1 TAKETHIS " + a1 + " " + itoa(n1)}},
			},
		},
		{
			name: "machine refusals: the block is read to its end, 439 with a reason",
			cfg:  small,
			steps: []step{greet,
				{what: "malformed id", do: recv(takethis("<bad>", article("<bad>"))), out: "439 <bad> Syntax error in message-ID\r\n",
					events: []string{`rejected TAKETHIS <bad> message-id: message-id "<bad>": no "@" between id-left and id-right`}},
				{what: "Message-ID field differs", do: recv(takethis(a1, article(a2))),
					out:    "439 " + a1 + " Message-ID " + a2 + " does not match the offered " + a1 + "\r\n",
					events: []string{"rejected TAKETHIS " + a1 + " mismatch: Message-ID " + a2 + " does not match the offered " + a1}},
				{what: "no From", do: recv(takethis(a1, article(a1, "-From"))), out: "439 " + a1 + " Missing From header\r\n",
					events: []string{"rejected TAKETHIS " + a1 + " invalid: Missing From header"}},
				{what: "no Message-ID", do: recv(takethis(a1, article(a1, "-Message-ID"))), out: "439 " + a1 + " Missing Message-ID header\r\n",
					events: []string{"rejected TAKETHIS " + a1 + " invalid: Missing Message-ID header"}},
				{what: "dated in the future", do: recv(takethis(a1, article(a1, "Date: Sun, 02 Jan 2000 12:00:00 +0000"))),
					out:    "439 " + a1 + " Dated in the future: Sun, 02 Jan 2000 12:00:00 +0000\r\n",
					events: []string{"rejected TAKETHIS " + a1 + " invalid: Dated in the future: Sun, 02 Jan 2000 12:00:00 +0000"}},
				{what: "a header line without colon", do: recv(takethis(a1, "Path: x\r\nnot a header\r\n\r\nbody\r\n")),
					out:    "439 " + a1 + " article header: line 2 \"not a header\" has no colon\r\n",
					events: []string{"rejected TAKETHIS " + a1 + " header: article header: line 2 \"not a header\" has no colon"}},
				{what: "over the size limit", do: recv(takethis(a1, article(a1, "body:"+strings.Repeat("0123456789\r\n", 40)))),
					out:    "439 " + a1 + " Article larger than 400 octets\r\n",
					events: []string{"rejected TAKETHIS " + a1 + " too-large: Article larger than 400 octets"}},
				{what: "Path loop: our name is in Path (RFC 5537 §3.3)", do: recv(takethis(a1, article(a1, "Path: peer.example!RELAY.example!not-for-mail"))),
					out:    "439 " + a1 + " Path loop: already holds relay.example\r\n",
					events: []string{"rejected TAKETHIS " + a1 + " path-loop: Path loop: already holds relay.example"}},
				{what: "an empty article", do: recv("TAKETHIS " + a1 + "\r\n.\r\n"), out: "439 " + a1 + " Missing From header\r\n",
					events: []string{"rejected TAKETHIS " + a1 + " invalid: Missing From header"}},
				{what: "last line ends in a bare LF", do: recv("TAKETHIS " + a1 + "\r\n" + block(strings.TrimSuffix(art1, "\r\n")+"\n")),
					out:    "439 " + a1 + " Article does not end with CRLF\r\n",
					events: []string{"rejected TAKETHIS " + a1 + " invalid: Article does not end with CRLF"}},
				{what: "still in step: a good one", do: recv(takethis(a1, art1)), events: []string{"article 11 TAKETHIS " + a1 + " " + itoa(n1)}},
			},
			counts: &Counters{Offered: 11, Rejected: [NumRejectKinds]int64{
				RejectMessageID: 1, RejectMismatch: 1, RejectInvalid: 5, RejectHeader: 1, RejectTooLarge: 1, RejectPathLoop: 1}},
		},
		{
			name: "TAKETHIS without an id: 501 at once, the block discarded",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "TAKETHIS alone", do: recv("TAKETHIS\r\n" + block(art1)), out: "501 Syntax error; usage: TAKETHIS message-id\r\n"},
				{what: "next command", do: recv("DATE\r\n"), out: "111 20000101000000\r\n"},
			},
			counts: &Counters{},
		},
		{
			name: "the relay cannot store now: 400 and close (no temporary failure for TAKETHIS)",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "two TAKETHIS and a CHECK", do: recv(takethis(a1, art1) + takethis(a2, article(a2)) + "CHECK " + a3 + "\r\n"),
					events: []string{"article 1 TAKETHIS " + a1 + " " + itoa(n1), "article 2 TAKETHIS " + a2 + " " + itoa(n1), "check 3 CHECK " + a3}},
				{what: "the second cannot be stored: held behind the first", do: stored(2, StoreLater, "Disk full")},
				{what: "the first is stored: 239, then 400, close", do: stored(1, StoreAccepted, ""),
					out: "239 " + a1 + " Transferred\r\n400 Disk full\r\n", events: []string{"closed cannot store: Disk full"}},
				{what: "late answers are ignored", do: decide(3, Want)},
			},
			closed: true,
			counts: &Counters{Offered: 3, Accepted: 1, Deferred: 1},
		},
		{
			name: "not accepting: TAKETHIS draws 400 and close, in order",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "disk full", do: accepting(false, "Disk full")},
				{what: "CHECK is deferred, TAKETHIS closes", do: recv("CHECK " + a1 + "\r\n" + takethis(a2, article(a2)) + "CHECK " + a3 + "\r\n"),
					out: "431 " + a1 + " Disk full\r\n400 Disk full\r\n", events: []string{"closed not accepting: Disk full"}},
			},
			closed: true,
			counts: &Counters{Offered: 2, Deferred: 2},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, tc) })
	}
}

func TestIHave(t *testing.T) {
	art1 := article(a1)
	n1 := itoa(len(art1))
	const send = "335 Send it; end with <CR-LF>.<CR-LF>\r\n"
	cases := []machineCase{
		{
			name: "full flow: 335, article, 235 (RFC 3977 §6.3.2)",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "IHAVE", do: recv("IHAVE " + a1 + "\r\n"), events: []string{"check 1 IHAVE " + a1}},
				{what: "an early article is held until the owner decides", do: recv(block(art1))},
				{what: "want: 335, and the held article is read", do: decide(1, Want), out: send,
					events: []string{"article 2 IHAVE " + a1 + " " + n1}},
				{what: "stored", do: stored(2, StoreAccepted, ""), out: "235 Article transferred OK\r\n"},
			},
			counts: &Counters{Offered: 1, Accepted: 1},
		},
		{
			name: "refused and deferred at offer: 435, 436",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "IHAVE a1", do: recv("IHAVE " + a1 + "\r\n"), events: []string{"check 1 IHAVE " + a1}},
				{what: "refuse", do: decide(1, Refuse), out: "435 Not wanted\r\n"},
				{what: "IHAVE a2", do: recv("IHAVE " + a2 + "\r\n"), events: []string{"check 2 IHAVE " + a2}},
				{what: "defer", do: decide(2, Defer), out: "436 Try again later\r\n"},
				{what: "bad id", do: recv("IHAVE <x>\r\n"), out: "435 Syntax error in message-ID\r\n",
					events: []string{`rejected IHAVE <x> message-id: message-id "<x>": no "@" between id-left and id-right`}},
			},
			counts: &Counters{Offered: 3, Refused: 1, Deferred: 1, Rejected: [NumRejectKinds]int64{RejectMessageID: 1}},
		},
		{
			name: "after the transfer: 436 try later, 437 rejected, 437 duplicate, 437 invalid",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "IHAVE a1", do: recv("IHAVE " + a1 + "\r\n"), events: []string{"check 1 IHAVE " + a1}},
				{what: "want", do: decide(1, Want), out: send},
				{what: "article", do: recv(block(art1)), events: []string{"article 2 IHAVE " + a1 + " " + n1}},
				{what: "cannot store now", do: stored(2, StoreLater, "Disk full"), out: "436 Disk full\r\n"},
				{what: "IHAVE a2", do: recv("IHAVE " + a2 + "\r\n"), events: []string{"check 3 IHAVE " + a2}},
				{what: "want", do: decide(3, Want), out: send},
				{what: "article", do: recv(block(article(a2))), events: []string{"article 4 IHAVE " + a2 + " " + n1}},
				{what: "rejected", do: stored(4, StoreRejected, "Unwanted newsgroup"), out: "437 Unwanted newsgroup\r\n"},
				{what: "IHAVE a3", do: recv("IHAVE " + a3 + "\r\n"), events: []string{"check 5 IHAVE " + a3}},
				{what: "want", do: decide(5, Want), out: send},
				{what: "article", do: recv(block(article(a3))), events: []string{"article 6 IHAVE " + a3 + " " + n1}},
				{what: "duplicate", do: stored(6, StoreDuplicate, ""), out: "437 Duplicate\r\n"},
				{what: "IHAVE a1 again", do: recv("IHAVE " + a1 + "\r\n"), events: []string{"check 7 IHAVE " + a1}},
				{what: "want", do: decide(7, Want), out: send},
				{what: "an article with another id", do: recv(block(article(a2))),
					out:    "437 Message-ID " + a2 + " does not match the offered " + a1 + "\r\n",
					events: []string{"rejected IHAVE " + a1 + " mismatch: Message-ID " + a2 + " does not match the offered " + a1}},
			},
			counts: &Counters{Offered: 4, Refused: 1, Deferred: 1, Rejected: [NumRejectKinds]int64{RejectOwner: 1, RejectMismatch: 1}},
		},
		{
			name: "not accepting: IHAVE draws 436",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "disk full", do: accepting(false, "")},
				{what: "IHAVE", do: recv("IHAVE " + a1 + "\r\n"), out: "436 Not accepting articles now\r\n"},
			},
			counts: &Counters{Offered: 1, Deferred: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, tc) })
	}
}

func TestBackPressure(t *testing.T) {
	cfg := Config{PathHost: "relay.example", MaxPending: 2, MaxBuffered: 100}
	h := runCase(t, machineCase{
		name: "window of two",
		cfg:  cfg,
		steps: []step{greet,
			{what: "four CHECKs: two are taken", do: recv("CHECK " + a1 + "\r\nCHECK " + a2 + "\r\nCHECK " + a3 + "\r\nDATE\r\n"),
				events: []string{"check 1 CHECK " + a1, "check 2 CHECK " + a2}},
		},
	})
	if !h.g.Paused() {
		t.Fatal("Paused() = false with a full window")
	}
	// Only the greeting's write deadline: the wait is the owner's.
	if d, ok := h.g.Deadline(); !ok || !d.Equal(t0.Add(DefaultWriteTimeout)) {
		t.Errorf("Deadline() = %v, %v while paused; want only the greeting's write deadline %v", d, ok, t0.Add(DefaultWriteTimeout))
	}
	if err := h.g.Decide(h.now, 2, Want); err != nil {
		t.Fatal(err)
	}
	if got := string(h.g.AppendOutgoing(nil)); got != "" {
		t.Errorf("output %q before the first CHECK is answered", got)
	}
	if got := events(h.g); got != nil || !h.g.Paused() {
		t.Errorf("an answer held behind an unanswered one still fills the window: events %q, Paused %v", got, h.g.Paused())
	}
	if err := h.g.Decide(h.now, 1, Want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("238 "+a1+" Send it\r\n238 "+a2+" Send it\r\n", string(h.g.AppendOutgoing(nil))); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"check 3 CHECK " + a3}, events(h.g)); diff != "" {
		t.Errorf("freed slots admit the next commands (-want +got):\n%s", diff)
	}
	if !h.g.Paused() {
		t.Error("not paused with CHECK a3 and DATE queued")
	}
	if err := h.g.Decide(h.now, 3, Want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("238 "+a3+" Send it\r\n111 20000101000000\r\n", string(h.g.AppendOutgoing(nil))); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}

	// A runtime that keeps reading while paused is stopped at MaxBuffered.
	h2 := &harness{g: New(t0, cfg), now: t0}
	h2.g.AppendOutgoing(nil)
	h2.g.Receive(t0, []byte("CHECK <b1@x>\r\nCHECK <b2@x>\r\n"))
	err := h2.g.Receive(t0, []byte(strings.Repeat("CHECK <b3@x>\r\n", 8)))
	if err == nil || !strings.Contains(err.Error(), "must stop reading while Paused") {
		t.Fatalf("Receive past MaxBuffered: error %v", err)
	}
	if diff := cmp.Diff("400 Input buffer overflow\r\n", string(h2.g.AppendOutgoing(nil))); diff != "" || !h2.g.Closed() {
		t.Errorf("overflow: closed %v, output (-want +got):\n%s", h2.g.Closed(), diff)
	}

	// IHAVE pauses until the owner decides.
	h3 := &harness{g: New(t0, cfg), now: t0}
	h3.g.Receive(t0, []byte("IHAVE <c@x>\r\n"))
	if !h3.g.Paused() {
		t.Error("not paused while IHAVE waits for the owner")
	}
}

func TestTimeouts(t *testing.T) {
	cases := []machineCase{
		{
			name: "idle: 10 minutes after the last byte either way",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "a command at +5m", do: tick(5 * time.Minute)},
				{what: "DATE", do: recv("DATE\r\n"), out: "111 20000101000500\r\n"},
				{what: "+9m59s: not yet", do: tick(9*time.Minute + 59*time.Second)},
				{what: "+10m", do: tick(time.Second), out: "400 Idle timeout\r\n", events: []string{"closed idle timeout"}},
			},
			closed: true,
		},
		{
			name: "a stalled article: 2 minutes",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "half an article", do: recv("TAKETHIS " + a1 + "\r\nPath: x\r\n")},
				{what: "+1m59s", do: tick(119 * time.Second)},
				{what: "+2m", do: tick(time.Second), out: "400 Transfer timeout\r\n", events: []string{"closed transfer timeout"}},
			},
			closed: true,
		},
		{
			name: "a stalled command line: 2 minutes",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "half a line", do: recv("CHEC")},
				{what: "+2m", do: tick(2 * time.Minute), out: "400 Transfer timeout\r\n", events: []string{"closed transfer timeout"}},
			},
			closed: true,
		},
		{
			name: "no deadline while the owner owes an answer",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "CHECK", do: recv("CHECK " + a1 + "\r\n"), events: []string{"check 1 CHECK " + a1}},
				{what: "an hour later", do: tick(time.Hour)},
				{what: "answered: the idle clock starts at the response", do: decide(1, Want), out: "238 " + a1 + " Send it\r\n"},
				{what: "+9m", do: tick(9 * time.Minute)},
				{what: "+10m", do: tick(time.Minute), out: "400 Idle timeout\r\n", events: []string{"closed idle timeout"}},
			},
			closed: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, tc) })
	}
}

func TestDeadlines(t *testing.T) {
	// A write timeout longer than the rest, so that the peer's deadlines
	// show; TestWriteTimeout covers it.
	cfg := testCfg
	cfg.WriteTimeout = time.Hour
	g := New(t0, cfg)
	wantDeadline := func(what string, want time.Time, ok bool) {
		t.Helper()
		got, gotOK := g.Deadline()
		if gotOK != ok || !got.Equal(want) {
			t.Errorf("%s: Deadline() = %v, %v; want %v, %v", what, got, gotOK, want, ok)
		}
	}
	wantDeadline("after the greeting", t0.Add(DefaultIdleTimeout), true)
	g.Receive(t0.Add(time.Minute), []byte("TAKE"))
	wantDeadline("partial line", t0.Add(time.Minute+DefaultTransferTimeout), true)
	g.Receive(t0.Add(2*time.Minute), []byte("THIS "+a1+"\r\nPath: x\r\n"))
	wantDeadline("in an article", t0.Add(2*time.Minute+DefaultTransferTimeout), true)
	g.Receive(t0.Add(3*time.Minute), []byte(".\r\n"))
	wantDeadline("an invalid article is answered at once", t0.Add(3*time.Minute+DefaultIdleTimeout), true)
	g.Receive(t0.Add(4*time.Minute), []byte("IHAVE "+a1+"\r\n"))
	wantDeadline("IHAVE waits for the owner: only the 437's write deadline", t0.Add(3*time.Minute+time.Hour), true)
	g.Timeout(t0.Add(time.Hour)) // a spurious call
	if g.Closed() {
		t.Fatal("Timeout without a deadline closed the machine")
	}
	g.Decide(t0.Add(5*time.Minute), 2, Want) // 1 was the TAKETHIS
	wantDeadline("335 sent: the transfer clock starts", t0.Add(5*time.Minute+DefaultTransferTimeout), true)
	g.Shutdown(t0.Add(6*time.Minute), "")
	wantDeadline("closed: only the write deadline of its last words", t0.Add(6*time.Minute+time.Hour), true)
	g.Timeout(t0.Add(6*time.Minute + time.Hour))
	wantDeadline("closed, output written", time.Time{}, false)
}

// TestWriteTimeout: output handed to the runtime must be written within
// WriteTimeout (the runtimes use Deadline as their write deadline and fail
// a write that outlasts it); a Timeout call at that deadline means it was
// written, and the peer's own deadlines apply again, so a feeder that stops
// reading cannot hold its connection and its reserved ids for ever.
func TestWriteTimeout(t *testing.T) {
	g := New(t0, testCfg)
	g.AppendOutgoing(nil)
	g.Receive(t0, []byte("CHECK "+a1+"\r\nCHECK "+a2+"\r\n"))
	events(g)
	g.Decide(t0.Add(time.Second), 1, Want)
	g.AppendOutgoing(nil)
	// CHECK a2 is still owed by the owner: no peer deadline, only the
	// write deadline of 238 a1.
	if d, ok := g.Deadline(); !ok || !d.Equal(t0.Add(time.Second+DefaultWriteTimeout)) {
		t.Fatalf("Deadline() = %v, %v; want the write deadline %v", d, ok, t0.Add(time.Second+DefaultWriteTimeout))
	}
	g.Timeout(t0.Add(time.Second + DefaultWriteTimeout))
	if g.Closed() {
		t.Fatal("Timeout at the write deadline closed the machine: the runtime calls it only once the output is written")
	}
	if d, ok := g.Deadline(); ok {
		t.Errorf("Deadline() = %v after the output was written, with the owner owing an answer; want none", d)
	}
}

// TestArticleTimeout: an article must arrive whole within ArticleTimeout
// plus a second per MinRate octets from its first octet, however often
// bytes trickle in, so a 1-byte-per-100-ms drip cannot keep a connection
// and its buffer for ever.
func TestArticleTimeout(t *testing.T) {
	cfg := Config{PathHost: "relay.example", ArticleTimeout: time.Minute, MinRate: 100, WriteTimeout: time.Hour}
	g := New(t0, cfg)
	g.AppendOutgoing(nil)
	now := t0
	g.Receive(now, []byte("TAKETHIS "+a1+"\r\n"))
	sent := 0
	for !g.Closed() && now.Before(t0.Add(time.Hour)) {
		now = now.Add(100 * time.Millisecond)
		g.Receive(now, []byte("x"))
		sent++
		g.Timeout(now)
	}
	// 1 + n/100 s >= ... : at 10 octets a second, 60 s plus a tenth of
	// the elapsed time: about 66.7 s.
	if !g.Closed() || now.Sub(t0) > 67*time.Second || now.Sub(t0) < 66*time.Second {
		t.Fatalf("closed %v after %v and %d octets; want closed after about 66.7s", g.Closed(), now.Sub(t0), sent)
	}
	if out := string(g.AppendOutgoing(nil)); !strings.HasPrefix(out, "400 Article transfer too slow") {
		t.Errorf("output %q, want 400 Article transfer too slow", out)
	}
}

// TestHold: the owner's hold pauses the machine until let go.
func TestHold(t *testing.T) {
	g := New(t0, testCfg)
	g.Receive(t0, []byte("TAKETHIS "+a1+"\r\nPath: x\r\n"))
	if g.Paused() {
		t.Fatal("paused before the hold")
	}
	if got := g.Buffered(); got != len("Path: x\r\n") {
		t.Errorf("Buffered() = %d, want %d", got, len("Path: x\r\n"))
	}
	g.SetHold(t0, true)
	if !g.Paused() {
		t.Error("not paused while held")
	}
	g.SetHold(t0, false)
	if g.Paused() {
		t.Error("still paused after the hold")
	}
}

func TestEOFAndShutdown(t *testing.T) {
	cases := []machineCase{
		{
			name: "EOF: owed responses still go out, then close",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "CHECK and half a command", do: recv("CHECK " + a1 + "\r\nCHE"), events: []string{"check 1 CHECK " + a1}},
				{what: "EOF", do: eof()},
				{what: "answered", do: decide(1, Want), out: "238 " + a1 + " Send it\r\n", events: []string{"closed peer closed the connection"}},
			},
			closed: true,
		},
		{
			name: "EOF with nothing owed closes at once",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "EOF", do: eof(), events: []string{"closed peer closed the connection"}},
			},
			closed: true,
		},
		{
			name: "Shutdown: answer what was asked, then 400",
			cfg:  testCfg,
			steps: []step{greet,
				{what: "CHECK and half an article", do: recv("CHECK " + a1 + "\r\nTAKETHIS " + a2 + "\r\nPath: x\r\n"), events: []string{"check 1 CHECK " + a1}},
				{what: "shutdown", do: shutdown("Shutting down for maintenance")},
				{what: "more input is dropped", do: recv("x\r\n.\r\nCHECK " + a3 + "\r\n")},
				{what: "answered", do: decide(1, Refuse), out: "438 " + a1 + " Not wanted\r\n400 Shutting down for maintenance\r\n",
					events: []string{"closed shutdown: Shutting down for maintenance"}},
			},
			closed: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, tc) })
	}
}

func TestOwnerErrors(t *testing.T) {
	g := New(t0, testCfg)
	g.Receive(t0, []byte("CHECK "+a1+"\r\n"+takethis(a2, article(a2))))
	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"unknown seq", func() error { return g.Decide(t0, 9, Want) }, "ingest: Decide(9): no Check with this sequence number awaits an answer"},
		{"seq 0", func() error { return g.Decide(t0, 0, Want) }, "ingest: Decide(0): no Check with this sequence number awaits an answer"},
		{"Decide on an Article", func() error { return g.Decide(t0, 2, Want) }, "ingest: Decide(2): no Check with this sequence number awaits an answer"},
		{"Stored on a Check", func() error { return g.Stored(t0, 1, Result{Outcome: StoreAccepted}) }, "ingest: Stored(1): no Article with this sequence number awaits an answer"},
		{"bad verdict", func() error { return g.Decide(t0, 1, 0) }, "ingest: Decide(1): unknown verdict 0"},
		{"bad outcome", func() error { return g.Stored(t0, 2, Result{}) }, "ingest: Stored(2): unknown outcome 0"},
		{"first answer", func() error { return g.Decide(t0, 1, Want) }, ""},
		{"second answer", func() error { return g.Decide(t0, 1, Want) }, "ingest: Decide(1): no Check with this sequence number awaits an answer"},
	}
	for _, tc := range cases {
		err := tc.call()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: error %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestArticleData(t *testing.T) {
	g := New(t0, testCfg)
	art := article(a1, "X-Dots: ..")
	g.Receive(t0, []byte(takethis(a1, art)))
	ev, _ := g.NextEvent()
	a, ok := ev.(Article)
	if !ok {
		t.Fatalf("event %v, want an Article", ev)
	}
	if diff := cmp.Diff(art, string(a.Data)); diff != "" {
		t.Errorf("Data is not the article dot-unstuffed (-want +got):\n%s", diff)
	}
	if got, want := string(a.Data[a.Body:]), "Hello.\r\n.a line that begins with a dot\r\n"; got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	if got := a.Header.Get("Subject"); got != "test article" {
		t.Errorf("Header Subject %q", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
