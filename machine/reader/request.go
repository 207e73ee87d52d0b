// Package reader holds newsweb's pure parts: the reader client machine that
// runs GROUP, LIST, OVER/HDR/HEAD and ARTICLE on one connection (Client),
// threading by References (Thread, Merge), the activity tracker and refresh
// period of the background refresh (Refresher, RefreshPeriod), the priority
// queues with aging and the coalescing table (Scheduler, Coalescer), and the
// cache policy (CacheConfig, Debouncer). Nothing here does I/O, reads a
// clock or starts a goroutine: the runtime passes bytes and time in.
package reader

import (
	"strconv"
)

// A Request is work for a server. Its Key is its identity
// for coalescing: equal keys mean the same answer.
type Request interface {
	// Priority is the queue the request waits in.
	Priority() Priority
	// Key identifies the request for coalescing.
	Key() string
	isRequest()
}

// GetGroups asks for every group with its marks, status and description
// (LIST ACTIVE and LIST NEWSGROUPS, merged).
type GetGroups struct{}

// GetGroupStats asks for a group's count, marks and the date of its newest
// article (GROUP, then the Date of the high article by OVER, HDR or HEAD).
type GetGroupStats struct{ Group string }

// GetThreads asks for the thread data of a group: the articles after Since
// (a high-water mark; 0 for none) and up to Until (0 for the group's high
// mark), at most Limit of them, newest kept (Config.ThreadLimit when 0).
// Until is how older pages of a group reach past the newest articles: the
// archive's ranges, one below the other.
type GetThreads struct {
	Group string
	Since int64
	Until int64
	Limit int
}

// GetThread asks for the thread holding MessageID in Group. The runtime
// answers it from cached thread data when it has some (Find); the Client
// answers it by fetching the group's thread data (as GetThreads with no
// high-water mark) and threading it.
type GetThread struct {
	Group     string
	MessageID string
	Limit     int
}

// GetArticle asks for an article by message-id (ARTICLE). Background
// marks a fetch nobody waits for (the search index reading bodies): it
// goes in the Low queue, under its own key, so that a reader's request
// for the same article never waits behind it.
type GetArticle struct {
	MessageID  string
	Background bool
}

// GetNewArticles asks for the articles of Group after the high-water mark
// Since: the incremental update of a cached thread list. Until,
// when set, bounds the range from above, so that a background job (the
// search index) can walk a group from its low mark up, one range at a time.
type GetNewArticles struct {
	Group string
	Since int64
	Until int64
	Limit int
}

// PostArticle posts an article (POST, RFC 3977 §6.3.1). Raw is the whole
// article in wire form: header, empty line, body, every line ending in
// CRLF, not dot-stuffed (the Client does that). MessageID is the article's
// Message-ID; it names the request (two requests for one message-id are
// the same post) and the result.
type PostArticle struct {
	MessageID string
	Raw       []byte
}

func (PostArticle) isRequest()    {}
func (GetGroups) isRequest()      {}
func (GetGroupStats) isRequest()  {}
func (GetThreads) isRequest()     {}
func (GetThread) isRequest()      {}
func (GetArticle) isRequest()     {}
func (GetNewArticles) isRequest() {}

// Priority is Normal: a page load.
func (GetGroups) Priority() Priority { return Normal }

// Priority is Low: background refresh and prefetch.
func (GetGroupStats) Priority() Priority { return Low }

// Priority is Normal: a page load.
func (GetThreads) Priority() Priority { return Normal }

// Priority is High: a user waits for the thread.
func (GetThread) Priority() Priority { return High }

// Priority is High: a user waits for the article; Low in the Background.
func (r GetArticle) Priority() Priority {
	if r.Background {
		return Low
	}
	return High
}

// Priority is Low: background refresh.
func (GetNewArticles) Priority() Priority { return Low }

// Priority is High: a user waits for the post.
func (PostArticle) Priority() Priority { return High }

// Key is "post:<message-id>".
func (r PostArticle) Key() string { return "post:" + r.MessageID }

// Key is "groups".
func (GetGroups) Key() string { return "groups" }

// Key is "stats:<group>".
func (r GetGroupStats) Key() string { return "stats:" + r.Group }

// Key is "threads:<group>:<since>:<limit>", and ":until=<until>" after it
// when Until is set.
func (r GetThreads) Key() string {
	k := "threads:" + r.Group + ":" + strconv.FormatInt(r.Since, 10) + ":" + strconv.Itoa(r.Limit)
	if r.Until > 0 {
		k += ":until=" + strconv.FormatInt(r.Until, 10)
	}
	return k
}

// Key is "thread:<group>:<message-id>:<limit>".
func (r GetThread) Key() string {
	return "thread:" + r.Group + ":" + r.MessageID + ":" + strconv.Itoa(r.Limit)
}

// Key is "article:<message-id>", "background-article:<message-id>" in
// the Background.
func (r GetArticle) Key() string {
	if r.Background {
		return "background-article:" + r.MessageID
	}
	return "article:" + r.MessageID
}

// Key is "new:<group>:<since>:<limit>", and ":until=<until>" after it when
// Until is set.
func (r GetNewArticles) Key() string {
	k := "new:" + r.Group + ":" + strconv.FormatInt(r.Since, 10) + ":" + strconv.Itoa(r.Limit)
	if r.Until > 0 {
		k += ":until=" + strconv.FormatInt(r.Until, 10)
	}
	return k
}
