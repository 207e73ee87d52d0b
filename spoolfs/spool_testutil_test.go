package spoolfs

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// t0 is the arrival time tests start from; the spool never reads a clock for
// what it stores, so tests pass times in.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// wireArticle returns a deterministic wire-format article for msgid of about
// size bytes, with lines that need dot-stuffing, so a test can regenerate
// the exact bytes it expects from the id alone.
func wireArticle(msgid string, size int) []byte {
	h := fnv.New64a()
	io.WriteString(h, msgid)
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(size)))
	var native bytes.Buffer
	fmt.Fprintf(&native, "Path: test!not-for-mail\r\nFrom: t@example.invalid\r\nNewsgroups: test.spool\r\nSubject: %s\r\nMessage-ID: %s\r\n\r\n", msgid, msgid)
	for native.Len() < size {
		switch r.IntN(5) {
		case 0:
			native.WriteString(".dot-stuffed line\r\n")
		case 1:
			native.WriteString("\r\n")
		default:
			n := 10 + r.IntN(70)
			for i := 0; i < n; i++ {
				native.WriteByte(byte('a' + r.IntN(26)))
			}
			native.WriteString("\r\n")
		}
	}
	return stuff(native.Bytes())
}

// stuff dot-stuffs CRLF lines and terminates the block (RFC 3977 §3.1.1).
// It is written out here rather than taken from proto so that the spool's
// tests do not depend on the codec's.
func stuff(lines []byte) []byte {
	var out []byte
	for len(lines) > 0 {
		i := bytes.Index(lines, []byte("\r\n"))
		line := lines[:i+2]
		if line[0] == '.' {
			out = append(out, '.')
		}
		out = append(out, line...)
		lines = lines[i+2:]
	}
	return append(out, ".\r\n"...)
}

// testLog collects log records so tests can assert that corruption was
// reported.
type testLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *testLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *testLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// openT opens a spool in dir or fails the test.
func openT(t testing.TB, dir string, opts SpoolOptions) *Spool {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := OpenSpool(dir, opts)
	if err != nil {
		t.Fatalf("OpenSpool(%s): %v", dir, err)
	}
	return s
}

// putT stores an article or fails the test.
func putT(t testing.TB, s *Spool, msgid string, wire []byte, at time.Time) Token {
	t.Helper()
	tok, err := s.Put(msgid, wire, at)
	if err != nil {
		t.Fatalf("Put(%s): %v", msgid, err)
	}
	return tok
}

// abandon simulates kill -9: the descriptors and the lock are dropped with
// no flush, no sync and no checkpoint. What Put buffered in memory is lost,
// what was written to the kernel stays, as after a process crash.
func (s *Spool) abandon() {
	s.syncMu.Lock()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.closeFiles()
	s.syncMu.Unlock()
}

// flushT writes Put's buffer to the segment file without syncing.
func flushT(t testing.TB, s *Spool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.flushLocked(); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// copyTree copies the regular files of src into dst (one level of
// subdirectories, as a spool has).
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// quarantined lists the names in dir/quarantine.
func quarantined(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, quarantineDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// segFile is the path of segment num in dir.
func segFile(dir string, num uint32) string {
	return filepath.Join(dir, spoolDirName, fmt.Sprintf("%08x.seg", num))
}

// msgID returns a test message-id.
func msgID(prefix string, i int) string {
	return fmt.Sprintf("<%s.%d@test.example>", strings.ReplaceAll(prefix, " ", "_"), i)
}

// wantArticle fails the test unless tok holds exactly want.
func wantArticle(t testing.TB, s *Spool, what string, tok Token, want []byte) {
	t.Helper()
	got, err := s.Get(tok)
	if err != nil {
		t.Fatalf("%s: Get(%s): %v", what, tok, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: Get(%s) returned %d bytes that differ from the %d stored", what, tok, len(got), len(want))
	}
}
