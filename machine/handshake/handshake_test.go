package handshake

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
)

var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	transitCaps = "101 Capability list:\r\nVERSION 2\r\nIMPLEMENTATION INN 2.7.1\r\nIHAVE\r\nMODE-READER\r\nSTREAMING\r\n.\r\n"
	readerCaps  = "101 Capability list:\r\nVERSION 2\r\nREADER\r\nPOST\r\nAUTHINFO USER\r\nLIST ACTIVE NEWSGROUPS\r\n.\r\n"
	authCaps    = "101 Capability list:\r\nVERSION 2\r\nREADER\r\nAUTHINFO USER\r\n.\r\n"
	tlsCaps     = "101 Capability list:\r\nVERSION 2\r\nREADER\r\nSTARTTLS\r\n.\r\n"
	plainCaps   = "101 Capability list:\r\nVERSION 2\r\nREADER\r\n.\r\n"
)

var (
	transitList = capSet("VERSION 2", "IMPLEMENTATION INN 2.7.1", "IHAVE", "MODE-READER", "STREAMING")
	readerList  = capSet("VERSION 2", "READER", "POST", "AUTHINFO USER", "LIST ACTIVE NEWSGROUPS")
	plainList   = capSet("VERSION 2", "READER")
)

// capSet parses a capability list for expectations.
func capSet(lines ...string) proto.CapabilitySet {
	c, err := proto.ParseCapabilities(lines)
	if err != nil {
		panic(err)
	}
	return c
}

func resp(code int, text string) proto.Response { return proto.Response{Code: code, Text: text} }

// hsCase drives a Handshake with everything the server says, fed at once
// (the machine must take the lines one by one), optionally a TLS
// handshake, and what the server says after it.
type hsCase struct {
	name       string
	cfg        Config
	server     string
	tls        error  // with afterTLS or tlsUsed: the TLS outcome
	tlsUsed    bool   // call TLSDone after server
	afterTLS   string // server bytes after TLSDone
	wantOut    string
	want       []Event
	wantClosed bool
	wantErr    string // substring of the error Receive returns
}

type hsResult struct {
	Out    string
	Events []Event
	Closed bool
	Err    string
}

// feed gives p to h cut into pieces by cuts (offsets), stopping at the first error.
func feed(h *Handshake, now time.Time, p string, cuts []int) (string, error) {
	var out []byte
	prev := 0
	for _, c := range append(cuts, len(p)) {
		if c <= prev || c > len(p) {
			continue
		}
		if err := h.Receive(now, []byte(p[prev:c])); err != nil {
			return string(h.AppendOutgoing(out)), err
		}
		out = h.AppendOutgoing(out)
		prev = c
	}
	return string(out), nil
}

func runCase(tc hsCase, cuts []int) hsResult {
	h := New(t0, tc.cfg)
	var r hsResult
	out, err := feed(h, t0, tc.server, cuts)
	r.Out = out
	if err == nil && (tc.tlsUsed || tc.afterTLS != "") {
		if !h.WantTLS() {
			r.Err = "machine did not ask for TLS"
		} else if terr := h.TLSDone(t0, tc.tls); terr != nil {
			r.Err = terr.Error()
		} else {
			r.Out += string(h.AppendOutgoing(nil))
			out, err = feed(h, t0, tc.afterTLS, nil)
			r.Out += out
		}
	}
	if err != nil {
		r.Err = err.Error()
	}
	for {
		e, ok := h.NextEvent()
		if !ok {
			break
		}
		r.Events = append(r.Events, e)
	}
	r.Closed = h.Closed()
	return r
}

func checkCase(t *testing.T, tc hsCase, got hsResult, how string) {
	t.Helper()
	want := hsResult{Out: tc.wantOut, Events: tc.want, Closed: tc.wantClosed}
	if tc.wantErr != "" {
		if !strings.Contains(got.Err, tc.wantErr) {
			t.Errorf("%s: Receive error %q, want one containing %q", how, got.Err, tc.wantErr)
		}
		got.Err = ""
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", how, d)
	}
}

var handshakeCases = []hsCase{
	{
		name:    "200 greeting, transit capabilities, nothing wanted",
		server:  "200 news.example ready (transit mode)\r\n" + transitCaps,
		wantOut: "CAPABILITIES\r\n",
		want: []Event{Ready{Greeting: resp(200, "news.example ready (transit mode)"),
			Capabilities: transitList}},
	},
	{
		name:    "201 greeting, reader advertised: no MODE READER",
		cfg:     Config{Reader: true},
		server:  "201 no posting\r\n" + plainCaps,
		wantOut: "CAPABILITIES\r\n",
		want:    []Event{Ready{Greeting: resp(201, "no posting"), Capabilities: plainList, Reader: true}},
	},
	{
		name:    "POST capability decides posting, not the greeting",
		cfg:     Config{Reader: true},
		server:  "201 no posting\r\n" + readerCaps,
		wantOut: "CAPABILITIES\r\n",
		want:    []Event{Ready{Greeting: resp(201, "no posting"), Capabilities: readerList, Reader: true, Posting: true}},
	},
	{
		name:       "400 greeting",
		server:     "400 too many connections, try later\r\n",
		want:       []Event{Failed{State: StateGreeting, Reason: ReasonUnavailable, Response: resp(400, "too many connections, try later")}},
		wantClosed: true,
	},
	{
		name:       "502 greeting",
		server:     "502 you have no permission to talk\r\n",
		want:       []Event{Failed{State: StateGreeting, Reason: ReasonUnavailable, Response: resp(502, "you have no permission to talk")}},
		wantClosed: true,
	},
	{
		name:       "garbage greeting",
		server:     "HTTP/1.0 400 Bad Request\r\n",
		want:       []Event{Failed{State: StateGreeting, Reason: ReasonProtocol, Detail: `nntp: malformed response "HTTP/1.0 400 Bad Request": status code is not three digits`}},
		wantClosed: true,
		wantErr:    "status code is not three digits",
	},
	{
		name:       "unexpected greeting code",
		server:     "211 hello\r\n",
		wantOut:    "QUIT\r\n",
		want:       []Event{Failed{State: StateGreeting, Reason: ReasonUnexpected, Response: resp(211, "hello")}},
		wantClosed: true,
	},
	{
		name:       "overlong line",
		server:     "200 " + strings.Repeat("x", proto.DefaultMaxStatusLine),
		want:       []Event{Failed{State: StateGreeting, Reason: ReasonProtocol, Detail: "line of more than 2048 octets: nntp: line too long"}},
		wantClosed: true,
		wantErr:    "line too long",
	},
	{
		name:    "no CAPABILITIES (500): RFC 977 server, MODE READER directly",
		cfg:     Config{Reader: true},
		server:  "200 old server\r\n500 What?\r\n200 reader mode\r\n",
		wantOut: "CAPABILITIES\r\nMODE READER\r\n",
		want:    []Event{Ready{Greeting: resp(200, "reader mode"), Legacy: true, Posting: true, Reader: true}},
	},
	{
		name:    "no CAPABILITIES (garbage answer): MODE STREAM directly",
		cfg:     Config{Stream: true},
		server:  "200 old server\r\nCommand not understood\r\n203 StreamOK\r\n",
		wantOut: "CAPABILITIES\r\nMODE STREAM\r\n",
		want:    []Event{Ready{Greeting: resp(200, "old server"), Legacy: true, Posting: true, Streaming: true}},
	},
	{
		name:    "legacy server without AUTHINFO: go on unauthenticated",
		cfg:     Config{User: "alice", Pass: "pw"},
		server:  "201 old\r\n501 no\r\n500 AUTHINFO?\r\n",
		wantOut: "CAPABILITIES\r\nAUTHINFO USER alice\r\n",
		want:    []Event{Ready{Greeting: resp(201, "old"), Legacy: true}},
	},
	{
		name:    "INN mode switch: MODE READER, then CAPABILITIES again",
		cfg:     Config{Reader: true},
		server:  "200 innd ready (transit mode)\r\n" + transitCaps + "200 nnrpd ready (posting ok)\r\n" + readerCaps,
		wantOut: "CAPABILITIES\r\nMODE READER\r\nCAPABILITIES\r\n",
		want: []Event{Ready{Greeting: resp(200, "nnrpd ready (posting ok)"), Capabilities: readerList,
			Reader: true, Posting: true}},
	},
	{
		name:       "MODE READER refused (502)",
		cfg:        Config{Reader: true},
		server:     "200 innd\r\n" + transitCaps + "502 no reading here\r\n",
		wantOut:    "CAPABILITIES\r\nMODE READER\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateModeReader, Reason: ReasonNoReader, Response: resp(502, "no reading here")}},
		wantClosed: true,
	},
	{
		name:    "MODE READER 480: authenticate, then MODE READER again",
		cfg:     Config{Reader: true, User: "alice", Pass: "pw"},
		server:  "200 hi\r\n" + transitCaps + "480 auth first\r\n381 pass\r\n281 ok\r\n" + transitCaps + "201 reader\r\n" + plainCaps,
		wantOut: "CAPABILITIES\r\nMODE READER\r\nAUTHINFO USER alice\r\nAUTHINFO PASS pw\r\nCAPABILITIES\r\nMODE READER\r\nCAPABILITIES\r\n",
		want:    []Event{Ready{Greeting: resp(201, "reader"), Capabilities: plainList, Reader: true, Authenticated: true}},
	},
	{
		name:    "MODE STREAM 203",
		cfg:     Config{Stream: true},
		server:  "200 innd\r\n" + transitCaps + "203 StreamOK.\r\n",
		wantOut: "CAPABILITIES\r\nMODE STREAM\r\n",
		want:    []Event{Ready{Greeting: resp(200, "innd"), Capabilities: transitList, Streaming: true}},
	},
	{
		name:    "MODE STREAM 500: no streaming, IHAVE",
		cfg:     Config{Stream: true},
		server:  "200 innd\r\n" + transitCaps + "500 unknown MODE variant\r\n",
		wantOut: "CAPABILITIES\r\nMODE STREAM\r\n",
		want:    []Event{Ready{Greeting: resp(200, "innd"), Capabilities: transitList}},
	},
	{
		name:    "STREAMING not advertised: MODE STREAM not sent",
		cfg:     Config{Stream: true},
		server:  "200 hi\r\n" + plainCaps,
		wantOut: "CAPABILITIES\r\n",
		want:    []Event{Ready{Greeting: resp(200, "hi"), Capabilities: plainList, Reader: true}},
	},
	{
		name:    "AUTHINFO: 281 directly after USER",
		cfg:     Config{User: "alice", Pass: "pw"},
		server:  "200 hi\r\n" + authCaps + "281 welcome\r\n" + plainCaps,
		wantOut: "CAPABILITIES\r\nAUTHINFO USER alice\r\nCAPABILITIES\r\n",
		want:    []Event{Ready{Greeting: resp(200, "hi"), Capabilities: plainList, Reader: true, Authenticated: true}},
	},
	{
		name:    "AUTHINFO: 381 then 281",
		cfg:     Config{User: "alice", Pass: "pw"},
		server:  "200 hi\r\n" + authCaps + "381 password please\r\n281 welcome\r\n" + plainCaps,
		wantOut: "CAPABILITIES\r\nAUTHINFO USER alice\r\nAUTHINFO PASS pw\r\nCAPABILITIES\r\n",
		want:    []Event{Ready{Greeting: resp(200, "hi"), Capabilities: plainList, Reader: true, Authenticated: true}},
	},
	{
		name:       "AUTHINFO: 481 rejected",
		cfg:        Config{User: "alice", Pass: "bad"},
		server:     "200 hi\r\n" + authCaps + "381 pw\r\n481 no\r\n",
		wantOut:    "CAPABILITIES\r\nAUTHINFO USER alice\r\nAUTHINFO PASS bad\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateAuth, Reason: ReasonAuthRejected, Response: resp(481, "no")}},
		wantClosed: true,
	},
	{
		name:       "AUTHINFO: 482 out of sequence",
		cfg:        Config{User: "alice", Pass: "pw"},
		server:     "200 hi\r\n" + authCaps + "482 sequence\r\n",
		wantOut:    "CAPABILITIES\r\nAUTHINFO USER alice\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateAuth, Reason: ReasonAuthSequence, Response: resp(482, "sequence")}},
		wantClosed: true,
	},
	{
		name:       "AUTHINFO: 502 refused",
		cfg:        Config{User: "alice", Pass: "pw"},
		server:     "200 hi\r\n" + authCaps + "381 pw\r\n502 not now\r\n",
		wantOut:    "CAPABILITIES\r\nAUTHINFO USER alice\r\nAUTHINFO PASS pw\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateAuth, Reason: ReasonAuthRefused, Response: resp(502, "not now")}},
		wantClosed: true,
	},
	{
		name:       "AUTHINFO: 483 and TLS off",
		cfg:        Config{User: "alice", Pass: "pw"},
		server:     "200 hi\r\n" + authCaps + "483 encryption required\r\n",
		wantOut:    "CAPABILITIES\r\nAUTHINFO USER alice\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateAuth, Reason: ReasonEncryptionRequired, Response: resp(483, "encryption required")}},
		wantClosed: true,
	},
	{
		name:    "credentials but no AUTHINFO USER advertised: no AUTHINFO",
		cfg:     Config{User: "alice", Pass: "pw"},
		server:  "200 hi\r\n" + plainCaps,
		wantOut: "CAPABILITIES\r\n",
		want:    []Event{Ready{Greeting: resp(200, "hi"), Capabilities: plainList, Reader: true}},
	},
	{
		name:    "CAPABILITIES 480: authenticate, then ask again",
		cfg:     Config{User: "alice", Pass: "pw"},
		server:  "200 hi\r\n480 login first\r\n281 ok\r\n" + plainCaps,
		wantOut: "CAPABILITIES\r\nAUTHINFO USER alice\r\nCAPABILITIES\r\n",
		want:    []Event{Ready{Greeting: resp(200, "hi"), Capabilities: plainList, Reader: true, Authenticated: true}},
	},
	{
		name:       "CAPABILITIES 480 without credentials",
		server:     "200 hi\r\n480 login first\r\n",
		wantOut:    "CAPABILITIES\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateCapabilities, Reason: ReasonAuthRequired, Response: resp(480, "login first")}},
		wantClosed: true,
	},
	{
		name:       "480 again after authenticating",
		cfg:        Config{User: "alice", Pass: "pw"},
		server:     "200 hi\r\n480 login first\r\n281 ok\r\n480 still no\r\n",
		wantOut:    "CAPABILITIES\r\nAUTHINFO USER alice\r\nCAPABILITIES\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateCapabilities, Reason: ReasonAuthRequired, Response: resp(480, "still no")}},
		wantClosed: true,
	},
	{
		name:       "user name with a space cannot be sent",
		cfg:        Config{User: "alice smith", Pass: "pw"},
		server:     "200 hi\r\n" + authCaps,
		wantOut:    "CAPABILITIES\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateCapabilityList, Reason: ReasonConfig, Detail: `handshake: auth: user name: nntp: AUTHINFO: argument "alice smith" holds whitespace, CR, LF or NUL`}},
		wantClosed: true,
	},
	{
		name:       "TLS required, not offered",
		cfg:        Config{TLS: TLSRequired},
		server:     "200 hi\r\n" + plainCaps,
		wantOut:    "CAPABILITIES\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateCapabilityList, Reason: ReasonTLSUnavailable, Detail: "the server does not offer STARTTLS"}},
		wantClosed: true,
	},
	{
		name:    "TLS if offered, not offered: plaintext",
		cfg:     Config{TLS: TLSIfOffered},
		server:  "200 hi\r\n" + plainCaps,
		wantOut: "CAPABILITIES\r\n",
		want:    []Event{Ready{Greeting: resp(200, "hi"), Capabilities: plainList, Reader: true}},
	},
	{
		name:       "STARTTLS refused (580), TLS required",
		cfg:        Config{TLS: TLSRequired},
		server:     "200 hi\r\n" + tlsCaps + "580 can not initiate TLS\r\n",
		wantOut:    "CAPABILITIES\r\nSTARTTLS\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateStartTLS, Reason: ReasonTLSUnavailable, Response: resp(580, "can not initiate TLS")}},
		wantClosed: true,
	},
	{
		name:    "STARTTLS refused (502), TLS optional: plaintext",
		cfg:     Config{TLS: TLSIfOffered},
		server:  "200 hi\r\n" + tlsCaps + "502 no\r\n",
		wantOut: "CAPABILITIES\r\nSTARTTLS\r\n",
		want: []Event{Ready{Greeting: resp(200, "hi"), Capabilities: capSet("VERSION 2", "READER", "STARTTLS"),
			Reader: true}},
	},
	{
		name:     "STARTTLS, then CAPABILITIES again and AUTHINFO inside TLS",
		cfg:      Config{TLS: TLSIfOffered, User: "alice", Pass: "pw"},
		server:   "200 hi\r\n" + tlsCaps + "382 go ahead\r\n",
		tlsUsed:  true,
		afterTLS: authCaps + "281 ok\r\n" + plainCaps,
		wantOut:  "CAPABILITIES\r\nSTARTTLS\r\nCAPABILITIES\r\nAUTHINFO USER alice\r\nCAPABILITIES\r\n",
		want: []Event{Ready{Greeting: resp(200, "hi"), Capabilities: plainList, Reader: true,
			Authenticated: true, TLS: true}},
	},
	{
		name:       "TLS handshake failed",
		cfg:        Config{TLS: TLSRequired},
		server:     "200 hi\r\n" + tlsCaps + "382 go ahead\r\n",
		tlsUsed:    true,
		tls:        errors.New("x509: certificate signed by unknown authority"),
		wantOut:    "CAPABILITIES\r\nSTARTTLS\r\n",
		want:       []Event{Failed{State: StateTLS, Reason: ReasonTLSFailed, Detail: "x509: certificate signed by unknown authority"}},
		wantClosed: true,
	},
	{
		name:       "plaintext after 382 is refused (STARTTLS injection)",
		cfg:        Config{TLS: TLSRequired},
		server:     "200 hi\r\n" + tlsCaps + "382 go ahead\r\n101 Capability list:\r\n",
		wantOut:    "CAPABILITIES\r\nSTARTTLS\r\n",
		want:       []Event{Failed{State: StateTLS, Reason: ReasonProtocol, Detail: "data received between 382 and the TLS handshake"}},
		wantClosed: true,
		wantErr:    "between 382 and the TLS handshake",
	},
	{
		name:     "AUTHINFO 483: STARTTLS first, then AUTHINFO again",
		cfg:      Config{TLS: TLSIfOffered, User: "alice", Pass: "pw"},
		server:   "200 hi\r\n" + authCaps + "483 TLS first\r\n382 go\r\n",
		tlsUsed:  true,
		afterTLS: authCaps + "381 pw\r\n281 ok\r\n" + plainCaps,
		wantOut:  "CAPABILITIES\r\nAUTHINFO USER alice\r\nSTARTTLS\r\nCAPABILITIES\r\nAUTHINFO USER alice\r\nAUTHINFO PASS pw\r\nCAPABILITIES\r\n",
		want: []Event{Ready{Greeting: resp(200, "hi"), Capabilities: plainList, Reader: true,
			Authenticated: true, TLS: true}},
	},
	{
		name:       "400 in the middle: no QUIT",
		cfg:        Config{Reader: true},
		server:     "200 hi\r\n" + transitCaps + "400 shutting down\r\n",
		wantOut:    "CAPABILITIES\r\nMODE READER\r\n",
		want:       []Event{Failed{State: StateModeReader, Reason: ReasonUnavailable, Response: resp(400, "shutting down")}},
		wantClosed: true,
	},
	{
		name:       "unexpected answer to MODE READER",
		cfg:        Config{Reader: true},
		server:     "200 hi\r\n" + transitCaps + "211 1 1 1 misc.test\r\n",
		wantOut:    "CAPABILITIES\r\nMODE READER\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateModeReader, Reason: ReasonUnexpected, Response: resp(211, "1 1 1 misc.test")}},
		wantClosed: true,
	},
	{
		name:    "dot-stuffed and invalid capability lines are skipped; bare LF endings",
		server:  "200 hi\n101 caps\n..ODD\nVERSION 2\n9LIVES\nX-OK arg\n.\n",
		wantOut: "CAPABILITIES\r\n",
		want:    []Event{Ready{Greeting: resp(200, "hi"), Capabilities: capSet("VERSION 2", "X-OK arg")}},
	},
}

// TestHandshake feeds each case whole, at every byte boundary, and byte by
// byte: the machine's output and events must not depend on the split.
func TestHandshake(t *testing.T) {
	for _, tc := range handshakeCases {
		t.Run(tc.name, func(t *testing.T) {
			checkCase(t, tc, runCase(tc, nil), "whole")
			for i := 1; i < len(tc.server); i++ {
				checkCase(t, tc, runCase(tc, []int{i}), fmt.Sprintf("cut at %d", i))
			}
			var every []int
			for i := 1; i < len(tc.server); i++ {
				every = append(every, i)
			}
			checkCase(t, tc, runCase(tc, every), "byte by byte")
		})
	}
}

// TestHandshakeTimeouts reaches each waiting state, then lets its deadline
// pass: an early Timeout is a no-op, one at the deadline fails naming the state.
func TestHandshakeTimeouts(t *testing.T) {
	cfg := Config{Reader: true, Stream: true, User: "alice", Pass: "pw", TLS: TLSIfOffered, StepTimeout: 10 * time.Second}
	tests := []struct {
		state  State
		server string
		tls    bool
	}{
		{StateGreeting, "", false},
		{StateCapabilities, "200 hi\r\n", false},
		{StateCapabilityList, "200 hi\r\n101 caps\r\nVERSION 2\r\n", false},
		{StateModeReader, "200 hi\r\n" + transitCaps, false},
		{StateStartTLS, "200 hi\r\n" + tlsCaps, false},
		{StateTLS, "200 hi\r\n" + tlsCaps + "382 go\r\n", false},
		{StateAuth, "200 hi\r\n" + authCaps, false},
		{StateAuth, "200 hi\r\n" + authCaps + "381 pw\r\n", false},
		{StateModeStream, "200 hi\r\n" + tlsCaps + "382 go\r\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.state.String(), func(t *testing.T) {
			h := New(t0, cfg)
			now := t0.Add(time.Second)
			if _, err := feed(h, now, tc.server, nil); err != nil {
				t.Fatal(err)
			}
			if tc.tls {
				// After TLS: capabilities with STREAMING only, so the next
				// command is MODE STREAM.
				if err := h.TLSDone(now, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := feed(h, now, "101 caps\r\nSTREAMING\r\nREADER\r\n.\r\n", nil); err != nil {
					t.Fatal(err)
				}
			}
			if h.State() != tc.state {
				t.Fatalf("reached state %s, want %s", h.State(), tc.state)
			}
			h.AppendOutgoing(nil)
			deadline, ok := h.Deadline()
			want := now.Add(cfg.StepTimeout)
			if tc.state == StateGreeting {
				want = t0.Add(cfg.StepTimeout)
			}
			if !ok || !deadline.Equal(want) {
				t.Fatalf("Deadline() = %v, %v; want %v", deadline, ok, want)
			}
			h.Timeout(deadline.Add(-time.Nanosecond))
			if e, ok := h.NextEvent(); ok || h.Closed() {
				t.Fatalf("early Timeout had an effect: %v, closed %v", e, h.Closed())
			}
			h.Timeout(deadline)
			e, _ := h.NextEvent()
			wantE := Failed{State: tc.state, Reason: ReasonTimeout, Detail: "no answer within 10s"}
			if d := cmp.Diff(Event(wantE), e); d != "" {
				t.Errorf("event (-want +got):\n%s", d)
			}
			if out := h.AppendOutgoing(nil); len(out) != 0 || !h.Closed() {
				t.Errorf("after timeout: output %q, closed %v; want nothing and closed", out, h.Closed())
			}
			if _, ok := h.Deadline(); ok {
				t.Errorf("a failed handshake still has a deadline")
			}
			h.Timeout(deadline.Add(time.Hour)) // a spurious call is a no-op
			if e, ok := h.NextEvent(); ok {
				t.Errorf("second Timeout emitted %v", e)
			}
		})
	}
}

// TestHandshakeIllegal checks inputs that are out of place: they return
// errors naming the state and change nothing they should not.
func TestHandshakeIllegal(t *testing.T) {
	h := New(t0, Config{})
	if err := h.TLSDone(t0, nil); err == nil || !strings.Contains(err.Error(), "TLSDone in state greeting") {
		t.Errorf("TLSDone in greeting = %v", err)
	}
	if _, err := feed(h, t0, "400 bye\r\n", nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Receive(t0, []byte("more\r\n")); err == nil || !strings.Contains(err.Error(), "in state failed") {
		t.Errorf("Receive after failure = %v", err)
	}
	h.ReceiveEOF(t0)
	h.NextEvent()
	if e, ok := h.NextEvent(); ok {
		t.Errorf("EOF after failure emitted %v", e)
	}
}

func TestHandshakeEOF(t *testing.T) {
	h := New(t0, Config{})
	feed(h, t0, "200 hi\r\n101 caps\r\n", nil)
	h.AppendOutgoing(nil)
	h.ReceiveEOF(t0)
	e, _ := h.NextEvent()
	if d := cmp.Diff(Event(Failed{State: StateCapabilityList, Reason: ReasonClosed}), e); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if !h.Closed() {
		t.Error("not closed after EOF")
	}
}

// TestHandshakeLeftover: bytes after the last response belong to the next machine.
func TestHandshakeLeftover(t *testing.T) {
	h := New(t0, Config{})
	out, err := feed(h, t0, "200 hi\r\n"+plainCaps+"238 <a@b>\r\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out != "CAPABILITIES\r\n" || h.State() != StateReady {
		t.Fatalf("out %q state %s", out, h.State())
	}
	if err := h.Receive(t0, []byte("239 <c@d>\r\n")); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff("238 <a@b>\r\n239 <c@d>\r\n", string(h.Leftover())); d != "" {
		t.Errorf("leftover (-want +got):\n%s", d)
	}
}

// TestTableComplete: every state that waits for a response has a default
// row and a garbage row, so no line can fall through the table.
func TestTableComplete(t *testing.T) {
	for s, rows := range table {
		if _, ok := rows[codeOther]; !ok {
			t.Errorf("state %s has no default row", s)
		}
		if _, ok := rows[codeGarbage]; !ok {
			t.Errorf("state %s has no garbage row", s)
		}
	}
	for s, rows := range sessionTable {
		if _, ok := rows[codeOther]; !ok {
			t.Errorf("session state %s has no default row", s)
		}
	}
	for s, rows := range authTable {
		if _, ok := rows[0]; !ok {
			t.Errorf("auth step %d has no default row", s)
		}
	}
}
