package handshake

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
)

func TestAuth(t *testing.T) {
	tests := []struct {
		name      string
		responses []int
		wantOut   string
		want      AuthOutcome
		reason    Reason
	}{
		{"281 to USER", []int{281}, "AUTHINFO USER alice\r\n", AuthOK, 0},
		{"381 then 281", []int{381, 281}, "AUTHINFO USER alice\r\nAUTHINFO PASS pw\r\n", AuthOK, 0},
		{"481 to USER", []int{481}, "AUTHINFO USER alice\r\n", AuthFailed, ReasonAuthRejected},
		{"381 then 481", []int{381, 481}, "AUTHINFO USER alice\r\nAUTHINFO PASS pw\r\n", AuthFailed, ReasonAuthRejected},
		{"482", []int{482}, "AUTHINFO USER alice\r\n", AuthFailed, ReasonAuthSequence},
		{"381 then 482", []int{381, 482}, "AUTHINFO USER alice\r\nAUTHINFO PASS pw\r\n", AuthFailed, ReasonAuthSequence},
		{"502", []int{502}, "AUTHINFO USER alice\r\n", AuthFailed, ReasonAuthRefused},
		{"483", []int{483}, "AUTHINFO USER alice\r\n", AuthFailed, ReasonEncryptionRequired},
		{"500", []int{500}, "AUTHINFO USER alice\r\n", AuthFailed, ReasonAuthUnsupported},
		{"400", []int{400}, "AUTHINFO USER alice\r\n", AuthFailed, ReasonUnavailable},
		{"381 then 381", []int{381, 381}, "AUTHINFO USER alice\r\nAUTHINFO PASS pw\r\n", AuthFailed, ReasonUnexpected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Auth{User: "alice", Pass: "pw"}
			out, err := a.Start(nil)
			if err != nil {
				t.Fatal(err)
			}
			var outcome AuthOutcome
			var reason Reason
			for i, code := range tc.responses {
				out, outcome, reason = a.Handle(proto.Response{Code: code}, out)
				if i < len(tc.responses)-1 && outcome != AuthPending {
					t.Fatalf("response %d ended the exchange early: %v", code, outcome)
				}
			}
			if outcome != tc.want || reason != tc.reason || string(out) != tc.wantOut {
				t.Errorf("got %v %v %q, want %v %v %q", outcome, reason, out, tc.want, tc.reason, tc.wantOut)
			}
			if a.Active() {
				t.Error("still active after the exchange ended")
			}
		})
	}
}

func TestAuthMisuse(t *testing.T) {
	a := Auth{User: "alice", Pass: "pw"}
	if _, o, r := a.Handle(proto.Response{Code: 281}, nil); o != AuthFailed || r != ReasonAuthSequence {
		t.Errorf("Handle before Start: %v %v", o, r)
	}
	out, _ := a.Start(nil)
	if out2, err := a.Start(out); err == nil || len(out2) != len(out) {
		t.Errorf("second Start: %v, appended %q", err, out2[len(out):])
	}
	b := Auth{User: "alice", Pass: "two words"}
	out, _ = b.Start(nil)
	if _, o, r := b.Handle(proto.Response{Code: 381}, out); o != AuthFailed || r != ReasonConfig {
		t.Errorf("password with a space: %v %v", o, r)
	}
}

type sessCase struct {
	name       string
	cfg        Config
	cmd        proto.Command
	server     string
	wantOut    string
	want       []Event
	wantClosed bool
	wantErr    string
}

func runSession(tc sessCase, cuts []int) hsResult {
	s := NewSession(t0, tc.cfg, tc.cmd)
	r := hsResult{Out: string(s.AppendOutgoing(nil))}
	prev := 0
	for _, c := range append(cuts, len(tc.server)) {
		if c <= prev {
			continue
		}
		err := s.Receive(t0, []byte(tc.server[prev:c]))
		r.Out += string(s.AppendOutgoing(nil))
		if err != nil {
			r.Err = err.Error()
			break
		}
		prev = c
	}
	for {
		e, ok := s.NextEvent()
		if !ok {
			break
		}
		r.Events = append(r.Events, e)
	}
	r.Closed = s.Closed()
	return r
}

var groupCmd = proto.Group("misc.test")

var sessionCases = []sessCase{
	{
		name:    "plain answer",
		cmd:     groupCmd,
		server:  "211 3 1 3 misc.test\r\n",
		wantOut: "GROUP misc.test\r\n",
		want:    []Event{Done{Response: resp(211, "3 1 3 misc.test")}},
	},
	{
		name:    "480, authenticate, retry",
		cfg:     Config{User: "alice", Pass: "pw"},
		cmd:     groupCmd,
		server:  "480 authentication required\r\n381 pw\r\n281 ok\r\n211 3 1 3 misc.test\r\n",
		wantOut: "GROUP misc.test\r\nAUTHINFO USER alice\r\nAUTHINFO PASS pw\r\nGROUP misc.test\r\n",
		want:    []Event{Done{Response: resp(211, "3 1 3 misc.test"), Authenticated: true}},
	},
	{
		name:       "480 without credentials",
		cmd:        groupCmd,
		server:     "480 authentication required\r\n",
		wantOut:    "GROUP misc.test\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateCommand, Reason: ReasonAuthRequired, Response: resp(480, "authentication required")}},
		wantClosed: true,
	},
	{
		name:       "480, credentials rejected",
		cfg:        Config{User: "alice", Pass: "bad"},
		cmd:        groupCmd,
		server:     "480 auth\r\n381 pw\r\n481 rejected\r\n",
		wantOut:    "GROUP misc.test\r\nAUTHINFO USER alice\r\nAUTHINFO PASS bad\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateAuth, Reason: ReasonAuthRejected, Response: resp(481, "rejected")}},
		wantClosed: true,
	},
	{
		name:       "480 again after authenticating",
		cfg:        Config{User: "alice", Pass: "pw"},
		cmd:        groupCmd,
		server:     "480 auth\r\n281 ok\r\n480 auth\r\n",
		wantOut:    "GROUP misc.test\r\nAUTHINFO USER alice\r\nGROUP misc.test\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateCommand, Reason: ReasonAuthRequired, Response: resp(480, "auth")}},
		wantClosed: true,
	},
	{
		name:    "INN transit port: 401 MODE-READER, MODE READER, CAPABILITIES, retry",
		cmd:     groupCmd,
		server:  "401 MODE-READER\r\n200 nnrpd ready\r\n" + readerCaps + "211 3 1 3 misc.test\r\n",
		wantOut: "GROUP misc.test\r\nMODE READER\r\nCAPABILITIES\r\nGROUP misc.test\r\n",
		want: []Event{Done{Response: resp(211, "3 1 3 misc.test"), ModeReader: true,
			Capabilities: readerList}},
	},
	{
		name:    "401 MODE-READER, server without CAPABILITIES",
		cmd:     groupCmd,
		server:  "401 MODE-READER\r\n201 reader\r\n500 what\r\n211 3 1 3 misc.test\r\n",
		wantOut: "GROUP misc.test\r\nMODE READER\r\nCAPABILITIES\r\nGROUP misc.test\r\n",
		want:    []Event{Done{Response: resp(211, "3 1 3 misc.test"), ModeReader: true}},
	},
	{
		name:    "401 MODE-READER twice: the second is the answer",
		cmd:     groupCmd,
		server:  "401 MODE-READER\r\n200 ok\r\n" + plainCaps + "401 MODE-READER\r\n",
		wantOut: "GROUP misc.test\r\nMODE READER\r\nCAPABILITIES\r\nGROUP misc.test\r\n",
		want:    []Event{Done{Response: resp(401, "MODE-READER"), ModeReader: true, Capabilities: plainList}},
	},
	{
		name:    "401 naming another capability is an answer",
		cmd:     groupCmd,
		server:  "401 COMPRESS\r\n",
		wantOut: "GROUP misc.test\r\n",
		want:    []Event{Done{Response: resp(401, "COMPRESS")}},
	},
	{
		name:       "MODE READER refused",
		cmd:        groupCmd,
		server:     "401 MODE-READER\r\n502 no\r\n",
		wantOut:    "GROUP misc.test\r\nMODE READER\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateModeReader, Reason: ReasonNoReader, Response: resp(502, "no")}},
		wantClosed: true,
	},
	{
		name:       "483: a session cannot start TLS",
		cmd:        groupCmd,
		server:     "483 encryption required\r\n",
		wantOut:    "GROUP misc.test\r\nQUIT\r\n",
		want:       []Event{Failed{State: StateCommand, Reason: ReasonEncryptionRequired, Response: resp(483, "encryption required")}},
		wantClosed: true,
	},
	{
		name:    "multi-line answer, dot-stuffed",
		cmd:     proto.List("ACTIVE", ""),
		server:  "215 list follows\r\nmisc.test 3 1 y\r\n..dot 0 1 n\r\n.\r\n",
		wantOut: "LIST ACTIVE\r\n",
		want:    []Event{Done{Response: resp(215, "list follows"), Block: []byte("misc.test 3 1 y\r\n.dot 0 1 n\r\n")}},
	},
	{
		name:    "multi-line answer after 480",
		cfg:     Config{User: "alice", Pass: "pw"},
		cmd:     proto.List("ACTIVE", ""),
		server:  "480 auth\r\n281 ok\r\n215 list\r\na 1 1 y\r\n.\r\n",
		wantOut: "LIST ACTIVE\r\nAUTHINFO USER alice\r\nLIST ACTIVE\r\n",
		want:    []Event{Done{Response: resp(215, "list"), Block: []byte("a 1 1 y\r\n"), Authenticated: true}},
	},
	{
		name:       "garbage answer",
		cmd:        groupCmd,
		server:     "what?\r\n",
		wantOut:    "GROUP misc.test\r\n",
		want:       []Event{Failed{State: StateCommand, Reason: ReasonProtocol, Detail: `nntp: malformed response "what?": status code is not three digits`}},
		wantClosed: true,
		wantErr:    "malformed response",
	},
}

func TestSession(t *testing.T) {
	for _, tc := range sessionCases {
		t.Run(tc.name, func(t *testing.T) {
			check := func(got hsResult, how string) {
				t.Helper()
				want := hsResult{Out: tc.wantOut, Events: tc.want, Closed: tc.wantClosed}
				if tc.wantErr != "" && strings.Contains(got.Err, tc.wantErr) {
					got.Err = ""
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s (-want +got):\n%s", how, d)
				}
			}
			check(runSession(tc, nil), "whole")
			var every []int
			for i := 1; i < len(tc.server); i++ {
				check(runSession(tc, []int{i}), fmt.Sprintf("cut at %d", i))
				every = append(every, i)
			}
			check(runSession(tc, every), "byte by byte")
		})
	}
}

func TestSessionLeftoverAndTimeout(t *testing.T) {
	s := NewSession(t0, Config{StepTimeout: time.Minute}, proto.List("ACTIVE", ""))
	s.AppendOutgoing(nil)
	if err := s.Receive(t0, []byte("215 x\r\na\r\n.\r\n211 next\r\n")); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff("211 next\r\n", string(s.Leftover())); d != "" {
		t.Errorf("leftover (-want +got):\n%s", d)
	}

	s = NewSession(t0, Config{StepTimeout: time.Minute}, groupCmd)
	if d, ok := s.Deadline(); !ok || !d.Equal(t0.Add(time.Minute)) {
		t.Fatalf("deadline %v %v", d, ok)
	}
	s.Timeout(t0.Add(59 * time.Second))
	if s.Closed() {
		t.Fatal("closed before the deadline")
	}
	s.Timeout(t0.Add(time.Minute))
	e, _ := s.NextEvent()
	if d := cmp.Diff(Event(Failed{State: StateCommand, Reason: ReasonTimeout, Detail: "no answer within 1m0s"}), e); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
