package feed

import (
	"strconv"

	"github.com/newsflow/newsflow/proto"
)

// The reply table: what every response means to the command it answers.
// It is the only place where response codes are interpreted (AUTHINFO's
// codes are in handshake.Auth's table). The rules, by command:
//
//	CHECK (RFC 4644 §2.4)
//	  238 <id>  wanted: the article joins the send-queue for TAKETHIS
//	  431 <id>  try later: Deferred
//	  438 <id>  not wanted: Refused
//	TAKETHIS (RFC 4644 §2.5)
//	  239 <id>  Accepted
//	  439 <id>  Rejected
//	  431 <id>  not allowed here (a CHECK answer: log it and
//	  438 <id>  count it as a reject): Warning, then Rejected
//	IHAVE (RFC 3977 §6.3.2), first response
//	  335       send the article (the same command waits for its second response)
//	  435       not wanted: Refused
//	  436       try later: Deferred
//	  437       rejected (some servers answer it at once): Rejected
//	IHAVE, second response (after the article)
//	  235       Accepted
//	  436       transfer failed, try later: Deferred
//	  437       Rejected
//	any command
//	  400, 403  the peer is going away (RFC 3977 §3.2.1): close, requeue everything
//	  480       authentication required (RFC 4643 §2.1): stop sending, let
//	            the outstanding replies drain, AUTHINFO, send the command again
//	  502       not permitted: close, requeue everything
//	  500, 501  to CHECK: the peer said it streams but does not (RFC 4644
//	            §2.4 reaches only servers advertising STREAMING): drain,
//	            then offer with IHAVE. To TAKETHIS: the peer read the article
//	            as commands, the stream is out of step: close. To IHAVE: the
//	            peer takes no articles at all: close.
//	  anything else, or a line that is not a response: protocol error
//
// Responses of RFC 4644 carry the message-id as their first word; it must
// be the one sent in the command the response is matched to (responses come
// in command order, RFC 4644 §2.1). A different one means the peer and the
// Feed disagree about what was accepted: protocol error, close, requeue.
// A response with no command outstanding is a protocol error, except 400
// (a server announcing its shutdown).

// cmd is the command a reply answers: what heads the recv-queue.
type cmd uint8

const (
	cmdNone      cmd = iota // nothing outstanding
	cmdCheck                // CHECK <id>
	cmdTakeThis             // TAKETHIS <id> and the article
	cmdIHave                // IHAVE <id>, waiting for 335
	cmdIHaveBody            // the article after 335, waiting for 235
)

var cmdNames = [...]string{"nothing", "CHECK", "TAKETHIS", "IHAVE", "IHAVE article"}

func (c cmd) String() string {
	if int(c) < len(cmdNames) {
		return cmdNames[c]
	}
	return "cmd(" + strconv.Itoa(int(c)) + ")"
}

// action is what a reply means; see the table.
type action uint8

const (
	actWanted      action = iota + 1 // 238: queue TAKETHIS
	actAccepted                      // 239, 235
	actRefused                       // 438, 435
	actRejected                      // 439, 437
	actDeferred                      // 431, 436
	actOddReject                     // 431 or 438 to TAKETHIS: Warning, then Rejected
	actSendBody                      // 335: send the article
	actUnavailable                   // 400, 403: close, requeue
	actAuth                          // 480: authenticate, then send again
	actFallback                      // 500/501 to CHECK: fall back to IHAVE
	actOutOfStep                     // 500/501 to TAKETHIS: close
	actNoTransfer                    // 500/501 to IHAVE: close
	actDenied                        // 502: close
	actUnexpected                    // a response that makes no sense here
	actGarbage                       // not a response line
)

// row is one entry of the table.
type row struct {
	act action
	id  bool // the response's first word must be the message-id sent
}

// Pseudo-codes for lookups.
const (
	codeOther   = 0  // any code without its own row
	codeGarbage = -1 // a line proto.ParseResponse refuses
)

// generic are the rows every command shares (RFC 3977 §3.2.1).
var generic = map[int]row{
	proto.CodeUnavailable:   {act: actUnavailable},
	proto.CodeInternalFault: {act: actUnavailable},
	proto.CodeAuthRequired:  {act: actAuth},
	proto.CodeNotPermitted:  {act: actDenied},
	codeOther:               {act: actUnexpected},
	codeGarbage:             {act: actGarbage},
}

// table holds every reply transition of a Feed, by the command answered.
var table = map[cmd]map[int]row{
	cmdCheck: {
		proto.CodeCheckSend:      {act: actWanted, id: true},
		proto.CodeCheckLater:     {act: actDeferred, id: true},
		proto.CodeCheckNotWanted: {act: actRefused, id: true},
		proto.CodeUnknownCommand: {act: actFallback},
		proto.CodeSyntaxError:    {act: actFallback},
	},
	cmdTakeThis: {
		proto.CodeTakeThisOK:     {act: actAccepted, id: true},
		proto.CodeTakeThisReject: {act: actRejected, id: true},
		proto.CodeCheckLater:     {act: actOddReject, id: true},
		proto.CodeCheckNotWanted: {act: actOddReject, id: true},
		proto.CodeUnknownCommand: {act: actOutOfStep},
		proto.CodeSyntaxError:    {act: actOutOfStep},
	},
	cmdIHave: {
		proto.CodeSendArticle:    {act: actSendBody},
		proto.CodeNotWanted:      {act: actRefused},
		proto.CodeTransferLater:  {act: actDeferred},
		proto.CodeTransferReject: {act: actRejected},
		proto.CodeUnknownCommand: {act: actNoTransfer},
		proto.CodeSyntaxError:    {act: actNoTransfer},
	},
	cmdIHaveBody: {
		proto.CodeTransferOK:     {act: actAccepted},
		proto.CodeTransferLater:  {act: actDeferred},
		proto.CodeTransferReject: {act: actRejected},
	},
	cmdNone: {
		proto.CodeUnavailable: {act: actUnavailable},
		codeOther:             {act: actUnexpected},
		codeGarbage:           {act: actGarbage},
	},
}

// lookup returns the row for a reply with code (or a pseudo-code) to c.
func lookup(c cmd, code int) row {
	rows := table[c]
	if r, ok := rows[code]; ok {
		return r
	}
	if c != cmdNone {
		if r, ok := generic[code]; ok {
			return r
		}
	}
	if code == codeGarbage {
		return row{act: actGarbage}
	}
	if r, ok := rows[codeOther]; ok {
		return r
	}
	return generic[codeOther]
}
