package newsfeed

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The article log (article_log = "FILE"), like INN's news log: one line
// per article as it arrives, with its verdict, where it came from and the
// peers it is queued for, and one line per peer answer. It is what
// `newsfeed trace` reads to say when an article came, from whom, and what
// each peer said.
//
//	2026-11-24T01:06:45.123Z <id@host> ingest accepted from=192.0.2.7:4211 size=2013 peers=inn1,inn2
//	2026-11-24T01:06:45.125Z <id@host> ingest refused from=192.0.2.7:4211
//	2026-11-24T01:06:45.201Z <id@host> peer=inn1 accepted code=239
//
// Fields: the time (RFC 3339, UTC, milliseconds), the message-id, who
// ("ingest", "inject" or "peer=NAME"), the verdict (accepted, refused,
// rejected, deferred, missing), then key=value pairs; a value with a space
// or a quote is quoted (strconv.Quote). Lines go through a buffer flushed
// every second and at close, never fsynced: the log records, it does not
// carry, articles, and it stays off the group commit's path. The file is
// rotated when it passes article_log_max: FILE becomes FILE.1, FILE.1
// becomes FILE.2, and so on up to article_log_keep old files.

// Defaults of the article log.
const (
	DefaultArticleLogMax  = 100 << 20
	DefaultArticleLogKeep = 5
)

func (c *Config) articleLogDefaults() {
	if !c.Has("article_log_max") {
		c.ArticleLogMax = DefaultArticleLogMax
	}
	if !c.Has("article_log_keep") {
		c.ArticleLogKeep = DefaultArticleLogKeep
	}
}

func (c *Config) checkArticleLog() error {
	if c.ArticleLogKeep < 0 {
		return c.errAt("article_log_keep", "must not be negative")
	}
	if c.ArticleLog != "" && c.ArticleLogMax > 0 && c.ArticleLogMax < 4096 {
		return c.errAt("article_log_max", "%d octets is too small for a log (at least 4K, or 0 for no rotation)", c.ArticleLogMax)
	}
	return nil
}

// ArticleLogPath is the article log's file ("" when there is none).
func (c *Config) ArticleLogPath() string {
	if c.ArticleLog == "" || filepath.IsAbs(c.ArticleLog) {
		return c.ArticleLog
	}
	return filepath.Join(c.Spool, c.ArticleLog)
}

// ArticleLogLine is one parsed line of the article log.
type ArticleLogLine struct {
	Time      time.Time
	MessageID string
	Who       string // "ingest", "inject" or "peer=NAME"
	Verdict   string
	Fields    map[string]string
}

// Peer is the peer a line is about, "" for an arrival line.
func (l ArticleLogLine) Peer() string {
	name, _ := strings.CutPrefix(l.Who, "peer=")
	if name == l.Who {
		return ""
	}
	return name
}

// ParseArticleLogLine parses one line (without or with its newline).
func ParseArticleLogLine(s string) (ArticleLogLine, error) {
	s = strings.TrimRight(s, "\r\n")
	var l ArticleLogLine
	f := strings.SplitN(s, " ", 5)
	if len(f) < 4 {
		return l, fmt.Errorf("article log: %d fields, want at least 4: %q", len(f), s)
	}
	t, err := time.Parse(time.RFC3339Nano, f[0])
	if err != nil {
		return l, fmt.Errorf("article log: time: %w", err)
	}
	if len(f[1]) < 3 || f[1][0] != '<' || f[1][len(f[1])-1] != '>' {
		return l, fmt.Errorf("article log: bad message-id %q", f[1])
	}
	l = ArticleLogLine{Time: t, MessageID: f[1], Who: f[2], Verdict: f[3], Fields: map[string]string{}}
	rest := ""
	if len(f) == 5 {
		rest = f[4]
	}
	for rest != "" {
		k, v, ok := strings.Cut(rest, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \"") {
			return l, fmt.Errorf("article log: bad field at %q", rest)
		}
		rest = v
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return l, fmt.Errorf("article log: %s: %w", k, err)
			}
			v, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
			rest = " " + rest
		}
		l.Fields[k] = v
		if rest != "" && rest[0] != ' ' {
			return l, fmt.Errorf("article log: %s: no space after the value", k)
		}
		rest = strings.TrimPrefix(rest, " ")
	}
	return l, nil
}

// appendArticleLogLine formats a line; kv are key, value pairs.
func appendArticleLogLine(b []byte, now time.Time, id, who, verdict string, kv ...string) []byte {
	b = now.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, ' ')
	b = append(b, id...)
	b = append(b, ' ')
	b = append(b, who...)
	b = append(b, ' ')
	b = append(b, verdict...)
	for i := 0; i+1 < len(kv); i += 2 {
		b = append(b, ' ')
		b = append(b, kv[i]...)
		b = append(b, '=')
		if v := kv[i+1]; v == "" || strings.ContainsAny(v, " \"\\\r\n\t") || !strconv.IsPrint(rune(v[0])) {
			b = strconv.AppendQuote(b, v)
		} else {
			b = append(b, v...)
		}
	}
	return append(b, '\n')
}

// articleLog writes the article log.
type articleLog struct {
	path string
	max  int64
	keep int
	log  *slog.Logger

	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	size int64
	buf  []byte
	err  error // the first write error, logged once

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// openArticleLog opens (appends to) the log at path and starts its
// once-a-second flush.
func openArticleLog(path string, max int64, keep int, log *slog.Logger) (*articleLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("article log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("article log: %w", err)
	}
	a := &articleLog{path: path, max: max, keep: keep, log: log, f: f, w: bufio.NewWriterSize(f, 64<<10),
		size: st.Size(), stop: make(chan struct{}), done: make(chan struct{})}
	go a.flushLoop()
	return a, nil
}

// add writes one line (any goroutine).
func (a *articleLog) add(now time.Time, id, who, verdict string, kv ...string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return
	}
	a.buf = appendArticleLogLine(a.buf[:0], now, id, who, verdict, kv...)
	n, err := a.w.Write(a.buf)
	a.size += int64(n)
	a.failed(err)
	if a.max > 0 && a.size >= a.max {
		a.failed(a.rotateLocked())
	}
}

func (a *articleLog) failed(err error) {
	if err != nil && a.err == nil {
		a.err = err
		a.log.Error("article log: write failed; lines are being lost", "file", a.path, "err", err)
	}
}

// rotateLocked moves FILE to FILE.1 (FILE.1 to FILE.2, ...; the oldest
// beyond keep is removed) and starts a new FILE.
func (a *articleLog) rotateLocked() error {
	if err := a.w.Flush(); err != nil {
		return err
	}
	a.f.Close()
	a.f = nil
	if a.keep <= 0 {
		os.Remove(a.path)
	} else {
		os.Remove(fmt.Sprintf("%s.%d", a.path, a.keep))
		for i := a.keep - 1; i >= 1; i-- {
			os.Rename(fmt.Sprintf("%s.%d", a.path, i), fmt.Sprintf("%s.%d", a.path, i+1))
		}
		if err := os.Rename(a.path, a.path+".1"); err != nil {
			return fmt.Errorf("article log: rotate: %w", err)
		}
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("article log: rotate: %w", err)
	}
	a.f, a.size = f, 0
	a.w.Reset(f)
	return nil
}

// reopen writes what is buffered and opens the file by its name again,
// for a logrotate that moved it.
func (a *articleLog) reopen() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return a.err
	}
	if err := a.w.Flush(); err != nil {
		return err
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("article log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("article log: %w", err)
	}
	a.f.Close()
	a.f, a.size = f, st.Size()
	a.w.Reset(f)
	return nil
}

func (a *articleLog) flushLoop() {
	defer close(a.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.flush()
		}
	}
}

// flush writes the buffered lines to the file (not fsynced).
func (a *articleLog) flush() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f != nil {
		a.failed(a.w.Flush())
	}
}

// close flushes and closes the log.
func (a *articleLog) close() error {
	if a == nil {
		return nil
	}
	a.stopOnce.Do(func() { close(a.stop) })
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return a.err
	}
	err := errors.Join(a.w.Flush(), a.f.Close())
	a.f = nil
	return err
}

// articleLogFiles lists the log's files, newest first: FILE, FILE.1, ...
// (those that exist).
func articleLogFiles(path string, keep int) []string {
	var out []string
	for i := 0; i <= max(keep, 0)+1; i++ {
		name := path
		if i > 0 {
			name = fmt.Sprintf("%s.%d", path, i)
		}
		if _, err := os.Stat(name); err == nil {
			out = append(out, name)
		}
	}
	return out
}
