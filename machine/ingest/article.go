package ingest

// Articles: reading the block that follows TAKETHIS (or IHAVE's 335), the
// machine's own checks, and the spool's wire form.

import (
	"bytes"
	"fmt"
	"time"

	"github.com/newsflow/newsflow/proto"
)

// discardChunk bounds one decode of input that is thrown away, so the
// scratch buffer stays small however much input is held.
const discardChunk = 64 << 10

// Articles and their header fields are carved from slabs rather than
// allocated one by one: an article is decoded into the free tail of the
// current slab and, when handed to the owner, that part of the slab becomes
// its Data (capped, so appending to it cannot touch the next article). An
// article that outgrows the tail moves to its own array by append's usual
// growth. A slab lives as long as any article carved from it, which is
// until the owner has stored them, a batch at most.
const (
	slabSize      = 64 << 10 // bytes per article slab
	slabMinFree   = 4 << 10  // a tail smaller than this starts a new slab
	fieldSlabSize = 512      // header fields per field slab
)

// ArticleChunk is the size of the chunks an article that outgrows its
// slab is read into (see Budget in the theory of operation).
const ArticleChunk = 1 << 20

// A Budget hands out the chunks articles are read into, each charged
// before it is handed out, and takes them back for reuse. Its methods are
// called on the machine's goroutine and must not block.
type Budget interface {
	// Chunk returns an empty buffer of capacity ArticleChunk, charged to
	// the budget, or nil when the budget has no room for it.
	Chunk() []byte
	// Free gives back a chunk that Chunk returned; the machine no longer
	// refers to it.
	Free(c []byte)
}

// newArt returns an empty buffer for the next article.
func (g *Ingest) newArt() []byte {
	if cap(g.slab)-len(g.slab) < slabMinFree {
		g.slab = make([]byte, 0, slabSize)
	}
	return g.slab[len(g.slab):len(g.slab)]
}

// keepArt hands data, the article just decoded, to the owner: capped, and
// its part of the slab used up.
func (g *Ingest) keepArt(data []byte) []byte {
	n := len(data)
	if n > 0 && cap(g.slab) > len(g.slab) && &data[0] == &g.slab[:len(g.slab)+1][len(g.slab)] {
		g.slab = g.slab[:len(g.slab)+n]
	}
	return data[:n:n]
}

// startArticle begins reading the article block of cmd for id.
func (g *Ingest) startArticle(cmd Cmd, id string) {
	g.state = stArticle
	g.cur = current{cmd: cmd, id: id}
	g.artStart, g.artIn = g.lastRecv, 0
	g.dec.Reset()
	g.art = g.newArt()
}

// readArticle decodes held input into the article. It reports whether it
// made progress that the parser should follow up on.
func (g *Ingest) readArticle(now time.Time) bool {
	src := g.in[g.off:]
	if len(src) == 0 {
		return false
	}
	var (
		n    int
		done bool
		err  error
	)
	if g.cur.discard {
		if len(src) > discardChunk {
			src = src[:discardChunk]
		}
		g.scratch, n, done, err = g.dec.Decode(g.scratch[:0], src)
	} else {
		n, done, err = g.decodeArt(src)
		if int64(g.sealed+len(g.art)) > g.cfg.MaxArticleSize {
			// Keep reading to the block's end, keeping nothing.
			g.cur.tooBig, g.cur.discard = true, true
			g.dropChunks()
		}
	}
	g.off += n
	g.artIn += int64(n)
	if err != nil {
		// Only a line over blockMaxLine gets here: the block's end is lost.
		g.abort(now, "article block: "+err.Error())
		return false
	}
	if !done {
		return g.held() > 0 && !g.starved
	}
	g.finishArticle(now)
	return true
}

// decodeArt decodes src into the article, never past the capacity of its
// buffer: when that is full the article moves on to a new chunk, charged
// first; when the budget refuses it, decoding stops Starved.
func (g *Ingest) decodeArt(src []byte) (n int, done bool, err error) {
	for len(src) > 0 && !done && err == nil {
		// Decode appends at most len(src)+1 octets.
		room := cap(g.art) - len(g.art) - 1
		if room <= 0 {
			if !g.growArt() {
				g.starved = true
				return n, false, nil
			}
			continue
		}
		var m int
		g.art, m, done, err = g.dec.Decode(g.art, src[:min(len(src), room)])
		n += m
		src = src[m:]
		if m == 0 {
			break
		}
		if int64(g.sealed+len(g.art)) > g.cfg.MaxArticleSize {
			break
		}
	}
	return n, done, err
}

// growArt gives the article a new chunk, charged to the budget first, and
// reports whether it could. The first chunk takes over what the slab held;
// after it, full chunks are kept as they are, never copied.
func (g *Ingest) growArt() bool {
	var next []byte
	if g.cfg.Budget != nil {
		if next = g.cfg.Budget.Chunk(); next == nil {
			return false
		}
	} else {
		next = make([]byte, 0, ArticleChunk)
	}
	if g.inChunk {
		g.chunks = append(g.chunks, g.art)
		g.sealed += len(g.art)
	} else {
		next = append(next, g.art...) // at most a slab
	}
	g.art, g.inChunk = next, true
	return true
}

// dropChunks gives the article's chunks back to the budget and forgets
// them (the article is copied out, or dropped).
func (g *Ingest) dropChunks() {
	if g.inChunk && g.cfg.Budget != nil {
		for _, c := range g.chunks {
			g.cfg.Budget.Free(c)
		}
		g.cfg.Budget.Free(g.art)
	}
	g.art = nil
	g.chunks, g.sealed, g.inChunk = nil, 0, false
}

// Resume retries decoding an article that stopped for want of budget
// (Starved); the owner calls it when the budget may have room again.
// Events may follow, as after Receive.
func (g *Ingest) Resume(now time.Time) {
	if !g.starved || g.closed {
		return
	}
	g.starved = false
	g.advance(now)
	g.keep()
}

// Drop gives the chunks of an article being read back to the budget and
// forgets the article; the owner calls it when the connection has ended
// without the machine's seeing its end (a network error), after which the
// machine is not used again.
func (g *Ingest) Drop() { g.dropChunks() }

// Starved reports that decoding waits for the budget (see Resume).
func (g *Ingest) Starved() bool { return g.starved && !g.closed }

// finishArticle checks the complete article and hands it to the owner or
// refuses it.
func (g *Ingest) finishArticle(now time.Time) {
	cur := g.cur
	g.cur = current{}
	g.state = stCommand
	data := g.art
	if g.inChunk {
		// The owner gets an array of its own, the chunks copied once,
		// at the end; they go back to the budget for the next article.
		data = make([]byte, 0, g.sealed+len(g.art))
		for _, c := range g.chunks {
			data = append(data, c...)
		}
		data = append(data, g.art...)
	}
	g.dropChunks()
	g.art = nil
	if cur.syntax {
		return // 501 was sent with the command
	}
	var kind RejectKind
	var reason, detail string
	switch {
	case cur.badID:
		kind, reason, detail = RejectMessageID, msgSyntax, cur.why
	case cur.tooBig:
		kind, reason = RejectTooLarge, fmt.Sprintf("Article larger than %d octets", g.cfg.MaxArticleSize)
	default:
		h, body, k, why := g.validate(now, cur.id, data)
		if why == "" {
			data = g.keepArt(data) // Data now belongs to the owner
			g.art = nil
			g.keepFields(&h)
			seq := g.push(now, slot{kind: slotArticle, cmd: cur.cmd, id: cur.id, echo: cur.cmd == CmdTakeThis, waiting: true})
			g.emit(Article{Seq: seq, Cmd: cur.cmd, MessageID: cur.id, Data: data, Header: h, Body: body})
			return
		}
		kind, reason = k, why
	}
	if detail == "" {
		detail = reason
	}
	g.rejected(cur.cmd, cur.id, kind, detail)
	if cur.cmd == CmdTakeThis {
		g.push(now, slot{code: proto.CodeTakeThisReject, id: cur.id, echo: true, text: reason})
	} else {
		g.push(now, slot{code: proto.CodeTransferReject, text: reason})
	}
}

// validate applies the machine's checks to a complete article offered as
// id. It returns the parsed header and body offset, or the kind of refusal
// and a one-line reason.
func (g *Ingest) validate(now time.Time, id string, data []byte) (proto.Header, int, RejectKind, string) {
	if cap(g.fields)-len(g.fields) < 64 {
		g.fields = make([]proto.HeaderField, 0, fieldSlabSize)
	}
	h := proto.Header{Fields: g.fields[len(g.fields):len(g.fields)]}
	body, err := h.Parse(data)
	if err != nil {
		return h, 0, RejectHeader, err.Error()
	}
	// RFC 5536 §3.1: From, Date, Newsgroups, Subject, Message-ID, Path,
	// once each and well-formed; the Date window.
	opts := proto.ValidateOptions{Now: now, MaxAge: g.cfg.MaxAge, MaxFuture: g.cfg.MaxFuture}
	if err := proto.ValidateArticle(h, opts); err != nil {
		return h, 0, RejectInvalid, err.Error()
	}
	// RFC 3977 §3.1.1: lines end in CRLF. The decoder tolerates bare LFs;
	// inside the article they are kept as received, but the last line
	// must end in CRLF so that the wire form ends in "\r\n.\r\n", the
	// spool's record check.
	if n := len(data); n < 2 || data[n-2] != '\r' {
		return h, 0, RejectInvalid, "Article does not end with CRLF"
	}
	// RFC 4644 §2.5, RFC 3977 §6.3.2: the article is the one offered.
	// (ValidateArticle found exactly one valid Message-ID field.)
	if f, _ := h.Field(proto.HeaderMessageID); !fieldIs(f, id) {
		return h, 0, RejectMismatch, fmt.Sprintf("Message-ID %s does not match the offered %s", f.Value(), id)
	}
	// RFC 5537 §3.3: our own name in Path means the article looped.
	if f, _ := h.Field(proto.HeaderPath); g.cfg.PathHost != "" && pathHolds(f.Raw, g.cfg.PathHost) {
		return h, 0, RejectPathLoop, "Path loop: already holds " + g.cfg.PathHost
	}
	return h, body, 0, ""
}

// fieldIs reports whether f's value is s, without allocating when the
// field is not folded.
func fieldIs(f proto.HeaderField, s string) bool {
	v := bytes.Trim(f.Raw, " \t\r\n")
	if bytes.IndexByte(v, '\n') >= 0 {
		return f.Value() == s
	}
	return string(v) == s
}

// pathHolds is proto.PathContains on a Path field's raw bytes, so that the
// check for every article does not allocate: whether identity is one of the
// '!'-separated entries, ASCII case-insensitive, whitespace (and folding)
// around entries ignored.
func pathHolds(raw []byte, identity string) bool {
	for len(raw) > 0 {
		e := raw
		if i := bytes.IndexByte(raw, '!'); i >= 0 {
			e, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		e = bytes.Trim(e, " \t\r\n")
		if len(e) == len(identity) && bytes.EqualFold(e, []byte(identity)) {
			return true
		}
	}
	return false
}

// keepFields hands h's fields to the owner: capped, and their part of the
// field slab used up.
func (g *Ingest) keepFields(h *proto.Header) {
	n := len(h.Fields)
	if n > 0 && cap(g.fields) > len(g.fields) && &h.Fields[0] == &g.fields[:len(g.fields)+1][len(g.fields)] {
		g.fields = g.fields[:len(g.fields)+n]
	}
	h.Fields = h.Fields[:n:n]
}
