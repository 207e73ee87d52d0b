package serve

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
)

// The daemon keeps its recent log in memory for the API: the last lines
// (mode=showlog) and the last warnings and errors (mode=warnings, the
// page). Both are bounded; the API key never appears in them.

const (
	maxLogLines = 2000
	maxWarnings = 100
)

// Warning is one of SABnzbd's warnings: its level word, the text, and
// when (Unix seconds).
type Warning struct {
	Type string `json:"type"` // WARNING or ERROR
	Text string `json:"text"`
	Time int64  `json:"time"`
}

// notWarnings are engine messages that stay in the log but are not
// warnings: those on each failed try of a server (the daemon's note on
// each change of a server's state, servers.go, is the warning instead),
// and those on missing articles and incomplete files, which a download
// that PAR2 repairs has routinely (the job's history says what became of
// them: repaired, or failed with the reason).
var notWarnings = map[string]bool{
	"connection failed": true, "server blocked": true, "server given up": true,
	"segment missing": true, "file incomplete": true,
	"more segments missing: listed in the .incomplete file, not one by one here": true,
}

// logRing holds the recent lines and warnings.
type logRing struct {
	mu       sync.Mutex
	lines    []string
	warnings []Warning
	secret   string // replaced in every line (the API key)
}

func (l *logRing) add(line string, r slog.Record) {
	if l.secret != "" {
		line = strings.ReplaceAll(line, l.secret, "<REMOVED>")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) >= maxLogLines {
		l.lines = append(l.lines[:0], l.lines[len(l.lines)-maxLogLines/2:]...)
	}
	l.lines = append(l.lines, line)
	if r.Level < slog.LevelWarn || notWarnings[r.Message] {
		return
	}
	// The warning is the message and its attributes, without the time
	// and level the line starts with.
	text := strings.TrimSpace(line)
	if i := strings.Index(text, "msg="); i >= 0 {
		text = text[i+len("msg="):]
		// A message with spaces is quoted; the warning shows it plain.
		if q, err := strconv.QuotedPrefix(text); err == nil {
			if m, err := strconv.Unquote(q); err == nil {
				text = m + text[len(q):]
			}
		}
	}
	w := Warning{Type: "WARNING", Text: text, Time: r.Time.Unix()}
	if r.Level >= slog.LevelError {
		w.Type = "ERROR"
	}
	if len(l.warnings) >= maxWarnings {
		l.warnings = l.warnings[1:]
	}
	l.warnings = append(l.warnings, w)
}

// snapshot returns copies of the lines and warnings.
func (l *logRing) snapshot() ([]string, []Warning) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...), append([]Warning{}, l.warnings...)
}

// warningCount is how many warnings there are.
func (l *logRing) warningCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.warnings)
}

func (l *logRing) clearWarnings() {
	l.mu.Lock()
	l.warnings = nil
	l.mu.Unlock()
}

// ringHandler passes records on to next and keeps them, as text, in ring.
type ringHandler struct {
	next slog.Handler
	ring *logRing
	text slog.Handler // formats into buf
	buf  *lockedBuf
}

// lockedBuf is the text handler's output, read back line by line.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) { return b.b.Write(p) }

func newRingHandler(next slog.Handler, ring *logRing) *ringHandler {
	buf := &lockedBuf{}
	return &ringHandler{next: next, ring: ring, buf: buf,
		text: slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo})}
}

func (h *ringHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *ringHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo {
		h.buf.mu.Lock()
		h.buf.b.Reset()
		h.text.Handle(ctx, r)
		line := h.buf.b.String()
		h.buf.mu.Unlock()
		h.ring.add(line, r)
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *ringHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &ringHandler{next: h.next.WithAttrs(as), ring: h.ring, text: h.text.WithAttrs(as), buf: h.buf}
}

func (h *ringHandler) WithGroup(name string) slog.Handler {
	return &ringHandler{next: h.next.WithGroup(name), ring: h.ring, text: h.text.WithGroup(name), buf: h.buf}
}
