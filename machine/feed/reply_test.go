package feed

import (
	"testing"
)

// A context puts a fresh Feed where a reply is due and says what it has
// sent; the table then gives every response code in every context.
type replyContext struct {
	cfg   Config
	setup func(h *harness)
}

const a, b = "<a@x>", "<b@x>"

var contexts = map[string]replyContext{
	// CHECK <a> and CHECK <b> outstanding; the reply answers CHECK <a>.
	"CHECK": {cfg: Config{Streaming: true, User: "u", Pass: "p"}, setup: func(h *harness) {
		h.offer(a, b)
		h.wantSend("two CHECKs", "CHECK <a@x>\r\nCHECK <b@x>\r\n")
	}},
	// CHECK without credentials, for 480.
	"CHECK, no credentials": {cfg: Config{Streaming: true}, setup: func(h *harness) {
		h.offer(a, b)
		h.wantSend("two CHECKs", "CHECK <a@x>\r\nCHECK <b@x>\r\n")
	}},
	// TAKETHIS <a> outstanding after 238; <b> is queued behind a window of 1.
	"TAKETHIS": {cfg: Config{Streaming: true, Window: 1, User: "u", Pass: "p"}, setup: func(h *harness) {
		h.offer(a, b)
		h.wantSend("one CHECK: window 1", "CHECK <a@x>\r\n")
		h.mustRecv("238 <a@x>")
		h.wantSend("TAKETHIS replaces the CHECK", takethis(a))
	}},
	// TAKETHIS <b> sent without CHECK: the first 238 switched the mode.
	"TAKETHIS no-CHECK": {cfg: Config{Streaming: true, NoCheckHigh: 50, NoCheckLow: 40, NoCheckFilter: 1}, setup: func(h *harness) {
		h.offer(a)
		h.mustRecv("238 <a@x>", "239 <a@x>")
		h.offer(b)
		h.wantSend("CHECK, TAKETHIS, then TAKETHIS only", "CHECK <a@x>\r\n"+takethis(a)+takethis(b))
	}},
	// IHAVE <a> outstanding, <b> queued.
	"IHAVE": {cfg: Config{User: "u", Pass: "p"}, setup: func(h *harness) {
		h.offer(a, b)
		h.wantSend("one IHAVE at a time", "IHAVE <a@x>\r\n")
	}},
	// The article of IHAVE <a> sent after 335.
	"IHAVE article": {cfg: Config{User: "u", Pass: "p"}, setup: func(h *harness) {
		h.offer(a, b)
		h.mustRecv("335 send it")
		h.wantSend("IHAVE, then the article", "IHAVE <a@x>\r\n"+body(a))
	}},
	// Nothing sent.
	"nothing": {cfg: Config{Streaming: true}, setup: func(h *harness) {}},
}

func TestReplies(t *testing.T) {
	A, B := art(a), art(b)
	tests := []struct {
		context string
		reply   string
		wantOut string
		want    []Event
		wantErr bool
	}{
		// RFC 4644 §2.4: CHECK.
		{"CHECK", "238 <a@x>", takethis(a), nil, false},
		{"CHECK", "238 <a@x> send it", takethis(a), nil, false},
		{"CHECK", "431 <a@x>", "", []Event{Deferred{A, 431}, WantMore{1}}, false},
		{"CHECK", "438 <a@x>", "", []Event{Refused{A}, WantMore{1}}, false},
		{"CHECK", "400 going down", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonUnavailable, "400 going down"}}, false},
		{"CHECK", "403 internal fault", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonUnavailable, "403 internal fault"}}, false},
		{"CHECK", "480 auth", "", nil, false}, // drains: CHECK <b> still due
		{"CHECK, no credentials", "480 auth", "", []Event{Requeue{[]Article{A, B}},
			Closed{ReasonAuth, "480 auth to CHECK <a@x>: no credentials configured"}}, false},
		{"CHECK", "500 what", "", nil, false}, // drains, then falls back
		{"CHECK", "501 syntax", "", nil, false},
		{"CHECK", "502 go away", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonDenied, "502 go away"}}, false},
		{"CHECK", "239 <a@x>", "", []Event{Requeue{[]Article{A, B}},
			Closed{ReasonProtocol, `response "239 <a@x>" to CHECK`}}, true},
		{"CHECK", "238 <b@x>", "", []Event{Requeue{[]Article{A, B}},
			Closed{ReasonProtocol, `response "238 <b@x>" to CHECK <a@x>: message-id mismatch`}}, true},
		{"CHECK", "238", "", []Event{Requeue{[]Article{A, B}},
			Closed{ReasonProtocol, `response "238" to CHECK <a@x>: message-id mismatch`}}, true},
		{"CHECK", "hello", "", []Event{Requeue{[]Article{A, B}},
			Closed{ReasonProtocol, `nntp: malformed response "hello": status code is not three digits`}}, true},

		// RFC 4644 §2.5: TAKETHIS.
		{"TAKETHIS", "239 <a@x>", "CHECK <b@x>\r\n", []Event{acc(A)}, false}, // holds <b>: window full
		{"TAKETHIS", "439 <a@x> bad", "CHECK <b@x>\r\n", []Event{Rejected{A, 439, "<a@x> bad"}}, false},
		{"TAKETHIS", "431 <a@x>", "CHECK <b@x>\r\n", []Event{
			Warning{A, "431 <a@x>", "431 to TAKETHIS is not allowed by RFC 4644 §2.5; treated as a reject"},
			Rejected{A, 431, "<a@x>"}}, false},
		{"TAKETHIS", "438 <a@x>", "CHECK <b@x>\r\n", []Event{
			Warning{A, "438 <a@x>", "438 to TAKETHIS is not allowed by RFC 4644 §2.5; treated as a reject"},
			Rejected{A, 438, "<a@x>"}}, false},
		{"TAKETHIS", "400 bye", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonUnavailable, "400 bye"}}, false},
		{"TAKETHIS", "480 auth", "AUTHINFO USER u\r\n", nil, false},
		{"TAKETHIS", "500 what", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonNoStreaming, "500 what to TAKETHIS <a@x>"}}, false},
		{"TAKETHIS", "238 <a@x>", "", []Event{Requeue{[]Article{A, B}},
			Closed{ReasonProtocol, `response "238 <a@x>" to TAKETHIS`}}, true},
		{"TAKETHIS", "239 <b@x>", "", []Event{Requeue{[]Article{A, B}},
			Closed{ReasonProtocol, `response "239 <b@x>" to TAKETHIS <a@x>: message-id mismatch`}}, true},
		{"TAKETHIS", "2", "", []Event{Requeue{[]Article{A, B}},
			Closed{ReasonProtocol, `nntp: malformed response "2": shorter than a status code`}}, true},
		// Without CHECK, answers feed the filter: 439 with a filter of one
		// article drops it to 0% < 40%.
		{"TAKETHIS no-CHECK", "239 <b@x>", "", []Event{acc(B), WantMore{1}}, false},
		{"TAKETHIS no-CHECK", "439 <b@x>", "", []Event{
			ModeChanged{ModeTakeThis, ModeCheck, 0, "wanted 0.0% < no-check-low 40.0%"},
			Rejected{B, 439, "<b@x>"}, WantMore{1}}, false},

		// RFC 3977 §6.3.2: IHAVE.
		{"IHAVE", "335 send it", body(a), nil, false},
		{"IHAVE", "435 no thanks", "IHAVE <b@x>\r\n", []Event{Refused{A}, WantMore{1}}, false},
		{"IHAVE", "436 later", "IHAVE <b@x>\r\n", []Event{Deferred{A, 436}, WantMore{1}}, false},
		{"IHAVE", "437 rejected", "IHAVE <b@x>\r\n", []Event{Rejected{A, 437, "rejected"}, WantMore{1}}, false},
		{"IHAVE", "400 bye", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonUnavailable, "400 bye"}}, false},
		{"IHAVE", "480 auth", "AUTHINFO USER u\r\n", nil, false},
		{"IHAVE", "500 what", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonNoTransfer, "500 what to IHAVE <a@x>"}}, false},
		{"IHAVE", "502 no", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonDenied, "502 no"}}, false},
		{"IHAVE", "235 ok", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonProtocol, `response "235 ok" to IHAVE`}}, true},
		{"IHAVE", "238 <a@x>", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonProtocol, `response "238 <a@x>" to IHAVE`}}, true},
		{"IHAVE article", "235 ok", "IHAVE <b@x>\r\n", []Event{acc(A), WantMore{1}}, false},
		{"IHAVE article", "436 failed", "IHAVE <b@x>\r\n", []Event{Deferred{A, 436}, WantMore{1}}, false},
		{"IHAVE article", "437 no", "IHAVE <b@x>\r\n", []Event{Rejected{A, 437, "no"}, WantMore{1}}, false},
		{"IHAVE article", "400 bye", "", []Event{Requeue{[]Article{A, B}}, Closed{ReasonUnavailable, "400 bye"}}, false},
		{"IHAVE article", "480 auth", "AUTHINFO USER u\r\n", nil, false},
		{"IHAVE article", "335 again", "", []Event{Requeue{[]Article{A, B}},
			Closed{ReasonProtocol, `response "335 again" to IHAVE article`}}, true},

		// Nothing outstanding.
		{"nothing", "400 shutting down", "", []Event{Closed{ReasonUnavailable, "400 shutting down"}}, false},
		{"nothing", "200 hello", "", []Event{Closed{ReasonProtocol, `response "200 hello" to nothing`}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.context+"/"+tc.reply, func(t *testing.T) {
			c, ok := contexts[tc.context]
			if !ok {
				t.Fatalf("no context %q", tc.context)
			}
			h := newHarness(t, c.cfg)
			c.setup(h)
			h.events()
			err := h.recv(tc.reply)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Receive(%q) = %v, want error %v", tc.reply, err, tc.wantErr)
			}
			h.wantSend("after the reply", tc.wantOut)
			h.wantEvents("after the reply", tc.want...)
			closed := false
			for _, e := range tc.want {
				if _, ok := e.(Closed); ok {
					closed = true
				}
			}
			if h.f.Closed() != closed {
				t.Errorf("Closed() = %v, want %v", h.f.Closed(), closed)
			}
		})
	}
}

// TestLookupCoversEveryCommand: the table answers every code for every
// command, and only the rows of RFC 4644 responses check the message-id.
func TestLookupCoversEveryCommand(t *testing.T) {
	for c := cmdNone; c <= cmdIHaveBody; c++ {
		for code := codeGarbage; code < 600; code++ {
			r := lookup(c, code)
			if r.act == 0 {
				t.Fatalf("lookup(%s, %d) has no action", c, code)
			}
			want := (c == cmdCheck || c == cmdTakeThis) && (code == 238 || code == 239 || code == 431 || code == 438 || code == 439) &&
				r.act != actUnexpected
			if r.id != want {
				t.Errorf("lookup(%s, %d).id = %v, want %v", c, code, r.id, want)
			}
		}
	}
}
