package searchindex

// Bodies: the full text of article bodies, for the groups whose owner
// chooses to index them (newsweb's search_bodies).
//
// # Theory of operation
//
// A group's bodies go in a second file beside its overview,
// <dir>/<group>.body, of records appended in batches, each batch in
// article-number order, the batches in the order the owner indexes them
// (newest articles first, then older and newer ones):
//
//	"NB" | number (8 bytes, big-endian) | text length (4) | crc32 of the 14 bytes before (4)
//	     | text | crc32 of the text (4)
//
// The text is what the owner chose to index (newsweb: the decoded
// text/plain parts without quotes, signature or binaries), at most
// MaxBodyText bytes; an empty text records an article that has none, so
// that it is not asked for again. A batch is one write and one fsync. Only
// articles in the group's overview get a record, and an article has at
// most one; the articles of the overview without one are those to index
// next (BodyTodo), newest first.
//
// In memory a group keeps, per overview row, where its text lies in the
// file, and per word (tokens: runs of letters and digits, lower-cased,
// 2 to 64 bytes) a posting list of overview rows, as signed varint
// deltas (rows come in the order the bodies are indexed).
// The text itself stays on disk: it is read back (and checked against its
// CRC) only to verify a phrase and to cut the snippet of a hit.
//
// Open only notes the body files; LoadBodies reads them, in the
// background of a running index.
//
// Damage: when LoadBodies meets a record that is incomplete or fails a
// checksum, it looks for the next good record (the header has its own
// checksum, so the search is cheap); what lies between is reported by
// Damage and the rest is kept. A damaged tail with no good record after
// it is cut. The articles whose records were lost have none, so they are
// indexed again. A record of an article not in the overview (its own tail
// was cut) is passed over, and so is a second record of an article.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/newsflow/newsflow/spoolfs/records"
)

const (
	// bodySuffix names body files.
	bodySuffix = ".body"
	// MaxBodyText is the most text kept and indexed per article; the rest
	// is cut (at a character boundary).
	MaxBodyText = 32 << 10
	// maxArticleWords is the most distinct words indexed per article.
	maxArticleWords = 4000
	// minWord and maxWord bound an indexed word's length in bytes:
	// single letters are everywhere, and longer runs are encodings, not
	// words.
	minWord, maxWord = 2, 64
	// bodyHeader is the bytes of a record before its text, bodyTrailer
	// after.
	bodyHeader, bodyTrailer = 18, 4
	// maxBodyRecord is the longest record.
	maxBodyRecord = bodyHeader + MaxBodyText + bodyTrailer
	// window is the read-ahead of a body file on Open.
	window = 1 << 20
)

// bodyMagic starts every body record.
var bodyMagic = []byte("NB")

// Body is one article's text to index.
type Body struct {
	Number int64
	Text   string
}

// plist is one word's posting list: overview rows, in the order added,
// as signed varint deltas.
type plist struct {
	buf  []byte
	last int32
	n    int32
}

// add appends row.
func (p *plist) add(row int32) {
	p.buf = binary.AppendVarint(p.buf, int64(row-p.last))
	p.last = row
	p.n++
}

// each calls fn for every row.
func (p *plist) each(fn func(row int32)) {
	var row int32
	for b := p.buf; len(b) > 0; {
		d, n := binary.Varint(b)
		if n <= 0 {
			return
		}
		b = b[n:]
		row += int32(d)
		fn(row)
	}
}

// bodies is one group's body index.
type bodies struct {
	file  *os.File // read-only handle for texts; nil before the first record
	size  int64    // bytes in the file
	count int      // articles with a record
	off   []int64  // per overview row: the record's offset + 1, 0 for none
	words map[string]*plist
}

// appendBodyRecord appends the record of number and text to dst.
func appendBodyRecord(dst []byte, number int64, text []byte) []byte {
	start := len(dst)
	dst = append(dst, bodyMagic...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(number))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(text)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
	dst = append(dst, text...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(text))
}

// parseBodyRecord reads the record at the start of b: its number, text and
// length; ok is false when b does not start with a whole, intact record.
func parseBodyRecord(b []byte) (number int64, text []byte, n int, ok bool) {
	if len(b) < bodyHeader+bodyTrailer || !bytes.HasPrefix(b, bodyMagic) ||
		binary.BigEndian.Uint32(b[14:]) != crc32.ChecksumIEEE(b[:14]) {
		return 0, nil, 0, false
	}
	number = int64(binary.BigEndian.Uint64(b[2:]))
	size := int(binary.BigEndian.Uint32(b[10:]))
	if number <= 0 || size > MaxBodyText || len(b) < bodyHeader+size+bodyTrailer {
		return 0, nil, 0, false
	}
	text = b[bodyHeader : bodyHeader+size]
	if binary.BigEndian.Uint32(b[bodyHeader+size:]) != crc32.ChecksumIEEE(text) {
		return 0, nil, 0, false
	}
	return number, text, bodyHeader + size + bodyTrailer, true
}

// bodyRecord is one record found in a body file.
type bodyRecord struct {
	off    int64
	number int64
	text   []byte // valid until the next read
}

// scanBody reads a body file of size bytes, calling fn for every good
// record in order. A bad stretch is skipped to the next good record; it is
// reported as a damage span [from, to). It returns the end of the last
// good record: what lies past it is a damaged tail.
func scanBody(ra io.ReaderAt, size int64, fn func(bodyRecord), damage func(from, to int64)) (end int64, err error) {
	parse := func(b []byte) (n, need int, ok bool) {
		if len(b) < bodyHeader {
			return 0, bodyHeader, false
		}
		if !bytes.HasPrefix(b, bodyMagic) || binary.BigEndian.Uint32(b[14:]) != crc32.ChecksumIEEE(b[:14]) {
			return 0, 0, false
		}
		if size := int(binary.BigEndian.Uint32(b[10:])); size <= MaxBodyText && len(b) < bodyHeader+size+bodyTrailer {
			return 0, bodyHeader + size + bodyTrailer, false
		}
		_, _, n, ok = parseBodyRecord(b)
		return n, 0, ok
	}
	sc := records.NewScanner(ra, size, bodyMagic, parse)
	sc.UseBuffer(make([]byte, 0, window))
	var bad [2]int64 // a damage span waiting for a good record after it
	return sc.Scan(0, func(off int64, b []byte) error {
		number, text, _, _ := parseBodyRecord(b)
		if bad[1] > 0 {
			damage(bad[0], bad[1])
			bad = [2]int64{}
		}
		fn(bodyRecord{off: off, number: number, text: text})
		return nil
	}, func(off, n int64) { bad = [2]int64{off, off + n} })
}

// loadBodies reads the body file at path of a group whose overview rows
// (rows of them) are found by row, and returns its index with the damage
// found, as sentences.
func loadBodies(path string, rows int, row func(number int64) (int, bool)) (b *bodies, reports []string, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("searchindex: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("searchindex: %w", err)
	}
	b = &bodies{words: map[string]*plist{}}
	end, err := scanBody(f, st.Size(), func(r bodyRecord) {
		if i, ok := row(r.number); ok {
			b.index(i, rows, r.off, r.text)
		}
	}, func(from, to int64) {
		reports = append(reports, fmt.Sprintf("%s: bytes %d-%d damaged: the bodies there are indexed again; the rest is kept", path, from, to))
	})
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("searchindex: %s: %w", path, err)
	}
	if end != st.Size() {
		reports = append(reports, fmt.Sprintf("%s: damaged tail cut at byte %d (%d bytes): the bodies there are indexed again",
			path, end, st.Size()-end))
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("searchindex: %s: cutting a damaged tail at %d: %w", path, end, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("searchindex: %s: %w", path, err)
		}
	}
	b.size, b.file = end, f
	return b, reports, nil
}

// has reports whether overview row i has a body record.
func (b *bodies) has(i int) bool { return i < len(b.off) && b.off[i] != 0 }

// index adds the record of overview row i (of rows), at off, to the
// in-memory index, unless the row has one already.
func (b *bodies) index(i, rows int, off int64, text []byte) {
	if b.has(i) {
		return
	}
	if len(b.off) < rows {
		b.off = append(b.off, make([]int64, rows-len(b.off))...)
	}
	b.off[i] = off + 1
	b.count++
	row, distinct := int32(i), 0
	eachWord(text, func(_, _ int, w []byte) bool {
		p := b.words[string(w)] // no allocation for the lookup
		if p == nil {
			p = &plist{}
			b.words[string(w)] = p
		} else if p.n > 0 && p.last == row {
			return true // seen in this article already
		}
		p.add(row)
		distinct++
		return distinct < maxArticleWords
	})
}

// eachWord calls fn with every word of text (runs of letters and digits,
// folded, minWord to maxWord bytes) and its byte span, until fn
// returns false. The word's bytes are valid during the call only.
func eachWord(text []byte, fn func(start, end int, word []byte) bool) {
	var scratch [maxWord + utf8.UTFMax]byte
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf && !asciiWord[c] {
			i++
			continue
		}
		start := i
		low := scratch[:0]
		long := false
		for i < len(text) {
			c := text[i]
			if c < utf8.RuneSelf {
				if !asciiWord[c] {
					break
				}
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				if len(low) < maxWord {
					low = append(low, c)
				} else {
					long = true
				}
				i++
				continue
			}
			r, n := utf8.DecodeRune(text[i:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				if i == start {
					i += n // a word does not start here
				}
				break
			}
			if len(low) < maxWord {
				low = foldRune(low, r)
			} else {
				long = true
			}
			i += n
		}
		if !long && len(low) >= minWord && len(low) <= maxWord && !fn(start, i, low) {
			return
		}
	}
}

// asciiWord marks the ASCII bytes that belong in a word.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	return t
}()

// wordsOf returns text's words in order.
func wordsOf(text string) []string {
	var out []string
	eachWord([]byte(text), func(_, _ int, w []byte) bool {
		out = append(out, string(w))
		return true
	})
	return out
}

// cutText cuts s to at most MaxBodyText bytes at a character boundary.
func cutText(s string) string {
	if len(s) <= MaxBodyText {
		return s
	}
	i := MaxBodyText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// BodyLen is the number of articles of group whose body has a record.
func (ix *Index) BodyLen(group string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if g := ix.groups[group]; g != nil && g.body != nil {
		return g.body.count
	}
	return 0
}

// BodyTodo returns up to limit entries of group's overview whose bodies
// have no record, newest first: the articles whose bodies are to be
// indexed next.
func (ix *Index) BodyTodo(group string, limit int) []Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	g := ix.groups[group]
	if g == nil || g.bodyPath != "" {
		return nil
	}
	var out []Entry
	for k := len(g.order) - 1; k >= 0 && len(out) < limit; k-- {
		if i := int(g.order[k]); g.body == nil || !g.body.has(i) {
			out = append(out, g.entry(i))
		}
	}
	return out
}

// ErrNoOverview is returned by AppendBodies for a group with no overview
// in the index.
var ErrNoOverview = errors.New("searchindex: group has no overview indexed")

// AppendBodies indexes the bodies of articles of group (any order; those
// with a record already, or not in the group's overview, are left out)
// and makes them durable before it returns. Texts over
// MaxBodyText are cut. Then, if the index passed MaxBytes, the least
// recently used other groups are dropped.
func (ix *Index) AppendBodies(name string, bs []Body) error {
	bs = slices.Clone(bs)
	slices.SortFunc(bs, func(a, b Body) int { return cmp.Compare(a.Number, b.Number) })
	ix.mu.Lock()
	defer ix.mu.Unlock()
	g := ix.groups[name]
	if g == nil {
		return fmt.Errorf("%w: %q", ErrNoOverview, name)
	}
	if g.bodyPath != "" {
		return fmt.Errorf("%w: %q", ErrBodiesLoading, name)
	}
	if g.body == nil {
		g.body = &bodies{words: map[string]*plist{}}
	}
	b := g.body
	var buf []byte
	type rec struct {
		row  int
		off  int64
		text string
	}
	var add []rec
	for k, x := range bs {
		i, ok := g.find(x.Number)
		if !ok || b.has(i) || (k > 0 && x.Number == bs[k-1].Number) {
			continue
		}
		text := cutText(x.Text)
		add = append(add, rec{i, b.size + int64(len(buf)), text})
		buf = appendBodyRecord(buf, x.Number, []byte(text))
	}
	if len(add) == 0 {
		return nil
	}
	path := filepath.Join(ix.dir, name+bodySuffix)
	if err := appendDurable(path, b.size, buf); err != nil {
		return err
	}
	if b.file == nil {
		var err error
		if b.file, err = os.Open(path); err != nil {
			return fmt.Errorf("searchindex: %w", err)
		}
	}
	for _, r := range add {
		b.index(r.row, len(g.nums), r.off, []byte(r.text))
	}
	b.size += int64(len(buf))
	ix.size += int64(len(buf))
	ix.clock++
	g.touched = ix.clock
	return ix.evict(name)
}

// text reads back the indexed text of overview row i; ok is false when it
// has none or its record no longer passes its checksum.
func (b *bodies) text(i int) (text []byte, ok bool) {
	if b == nil || !b.has(i) {
		return nil, false
	}
	off := b.off[i] - 1
	var head [bodyHeader]byte
	if _, err := b.file.ReadAt(head[:], off); err != nil {
		return nil, false
	}
	size := int(binary.BigEndian.Uint32(head[10:]))
	if size > MaxBodyText {
		return nil, false
	}
	rec := make([]byte, bodyHeader+size+bodyTrailer)
	if _, err := b.file.ReadAt(rec, off); err != nil {
		return nil, false
	}
	_, text, _, ok = parseBodyRecord(rec)
	return text, ok
}
