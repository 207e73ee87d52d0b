package newsfeed

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ArticleLogLine is one event read from the article log: an arrival (Who
// "ingest" or "inject"), a peer's answer (Who "peer=NAME"), or a stats
// record (Who "stats", MessageID "*", Verdict "peer" or "relay").
type ArticleLogLine struct {
	Time time.Time
	// Untimed: the line gives a peer's answer but not when it came (an
	// answer on the article's arrival line); Time is the arrival's.
	Untimed   bool
	MessageID string
	Who       string
	Verdict   string
	Fields    map[string]string
}

// Peer is the peer a line is about, "" for an arrival line.
func (l ArticleLogLine) Peer() string {
	name, ok := strings.CutPrefix(l.Who, "peer=")
	if !ok {
		return ""
	}
	return name
}

// The verdicts and their one-character form on the log's lines.
var (
	verdictChars = map[string]byte{"accepted": '+', "refused": '=', "rejected": '-', "deferred": 'd',
		"missing": 'm', "too_old": 'o', "queued": 'q'}
	charVerdicts = map[byte]string{'+': "accepted", '=': "refused", '-': "rejected", 'd': "deferred",
		'm': "missing", 'o': "too_old", 'q': "queued"}
)

// verdictChar is a verdict's character; '?' for one the log does not know.
func verdictChar(v string) byte {
	if c, ok := verdictChars[v]; ok {
		return c
	}
	return '?'
}

// ArticleLogReader decodes the article log's lines in the order of the
// file: a header line sets the date and the peer table of the lines after
// it.
type ArticleLogReader struct {
	day   time.Time
	dayOK bool
	peers []string
}

// Line decodes one line (with or without its newline) into its events:
// an article line gives its arrival and one answer per peer it was queued
// for; a header line gives none.
func (r *ArticleLogReader) Line(s string) ([]ArticleLogLine, error) {
	s = strings.TrimRight(s, "\r\n")
	if rest, ok := strings.CutPrefix(s, "* "); ok {
		date, kv, _ := strings.Cut(rest, " ")
		d, err := time.Parse("2006-01-02", date)
		if err != nil {
			return nil, fmt.Errorf("article log: header: %w", err)
		}
		fields, err := parseLogFields(kv)
		if err != nil {
			return nil, err
		}
		r.day, r.dayOK, r.peers = d, true, nil
		if p := fields["peers"]; p != "" {
			r.peers = strings.Split(p, ",")
		}
		return nil, nil
	}
	if !r.dayOK {
		return nil, fmt.Errorf("article log: a line before the first header: %q", s)
	}
	f := strings.SplitN(s, " ", 5)
	if len(f) < 4 {
		return nil, fmt.Errorf("article log: %d fields, want at least 4: %q", len(f), s)
	}
	tod, err := time.Parse("15:04:05.000", f[0])
	if err != nil {
		return nil, fmt.Errorf("article log: time: %w", err)
	}
	at := r.day.Add(time.Duration(tod.Hour())*time.Hour + time.Duration(tod.Minute())*time.Minute +
		time.Duration(tod.Second())*time.Second + time.Duration(tod.Nanosecond()))
	id, who, v := f[1], f[2], f[3]
	rest := ""
	if len(f) == 5 {
		rest = f[4]
	}
	if id == "*" {
		if who != "stats" {
			return nil, fmt.Errorf("article log: %q is not a stats line", s)
		}
		fields, err := parseLogFields(rest)
		if err != nil {
			return nil, err
		}
		return []ArticleLogLine{{Time: at, MessageID: id, Who: who, Verdict: v, Fields: fields}}, nil
	}
	if len(id) < 3 || id[0] != '<' || id[len(id)-1] != '>' {
		return nil, fmt.Errorf("article log: bad message-id %q", id)
	}
	if len(v) != 1 {
		return nil, fmt.Errorf("article log: bad verdict %q", v)
	}
	verdict, ok := charVerdicts[v[0]]
	if !ok {
		return nil, fmt.Errorf("article log: bad verdict %q", v)
	}
	if peer, ok := strings.CutPrefix(who, ">"); ok {
		if !validPeerName(peer) {
			return nil, fmt.Errorf("article log: bad peer %q", peer)
		}
		fields, err := parseLogFields(rest)
		if err != nil {
			return nil, err
		}
		return []ArticleLogLine{{Time: at, MessageID: id, Who: "peer=" + peer, Verdict: verdict, Fields: fields}}, nil
	}
	arrival := ArticleLogLine{Time: at, MessageID: id, Who: "ingest", Verdict: verdict, Fields: map[string]string{"from": who}}
	if who == "inject" {
		arrival.Who = "inject"
	}
	if verdict != "accepted" {
		fields, err := parseLogFields(rest)
		if err != nil {
			return nil, err
		}
		for k, v := range fields {
			arrival.Fields[k] = v
		}
		return []ArticleLogLine{arrival}, nil
	}
	size, answers, _ := strings.Cut(rest, " ")
	if _, err := strconv.ParseInt(size, 10, 64); err != nil && size != "" {
		return nil, fmt.Errorf("article log: bad size %q", size)
	}
	arrival.Fields["size"] = size
	if len(answers) > len(r.peers) {
		return nil, fmt.Errorf("article log: %d answers for a table of %d peers", len(answers), len(r.peers))
	}
	out := []ArticleLogLine{arrival}
	var names []string
	for i := 0; i < len(answers); i++ {
		if answers[i] == '.' {
			continue
		}
		verdict, ok := charVerdicts[answers[i]]
		if !ok {
			return nil, fmt.Errorf("article log: bad answer %q", answers[i])
		}
		names = append(names, r.peers[i])
		out = append(out, ArticleLogLine{Time: at, Untimed: true, MessageID: id, Who: "peer=" + r.peers[i], Verdict: verdict, Fields: map[string]string{}})
	}
	out[0].Fields["peers"] = strings.Join(names, ",")
	return out, nil
}

// parseLogFields reads key=value pairs; a quoted value is a Go string.
func parseLogFields(rest string) (map[string]string, error) {
	fields := map[string]string{}
	for rest != "" {
		k, v, ok := strings.Cut(rest, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \"") {
			return nil, fmt.Errorf("article log: bad field at %q", rest)
		}
		rest = v
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("article log: %s: %w", k, err)
			}
			v, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
			rest = " " + rest
		}
		fields[k] = v
		if rest != "" && rest[0] != ' ' {
			return nil, fmt.Errorf("article log: %s: no space after the value", k)
		}
		rest = strings.TrimPrefix(rest, " ")
	}
	return fields, nil
}

// appendHeader formats a header line: the date and the peer table.
func appendHeader(b []byte, day string, peers []string) []byte {
	b = append(b, "* "...)
	b = append(b, day...)
	b = append(b, " peers="...)
	b = append(b, strings.Join(peers, ",")...)
	return append(b, '\n')
}

func appendTimeOfDay(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, "15:04:05.000")
}

// appendArticleLine formats an article line: arrival time, id, feeder,
// "+", size and the answers (trailing dots left out).
func appendArticleLine(b []byte, at time.Time, id, from, size string, ans []byte) []byte {
	b = appendTimeOfDay(b, at)
	b = append(b, ' ')
	b = append(b, id...)
	b = append(b, ' ')
	b = append(b, from...)
	b = append(b, " + "...)
	b = append(b, size...)
	n := len(ans)
	for n > 0 && ans[n-1] == '.' {
		n--
	}
	if n > 0 {
		b = append(b, ' ')
		b = append(b, ans[:n]...)
	}
	return append(b, '\n')
}

// appendEventLine formats any other line: time, id, who, the verdict's
// character (or the stats kind), then key=value pairs; empty values are
// left out.
func appendEventLine(b []byte, at time.Time, id, who string, v any, kv ...string) []byte {
	b = appendTimeOfDay(b, at)
	b = append(b, ' ')
	b = append(b, id...)
	b = append(b, ' ')
	b = append(b, who...)
	b = append(b, ' ')
	switch v := v.(type) {
	case byte:
		b = append(b, v)
	case string:
		b = append(b, v...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if v == "" {
			continue
		}
		b = append(b, ' ')
		b = append(b, kv[i]...)
		b = append(b, '=')
		if strings.ContainsAny(v, " \"\\\r\n\t") || !strconv.IsPrint(rune(v[0])) {
			b = strconv.AppendQuote(b, v)
		} else {
			b = append(b, v...)
		}
	}
	return append(b, '\n')
}
