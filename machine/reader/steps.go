package reader

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// The answers of each step of a request (see the plans in client.go's theory
// of operation), read once connAnswer (answers.go) found none that concerns
// the connection.

// listAnswers finishes GetGroups: LIST ACTIVE merged with LIST NEWSGROUPS.
func (c *Client) listAnswers(as []answer) {
	active := as[0]
	if active.resp.Code != proto.CodeListFollows {
		c.failJob(refusal(active.cmd, active.resp), false)
		return
	}
	res := GroupsResult{ID: c.job.id}
	idx := make(map[string]int)
	for _, l := range lines(active.block) {
		g, err := proto.ParseActiveLine(l)
		if err != nil {
			res.Skipped++
			continue
		}
		if _, dup := idx[g.Name]; dup {
			continue
		}
		idx[g.Name] = len(res.Groups)
		res.Groups = append(res.Groups, GroupListing{Name: g.Name, High: g.High, Low: g.Low, Status: g.Status})
	}
	// RFC 3977 §7.6.6: a server without descriptions answers 503; the
	// list is still good.
	if len(as) > 1 && as[1].resp.Code == proto.CodeListFollows {
		for _, l := range lines(as[1].block) {
			d, err := proto.ParseNewsgroupsLine(l)
			if err != nil {
				continue
			}
			if i, ok := idx[d.Name]; ok && res.Groups[i].Description == "" {
				res.Groups[i].Description = d.Description
			}
		}
	}
	slices.SortFunc(res.Groups, func(a, b GroupListing) int { return strings.Compare(a.Name, b.Name) })
	c.finish(res)
}

// lines splits a decoded block into lines without their endings.
func lines(block []byte) [][]byte {
	var out [][]byte
	for len(block) > 0 {
		i := bytes.IndexByte(block, '\n')
		if i < 0 {
			out = append(out, block)
			break
		}
		out = append(out, bytes.TrimSuffix(block[:i], []byte("\r")))
		block = block[i+1:]
	}
	return out
}

// articleAnswer finishes GetArticle.
func (c *Client) articleAnswer(a answer) {
	r := c.job.req.(GetArticle)
	switch a.resp.Code {
	case proto.CodeArticleFollows:
		info, _ := proto.ParseArticleResponse(a.resp)
		c.finish(ArticleResult{ID: c.job.id, MessageID: r.MessageID, Number: info.Number, Raw: a.block})
	case proto.CodeNoSuchID, proto.CodeNoSuchNumber, proto.CodeSyntaxError:
		// RFC 3977 §6.2.1.2: 430, no article with that message-id. A 501
		// (RFC 3977 §3.2.1, syntax error) to a message-id we checked means
		// the server will not take that id: it has no such article either.
		c.finish(NotFound{ID: c.job.id, Req: c.job.req, Response: a.resp})
	default:
		c.failJob(refusal(a.cmd, a.resp), false)
	}
}

// groupAnswer takes the answer to GROUP.
func (c *Client) groupAnswer(now time.Time, a answer) {
	j := c.job
	switch a.resp.Code {
	case proto.CodeGroupSelected:
		info, err := proto.ParseGroupResponse(a.resp)
		if err != nil {
			c.failJob(fmt.Errorf("reader: GROUP %s: %w: %w", j.group, ErrProtocol, err), false)
			return
		}
		c.curGroup, c.curInfo, c.curAt = j.group, info, now
		if j.step == stGroup {
			j.info, j.haveInfo = info, true
		}
		c.advance(now)
	case proto.CodeNoSuchGroup:
		// RFC 3977 §6.1.1.2: 411, no such newsgroup.
		c.curGroup = ""
		c.finish(NotFound{ID: j.id, Req: j.req, Response: a.resp})
	default:
		c.failJob(refusal(a.cmd, a.resp), false)
	}
}

// hintAnswers takes LIST HEADERS and LIST OVERVIEW.FMT answers.
func (c *Client) hintAnswers(now time.Time, as []answer) {
	for _, a := range as {
		if a.resp.Code != proto.CodeListFollows {
			continue // unknown: the choice goes on without the hint
		}
		switch a.cmd.Name() {
		case "LIST HEADERS":
			hs := []string{}
			for _, l := range lines(a.block) {
				if h, err := proto.ParseListHeadersLine(l); err == nil {
					hs = append(hs, h)
				}
			}
			c.hints.Headers = hs
		case "LIST OVERVIEW.FMT":
			f, err := proto.ParseOverviewFmt(proto.PayloadLines(a.block))
			if err != nil {
				c.hints.BadOverviewFmt = true
			} else {
				c.hints.OverviewFmt = f
			}
		}
	}
	c.advance(now)
}

// emptyRange reports answers that mean "no articles there" (RFC 3977 §8.3.2:
// 423 for an empty range; 420 from older servers).
func emptyRange(code int) bool {
	return code == proto.CodeNoSuchNumber || code == proto.CodeCurrentInvalid || code == proto.CodeNoSuchID
}

// refuse demotes strategy s for the rest of the connection.
func (c *Client) refuse(s Strategy) {
	if !c.hints.refused(s) {
		c.hints.Refused = append(c.hints.Refused, s)
	}
}

// fetchAnswers takes the thread data of one batch.
func (c *Client) fetchAnswers(now time.Time, as []answer) {
	j := c.job
	if j.sums == nil {
		j.sums = make(map[int64]*Summary)
	}
	sum := func(n int64) *Summary {
		s := j.sums[n]
		if s == nil {
			s = &Summary{Number: n}
			j.sums[n] = s
		}
		return s
	}
	if j.used != StrategyHEAD {
		for _, a := range as {
			if refusedCode(a.resp.Code) {
				c.refuse(j.used)
				j.sums = nil
				c.advance(now)
				return
			}
		}
	}
	for i, a := range as {
		switch {
		case emptyRange(a.resp.Code):
			continue
		case j.used == StrategyHDR && (a.resp.Code == proto.CodeHdrFollows || a.resp.Code == proto.CodeHeadFollows):
			field := hdrFields[i]
			for _, l := range lines(a.block) {
				if len(l) > c.cfg.MaxOverviewLine {
					j.skipped++
					continue
				}
				h, err := proto.ParseHdrLine(l)
				if err != nil || h.Number < j.lo || h.Number > j.hi {
					j.skipped++
					continue
				}
				sum(h.Number).setField(field, h.Value)
			}
		case (j.used == StrategyOVER || j.used == StrategyXOVER) && a.resp.Code == proto.CodeOverFollows:
			for _, l := range lines(a.block) {
				if len(l) > c.cfg.MaxOverviewLine {
					j.skipped++
					continue
				}
				o, err := proto.ParseOverviewLine(l, c.hints.OverviewFmt)
				if err != nil || o.Number < j.lo || o.Number > j.hi {
					j.skipped++
					continue
				}
				s := SummaryFromOverview(o)
				j.sums[o.Number] = &s
			}
		case j.used == StrategyHEAD && a.resp.Code == proto.CodeHeadFollows:
			n := headNumber(a)
			h, _, err := proto.ParseHeaders(a.block)
			if err != nil {
				j.skipped++
				continue
			}
			s := SummaryFromHeader(n, h)
			j.sums[n] = &s
		default:
			c.failJob(refusal(a.cmd, a.resp), false)
			return
		}
	}
	if j.used == StrategyHEAD && j.next <= j.hi {
		c.advance(now)
		return
	}
	c.finishThreads()
}

// headNumber is the article number of a HEAD answer: from the 221 line, or
// the number asked for.
func headNumber(a answer) int64 {
	if info, err := proto.ParseArticleResponse(a.resp); err == nil && info.Number > 0 {
		return info.Number
	}
	if len(a.cmd.Args) > 0 {
		n, _ := strconv.ParseInt(a.cmd.Args[0], 10, 64)
		return n
	}
	return 0
}

// dateAnswer takes the Date of the newest article for GetGroupStats.
func (c *Client) dateAnswer(now time.Time, a answer) {
	j := c.job
	if refusedCode(a.resp.Code) && j.used != StrategyHEAD {
		c.refuse(j.used)
		c.advance(now)
		return
	}
	var best int64 = -1
	switch a.resp.Code {
	case proto.CodeHdrFollows:
		for _, l := range lines(a.block) {
			if h, err := proto.ParseHdrLine(l); err == nil && h.Number > best {
				if d := parseDate(h.Value); !d.IsZero() {
					best, j.date = h.Number, d
				}
			}
		}
	case proto.CodeOverFollows:
		for _, l := range lines(a.block) {
			if o, err := proto.ParseOverviewLine(l, c.hints.OverviewFmt); err == nil && o.Number > best {
				if d := parseDate(o.Date); !d.IsZero() {
					best, j.date = o.Number, d
				}
			}
		}
	case proto.CodeHeadFollows:
		if h, _, err := proto.ParseHeaders(a.block); err == nil {
			j.date = parseDate(h.Get(proto.HeaderDate))
		}
	}
	// Any other answer leaves the date unknown: the counts are still good.
	c.finishStats()
}

// finishStats answers GetGroupStats.
func (c *Client) finishStats() {
	j := c.job
	c.finish(StatsResult{ID: j.id, Group: j.group, Count: j.info.Count, Low: j.info.Low, High: j.info.High, LastDate: j.date})
}

// finishThreads answers GetThreads, GetNewArticles or GetThread.
func (c *Client) finishThreads() {
	j := c.job
	res := ThreadsResult{ID: j.id, Group: j.group, Since: j.since, Low: j.lo, High: j.hi,
		Truncated: j.truncated, Skipped: j.skipped}
	if j.hi < j.since {
		res.High = j.since
	}
	if len(j.sums) > 0 {
		res.Strategy = j.used
	}
	nums := slices.Sorted(maps.Keys(j.sums))
	for _, n := range nums {
		s := j.sums[n]
		if s.MessageID == "" {
			res.Skipped++ // nothing to thread it by
			continue
		}
		res.Articles = append(res.Articles, *s)
	}
	r, ok := j.req.(GetThread)
	if !ok {
		c.finish(res)
		return
	}
	forest := Thread(res.Articles)
	root, _ := Find(forest, r.MessageID)
	if root == nil {
		c.finish(NotFound{ID: j.id, Req: j.req})
		return
	}
	c.finish(ThreadResult{ID: j.id, Group: j.group, Root: root, High: res.High, Strategy: res.Strategy})
}

// postAnswer takes the answers of POST (RFC 3977 §6.3.1.2): 340 asks for
// the article, which goes out dot-stuffed as the second half of the same
// command; 240 to it is the PostResult. 440 (posting not permitted) to
// POST and 441 (posting failed) to the article fail the request with the
// server's reason in the error, for the reader to see; the connection
// goes on. 480 to either half is the connection's (answers.go): log in,
// then POST again.
func (c *Client) postAnswer(now time.Time, a answer) {
	j := c.job
	r := j.req.(PostArticle)
	switch {
	case j.step == stPost && a.resp.Code == proto.CodeSendPost:
		j.step = stPostBody
		c.out = proto.AppendBlock(c.out, r.Raw)
		c.batch = append(c.batch, sent{cmd: a.cmd, tag: tagJob})
		c.deadline = now.Add(c.cfg.Timeout)
	case j.step == stPostBody && a.resp.Code == proto.CodePosted:
		c.finish(PostResult{ID: j.id, MessageID: r.MessageID, Response: a.resp})
	case a.resp.Code == proto.CodePostingDenied:
		c.failJob(fmt.Errorf("reader: POST: %w: %q", ErrPostingDenied, a.resp.Text), false)
	case j.step == stPostBody && a.resp.Code == proto.CodePostingFailed:
		c.failJob(fmt.Errorf("reader: POST: %w: %q", ErrPostFailed, a.resp.Text), false)
	default:
		c.failJob(refusal(a.cmd, a.resp), false)
	}
}

// validPost checks a PostArticle: a sendable message-id, and an article
// that is CRLF throughout with a header and a body.
func validPost(r PostArticle) error {
	if err := proto.ValidNNTPMessageID(r.MessageID); err != nil {
		return err
	}
	if len(r.Raw) == 0 {
		return fmt.Errorf("empty article")
	}
	for i, b := range r.Raw {
		if (b == '\n' && (i == 0 || r.Raw[i-1] != '\r')) || (b == '\r' && (i+1 == len(r.Raw) || r.Raw[i+1] != '\n')) || b == 0 {
			return fmt.Errorf("article byte %d: bare CR, bare LF or NUL", i)
		}
	}
	if !bytes.Contains(r.Raw, []byte("\r\n\r\n")) {
		return fmt.Errorf("article has no empty line after its header")
	}
	return nil
}
