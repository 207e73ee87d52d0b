package newsfeed

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/newsflow/newsflow/spoolfs"
)

// spoolBodies gives the feed runtime the stored articles it sends
// (machine.BodySource). Small articles it appends to the runtime's gather
// buffer (drive.BodyAppender, CRC checked), so they leave with the
// commands around them in one write; they are read through the
// connection's ReadAhead, one pread for a run of articles stored together
// (a replayed backlog is in that order). Large ones it writes itself
// (drive.BodyWriter): with sendfile(2) straight from the segment file
// when the connection is a plain TCP socket, by copying otherwise (TLS).
//
// An article that cannot be read (corrupt, gone) fails the connection's
// flush, since the feed machine already counts its command as sent. So
// that it does not fail every connection after that, its token is
// remembered in bad, and pull settles it as missing when it comes again.
type spoolBodies struct {
	s   *spoolfs.Spool
	ra  *spoolfs.ReadAhead // the connection's own; nil reads each article alone
	bad *badBodies
}

// badBodies is the set of tokens whose article could not be read for
// sending. It only grows; it holds damaged or vanished articles, which are
// rare.
type badBodies struct {
	log *slog.Logger
	n   atomic.Int64
	m   sync.Map // token -> struct{}
}

// add remembers token, logging why the first time.
func (b *badBodies) add(token string, err error) {
	if b == nil {
		return
	}
	if _, loaded := b.m.LoadOrStore(token, struct{}{}); !loaded {
		b.n.Add(1)
		if b.log != nil {
			b.log.Warn("stored article cannot be read; it will be settled as missing", "token", token, "err", err)
		}
	}
}

// has reports whether token is known to be unreadable (cheap while the
// set is empty).
func (b *badBodies) has(token string) bool {
	if b == nil || b.n.Load() == 0 {
		return false
	}
	_, ok := b.m.Load(token)
	return ok
}

// Body returns the wire article named by token.
func (b spoolBodies) Body(token string) ([]byte, error) {
	tok, err := spoolfs.ParseToken(token)
	if err != nil {
		return nil, err
	}
	body, err := b.s.Get(tok)
	if err != nil {
		b.bad.add(token, err)
	}
	return body, err
}

// AppendBody appends the wire article named by token, size bytes, to dst.
func (b spoolBodies) AppendBody(dst []byte, token string, size int64) ([]byte, error) {
	tok, err := spoolfs.ParseToken(token)
	if err != nil {
		b.bad.add(token, err)
		return dst, err
	}
	if int64(tok.Len) != size {
		err := fmt.Errorf("relay: token %s holds %d bytes, want %d", token, tok.Len, size)
		b.bad.add(token, err)
		return dst, err
	}
	var out []byte
	if b.ra != nil {
		out, err = b.ra.AppendArticle(dst, tok)
	} else {
		out, err = b.s.AppendArticle(dst, tok)
	}
	if err != nil {
		b.bad.add(token, err)
	}
	return out, err
}

// WriteBody writes the wire article named by token, size bytes, to w.
func (b spoolBodies) WriteBody(w io.Writer, token string, size int64) (int64, error) {
	tok, err := spoolfs.ParseToken(token)
	if err != nil {
		b.bad.add(token, err)
		return 0, err
	}
	if int64(tok.Len) != size {
		err := fmt.Errorf("relay: token %s holds %d bytes, want %d", token, tok.Len, size)
		b.bad.add(token, err)
		return 0, err
	}
	sec, err := b.s.Section(tok)
	if err != nil {
		b.bad.add(token, err)
		return 0, err
	}
	defer sec.Close()
	// Errors from here on are the connection's, not the article's.
	if sc, ok := w.(syscall.Conn); ok {
		return sec.SendTo(sc)
	}
	return io.Copy(w, sec.Reader())
}
