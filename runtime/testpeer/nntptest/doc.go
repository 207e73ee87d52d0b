// Package nntptest runs a real NNTP server on 127.0.0.1 for tests of
// newsflow's clients: a reader (RFC 3977 with AUTHINFO, STARTTLS and the
// LIST variants), a streaming peer (RFC 4644 MODE STREAM, CHECK, TAKETHIS,
// and IHAVE) and a fault injector, which records every command it receives.
//
// # Theory of operation
//
// New listens on a kernel-chosen loopback port and serves each connection on
// its own goroutine: read a command line, parse it with proto.ParseCommand,
// record it, find the fault (if any) that matches it, run the command's
// handler against the shared store, and write the response, built with
// proto.AppendResponse and proto.AppendBlock. One command is handled at a
// time per connection; pipelined commands (CHECK, TAKETHIS) wait in the read
// buffer, and responses are flushed whenever no more input is buffered.
// Articles after TAKETHIS, IHAVE and POST are read with proto.BlockDecoder.
//
// Everything a test sets up or inspects goes through the Server's methods,
// which share one mutex with the connections, so groups, articles, the
// streaming Rule and faults can change while clients are connected.
//
// # A reader
//
//	s := nntptest.Start(t, nntptest.Options{})
//	s.AddGroup(nntptest.Group{Name: "misc.test", Description: "Testing"})
//	s.AddArticle(nntptest.NewArticle("<a@example>", "misc.test", "hello", []byte("body\n")))
//	// dial s.HostPort(): GROUP misc.test -> "211 1 1 1 misc.test"
//
// Articles are bytes: Raw holds header, empty line and body in native (LF)
// or wire (CRLF) form, so a body can be yEnc. Numbers come from the
// Newsgroups field in order of addition, or from Article.Numbers.
//
// # A streaming peer
//
//	s := nntptest.Start(t, nntptest.Options{KeepReceived: true})
//	s.SetRule(nntptest.Verdicts(map[string]nntptest.Verdict{"<late@x>": nntptest.Defer}, nntptest.Want))
//	// ... run the feeder against s.HostPort() ...
//	s.AcceptedIDs()   // what got 239/235, in order
//	s.Transfers()     // every article received, bytes as sent, dot-unstuffed
//	s.Count("CHECK")  // how many CHECK commands arrived
//
// # Faults
//
//	s.AddFault(nntptest.Fault{Cmd: "BODY", Nth: 2, CloseAfter: 100})     // cut the 2nd BODY
//	s.AddFault(nntptest.Fault{Cmd: "TAKETHIS", Code: 400, Close: true})  // peer goes away
//	s.AddFault(nntptest.Fault{Cmd: nntptest.Greeting, Code: 502, Close: true})
//	s.AddFault(nntptest.Fault{Cmd: "ARTICLE", Delay: 20 * time.Millisecond, Rate: 50000})
//
// # Playing a transcript
//
// ServeScript (and StartScript in tests) plays the server side of a
// machine/transcript session to one client and reports the first line where
// the client sent something else, as a *transcript.Divergence:
//
//	sc := nntptest.StartScript(t, "S: 200 ready\nC: QUIT\nS: 205 bye\nS! eof\n", nntptest.ScriptOptions{})
//	// run the client against sc.HostPort(); the test fails if it diverges
//
// Waiting for asynchronous clients is done with Await, never with sleeps:
//
//	s.Await(ctx, func() bool { return len(s.AcceptedIDs()) == 3 })
package nntptest
