package nntptest

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// handlers maps a command's full name or verb to its built-in behaviour.
var handlers map[string]func(*conn, proto.Command) []byte

func init() {
	handlers = map[string]func(*conn, proto.Command) []byte{
		"CAPABILITIES":      cmdCapabilities,
		"MODE READER":       cmdModeReader,
		"MODE STREAM":       cmdModeStream,
		"QUIT":              cmdQuit,
		"DATE":              cmdDate,
		"HELP":              cmdHelp,
		"AUTHINFO USER":     cmdAuthUser,
		"AUTHINFO PASS":     cmdAuthPass,
		"STARTTLS":          cmdStartTLS,
		"GROUP":             cmdGroup,
		"LISTGROUP":         cmdListGroup,
		"NEXT":              cmdNext,
		"LAST":              cmdLast,
		"ARTICLE":           cmdArticle,
		"HEAD":              cmdArticle,
		"BODY":              cmdArticle,
		"STAT":              cmdArticle,
		"OVER":              cmdOver,
		"XOVER":             cmdOver,
		"HDR":               cmdHdr,
		"XHDR":              cmdHdr,
		"LIST ACTIVE":       cmdListActive,
		"LIST NEWSGROUPS":   cmdListNewsgroups,
		"LIST OVERVIEW.FMT": cmdListOverviewFmt,
		"LIST HEADERS":      cmdListHeaders,
		"NEWNEWS":           cmdNewNews,
		"POST":              cmdPost,
		"IHAVE":             cmdIHave,
		"CHECK":             cmdCheck,
		"TAKETHIS":          cmdTakeThis,
	}
}

func syntax(usage string) []byte { return resp(proto.CodeSyntaxError, "Syntax: "+usage) }

// capabilities computes the CAPABILITIES list for the session's state
// (RFC 3977 §5.2; READER and MODE-READER are never listed together).
func (c *conn) capabilities() []string {
	o := c.s.opts
	caps := []string{"VERSION 2", "IMPLEMENTATION nntptest"}
	if o.Auth != nil && !c.authed {
		caps = append(caps, "AUTHINFO USER")
	}
	if o.TLS == StartTLS && !c.tls && !c.authed {
		caps = append(caps, "STARTTLS")
	}
	if o.Transit && !c.reader {
		caps = append(caps, "IHAVE", "MODE-READER")
		if !o.NoStreaming {
			caps = append(caps, "STREAMING")
		}
		return caps
	}
	caps = append(caps, "READER", "HDR", "LIST ACTIVE NEWSGROUPS OVERVIEW.FMT HEADERS", "NEWNEWS", "OVER MSGID")
	if !o.NoPosting {
		caps = append(caps, "POST")
	}
	caps = append(caps, "IHAVE")
	if !o.NoStreaming && !o.Transit {
		caps = append(caps, "STREAMING")
	}
	return caps
}

// RFC 3977 §5.2: CAPABILITIES.
func cmdCapabilities(c *conn, cmd proto.Command) []byte {
	if c.s.opts.NoCapabilities {
		return resp(proto.CodeUnknownCommand, "What?")
	}
	caps := c.s.opts.Capabilities
	if caps == nil {
		caps = c.capabilities()
	}
	var b []byte
	for _, l := range caps {
		b = append(b, l...)
		b = append(b, '\r', '\n')
	}
	return block(proto.CodeCapabilities, "Capability list:", b)
}

// RFC 3977 §5.3: MODE READER.
func cmdModeReader(c *conn, cmd proto.Command) []byte {
	c.reader = true
	if c.s.opts.NoPosting {
		return resp(proto.CodeNoPosting, "Posting prohibited")
	}
	return resp(proto.CodePostingOK, "Posting allowed")
}

// RFC 3977 §5.4: QUIT; the loop closes after the response.
func cmdQuit(c *conn, cmd proto.Command) []byte {
	return resp(proto.CodeClosing, "Bye")
}

// RFC 3977 §7.1: DATE.
func cmdDate(c *conn, cmd proto.Command) []byte {
	return resp(proto.CodeDate, c.s.now().UTC().Format("20060102150405"))
}

// RFC 3977 §7.2: HELP.
func cmdHelp(c *conn, cmd proto.Command) []byte {
	names := make([]string, 0, len(handlers))
	for n := range handlers {
		names = append(names, n)
	}
	slices.Sort(names)
	return block(proto.CodeHelp, "Commands understood:", []byte(strings.Join(names, "\r\n")+"\r\n"))
}

// RFC 4643 §2.3: AUTHINFO USER.
func cmdAuthUser(c *conn, cmd proto.Command) []byte {
	switch {
	case c.s.opts.Auth == nil:
		return resp(proto.CodeNotPermitted, "Authentication not available")
	case c.authed:
		return resp(proto.CodeNotPermitted, "Already authenticated")
	case len(cmd.Args) != 2:
		return syntax("AUTHINFO USER name")
	}
	c.user = cmd.Args[1]
	return resp(proto.CodePassRequired, "Password required")
}

// RFC 4643 §2.3: AUTHINFO PASS; 482 without a preceding USER.
func cmdAuthPass(c *conn, cmd proto.Command) []byte {
	a := c.s.opts.Auth
	switch {
	case a == nil:
		return resp(proto.CodeNotPermitted, "Authentication not available")
	case c.authed:
		return resp(proto.CodeNotPermitted, "Already authenticated")
	case len(cmd.Args) != 2:
		return syntax("AUTHINFO PASS password")
	case c.user == "":
		return resp(proto.CodeAuthOutOfOrder, "Authentication commands issued out of sequence")
	}
	user := c.user
	c.user = ""
	if user != a.User || cmd.Args[1] != a.Pass {
		return resp(proto.CodeAuthRejected, "Authentication failed")
	}
	c.authed = true
	return resp(proto.CodeAuthOK, "Authentication accepted")
}

// RFC 4642 §2: STARTTLS; the handshake starts after the 382 response.
func cmdStartTLS(c *conn, cmd proto.Command) []byte {
	switch {
	case c.s.opts.TLS != StartTLS:
		return resp(proto.CodeUnknownCommand, "What?")
	case c.tls || c.authed:
		return resp(proto.CodeNotPermitted, "Already using TLS or authenticated")
	}
	c.then = func() error {
		if c.w.Flush() != nil {
			return errClosing
		}
		tc := tls.Server(c.nc, c.s.tlsCfg)
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			c.s.logf("nntptest: conn %d: STARTTLS: %v", c.id, err)
			return errClosing
		}
		tc.SetDeadline(time.Time{})
		c.nc, c.tls = tc, true
		c.r = bufio.NewReaderSize(tc, 64<<10)
		c.w = bufio.NewWriterSize(tc, 64<<10)
		return nil
	}
	return resp(proto.CodeContinueTLS, "Begin TLS negotiation now")
}

// selectGroup makes g current with its first article (RFC 3977 §6.1.1).
func (c *conn) selectGroup(g *group) {
	c.group, c.current = g, 0
	if len(g.nums) > 0 {
		c.current = g.nums[0]
	}
}

func groupLine(g *group) string {
	count, low, high := g.marks()
	return fmt.Sprintf("%d %d %d %s", count, low, high, g.Name)
}

// RFC 3977 §6.1.1: GROUP.
func cmdGroup(c *conn, cmd proto.Command) []byte {
	if len(cmd.Args) != 1 {
		return syntax("GROUP newsgroup")
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	g := c.s.store.groups[cmd.Args[0]]
	if g == nil {
		return resp(proto.CodeNoSuchGroup, "No such group")
	}
	c.selectGroup(g)
	return resp(proto.CodeGroupSelected, groupLine(g))
}

// RFC 3977 §6.1.2: LISTGROUP [group [range]].
func cmdListGroup(c *conn, cmd proto.Command) []byte {
	if len(cmd.Args) > 2 {
		return syntax("LISTGROUP [newsgroup [range]]")
	}
	lo, hi := int64(1), int64(math.MaxInt64)
	if len(cmd.Args) == 2 {
		var ok bool
		if lo, hi, ok = parseRange(cmd.Args[1]); !ok {
			return syntax("LISTGROUP [newsgroup [range]]")
		}
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	g := c.group
	if len(cmd.Args) > 0 {
		if g = c.s.store.groups[cmd.Args[0]]; g == nil {
			return resp(proto.CodeNoSuchGroup, "No such group")
		}
	} else if g == nil {
		return resp(proto.CodeNoGroup, "No newsgroup selected")
	}
	c.selectGroup(g)
	var b []byte
	for _, n := range g.nums {
		if n >= lo && n <= hi {
			b = strconv.AppendInt(b, n, 10)
			b = append(b, '\r', '\n')
		}
	}
	return block(proto.CodeGroupSelected, groupLine(g)+" list follows", b)
}

// RFC 3977 §6.1.3-4: NEXT and LAST move the current article.
func cmdNext(c *conn, cmd proto.Command) []byte { return c.step(+1) }
func cmdLast(c *conn, cmd proto.Command) []byte { return c.step(-1) }

func (c *conn) step(dir int) []byte {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.group == nil {
		return resp(proto.CodeNoGroup, "No newsgroup selected")
	}
	if c.current == 0 {
		return resp(proto.CodeCurrentInvalid, "Current article number is invalid")
	}
	nums := c.group.nums
	i, found := slices.BinarySearch(nums, c.current)
	if dir > 0 {
		if found {
			i++
		}
		if i >= len(nums) {
			return resp(proto.CodeNoNext, "No next article")
		}
	} else {
		i--
		if i < 0 {
			return resp(proto.CodeNoPrev, "No previous article")
		}
	}
	c.current = nums[i]
	return resp(proto.CodeArticleExists, fmt.Sprintf("%d %s", c.current, c.group.arts[c.current].id))
}

// locate finds the article an ARTICLE/HEAD/BODY/STAT/OVER/HDR argument
// names (RFC 3977 §6.2): a message-id (number 0, current unchanged), a
// number in the current group (it becomes current), or none (the current
// article). s.mu must be held. On failure it returns the error response.
func (c *conn) locate(a string, hasArg bool) (*stored, int64, []byte) {
	if hasArg && proto.IsMessageIDArg(a) {
		art := c.s.store.byID[a]
		if art == nil {
			return nil, 0, resp(proto.CodeNoSuchID, "No such article")
		}
		return art, 0, nil
	}
	if c.group == nil {
		return nil, 0, resp(proto.CodeNoGroup, "No newsgroup selected")
	}
	n := c.current
	if hasArg {
		var err error
		if n, err = strconv.ParseInt(a, 10, 64); err != nil || n < 0 {
			return nil, 0, syntax("article number or message-id")
		}
		art := c.group.arts[n]
		if art == nil {
			return nil, 0, resp(proto.CodeNoSuchNumber, "No article with that number")
		}
		c.current = n
		return art, n, nil
	}
	art := c.group.arts[n]
	if n == 0 || art == nil {
		return nil, 0, resp(proto.CodeCurrentInvalid, "Current article number is invalid")
	}
	return art, n, nil
}

// RFC 3977 §6.2: ARTICLE, HEAD, BODY and STAT.
func cmdArticle(c *conn, cmd proto.Command) []byte {
	if len(cmd.Args) > 1 {
		return syntax(cmd.Verb + " [message-id|number]")
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	art, n, r := c.locate(arg(cmd, 0), len(cmd.Args) == 1)
	if r != nil {
		return r
	}
	text := fmt.Sprintf("%d %s", n, art.id)
	switch cmd.Verb {
	case "ARTICLE":
		return block(proto.CodeArticleFollows, text, art.wire)
	case "HEAD":
		return block(proto.CodeHeadFollows, text, art.header())
	case "BODY":
		return block(proto.CodeBodyFollows, text, art.wire[art.body:])
	default:
		return resp(proto.CodeArticleExists, text)
	}
}

// target is one article an OVER or HDR command reports on.
type target struct {
	a *stored
	n int64
}

// targets resolves the range, message-id or current article argument of
// OVER and HDR (RFC 3977 §8.3, §8.5); s.mu must be held. An empty range
// draws 423 (RFC 3977 §8.3.2).
func (c *conn) targets(a string, hasArg bool, usage string) ([]target, []byte) {
	if !hasArg || proto.IsMessageIDArg(a) {
		art, n, r := c.locate(a, hasArg)
		if r != nil {
			return nil, r
		}
		return []target{{art, n}}, nil
	}
	lo, hi, ok := parseRange(a)
	if !ok {
		return nil, syntax(usage)
	}
	if c.group == nil {
		return nil, resp(proto.CodeNoGroup, "No newsgroup selected")
	}
	var out []target
	for _, n := range c.group.nums {
		if n >= lo && n <= hi {
			out = append(out, target{c.group.arts[n], n})
		}
	}
	if len(out) == 0 {
		return nil, resp(proto.CodeNoSuchNumber, "No articles in that range")
	}
	return out, nil
}

// RFC 3977 §8.3: OVER, and XOVER as deployed before it.
func cmdOver(c *conn, cmd proto.Command) []byte {
	usage := cmd.Verb + " [range|message-id]"
	if len(cmd.Args) > 1 {
		return syntax(usage)
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	ts, r := c.targets(arg(cmd, 0), len(cmd.Args) == 1, usage)
	if r != nil {
		return r
	}
	var b []byte
	for _, t := range ts {
		b = c.s.overview(b, t.a, t.n)
	}
	return block(proto.CodeOverFollows, "Overview information follows", b)
}

// RFC 3977 §8.5: HDR (225, "n value", an empty value when the field is
// absent), and XHDR as INN answers it (221, "(none)" when absent, the
// message-id in place of the number for the message-id form).
func cmdHdr(c *conn, cmd proto.Command) []byte {
	usage := cmd.Verb + " field [range|message-id]"
	if len(cmd.Args) < 1 || len(cmd.Args) > 2 {
		return syntax(usage)
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	a := arg(cmd, 1)
	ts, r := c.targets(a, len(cmd.Args) == 2, usage)
	if r != nil {
		return r
	}
	x := cmd.Verb == "XHDR"
	var b []byte
	for _, t := range ts {
		v, ok := c.s.headerValue(t.a, cmd.Args[0])
		if x && !ok {
			v = "(none)"
		}
		if !x {
			b = proto.AppendHdrLine(b, proto.HdrLine{Number: t.n, Value: v})
			continue
		}
		if proto.IsMessageIDArg(a) {
			b = append(b, t.a.id...)
		} else {
			b = strconv.AppendInt(b, t.n, 10)
		}
		b = append(b, ' ')
		b = appendClean(b, v)
		b = append(b, '\r', '\n')
	}
	if x {
		return block(proto.CodeHeadFollows, "Header follows", b)
	}
	return block(proto.CodeHdrFollows, "Headers follow", b)
}

// listGroups is LIST ACTIVE and LIST NEWSGROUPS: a line per group that the
// optional wildmat matches (RFC 3977 §7.6.3, §7.6.6), matched by
// proto.MatchWildmat like every other wildmat in newsflow.
func listGroups(c *conn, cmd proto.Command, line func(dst []byte, g *group) []byte) []byte {
	if len(cmd.Args) > 2 {
		return syntax("LIST " + cmd.Args[0] + " [wildmat]")
	}
	pat := arg(cmd, 1)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var b []byte
	for _, g := range c.s.store.sortedGroups() {
		if pat == "" || proto.MatchWildmat(pat, g.Name) {
			b = line(b, g)
		}
	}
	return block(proto.CodeListFollows, "List follows", b)
}

// RFC 3977 §7.6.3: LIST ACTIVE lines are "name high low status", zero-padded
// as INN writes them.
func cmdListActive(c *conn, cmd proto.Command) []byte {
	return listGroups(c, cmd, func(dst []byte, g *group) []byte {
		_, low, high := g.marks()
		st := g.Status
		if st == "" {
			st = proto.StatusPosting
		}
		return proto.AppendActiveLine(dst, proto.ActiveGroup{Name: g.Name, High: high, Low: low, Status: st})
	})
}

// RFC 3977 §7.6.6: LIST NEWSGROUPS lines are "name<TAB>description".
func cmdListNewsgroups(c *conn, cmd proto.Command) []byte {
	return listGroups(c, cmd, func(dst []byte, g *group) []byte {
		return proto.AppendNewsgroupsLine(dst, proto.GroupDescription{Name: g.Name, Description: g.Description})
	})
}

// RFC 3977 §8.4: LIST OVERVIEW.FMT.
func cmdListOverviewFmt(c *conn, cmd proto.Command) []byte {
	return block(proto.CodeListFollows, "Order of fields in overview database", overviewFmtLines())
}

// RFC 3977 §8.6: LIST HEADERS; ":" means HDR takes any field.
func cmdListHeaders(c *conn, cmd proto.Command) []byte {
	if len(cmd.Args) > 2 || (len(cmd.Args) == 2 && cmd.Args[1] != "MSGID" && cmd.Args[1] != "RANGE") {
		return syntax("LIST HEADERS [MSGID|RANGE]")
	}
	var b []byte
	for _, h := range []string{":", ":bytes", ":lines"} {
		b = proto.AppendListHeadersLine(b, h)
	}
	return block(proto.CodeListFollows, "Headers supported", b)
}

// RFC 3977 §7.4: NEWNEWS wildmat date time [GMT]: the message-ids of
// articles that arrived at or after the time in a group the wildmat matches.
func cmdNewNews(c *conn, cmd proto.Command) []byte {
	usage := "NEWNEWS wildmat yyyymmdd hhmmss [GMT]"
	if len(cmd.Args) < 3 || len(cmd.Args) > 4 || (len(cmd.Args) == 4 && cmd.Args[3] != "GMT") {
		return syntax(usage)
	}
	since, ok := parseDateTime(cmd.Args[1], cmd.Args[2], c.s.now())
	if !ok {
		return syntax(usage)
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var arts []*stored
	for _, a := range c.s.store.byID {
		if a.arrived.Before(since) {
			continue
		}
		for name := range a.numbers {
			if proto.MatchWildmat(cmd.Args[0], name) {
				arts = append(arts, a)
				break
			}
		}
	}
	slices.SortFunc(arts, func(x, y *stored) int {
		if d := x.arrived.Compare(y.arrived); d != 0 {
			return d
		}
		return strings.Compare(x.id, y.id)
	})
	var b []byte
	for _, a := range arts {
		b = append(b, a.id...)
		b = append(b, '\r', '\n')
	}
	return block(proto.CodeNewNewsFollows, "List of new articles follows", b)
}

// parseDateTime parses NEWNEWS's date (yyyymmdd, or yymmdd with RFC 3977
// §7.3's century rule) and time (hhmmss) in UTC.
func parseDateTime(date, clock string, now time.Time) (time.Time, bool) {
	if len(date) == 6 {
		yy, err := strconv.Atoi(date[:2])
		if err != nil {
			return time.Time{}, false
		}
		century := now.UTC().Year() / 100 * 100
		if yy > now.UTC().Year()%100 {
			century -= 100
		}
		date = strconv.Itoa(century+yy) + date[2:]
	}
	if len(date) != 8 || len(clock) != 6 {
		return time.Time{}, false
	}
	t, err := time.Parse("20060102150405", date+clock)
	return t, err == nil
}

// RFC 3977 §6.3.1: POST; 340 asks for the article, then 240 or 441.
// An article without a Message-ID gets one.
func cmdPost(c *conn, cmd proto.Command) []byte {
	if c.s.opts.NoPosting {
		return resp(proto.CodePostingDenied, "Posting not permitted")
	}
	c.then = func() error {
		art, err := c.readBlock()
		if err != nil {
			return errClosing
		}
		code, text, id := c.post(art)
		c.s.recordTransfer(Transfer{Conn: c.id, Cmd: "POST", MessageID: id, Article: art, Code: code})
		return c.write(resp(code, text))
	}
	return resp(proto.CodeSendPost, "Send article to be posted")
}

func (c *conn) post(art []byte) (code int, text, id string) {
	h, _, err := proto.ParseHeaders(art)
	if err != nil {
		return proto.CodePostingFailed, "Posting failed: " + oneLine(err.Error()), ""
	}
	raw := art
	id = h.Get("Message-ID")
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if id == "" {
		id = fmt.Sprintf("<post.%d.%d@%s>", c.id, len(c.s.xfers)+1, c.s.hostname)
		eol := "\n"
		if bytes.Contains(art, []byte("\r\n")) {
			eol = "\r\n"
		}
		raw = append([]byte("Message-ID: "+id+eol), art...)
	}
	exists := false
	for _, name := range strings.Split(h.Get("Newsgroups"), ",") {
		if c.s.store.groups[strings.TrimSpace(name)] != nil {
			exists = true
		}
	}
	if !exists {
		return proto.CodePostingFailed, "Posting failed: no existing group in Newsgroups", id
	}
	if _, err := c.s.store.add(Article{MessageID: id, Raw: raw}, c.s.now()); err != nil {
		return proto.CodePostingFailed, "Posting failed: " + oneLine(err.Error()), id
	}
	return proto.CodePosted, "Article received OK", id
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// parseRange parses an article range (RFC 3977 §4.1 range: "n", "n-", "n-m").
func parseRange(s string) (lo, hi int64, ok bool) {
	num := func(t string) (int64, bool) {
		if t == "" || len(t) > 18 {
			return 0, false
		}
		var n int64
		for i := 0; i < len(t); i++ {
			if t[i] < '0' || t[i] > '9' {
				return 0, false
			}
			n = n*10 + int64(t[i]-'0')
		}
		return n, true
	}
	a, b, dash := strings.Cut(s, "-")
	if lo, ok = num(a); !ok {
		return 0, 0, false
	}
	switch {
	case !dash:
		return lo, lo, true
	case b == "":
		return lo, math.MaxInt64, true
	}
	if hi, ok = num(b); !ok {
		return 0, 0, false
	}
	return lo, hi, true
}
