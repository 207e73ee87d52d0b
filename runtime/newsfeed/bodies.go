package newsfeed

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/newsflow/newsflow/spoolfs"
)

// spoolBodies gives the feed runtime the stored articles it sends
// (machine.BodySource). Small articles it appends to the runtime's gather
// buffer (drive.BodyAppender, CRC checked), so they leave with the
// commands around them in one write; they are read through the
// connection's ReadAhead, one pread for a run of articles stored together
// (a replayed backlog is in that order). Large ones it reads into a
// buffer it lends (BodyBuffer, for runtime/epoll) or writes itself
// (drive.BodyWriter, for runtime/goroutine): Spool.ReadArticle reads the
// article into a reused buffer and checks its CRC there, and the runtime
// writes that buffer. So every copy of an article that leaves, to every
// peer, is the bytes just checked: no window between check and send, and
// no damaged byte leaves.
//
// Before an article is offered, pull asks sendable: the spool must still
// hold it (Spool.Holds, no I/O) and it must be this article (the history
// names this copy, or else the record's header says so). Its bytes are
// checked when it is sent, as above. One that cannot be read or fails its
// CRC then fails the connection's flush, since the feed machine already
// counts its command as sent, before any byte of its body was written;
// its token is remembered in bad, pull settles it as missing when it comes
// again (reported once, forgotten by the history, so upstream may offer it
// again), and the error wraps errUnreadableBody so the connection comes
// back at once rather than after a longer backoff.
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

// errUnreadableBody marks a session that ended because an article could
// not be read: the article, not the peer, was at fault.
var errUnreadableBody = errors.New("stored article cannot be read")

// sendable reports whether the article id at tok can be offered: the
// spool holds it and it is this article (the history names this copy, or
// else the record's header says so). Its bytes are checked as it is sent
// (spoolBodies). One found bad by the send path is forgotten by the
// history here.
func (r *Relay) sendable(id, token string, tok spoolfs.Token) bool {
	if r.badBodies.has(token) {
		r.forgetLost(id, token) // found bad by the send path
		return false
	}
	if !r.spool.Holds(tok) {
		return false // expired or cut off: settled as missing, as ever
	}
	if e, ok := r.spool.History().Lookup(id); (!ok || e.Token != tok) && !r.spool.Matches(tok, id) {
		// The history no longer names this copy (the open found it cut
		// off and forgot it, or history expiry dropped the id) and the
		// record there is not this article: its offsets hold another
		// one by now.
		return false
	}
	return true
}

// lostArticle settles a stored article that cannot be read: reported
// once, counted, and forgotten by the history when the history still names
// this copy, so that upstream may offer it again.
func (r *Relay) lostArticle(id, token string, err error) {
	r.badBodies.add(token, err)
	r.forgetLost(id, token)
}

// forgetLost drops id from the history if the history still names the
// copy at token (once: after that it names none).
func (r *Relay) forgetLost(id, token string) {
	if e, ok := r.spool.History().Lookup(id); ok && e.Token.String() == token {
		if ferr := r.spool.Forget(id); ferr != nil {
			r.log.Error("cannot forget a lost article", "id", id, "err", ferr)
		}
		r.lostArticles.Add(1)
	}
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
		err = fmt.Errorf("%w: %w", errUnreadableBody, err)
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
		err = fmt.Errorf("%w: %w", errUnreadableBody, err)
	}
	return out, err
}

// articleBufs are the buffers large articles are read into for sending
// (*[]byte, reused whatever their length).
var articleBufs = sync.Pool{New: func() any { return new([]byte) }}

// BodyBuffer reads the wire article named by token, size bytes, into a
// pooled buffer and checks its CRC there (Spool.ReadArticle); the caller
// writes the returned bytes and then calls release once, after which it
// must not touch them (epoll.BufferBodySource). An article that cannot be
// read, or fails its check, is remembered in bad and the error wraps
// errUnreadableBody.
func (b spoolBodies) BodyBuffer(token string, size int64) (body []byte, release func(), err error) {
	tok, err := spoolfs.ParseToken(token)
	if err != nil {
		b.bad.add(token, err)
		return nil, nil, err
	}
	if int64(tok.Len) != size {
		err := fmt.Errorf("relay: token %s holds %d bytes, want %d", token, tok.Len, size)
		b.bad.add(token, err)
		return nil, nil, err
	}
	bp := articleBufs.Get().(*[]byte)
	body, err = b.s.ReadArticle(tok, *bp)
	if err != nil {
		articleBufs.Put(bp)
		b.bad.add(token, err)
		return nil, nil, fmt.Errorf("%w: %w", errUnreadableBody, err)
	}
	*bp = body[:0] // keep the array, grown if it was
	return body, func() { articleBufs.Put(bp) }, nil
}

// WriteBody writes the wire article named by token, size bytes, to w:
// read and checked into a buffer first (BodyBuffer), so a damaged article
// fails before any of its bytes is written.
func (b spoolBodies) WriteBody(w io.Writer, token string, size int64) (int64, error) {
	body, release, err := b.BodyBuffer(token, size)
	if err != nil {
		return 0, err
	}
	defer release()
	// Errors from here on are the connection's, not the article's.
	n, err := w.Write(body)
	return int64(n), err
}
