package newsfeed

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/newsflow/newsflow/runtime/drive"
	"github.com/newsflow/newsflow/spoolfs"
)

// spoolBodies gives the feed runtime the stored articles it sends
// (machine.BodySource). Small articles it appends to the runtime's gather
// buffer (drive.BodyAppender, CRC checked), so they leave with the
// commands around them in one write; they are read through the
// connection's ReadAhead, one pread for a run of articles stored together
// (a replayed backlog is in that order). Large ones it lends in place
// (drive.BodyMapper): mapped from the segment file, CRC-checked over the
// mapping just before the runtime writes them, from the same memory, with
// the commands around them in one writev. Checking and sending are back to
// back, so the article is still in the CPU's cache when write(2) copies it
// and when the receiver reads it; on 500 KB articles the check by pread
// into a buffer before the send (at pull time, long before it) was about
// half of newsfeed's CPU time. An article verified lately for another peer
// is not checked again (badBodies.ok). Where articles cannot be mapped,
// WriteBody (sendfile on a plain TCP socket, copying otherwise) and
// BodyFile (the epoll runtime's sendfile) check the CRC by pread first.
//
// Before an article is offered, pull asks sendable: the spool must still
// hold it and it must be this article (no CRC: that comes with the send).
// One that cannot be read when sent (damaged, cut short) fails the
// connection's flush before any of its bytes leave, since the feed machine
// already counts its command as sent; its token is remembered in bad,
// pull settles it as missing when it comes again (reported once, forgotten
// by the history so that upstream may offer it again), and the error wraps
// errUnreadableBody so the connection comes back at once rather than
// after a longer backoff.
type spoolBodies struct {
	s   *spoolfs.Spool
	ra  *spoolfs.ReadAhead // the connection's own; nil reads each article alone
	bad *badBodies
}

// badBodies is the set of tokens whose article could not be read for
// sending. It only grows; it holds damaged or vanished articles, which are
// rare.
//
// It also remembers which large articles were verified lately (ok), so
// that an article fed to several peers is CRC-checked once, not once per
// peer: on 500 KB articles to four peers the repeated checks were half of
// newsfeed's CPU time.
type badBodies struct {
	log *slog.Logger
	n   atomic.Int64
	m   sync.Map // token -> struct{}
	ok  verifiedBodies
}

// verifiedBodies is a bounded set of the articles whose CRC was checked
// lately: token -> the CRC of the message-id in the record's header
// (spoolfs.Mapping.IDSum; a token names the same bytes for the life of
// the process, and the id's CRC guards against a spool that reused the
// offsets of a lost article). Two generations of at most verifiedMax
// entries each: when the current one is full it becomes the old one, so
// an article verified within the last verifiedMax checks is still known.
type verifiedBodies struct {
	mu       sync.Mutex
	cur, old map[string]uint32
}

// verifiedMax bounds each generation of verifiedBodies: at two
// generations of about 100 bytes per entry, under 1 MB in all. It is far
// more than the articles in flight to all peers at once.
const verifiedMax = 4096

// has reports whether the article at token, whose message-id has the CRC
// idSum, was verified lately.
func (v *verifiedBodies) has(token string, idSum uint32) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	sum, ok := v.cur[token]
	if !ok {
		sum, ok = v.old[token]
	}
	return ok && sum == idSum
}

// add remembers that the article was verified.
func (v *verifiedBodies) add(token string, idSum uint32) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.cur) >= verifiedMax {
		v.old, v.cur = v.cur, nil
	}
	if v.cur == nil {
		v.cur = make(map[string]uint32, verifiedMax)
	}
	v.cur[token] = idSum
}

// forget drops an article found bad after it was verified.
func (v *verifiedBodies) forget(token string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.cur, token)
	delete(v.old, token)
}

// add remembers token (and that it is not verified any more), logging why
// the first time.
func (b *badBodies) add(token string, err error) {
	if b == nil {
		return
	}
	b.ok.forget(token)
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

// verifyBufs are the buffers the send path reads large articles into
// where it cannot map them (spoolfs.ErrNoMapping).
var verifyBufs = sync.Pool{New: func() any { return new([]byte) }}

// sendable reports whether the article id at tok can be offered: the
// spool holds it and it is this article (the history names this copy, or
// else the record's header says so). Its CRC is checked when it is sent
// (spoolBodies). One found damaged there is remembered in badBodies and
// forgotten by the history here.
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

// MapBody lends the large article named by token in place
// (drive.BodyMapper): mapped from its segment file and checked against its
// CRC, so that the runtime writes exactly the bytes checked, while they
// are in the CPU's cache. An article verified lately (for another peer) it
// declines (nil, nil, nil), as it does where articles cannot be mapped:
// the runtime then sends it with WriteBody or BodyFile, by sendfile, which
// costs less than copying bytes that are no longer in the cache (those
// check the CRC by pread unless the article was verified lately).
func (b spoolBodies) MapBody(token string, size int64) ([]byte, func(), error) {
	tok, err := b.parse(token, size)
	if err != nil {
		return nil, nil, err
	}
	if sum, err := b.s.IDSum(tok); err == nil && b.bad.ok.has(token, sum) {
		return nil, nil, nil
	}
	m, err := b.s.MapArticle(tok)
	if errors.Is(err, spoolfs.ErrNoMapping) {
		return nil, nil, nil
	}
	if err != nil {
		b.bad.add(token, err)
		return nil, nil, fmt.Errorf("%w: %w", errUnreadableBody, err)
	}
	if err := m.Verify(); err != nil {
		m.Close()
		b.bad.add(token, err)
		return nil, nil, fmt.Errorf("%w: %w", errUnreadableBody, err)
	}
	b.bad.ok.add(token, m.IDSum())
	return m.Bytes(), func() { m.Close() }, nil
}

// verify checks the large article at tok by pread against its CRC, unless
// it was verified lately, for the send paths that do not map it (sendfile,
// which never looks at the bytes, and copying to a TLS connection).
func (b spoolBodies) verify(token string, tok spoolfs.Token) error {
	sum, err := b.s.IDSum(tok)
	if err == nil && b.bad.ok.has(token, sum) {
		return nil
	}
	bp := verifyBufs.Get().(*[]byte)
	sum, *bp, err = b.s.VerifyID(tok, *bp)
	verifyBufs.Put(bp)
	if err != nil {
		b.bad.add(token, err)
		return fmt.Errorf("%w: %w", errUnreadableBody, err)
	}
	b.bad.ok.add(token, sum)
	return nil
}

// parse parses token and checks that it holds size bytes; a token that
// does not is remembered in bad.
func (b spoolBodies) parse(token string, size int64) (spoolfs.Token, error) {
	tok, err := spoolfs.ParseToken(token)
	if err != nil {
		b.bad.add(token, err)
		return tok, err
	}
	if int64(tok.Len) != size {
		err := fmt.Errorf("relay: token %s holds %d bytes, want %d", token, tok.Len, size)
		b.bad.add(token, err)
		return tok, err
	}
	return tok, nil
}

// WriteBody writes the wire article named by token, size bytes, to w.
// It checks the article's CRC first (verify) unless it was verified
// lately.
func (b spoolBodies) WriteBody(w io.Writer, token string, size int64) (int64, error) {
	tok, err := b.parse(token, size)
	if err != nil {
		return 0, err
	}
	if err := b.verify(token, tok); err != nil {
		return 0, err
	}
	sec, err := b.s.Section(tok)
	if err != nil {
		b.bad.add(token, err)
		return 0, fmt.Errorf("%w: %w", errUnreadableBody, err)
	}
	defer sec.Close()
	// Errors from here on are the connection's, not the article's.
	if sc, ok := w.(syscall.Conn); ok {
		return sec.SendTo(sc)
	}
	return io.Copy(w, sec.Reader())
}

var (
	_ drive.BodyMapper   = spoolBodies{}
	_ drive.BodyWriter   = spoolBodies{}
	_ drive.BodyAppender = spoolBodies{}
)
