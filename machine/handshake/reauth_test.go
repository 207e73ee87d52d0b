package handshake

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/newsflow/newsflow/proto"
)

// TestReauth walks the step through its rules: each case is a sequence of
// inputs and, after each, the bytes appended, the outcome and the state.
func TestReauth(t *testing.T) {
	type in struct {
		op   string // "need", "drained", or a response code for Handle
		code int
	}
	type out struct {
		sent    string
		err     error
		outcome AuthOutcome
		reason  Reason
		state   ReauthState
	}
	cases := []struct {
		name    string
		user    string
		authed  bool
		inputs  []in
		want    []out
		wantDon bool
	}{
		{
			name:   "no credentials: a 480 is final",
			inputs: []in{{op: "need"}},
			want:   []out{{err: ErrNoCredentials, state: ReauthIdle}},
		},
		{
			name:    "authenticated in the handshake: a 480 is final",
			user:    "u",
			authed:  true,
			inputs:  []in{{op: "need"}},
			want:    []out{{err: ErrAuthAgain, state: ReauthIdle}},
			wantDon: true,
		},
		{
			name:   "480, drain, USER, PASS, 281",
			user:   "u",
			inputs: []in{{op: "need"}, {op: "need"}, {op: "drained"}, {code: 381}, {code: 281}, {op: "need"}},
			want: []out{
				{state: ReauthDraining},
				{state: ReauthDraining},
				{sent: "AUTHINFO USER u\r\n", state: ReauthRunning},
				{sent: "AUTHINFO PASS p\r\n", outcome: AuthPending, state: ReauthRunning},
				{outcome: AuthOK, state: ReauthIdle},
				{err: ErrAuthAgain, state: ReauthIdle},
			},
			wantDon: true,
		},
		{
			name:   "481 fails and the step is idle again",
			user:   "u",
			inputs: []in{{op: "need"}, {op: "drained"}, {code: 481}},
			want: []out{
				{state: ReauthDraining},
				{sent: "AUTHINFO USER u\r\n", state: ReauthRunning},
				{outcome: AuthFailed, reason: ReasonAuthRejected, state: ReauthIdle},
			},
		},
		{
			name:   "an answer while not running is out of sequence",
			user:   "u",
			inputs: []in{{code: 281}},
			want:   []out{{outcome: AuthFailed, reason: ReasonAuthSequence, state: ReauthIdle}},
		},
		{
			name:   "drained without a 480 is the owner's error",
			user:   "u",
			inputs: []in{{op: "drained"}},
			want:   []out{{err: errors.New("handshake: reauth: drained in state idle"), state: ReauthIdle}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReauth(tc.user, "p", tc.authed)
			for i, input := range tc.inputs {
				var got out
				var b []byte
				switch input.op {
				case "need":
					got.err = r.Need()
				case "drained":
					b, got.err = r.Drained(nil)
				default:
					b, got.outcome, got.reason = r.Handle(proto.Response{Code: input.code, Text: "x"}, nil)
				}
				got.sent, got.state = string(b), r.State()
				w := tc.want[i]
				if (got.err == nil) != (w.err == nil) || (w.err != nil && got.err.Error() != w.err.Error()) {
					t.Errorf("input %d (%v): error %v, want %v", i, input, got.err, w.err)
				}
				got.err, w.err = nil, nil
				if diff := cmp.Diff(w, got, cmp.AllowUnexported(out{})); diff != "" {
					t.Errorf("input %d (%v) (-want +got):\n%s", i, input, diff)
				}
			}
			if r.Authenticated() != tc.wantDon {
				t.Errorf("Authenticated() = %t, want %t", r.Authenticated(), tc.wantDon)
			}
		})
	}
	if got := ReauthState(9).String(); got != "ReauthState(9)" {
		t.Errorf("ReauthState(9) = %q", got)
	}
}
