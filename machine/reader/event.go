package reader

import (
	"errors"
	"fmt"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// An Event is what a Client tells its owner: the result of a request
// (GroupsResult, StatsResult, ThreadsResult, ThreadResult, ArticleResult,
// NotFound, Failed) or the end of the connection (Closed, always last).
type Event interface{ isEvent() }

// GroupListing is one group of a GroupsResult.
type GroupListing struct {
	Name        string
	High, Low   int64  // LIST ACTIVE marks (RFC 3977 §7.6.3)
	Status      string // "y", "n", "m", ... (proto.ActiveGroup.Status)
	Description string // from LIST NEWSGROUPS, "" when none
}

// GroupsResult answers GetGroups: the groups sorted by name.
type GroupsResult struct {
	ID      uint64
	Groups  []GroupListing
	Skipped int // LIST ACTIVE lines that did not parse and were left out
}

// StatsResult answers GetGroupStats.
type StatsResult struct {
	ID       uint64
	Group    string
	Count    int64     // the server's estimate (RFC 3977 §6.1.1.2)
	Low      int64     // low water mark
	High     int64     // high water mark
	LastDate time.Time // Date of the newest article; zero when unknown
}

// ThreadsResult answers GetThreads and GetNewArticles: the summaries of the
// articles Low..High that the server has, in article-number order.
type ThreadsResult struct {
	ID        uint64
	Group     string
	Since     int64 // the request's high-water mark
	Low, High int64 // the range fetched; High is the new high-water mark (Since when nothing is new)
	Articles  []Summary
	Truncated bool     // more than the limit were new: only the newest were fetched
	Strategy  Strategy // how the data was fetched (0 when nothing was fetched)
	Skipped   int      // response lines that did not parse and were left out
}

// ThreadResult answers GetThread: the thread holding the article.
type ThreadResult struct {
	ID       uint64
	Group    string
	Root     *Node // the thread's root; Find(…) gives the article's own Node
	High     int64 // high-water mark of the data it was threaded from
	Strategy Strategy
}

// ArticleResult answers GetArticle: the article as received, dot-stuffing
// removed, lines ending as the server sent them (CRLF).
type ArticleResult struct {
	ID        uint64
	MessageID string
	Number    int64 // from the 220 response; 0 outside a group
	Raw       []byte
}

// PostResult answers PostArticle: the server took the article (240).
type PostResult struct {
	ID        uint64
	MessageID string
	Response  proto.Response
}

// NotFound answers a request whose object does not exist: 430 to ARTICLE
// (no such message-id), 411 to GROUP (no such group), or a GetThread whose
// article is not in the group's data.
type NotFound struct {
	ID       uint64
	Req      Request
	Response proto.Response // the server's answer; zero for GetThread
}

// Failed answers a request that could not be served. Retry means the
// request never got an answer (the connection failed under it) and may be
// sent again on another connection; otherwise the server refused it.
type Failed struct {
	ID    uint64
	Req   Request
	Err   error
	Retry bool
}

// Closed is the Client's last event: the connection must be closed. Err is
// nil after Close, else the reason.
type Closed struct{ Err error }

func (GroupsResult) isEvent()  {}
func (StatsResult) isEvent()   {}
func (ThreadsResult) isEvent() {}
func (ThreadResult) isEvent()  {}
func (ArticleResult) isEvent() {}
func (PostResult) isEvent()    {}
func (NotFound) isEvent()      {}
func (Failed) isEvent()        {}
func (Closed) isEvent()        {}

// Errors a Failed or Closed event may wrap (with "reader: " and context
// before them).
var (
	ErrTimeout        = errors.New("no answer in time")
	ErrConnClosed     = errors.New("the server closed the connection")
	ErrProtocol       = errors.New("protocol error")
	ErrAuthRequired   = errors.New("authentication required")
	ErrAuthFailed     = errors.New("authentication failed")
	ErrEncryptionReq  = errors.New("the server requires encryption")
	ErrUnavailable    = errors.New("service unavailable")
	ErrRefused        = errors.New("the server refused the command")
	ErrBadRequest     = errors.New("bad request")
	ErrNoReader       = errors.New("reading not permitted")
	ErrClientShutdown = errors.New("connection shut down by its owner")
	ErrPostingDenied  = errors.New("posting not permitted")
	ErrPostFailed     = errors.New("posting failed")
)

// refusal wraps an unexpected answer as ErrRefused, naming the command.
func refusal(cmd proto.Command, r proto.Response) error {
	return fmt.Errorf("reader: %w: %w", ErrRefused, &proto.ResponseError{Cmd: cmd.Name(), Resp: r})
}
