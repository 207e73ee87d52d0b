package newsfeed

import (
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/newsflow/newsflow/runtime/driver"
	"github.com/newsflow/newsflow/runtime/newsfeed/peerconn"
	"github.com/newsflow/newsflow/spoolfs"
)

// spoolBodies gives the feed runtime the stored articles it sends
// (machine.BodySource). Articles of up to driver.CopyBody octets it
// appends to the runtime's write buffer (driver.BodyAppender), read once
// and CRC-checked there, so the bytes that leave are the bytes checked
// (one over driver.SmallBody fed to several peers is copied for the first
// and sent from its file to the others: Copied); small ones leave with the commands around them in one write, read
// through the connection's ReadAhead, one pread for a run of articles
// stored together (a replayed backlog is in that order), bounded to the
// articles of the write under way (PlanBodies). Larger ones it writes
// itself (driver.BodyWriter): with sendfile(2) straight from the segment
// file when the connection is a plain TCP socket, by copying otherwise
// (TLS).
//
// Before an article is offered, pull asks sendable: the spool must still
// hold it (Spool.Holds, no I/O), and an article large enough to leave by
// sendfile, which never looks at the bytes, is read and its CRC checked
// first (Spool.Verify), so no damaged byte leaves. An article that fails is
// settled as missing, reported once, and forgotten by the history (upstream
// may offer it again). One that cannot be read when sent (damaged after
// the check, or one whose CRC the append path checks) fails the
// connection's flush, since the feed machine already counts its command
// as sent; its token is remembered in bad, pull settles it as missing
// when it comes again, and the error wraps peerconn.ErrUnreadableBody so
// the connection comes back at once rather than after a longer backoff.
type spoolBodies struct {
	s   *spoolfs.Spool
	ra  *bodyReader // the connection's own (epoll: the loop's); nil reads each article alone
	bad *badBodies
}

// bodyReader is a spoolfs.ReadAhead with the small articles of the write
// under way (PlanBodies), their tokens parsed once for both PlanBodies and
// AppendBody.
type bodyReader struct {
	*spoolfs.ReadAhead
	toks   []string        // as PlanBodies was given them
	parsed []spoolfs.Token // toks[i] parsed, for as many as parse
	next   int             // the index AppendBody expects next
}

// newBodyReader returns a bodyReader of s with a window of readAhead.
func newBodyReader(s *spoolfs.Spool) *bodyReader {
	return &bodyReader{ReadAhead: s.NewReadAhead(readAhead)}
}

// token returns token parsed: from the plan when it is the one expected.
func (r *bodyReader) token(token string) (spoolfs.Token, error) {
	if r != nil && r.next < len(r.parsed) && r.toks[r.next] == token {
		r.next++
		return r.parsed[r.next-1], nil
	}
	return spoolfs.ParseToken(token)
}

// badBodies is the set of tokens whose article could not be read for
// sending. It only grows; it holds damaged or vanished articles, which are
// rare.
//
// It also remembers which articles were found sendable lately (ok), so
// that an article fed to several peers is looked up in the history once,
// and one sent by sendfile read and CRC-checked once, not once per peer
// (repeated, such checks and lookups cost a large share of the CPU of a
// fan-out).
type badBodies struct {
	log *slog.Logger
	n   atomic.Int64
	m   sync.Map // token -> struct{}
	ok  verifiedBodies
	// copied holds the articles over driver.SmallBody that the append
	// path read and CRC-checked lately (by token, with the id ""): the
	// other peers' connections send those from the file (Copied), so an
	// article fed to several peers is read into the process once.
	copied verifiedBodies
}

// verifiedBodies remembers the articles Relay.sendable found sendable
// lately (the history named this copy, or its record header matched, and
// a large one's CRC checked), each by token and message-id (a token names
// the same bytes for the life of the process; the id guards against a
// spool that reused the offsets of a lost article).
//
// It is a direct-mapped cache: a token's hash picks one slot, and a new
// article takes the slot from whatever was there, so it holds at most
// verifiedSlots articles and forgetting one early only costs a check
// again. It answers yes only for the very token and id added. The slots
// are split among shards with a lock each: every peer connection's agent
// asks it for every article, and one lock (with maps of two generations)
// was ~8% of newsfeed's CPU on 2 KB articles to four peers, most of it
// waiting and hashing.
//
// What could make a known article unsendable is dropped from it: an
// article found lost (forget), and everything when the relay expires the
// spool or the history (reset). gen counts the resets, so that a check
// that began before one does not add its finding after it (add's seen).
type verifiedBodies struct {
	gen    atomic.Uint64
	shards [verifiedShards]verifiedShard
}

// verifiedShard is one lock's part of verifiedBodies.
type verifiedShard struct {
	mu    sync.Mutex
	slots [verifiedSlots / verifiedShards]verifiedSlot
	_     [64]byte // keeps the next shard's lock off this cache line
}

// verifiedSlot holds one article found sendable: its token and a hash of
// its message-id (idHash), 0 in an empty slot. The hash, not the id, so
// that a slot keeps no string alive: a backlog refill's ids are parts of
// one string (spoolfs.Backlog.ReadReplay), and slots holding ids kept
// whole refills alive long after they were sent (+28 MB of peak RSS
// draining 300k 2 KB articles to four peers). A different id with the
// same token and the same 64-bit hash (1 in 2^63) would pass as found.
type verifiedSlot struct {
	tok    spoolfs.Token
	idHash uint64
}

// idSeed seeds the hashes of verifiedSlot.
var idSeed = maphash.MakeSeed()

// hashID returns id's verifiedSlot.idHash, never 0.
func hashID(id string) uint64 { return maphash.String(idSeed, id) | 1 }

// verifiedSlots bounds verifiedBodies: at 24 bytes a slot, about 400 KB.
// It is far more than the articles in flight to all peers at once.
const (
	verifiedSlots  = 16384
	verifiedShards = 64
)

// slot returns the shard and slot of tok.
func (v *verifiedBodies) slot(tok spoolfs.Token) (*verifiedShard, int) {
	h := (uint64(tok.Seg)<<40 ^ tok.Off ^ uint64(tok.Len)<<20) * 0x9e3779b97f4a7c15
	i := int(h >> (64 - 14)) // 14 bits: verifiedSlots
	return &v.shards[i%verifiedShards], i / verifiedShards
}

// has reports whether the article was found sendable lately.
func (v *verifiedBodies) has(tok spoolfs.Token, id string) bool {
	sh, i := v.slot(tok)
	sh.mu.Lock()
	e := sh.slots[i]
	sh.mu.Unlock()
	return e.idHash != 0 && e.tok == tok && e.idHash == hashID(id)
}

// generation returns the count of resets so far, to pass to add.
func (v *verifiedBodies) generation() uint64 { return v.gen.Load() }

// add remembers that the article was found sendable by a check that began
// at generation seen; a reset since then makes it a no-op (the check may
// have read what the reset was about to drop).
func (v *verifiedBodies) add(seen uint64, tok spoolfs.Token, id string) {
	sh, i := v.slot(tok)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Under the shard's lock: a reset bumps gen before it clears the
	// shards, so either this sees the new gen or the reset clears this.
	if v.gen.Load() != seen {
		return
	}
	sh.slots[i] = verifiedSlot{tok: tok, idHash: hashID(id)}
}

// forget drops an article found bad after it was found sendable.
func (v *verifiedBodies) forget(tok spoolfs.Token, id string) {
	sh, i := v.slot(tok)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.slots[i]; e.tok == tok && e.idHash == hashID(id) {
		sh.slots[i] = verifiedSlot{}
	}
}

// reset forgets every article: the spool or the history dropped some.
func (v *verifiedBodies) reset() {
	v.gen.Add(1)
	for i := range v.shards {
		sh := &v.shards[i]
		sh.mu.Lock()
		clear(sh.slots[:])
		sh.mu.Unlock()
	}
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

// verifyBufs are the buffers sendable reads large articles into.
var verifyBufs = sync.Pool{New: func() any { return new([]byte) }}

// sendable reports whether the article id at tok can be offered: the
// spool holds it, it is this article (the history names this copy, or
// else the record's header says so) and, for one sent by sendfile, its
// CRC checks. A damaged one is remembered in badBodies and forgotten by
// the history.
//
// All but the first check are done once for an article offered to several
// peers (badBodies.ok); the spool's own check (Holds, no I/O) is done
// every time, so an article whose segment expired is never offered.
func (r *Relay) sendable(id, token string, tok spoolfs.Token) bool {
	if r.badBodies.has(token) {
		r.forgetLost(id, token) // found bad by the send path
		return false
	}
	if !r.spool.Holds(tok) {
		return false // expired or cut off: settled as missing, as ever
	}
	ok := &r.badBodies.ok
	if ok.has(tok, id) {
		return true // checked for another peer a moment ago
	}
	gen := ok.generation()
	if e, ok := r.spool.History().Lookup(id); (!ok || e.Token != tok) && !r.spool.Matches(tok, id) {
		// The history no longer names this copy (the open found it cut
		// off and forgot it, or history expiry dropped the id) and the
		// record there is not this article: its offsets hold another
		// one by now.
		return false
	}
	if int64(tok.Len) > driver.CopyBody {
		// Sent by sendfile, which never looks at the bytes: check them
		// now. (The append path checks the CRC of the bytes it copies.)
		bp := verifyBufs.Get().(*[]byte)
		var err error
		*bp, err = r.spool.Verify(tok, *bp)
		verifyBufs.Put(bp)
		if err != nil {
			r.lostArticle(id, token, tok, err)
			return false
		}
	}
	ok.add(gen, tok, id)
	return true
}

// lostArticle settles a stored article that cannot be read: reported
// once, counted, and forgotten by the history when the history still names
// this copy, so that upstream may offer it again.
func (r *Relay) lostArticle(id, token string, tok spoolfs.Token, err error) {
	r.badBodies.ok.forget(tok, id)
	r.badBodies.copied.forget(tok, "")
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
		r.countLost(1, "corrupt in the spool", "id", id)
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
		err = fmt.Errorf("%w: %w", peerconn.ErrUnreadableBody, err)
	}
	return body, err
}

// AppendBody appends the wire article named by token, size bytes, to dst.
func (b spoolBodies) AppendBody(dst []byte, token string, size int64) ([]byte, error) {
	tok, err := b.ra.token(token)
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
	switch {
	case err != nil:
		b.bad.add(token, err)
		b.bad.forgetCopied(tok)
		err = fmt.Errorf("%w: %w", peerconn.ErrUnreadableBody, err)
	case size > driver.SmallBody && b.bad != nil:
		c := &b.bad.copied
		c.add(c.generation(), tok, "")
	}
	return out, err
}

// Copied reports whether the article of size octets named by token is to
// be read into the process, checked and written from there
// (driver.BodyCopier): unless the append path checked it lately for
// another connection, whose peers then get it from the file (sendfile).
func (b spoolBodies) Copied(token string, size int64) bool {
	tok, err := spoolfs.ParseToken(token)
	if err != nil || b.bad == nil {
		return true // AppendBody says what is wrong
	}
	return !b.bad.copied.has(tok, "")
}

// forgetCopied drops tok from the articles checked by the append path.
func (b *badBodies) forgetCopied(tok spoolfs.Token) {
	if b != nil {
		b.copied.forget(tok, "")
	}
}

// PlanBodies bounds the connection's read-ahead to the articles the
// runtime is about to append (driver.BodyPlanner): a window filled for the
// first of them reads no further than the last of them stored in the same
// segment within a window's reach. The tokens are parsed once, here, for
// AppendBody too (parsing them a third time showed as ~2% of the CPU).
func (b spoolBodies) PlanBodies(tokens []string) {
	r := b.ra
	if r == nil {
		return
	}
	r.toks, r.parsed, r.next = append(r.toks[:0], tokens...), r.parsed[:0], 0
	var first spoolfs.Token
	var end uint64
	for i, t := range tokens {
		tok, err := spoolfs.ParseToken(t)
		if err != nil {
			break // AppendBody parses it again and says what is wrong
		}
		r.parsed = append(r.parsed, tok)
		switch {
		case i == 0:
			first, end = tok, tok.Off+uint64(tok.Len)
		case tok.Seg == first.Seg && tok.Off > first.Off && tok.Off+uint64(tok.Len)-first.Off <= readAhead:
			end = max(end, tok.Off+uint64(tok.Len))
		}
	}
	if len(r.parsed) > 0 {
		r.Bound(first.Seg, int64(end))
	}
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
		return 0, fmt.Errorf("%w: %w", peerconn.ErrUnreadableBody, err)
	}
	defer sec.Close()
	// Errors from here on are the connection's, not the article's.
	if sc, ok := w.(syscall.Conn); ok {
		return sec.SendTo(sc)
	}
	return io.Copy(w, sec.Reader())
}
