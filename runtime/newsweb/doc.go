// Package newsweb is newsweb's core: the NNTP service layer and the HTTP
// side over it.
//
// # The NNTP service layer (service.go, federated.go, conn.go, cache.go, refresh.go)
//
// A per-server Service with a pool of persistent worker connections fed
// by priority queues, and a Federated service over several servers with caches,
// request coalescing, incremental thread-list updates and activity-driven
// background refresh. The decisions (which request next, when a refresh is
// due, how threads are built) are machine/reader's; this package owns the
// goroutines, sockets, clocks and maps.
//
// A page asks the Federated service (Groups, Threads, Thread, Article,
// GroupStats). It first looks in its caches; on a miss it coalesces
// concurrent identical asks with singleflight, so one fetch answers them
// all, and tries the servers in priority order: an error or an unreachable
// server moves on to the next, "no such article/group" too (another server
// may carry it), and only when every server failed does the caller get
// ErrUnavailable (the web layer's 502).
//
// Each server is a Service. Service.Do coalesces once more per server with
// machine/reader's Coalescer (a pending request expires after the request
// timeout, after which a new ask leads a fresh request) and queues the
// request in machine/reader's Scheduler: three bounded queues High, Normal
// and Low. A fixed pool of workers, each owning one persistent NNTP
// connection (handshake, then machine/reader's Client driven by
// runtime/goroutine), takes the next request with Scheduler.PickAged and the
// worker's own aging clock (a worker that ran no Low request for
// priority_aging runs one first). A connection that fails under a request
// is dropped and the request tried once more on a fresh one.
//
// Connections try TLS first: implicit TLS for nntps:// servers, STARTTLS
// when offered for nntp:// ones. With credentials configured TLS is
// required; without, a failed or absent TLS falls back to plain TCP. Every
// connection logs which transport it got.
//
// The thread list of a group is cached with its high-water mark and the
// server it came from (article numbers are per server). A cache hit runs an
// incremental update first: OVER/HDR from the mark up only, at most once a
// second per group (Debouncer), coalesced, at Low priority, and waited for
// at most IncrementalWait before the cached list is served as it is. The
// background refresher (refresh.go) drives machine/reader's Refresher: every
// thread request marks its group active; each active group gets a task that
// runs the same incremental update every RefreshPeriod(rate), and stops when
// the group has been quiet for the activity window.
//
// # The HTTP side (web.go, handlers.go, view.go, templates.go, display.go)
//
// newsweb's HTTP side is server-rendered HTML pages (group
// list, a group's threads, a thread as a tree, an article) that need no
// JavaScript, and a JSON API, over a Federated service.
//
// Every route is a function from the request to a rendered response (status,
// body, content type, cache lifetime) or an error. One wrapper, respond,
// does the rest for all of them: a deadline for the work (Options.Timeout),
// the mapping of errors to statuses (ErrBadRequest 400,
// ErrNotFound 404, ErrUnavailable 502, a deadline 504), an
// ETag over the body with 304 on a matching If-None-Match, Cache-Control, and
// metrics. Pages are rendered into a buffer before anything is written, so a
// failure never leaves half a page.
//
// Safety: article text reaches the page only through html/template, as
// text; nothing from an article is ever emitted as markup, and the
// Content-Security-Policy allows no script at all and no style but the
// page's own (by hash), so even a template mistake could not run code.
// Requests are bounded: GET and HEAD only (the mux answers 405), a 1 KiB
// body limit, a URL length limit, and http.Server timeouts (NewHTTPServer).
//
// Serving: a Front takes the listener's connections and answers plain
// HTTP/1.1 GET and HEAD requests itself (a cached page's headers appended
// as strings, one write an answer), under the same http.Server's timeouts
// and header limit; any other request hands its connection to that
// http.Server (front.go).
package newsweb
