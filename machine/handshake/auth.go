package handshake

import (
	"fmt"

	"github.com/newsflow/newsflow/proto"
)

// Auth is the AUTHINFO USER/PASS exchange (RFC 4643 §2.3) as a sub-machine
// for other machines to embed. When a command draws 480 (authentication
// required, RFC 4643 §2.1), the owning machine calls Start and writes what it
// appends, then gives Handle each following response line until the outcome
// is not AuthPending. On AuthOK the owner sends its command again; on
// AuthFailed the Reason says why. Auth does no line splitting and keeps no
// clock: the owner does both.
type Auth struct {
	User, Pass string
	step       authStep
}

type authStep uint8

const (
	authIdle authStep = iota // not started, or finished
	authUser                 // AUTHINFO USER sent
	authPass                 // AUTHINFO PASS sent
)

// AuthOutcome is what a response to AUTHINFO means for the owner.
type AuthOutcome uint8

// Outcomes of Auth.Handle.
const (
	AuthPending AuthOutcome = iota // a command was appended; wait for its response
	AuthOK                         // 281: authenticated; retry the command that drew 480
	AuthFailed                     // the exchange failed; see the Reason
)

// authRow is one transition of the AUTHINFO table.
type authRow struct {
	outcome AuthOutcome
	reason  Reason
}

// authTable holds every transition of the exchange: for the step that sent a
// command, the meaning of each response code; code 0 is any other code.
//
//	RFC 4643 §2.3.1: 281 to USER means no password is needed; 381 asks for
//	PASS; 481 rejects the credentials; 482 says USER/PASS came out of order;
//	502 refuses (already authenticated, or never allowed); 483 asks for TLS
//	first. 500/501 mean the server has no AUTHINFO USER at all.
var authTable = map[authStep]map[int]authRow{
	authUser: {
		proto.CodeAuthOK:          {AuthOK, 0},
		proto.CodePassRequired:    {AuthPending, 0}, // send PASS
		proto.CodeAuthRejected:    {AuthFailed, ReasonAuthRejected},
		proto.CodeAuthOutOfOrder:  {AuthFailed, ReasonAuthSequence},
		proto.CodeNotPermitted:    {AuthFailed, ReasonAuthRefused},
		proto.CodeEncryptRequired: {AuthFailed, ReasonEncryptionRequired},
		proto.CodeUnknownCommand:  {AuthFailed, ReasonAuthUnsupported},
		proto.CodeSyntaxError:     {AuthFailed, ReasonAuthUnsupported},
		proto.CodeUnavailable:     {AuthFailed, ReasonUnavailable},
		0:                         {AuthFailed, ReasonUnexpected},
	},
	authPass: {
		proto.CodeAuthOK:          {AuthOK, 0},
		proto.CodeAuthRejected:    {AuthFailed, ReasonAuthRejected},
		proto.CodeAuthOutOfOrder:  {AuthFailed, ReasonAuthSequence},
		proto.CodeNotPermitted:    {AuthFailed, ReasonAuthRefused},
		proto.CodeEncryptRequired: {AuthFailed, ReasonEncryptionRequired},
		proto.CodeUnavailable:     {AuthFailed, ReasonUnavailable},
		0:                         {AuthFailed, ReasonUnexpected},
	},
}

// Active reports whether a command was sent and its response is awaited.
func (a *Auth) Active() bool { return a.step != authIdle }

// Start appends AUTHINFO USER to dst. It fails, appending nothing, when an
// exchange is already running or the user name cannot be sent as one
// argument (RFC 4643 §2.3.2: no spaces).
func (a *Auth) Start(dst []byte) ([]byte, error) {
	if a.step != authIdle {
		return dst, fmt.Errorf("handshake: auth: Start while AUTHINFO is in progress")
	}
	out, err := proto.AuthinfoUser(a.User).Append(dst)
	if err != nil {
		return dst, fmt.Errorf("handshake: auth: user name: %w", err)
	}
	a.step = authUser
	return out, nil
}

// Handle takes the response to the last AUTHINFO command and appends the
// next command, if any, to dst. Calling it while not Active is an error of
// the owner and reports AuthFailed with ReasonAuthSequence.
func (a *Auth) Handle(r proto.Response, dst []byte) ([]byte, AuthOutcome, Reason) {
	rows, ok := authTable[a.step]
	if !ok {
		return dst, AuthFailed, ReasonAuthSequence
	}
	row, ok := rows[r.Code]
	if !ok {
		row = rows[0]
	}
	if row.outcome != AuthPending {
		a.step = authIdle
		return dst, row.outcome, row.reason
	}
	// 381: RFC 4643 §2.3.1 the password follows.
	out, err := proto.AuthinfoPass(a.Pass).Append(dst)
	if err != nil {
		a.step = authIdle
		return dst, AuthFailed, ReasonConfig
	}
	a.step = authPass
	return out, AuthPending, 0
}
