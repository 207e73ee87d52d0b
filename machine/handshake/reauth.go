package handshake

import (
	"errors"
	"fmt"

	"github.com/newsflow/newsflow/proto"
)

// Reauth is the step newsflow's client machines take when a command draws
// 480 in mid-session (RFC 4643 §2.1: "the client MUST authenticate ... and
// then retry the command"): the feed on CHECK/TAKETHIS/IHAVE, the fetch on
// GROUP/BODY, the reader's client on any of its commands. One step serves
// them all, so the rules are written once:
//
//  1. Need: a 480 came. AUTHINFO is tried only with credentials and only
//     once per connection: a 480 after authenticating means the account
//     may not do this, and asking again would loop. Need says why not
//     (ErrNoCredentials, ErrAuthAgain); the owner then fails.
//  2. Draining: the owner sends no new command and lets the answers already
//     due arrive (they may be 480s too, or real answers: a pipelined BODY
//     can succeed although its GROUP drew 480). It keeps the commands that
//     drew 480, in order, to send again.
//  3. Drained: nothing is outstanding; AUTHINFO USER is appended and the
//     exchange runs (Running); the owner passes each answer to Handle.
//  4. AuthOK: the owner sends again, in their order, the commands that drew
//     480 and those it held back. AuthFailed: the owner fails, with the
//     Reason.
//
// Reauth keeps no clock and splits no lines; it is a small table on top of
// Auth, which holds the AUTHINFO codes.
type Reauth struct {
	auth  Auth
	state ReauthState
	done  bool // authenticated on this connection
}

// ReauthState is where the step is.
type ReauthState uint8

// The states of Reauth.
const (
	ReauthIdle     ReauthState = iota // no 480 pending
	ReauthDraining                    // a 480 came: no new commands until the answers are in
	ReauthRunning                     // AUTHINFO sent, its answer awaited
)

// String names the state.
func (s ReauthState) String() string {
	switch s {
	case ReauthIdle:
		return "idle"
	case ReauthDraining:
		return "draining"
	case ReauthRunning:
		return "running"
	}
	return fmt.Sprintf("ReauthState(%d)", uint8(s))
}

// Why Need refuses to authenticate.
var (
	ErrNoCredentials = errors.New("no credentials configured")
	ErrAuthAgain     = errors.New("again after authenticating")
)

// NewReauth returns the step for a connection with credentials user and
// pass (none when user is ""); authenticated says the connection has
// authenticated already (in its handshake), so a 480 is final.
func NewReauth(user, pass string, authenticated bool) Reauth {
	return Reauth{auth: Auth{User: user, Pass: pass}, done: authenticated}
}

// State returns where the step is.
func (r *Reauth) State() ReauthState { return r.state }

// Authenticated reports whether the connection has authenticated.
func (r *Reauth) Authenticated() bool { return r.done }

// Need notes a 480. It returns nil when AUTHINFO will be tried (the step is
// then Draining, or stays Draining or Running for a further 480 of the same
// drain), and ErrNoCredentials or ErrAuthAgain when it will not.
func (r *Reauth) Need() error {
	switch {
	case r.auth.User == "":
		return ErrNoCredentials
	case r.done:
		return ErrAuthAgain
	}
	if r.state == ReauthIdle {
		r.state = ReauthDraining
	}
	return nil
}

// Drained starts AUTHINFO once the answers due when the 480 came are all
// in: it appends AUTHINFO USER to dst. It is an error of the owner to call
// it while not Draining; a user name that cannot be sent is an error too.
func (r *Reauth) Drained(dst []byte) ([]byte, error) {
	if r.state != ReauthDraining {
		return dst, fmt.Errorf("handshake: reauth: drained in state %s", r.state)
	}
	out, err := r.auth.Start(dst)
	if err != nil {
		r.state = ReauthIdle
		return dst, err
	}
	r.state = ReauthRunning
	return out, nil
}

// Handle takes an answer to AUTHINFO while Running and appends the next
// command, if any, to dst (see Auth.Handle). On AuthOK the connection is
// authenticated and the owner sends its commands again; on AuthOK and
// AuthFailed the step is Idle again.
func (r *Reauth) Handle(resp proto.Response, dst []byte) ([]byte, AuthOutcome, Reason) {
	if r.state != ReauthRunning {
		return dst, AuthFailed, ReasonAuthSequence
	}
	out, outcome, reason := r.auth.Handle(resp, dst)
	switch outcome {
	case AuthOK:
		r.state, r.done = ReauthIdle, true
	case AuthFailed:
		r.state = ReauthIdle
	}
	return out, outcome, reason
}
