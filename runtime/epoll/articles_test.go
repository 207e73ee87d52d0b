//go:build linux

package epoll

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/newsflow/newsflow/machine/feed"
	"github.com/newsflow/newsflow/runtime/driver"
)

// stored is an article to feed, in the spool's wire form.
type stored struct {
	feed.Article
	wire []byte
}

// makeArticles builds n articles of about size bytes each (at least a
// header), with lines that need dot-stuffing. The text depends only on
// prefix, n and size.
func makeArticles(prefix string, n, size int) []stored {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .-_"
	out := make([]stored, n)
	for i := range out {
		id := fmt.Sprintf("<%s-%d@newsflow.invalid>", prefix, i)
		var b strings.Builder
		fmt.Fprintf(&b, "Path: upstream.invalid!not-for-mail\r\n"+
			"From: Feeder <feeder@example.invalid>\r\n"+
			"Newsgroups: local.test\r\n"+
			"Subject: %s %d\r\n"+
			"Date: Mon, 01 Jan 2024 00:00:00 +0000\r\n"+
			"Message-ID: %s\r\n\r\n"+
			"..a line that starts with a dot\r\n", prefix, i, id)
		line := make([]byte, 76)
		for b.Len() < size {
			for k := range line {
				line[k] = alphabet[rng.IntN(len(alphabet))]
			}
			if line[0] == '.' {
				b.WriteByte('.')
			}
			b.Write(line)
			b.WriteString("\r\n")
		}
		b.WriteString(".\r\n")
		wire := []byte(b.String())
		out[i] = stored{
			Article: feed.Article{Token: fmt.Sprintf("@%s%d@", prefix, i), MessageID: id, Size: int64(len(wire))},
			wire:    wire,
		}
	}
	return out
}

// bodyMap is a machine.BodySource over a map.
type bodyMap map[string][]byte

func (b bodyMap) Body(token string) ([]byte, error) {
	body, ok := b[token]
	if !ok {
		return nil, fmt.Errorf("no article %s", token)
	}
	return body, nil
}

func bodiesOf(arts []stored) bodyMap {
	m := bodyMap{}
	for _, a := range arts {
		m[a.Token] = a.wire
	}
	return m
}

// fileStore keeps articles in one file, like a spool segment: it is a
// machine.BodySource, a FileBodySource (for this runtime's sendfile), a
// drive.BodyWriter (sendfile through the net.Conn's descriptor) and a
// drive.BodyAppender (one pread) told first which articles a write will
// append (drive.BodyPlanner), as runtime/newsfeed's spool source is.
type fileStore struct {
	f        *os.File
	fd       int
	at       map[string][2]int64 // token -> offset, length
	opened   atomic.Int64        // BodyFile calls
	released atomic.Int64        // release calls
	written  atomic.Int64        // WriteBody calls
	appended atomic.Int64        // AppendBody calls

	mu        sync.Mutex
	planned   map[string]bool // tokens named by PlanBodies
	unplanned int             // AppendBody calls for a token PlanBodies did not name
}

// PlanBodies notes the tokens, for AppendBody to check.
func (s *fileStore) PlanBodies(tokens []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.planned == nil {
		s.planned = map[string]bool{}
	}
	for _, t := range tokens {
		s.planned[t] = true
	}
}

// AppendBody appends the article with one pread.
func (s *fileStore) AppendBody(dst []byte, token string, size int64) ([]byte, error) {
	s.appended.Add(1)
	s.mu.Lock()
	if !s.planned[token] && size <= driver.SmallBody {
		s.unplanned++
	}
	s.mu.Unlock()
	r, ok := s.at[token]
	if !ok {
		return dst, fmt.Errorf("no article %s", token)
	}
	n := len(dst)
	dst = append(dst, make([]byte, r[1])...)
	if _, err := s.f.ReadAt(dst[n:], r[0]); err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// fileOnly is a fileStore without AppendBody: every article goes out by
// sendfile.
type fileOnly struct{ s *fileStore }

func (f fileOnly) Body(token string) ([]byte, error) { return f.s.Body(token) }
func (f fileOnly) BodyFile(token string) (int, int64, int64, func(), error) {
	return f.s.BodyFile(token)
}
func (f fileOnly) WriteBody(w io.Writer, token string, size int64) (int64, error) {
	return f.s.WriteBody(w, token, size)
}

func newFileStore(t testing.TB, arts []stored) *fileStore {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "segment"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s := &fileStore{f: f, at: map[string][2]int64{}}
	// Something before the first article, so offsets are never 0.
	off := int64(4096)
	for _, a := range arts {
		if _, err := f.WriteAt(a.wire, off); err != nil {
			t.Fatal(err)
		}
		s.at[a.Token] = [2]int64{off, int64(len(a.wire))}
		off += int64(len(a.wire)) + 17
	}
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(fd uintptr) { s.fd = int(fd) })
	return s
}

func (s *fileStore) Body(token string) ([]byte, error) {
	r, ok := s.at[token]
	if !ok {
		return nil, fmt.Errorf("no article %s", token)
	}
	b := make([]byte, r[1])
	_, err := s.f.ReadAt(b, r[0])
	return b, err
}

func (s *fileStore) BodyFile(token string) (int, int64, int64, func(), error) {
	r, ok := s.at[token]
	if !ok {
		return -1, 0, 0, nil, fmt.Errorf("no article %s", token)
	}
	s.opened.Add(1)
	return s.fd, r[0], r[1], func() { s.released.Add(1) }, nil
}

// WriteBody sends the article with sendfile on w's descriptor, waiting
// through EAGAIN with Go's poller (as spoolfs.Section.SendTo does).
func (s *fileStore) WriteBody(w io.Writer, token string, size int64) (int64, error) {
	s.written.Add(1)
	r, ok := s.at[token]
	if !ok {
		return 0, fmt.Errorf("no article %s", token)
	}
	sc, ok := w.(syscall.Conn)
	if !ok {
		return io.Copy(w, io.NewSectionReader(s.f, r[0], r[1]))
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	off, end := r[0], r[0]+r[1]
	var serr error
	err = raw.Write(func(out uintptr) bool {
		for off < end {
			n, err := unix.Sendfile(int(out), s.fd, &off, int(end-off))
			switch err {
			case nil:
				if n == 0 {
					serr = io.ErrUnexpectedEOF
					return true
				}
			case unix.EAGAIN:
				return false
			case unix.EINTR:
			default:
				serr = err
				return true
			}
		}
		return true
	})
	if err == nil {
		err = serr
	}
	return off - r[0], err
}
