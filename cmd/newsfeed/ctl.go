package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
)

// onSignal calls do on each sig until the returned function is called:
// SIGHUP reloads the configuration, SIGUSR1 reopens the log files (each
// logs what it did, or why not).
func onSignal(sig os.Signal, do func()) func() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sig)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				do()
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}

// ctlVerbs are the control commands, and whether each names a peer.
var ctlVerbs = map[string]bool{"pause": true, "resume": true, "kick": true, "flush": true, "drop": true, "reload": false, "reopen": false}

func ctlUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: newsfeed ctl [-config FILE] [-admin ADDR] [-token FILE] pause PEER | resume PEER | kick PEER | flush PEER | drop PEER | reload | reopen")
}

// ctl sends a control command to the running relay's admin listener.
func ctl(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsfeed ctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `file` of the running relay (its admin address and spool, where the token is)")
	admin := fs.String("admin", "", "admin listener `host:port` (overrides the configuration's)")
	token := fs.String("token", "", "control token `file` (default: ctl.token in the configuration's spool)")
	fs.Usage = func() { ctlUsage(stderr); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	verb := fs.Arg(0)
	wantPeer, ok := ctlVerbs[verb]
	switch {
	case !ok && (verb == "status" || verb == "trace" || verb == "report"):
		fmt.Fprintf(stderr, "newsfeed ctl: %s is not a control command: run newsfeed %s\n", verb, verb)
		ctlUsage(stderr)
		return 2
	case !ok && verb != "":
		fmt.Fprintf(stderr, "newsfeed ctl: unknown command %q\n", verb)
		ctlUsage(stderr)
		return 2
	case !ok || (wantPeer && fs.NArg() != 2) || (!wantPeer && fs.NArg() != 1):
		if wantPeer && fs.NArg() == 1 {
			fmt.Fprintf(stderr, "newsfeed ctl %s: name the peer\n", verb)
		}
		ctlUsage(stderr)
		return 2
	}
	if *admin == "" && verb == "reload" {
		// The file ctl reads is the one the relay would reload: a
		// mistake in it is the operator's to fix, and the relay is not
		// asked.
		if _, err := newsfeed.LoadConfig(*config); err != nil {
			fmt.Fprintf(stderr, "newsfeed ctl reload: %v\nnot reloaded: the relay was not asked and keeps its configuration; fix the file (newsfeed config -check FILE) and reload again\n", err)
			return 1
		}
	}
	path := "/ctl/" + verb
	if wantPeer {
		path += "?peer=" + url.QueryEscape(fs.Arg(1))
	}
	body, err := ctlRequest(*config, *admin, *token, http.MethodPost, path)
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed ctl %s: %v\n", verb, err)
		return 1
	}
	var ans struct {
		Message string `json:"message"`
	}
	json.Unmarshal(body, &ans)
	fmt.Fprintln(stdout, ans.Message)
	return 0
}

// ctlRequest sends one authenticated request to the admin listener and
// returns the answer's body; an answer other than 200 is an error with the
// relay's message.
func ctlRequest(config, admin, tokenFile, method, path string) ([]byte, error) {
	addr, cfg, err := adminAddr(config, admin)
	if err != nil {
		return nil, err
	}
	var tok string
	switch {
	case tokenFile != "":
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("control token: %w", err)
		}
		tok = strings.TrimSpace(string(b))
	case cfg != nil:
		if tok, err = newsfeed.ReadCtlToken(cfg.Spool); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("with -admin, give the token file with -token")
	}
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	client := &http.Client{Timeout: 2 * time.Minute} // a reload waits for connections to close
	resp, err := client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			return nil, errNoRelay(addr)
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var ans struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &ans) == nil && ans.Message != "" {
			return nil, errors.New(ans.Message)
		}
		return nil, fmt.Errorf("%s: %s: %s", addr, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// trace prints where an article went: from the running relay (history,
// article log, queues), or from the files when none runs.
func trace(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsfeed trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `file` (article_log, spool, peers)")
	asJSON := fs.Bool("json", false, "print the trace as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || !strings.HasPrefix(fs.Arg(0), "<") || !strings.HasSuffix(fs.Arg(0), ">") {
		fmt.Fprintln(stderr, "usage: newsfeed trace [-config FILE] [-json] '<MESSAGE-ID>'")
		return 2
	}
	id := fs.Arg(0)
	cfg, err := newsfeed.LoadConfig(*config)
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed trace: %v\n", err)
		return 2
	}
	var tr newsfeed.TraceResult
	body, err := ctlRequest(*config, "", "", http.MethodGet, "/ctl/trace?id="+url.QueryEscape(id))
	if err == nil {
		err = json.Unmarshal(body, &tr)
	} else {
		// No running relay (or no admin listener): the files alone.
		tr, err = newsfeed.TraceFiles(cfg, id)
	}
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed trace: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(tr)
		return 0
	}
	printTrace(stdout, tr)
	if traceUnknown(tr) {
		return 1
	}
	return 0
}

// traceUnknown reports whether nothing knows the traced article: not the
// history, the article log nor a peer's queue.
func traceUnknown(tr newsfeed.TraceResult) bool {
	known := slices.ContainsFunc(tr.Peers, func(p newsfeed.PeerTrace) bool { return p.Waiting != "" || p.Queued || len(p.Answers) > 0 })
	return len(tr.Events) == 0 && !known && tr.History != "stored" && tr.History != "pending" && tr.History != "rejected"
}

// printTrace prints the history's answer, then the arrivals and the
// peers' answers in time order (an answer the log gives without its time
// right after the arrival, marked so), then where unanswered copies wait.
func printTrace(w io.Writer, tr newsfeed.TraceResult) {
	const ts = "2006-01-02 15:04:05.000"
	fmt.Fprintf(w, "%s: history %s", tr.MessageID, tr.History)
	if !tr.Arrived.IsZero() {
		fmt.Fprintf(w, ", arrived %s, %d octets", tr.Arrived.UTC().Format(ts), tr.Size)
	}
	fmt.Fprintln(w)
	if tr.Log == "" {
		fmt.Fprintln(w, "no article_log configured: arrivals and answers are not known")
	}
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	for _, e := range tr.Events {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s %s from %s", e.Time.UTC().Format(ts), e.Who, e.Verdict, e.Fields["from"])
		if s := e.Fields["size"]; s != "" {
			fmt.Fprintf(&b, ", %s octets", s)
		}
		if p, ok := e.Fields["peers"]; ok {
			fmt.Fprintf(&b, ", queued for %q", p)
		}
		if r := e.Fields["reason"]; r != "" {
			fmt.Fprintf(&b, ": %s", r)
		}
		lines = append(lines, line{e.Time, b.String()})
	}
	for _, p := range tr.Peers {
		for _, a := range p.Answers {
			var b strings.Builder
			when := a.Time.UTC().Format(ts)
			if a.Untimed || a.Time.IsZero() {
				when = fmt.Sprintf("%-*s", len(ts), "time not recorded")
			}
			fmt.Fprintf(&b, "%s peer %s: %s", when, p.Name, a.Verdict)
			if c := a.Fields["code"]; c != "" {
				fmt.Fprintf(&b, " %s", c)
			}
			if r := a.Fields["reason"]; r != "" {
				fmt.Fprintf(&b, " %s", r)
			}
			lines = append(lines, line{a.Time, b.String()})
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	for _, l := range lines {
		fmt.Fprintln(w, l.text)
	}
	if traceUnknown(tr) && tr.Log != "" {
		// Nothing knows the article: a line per peer would only repeat it.
		fmt.Fprintf(w, "not in the article log nor in a peer's queue: never offered to this relay, or before the log's oldest file (%s)\n", tr.Log)
		return
	}
	for _, p := range tr.Peers {
		switch {
		case p.Waiting != "":
			fmt.Fprintf(w, "peer %s: waiting in %s\n", p.Name, p.Waiting)
		case len(p.Answers) == 0 && p.Queued:
			fmt.Fprintf(w, "peer %s: queued, no answer logged yet\n", p.Name)
		case len(p.Answers) == 0 && tr.Log != "":
			fmt.Fprintf(w, "peer %s: not sent (not routed to it, or before the log)\n", p.Name)
		}
	}
}
